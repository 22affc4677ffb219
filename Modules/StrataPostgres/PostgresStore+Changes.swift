import CLibPQ
import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// A stream that yields a ``StoreChange`` after every save this store commits, in commit order, and —
  /// when the store was opened with `postsRemoteChangeNotifications` — after commits of other stores on
  /// the same schema, in this process or on another machine (`isRemote`, with the newest history token
  /// when history is tracked). Every save sends `NOTIFY` on the schema's channel; a connection of the
  /// store `LISTEN`s while a stream is open and is polled every 50 ms. It finishes when the store closes.
  ///
  /// ```swift
  /// for await change in store.changes() where change.isRemote { refetch() }
  /// ```
  public func changes() -> AsyncStream<StoreChange> { changeStream() }

  package var isClosed: Bool { closed.load(ordering: .acquiring) }

  /// Opens the listening connection, once (before the stream is handed out, so no later commit is missed).
  package func startWatching() {
    listener.withLock { connection in
      guard connection == nil else { return }
      guard let target = try? PostgresLocation(url: url ?? URL(fileURLWithPath: "/"), defaultSchema: configuration.schema),
        let opened = try? target.connect(configuration: configuration)
      else { return }
      do {
        try opened.execute("LISTEN \(quoteIdentifier(channel))")
        connection = opened
      } catch {
        opened.close()
      }
    }
  }

  package func stopWatching() {
    listener.withLock { connection in
      connection?.close()
      connection = nil
    }
  }

  /// Yields one remote change when another store's commit was notified since the last look. A listening
  /// connection the server dropped (a restart, `pg_terminate_backend`) is reopened at a later look, which
  /// then yields a remote change: commits notified while nobody listened are lost, so watchers refetch.
  package func announceRemoteCommits() {
    var reopened = false
    if listener.withLock({ $0 == nil }) {
      startWatching()
      reopened = listener.withLock { $0 != nil } && listenerLost.exchange(false, ordering: .acquiringAndReleasing)
    }
    let instanceID = self.instanceID
    let heard = listener.withLock { connection -> Bool in
      guard let current = connection else { return false }
      let payloads = current.drainNotifications()
      if !current.isOpen {
        current.close()
        connection = nil
        listenerLost.store(true, ordering: .releasing)
        return false
      }
      return payloads.contains { $0 != instanceID }
    }
    guard heard || reopened else { return }
    let token = options.tracksHistory ? try? currentHistoryToken() : nil
    broadcaster.yield(StoreChange(storeIdentifier: identifier, historyToken: token, isRemote: true))
  }
}

extension PostgresConnection {
  /// The payloads of the notifications received since the last call (reads what the socket holds).
  func drainNotifications() -> [String] {
    guard let handle = rawHandle else { return [] }
    guard PQconsumeInput(handle) == 1 else { return [] }
    var payloads: [String] = []
    while let notification = PQnotifies(handle) {
      payloads.append(notification.pointee.extra.map { String(cString: $0) } ?? "")
      PQfreemem(notification)
    }
    return payloads
  }
}
