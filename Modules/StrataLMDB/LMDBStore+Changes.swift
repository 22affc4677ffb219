import Foundation
import StrataStoreKit

extension LMDBStore {
  /// A stream that yields a ``StoreChange`` after every transaction this store commits, in commit order,
  /// and — when the store was opened with `postsRemoteChangeNotifications` — after transactions other
  /// processes commit to the same environment (`isRemote`, without object IDs but, with `tracksHistory`,
  /// with the newest history token; found by polling the
  /// environment's last transaction ID every 50 ms while a stream is open). It finishes when the store closes.
  ///
  /// ```swift
  /// for await change in store.changes() where change.isRemote { refetch() }
  /// ```
  public func changes() -> AsyncStream<StoreChange> {
    let stream = broadcaster.stream()
    if closed.load(ordering: .acquiring) {
      // close() may have finished the broadcaster before this stream registered.
      broadcaster.finish()
      return stream
    }
    if options.postsRemoteChangeNotifications {
      remoteWatcher.start(while: { [weak self] in
        guard let store = self else { return false }
        return !store.closed.load(ordering: .acquiring) && store.broadcaster.hasSubscribers
      }) { [weak self] in self?.announceRemoteCommits() }
    }
    return stream
  }

  /// Announces a commit of this process with its transaction ID, after any remote commits before it.
  /// Called with `saveLock` held.
  func announce(_ change: StoreChange, transactionID: Int) {
    lastAnnounced.withLock { last in
      if options.postsRemoteChangeNotifications, transactionID > last + 1 {
        broadcaster.yield(StoreChange(storeIdentifier: identifier, historyToken: remoteToken(), isRemote: true))
      }
      last = max(last, transactionID)
    }
    broadcaster.yield(change)
  }

  /// Yields one remote change when other processes committed since the last announcement.
  func announceRemoteCommits() {
    saveLock.lock()
    defer { saveLock.unlock() }
    guard let current = environment.lastTransactionID() else { return }
    let isNew = lastAnnounced.withLock { last -> Bool in
      defer { last = max(last, current) }
      return current > last
    }
    if isNew { broadcaster.yield(StoreChange(storeIdentifier: identifier, historyToken: remoteToken(), isRemote: true)) }
  }

  /// With history on, the newest token, so a listener of a remote change can fetch what it missed.
  private func remoteToken() -> HistoryToken? {
    options.tracksHistory ? try? currentHistoryToken() : nil
  }
}
