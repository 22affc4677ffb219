import Foundation
import Synchronization

/// A thread that looks for commits of other processes while a store's change streams are open — the
/// polling loop the file stores share for `postsRemoteChangeNotifications`.
///
/// ```swift
/// let watcher = RemoteCommitWatcher(name: "strata-sqlite-watch")
/// watcher.start(while: { [weak self] in self?.isListening ?? false }) { [weak self] in self?.announceRemoteCommits() }
/// ```
public final class RemoteCommitWatcher: Sendable {
  private let name: String
  private let interval: TimeInterval
  private let isRunning = Atomic<Bool>(false)

  /// - Parameters:
  ///   - name: the thread's name, as debuggers and `ps` show it.
  ///   - interval: the time between two looks (50 ms by default).
  public init(name: String, interval: TimeInterval = 0.05) {
    self.name = name
    self.interval = interval
  }

  /// Starts the thread unless it runs already: it calls `look` every interval for as long as `keepGoing`
  /// answers true, then stops (a later `start` starts it again).
  public func start(while keepGoing: @escaping @Sendable () -> Bool, look: @escaping @Sendable () -> Void) {
    guard !isRunning.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let interval = self.interval
    let thread = Thread { [self] in
      while keepGoing() {
        look()
        Thread.sleep(forTimeInterval: interval)
      }
      isRunning.store(false, ordering: .releasing)
    }
    thread.name = name
    thread.start()
  }
}
