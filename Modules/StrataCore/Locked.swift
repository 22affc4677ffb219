import Foundation
import Synchronization

/// A value guarded by a mutex, for the few places where shared state is unavoidable.
package final class Locked<State: ~Copyable>: Sendable where State: Sendable {
  private let mutex: Mutex<State>

  package init(_ state: consuming sending State) {
    mutex = Mutex(state)
  }

  /// Runs `body` with exclusive access to the state.
  package func withLock<R: ~Copyable, E: Error>(_ body: (inout sending State) throws(E) -> sending R) throws(E) -> R {
    try mutex.withLock(body)
  }
}
