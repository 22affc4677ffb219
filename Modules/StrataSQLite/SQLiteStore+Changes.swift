import Foundation
import StrataCore

extension SQLiteStore {
  /// A stream that yields a ``StoreChange`` after every save this store commits, in commit order, and —
  /// when the store was opened with `postsRemoteChangeNotifications` — after commits made by other
  /// connections to the same file: another process, or another store opened on it (`isRemote`, without
  /// object IDs; found by polling the writer connection's `PRAGMA data_version` every 50 ms while a
  /// stream is open, which changes only when another connection commits). It finishes when the store closes.
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
    if options.postsRemoteChangeNotifications, !isWatching.exchange(true, ordering: .acquiringAndReleasing) {
      lastDataVersion.withLock { $0 = try? dataVersion() }
      let thread = Thread { [weak self] in
        while let store = self, !store.closed.load(ordering: .acquiring), store.broadcaster.hasSubscribers {
          store.announceRemoteCommits()
          Thread.sleep(forTimeInterval: 0.05)
        }
        self?.isWatching.store(false, ordering: .releasing)
      }
      thread.name = "strata-sqlite-watch"
      thread.start()
    }
    return stream
  }

  /// Yields one remote change when another connection committed since the last look.
  func announceRemoteCommits() {
    guard let current = try? dataVersion() else { return }
    let isNew = lastDataVersion.withLock { last -> Bool in
      defer { last = current }
      return last.map { $0 != current } ?? false
    }
    if isNew { broadcaster.yield(StoreChange(storeIdentifier: identifier, isRemote: true)) }
  }

  /// The writer connection's data version (a reader's for a read-only store, whose commits are all
  /// another connection's).
  private func dataVersion() throws -> Int64 {
    let pragma: (SQLiteConnection) throws -> Int64 = { connection in
      try connection.query("PRAGMA data_version") { $0.int64(0) }.first ?? 0
    }
    return writer != nil ? try write(pragma) : try read(generation: nil, pragma)
  }
}
