import Foundation
import Synchronization

#if STRATA_SANITIZE_LOCKS
  /// A value guarded by a mutex, for the few places where shared state is unavoidable.
  ///
  /// This is the sanitizer build (`-Xswiftc -DSTRATA_SANITIZE_LOCKS`, set by `scripts/sanitize`): the lock
  /// is a `pthread_mutex_t`, whose lock and unlock ThreadSanitizer intercepts. `Synchronization.Mutex`
  /// hands a contended lock over inside the kernel (`FUTEX_LOCK_PI`/`FUTEX_UNLOCK_PI`), which
  /// ThreadSanitizer does not see, so it reports the accesses of two critical sections as a race.
  /// See docs/SANITIZERS.md.
  ///
  /// The state lives in an allocation of its own, not in the object: ThreadSanitizer reports an empty
  /// state (`Locked<Void>`) stored in the object at the object's own address, where another thread's
  /// read of the object's header, before it takes the lock, looks like a race with the critical section.
  package final class Locked<State: ~Copyable>: @unchecked Sendable where State: Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let state = UnsafeMutablePointer<State>.allocate(capacity: 1)

    package init(_ state: consuming sending State) {
      self.state.initialize(to: state)
      pthread_mutex_init(mutex, nil)
    }

    deinit {
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
      state.deinitialize(count: 1)
      state.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    package func withLock<R: ~Copyable, E: Error>(_ body: (inout sending State) throws(E) -> sending R) throws(E) -> R {
      pthread_mutex_lock(mutex)
      defer { pthread_mutex_unlock(mutex) }
      return try body(&state.pointee)
    }

    /// Runs `body` with exclusive access to the state if the lock is free now; `nil` when it is held.
    package func withLockIfAvailable<R: ~Copyable, E: Error>(
      _ body: (inout sending State) throws(E) -> sending R
    ) throws(E) -> R? {
      guard pthread_mutex_trylock(mutex) == 0 else { return nil }
      defer { pthread_mutex_unlock(mutex) }
      return try body(&state.pointee)
    }
  }
#else
  /// A value guarded by a mutex, for the few places where shared state is unavoidable.
  ///
  /// The mutex guards no value of its own (`Mutex<Void>`) and the state lives in an allocation beside
  /// it: this generic class's methods run unspecialized when called from another module, and with a
  /// `Mutex<State>` each call looked the mutex type's metadata up in the runtime (~600 instructions, 20
  /// times the lock itself: 1,500 instructions of every LMDB fault went there).
  package final class Locked<State: ~Copyable>: @unchecked Sendable where State: Sendable {
    private let mutex = Mutex<Void>(())
    private let state = UnsafeMutablePointer<State>.allocate(capacity: 1)

    package init(_ state: consuming sending State) {
      self.state.initialize(to: state)
    }

    deinit {
      state.deinitialize(count: 1)
      state.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    package func withLock<R: ~Copyable, E: Error>(_ body: (inout sending State) throws(E) -> sending R) throws(E) -> R {
      try mutex.withLock { _ throws(E) -> sending R in try body(&state.pointee) }
    }

    /// Runs `body` with exclusive access to the state if the lock is free now; `nil` when it is held.
    package func withLockIfAvailable<R: ~Copyable, E: Error>(
      _ body: (inout sending State) throws(E) -> sending R
    ) throws(E) -> R? {
      try mutex.withLockIfAvailable { _ throws(E) -> sending R in try body(&state.pointee) }
    }
  }
#endif
