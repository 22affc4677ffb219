// Shows that ThreadSanitizer does not see Synchronization.Mutex on Linux (docs/SANITIZERS.md).
// Two threads increment a counter, each increment inside a lock:
//   swiftc -sanitize=thread -g scripts/tsan-mutex-demo.swift -o /tmp/mutex && /tmp/mutex            # Mutex: a report, exit 66
//   swiftc -sanitize=thread -g -DPTHREAD scripts/tsan-mutex-demo.swift -o /tmp/pthread && /tmp/pthread  # pthread: silent
// Both print value 400000: the Mutex excludes; ThreadSanitizer just cannot tell.
import Foundation
import Synchronization

final class Counter: @unchecked Sendable { var value = 0 }
let counter = Counter()
#if PTHREAD
let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
pthread_mutex_init(lock, nil)
func locked(_ body: () -> Void) { pthread_mutex_lock(lock); body(); pthread_mutex_unlock(lock) }
#else
let mutex = Mutex(())
func locked(_ body: () -> Void) { mutex.withLock { _ in body() } }
#endif

var threads: [pthread_t] = []
for _ in 0..<2 {
  var thread = pthread_t()
  pthread_create(&thread, nil, { _ in
    for _ in 0..<200_000 { locked { counter.value += 1 } }
    return nil
  }, nil)
  threads.append(thread)
}
for thread in threads { pthread_join(thread, nil) }
print("value", counter.value)
