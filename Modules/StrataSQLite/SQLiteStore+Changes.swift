import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteStore {
  /// A stream that yields a ``StoreChange`` after every save this store commits, in commit order, and —
  /// when the store was opened with `postsRemoteChangeNotifications` — after commits made by other
  /// connections to the same file: another process, or another store opened on it (`isRemote`, without
  /// object IDs but, with `tracksHistory`, with the newest history token; found by polling the writer connection's `PRAGMA data_version` every 50 ms while a
  /// stream is open, which changes only when another connection commits). It finishes when the store closes.
  ///
  /// ```swift
  /// for await change in store.changes() where change.isRemote { refetch() }
  /// ```
  ///
  /// The store a migration hands its custom stages returns a stream that has finished.
  public func changes() -> AsyncStream<StoreChange> { changeStream() }

  package var isClosed: Bool { closed.load(ordering: .acquiring) }

  /// Notes the data version other connections' commits change.
  package func startWatching() {
    let baseline = try? dataVersion()
    lastDataVersion.withLock { if $0 == nil { $0 = baseline } }
  }

  /// Yields one remote change when another connection committed since the last look.
  package func announceRemoteCommits() {
    guard let current = try? dataVersion() else { return }
    let isNew = lastDataVersion.withLock { last -> Bool in
      defer { last = current }
      return last.map { $0 != current } ?? false
    }
    guard isNew else { return }
    // With history on, the change carries the newest token, so a listener can fetch what it missed.
    let token = options.tracksHistory ? try? currentHistoryToken() : nil
    broadcaster.yield(StoreChange(storeIdentifier: identifier, historyToken: token, isRemote: true))
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
