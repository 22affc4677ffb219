import Foundation
import StrataSQL
import StrataStoreKit

/// A pinned query generation: a `REPEATABLE READ` transaction whose snapshot is exported
/// (`pg_export_snapshot()`), and the connections reading it. Reads take a free one; when every one is
/// busy, another connection joins the snapshot (`SET TRANSACTION SNAPSHOT`), up to the pool's size, so
/// contexts sharing a generation on several queues read one state of the store at once.
///
/// A connection of a generation that is lost is not reopened (a new one would read the store as it
/// is now): reads of the generation then fail with `.io` until it is unpinned.
final class PinnedGeneration: Sendable {
  /// The exported snapshot's name, valid while the first connection's transaction is open.
  let snapshot: String
  let limit: Int
  private let members: Locked<[PostgresPool.Slot]>

  /// Opens the generation's first connection and exports its snapshot.
  init(pool: PostgresPool) throws {
    let connection = try pool.target.connect(configuration: pool.configuration)
    do {
      try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
      // The snapshot is taken by the transaction's first query, this one.
      snapshot = try connection.query("SELECT pg_export_snapshot()").text(0, 0)
    } catch let error as PostgresError {
      connection.close()
      throw error.storeError(location: pool.target.display)
    }
    limit = max(1, pool.configuration.poolSize)
    members = Locked([PostgresPool.Slot(connection)])
  }

  /// How many connections read the generation.
  var connectionCount: Int { members.withLock { $0.count } }

  /// Runs `body` on a free connection of the generation, adding one when all are busy and the limit
  /// allows, else waiting for the first.
  func use<R: Sendable>(_ pool: PostgresPool, _ body: (PostgresConnection) throws -> R) throws -> R {
    let current = members.withLock { $0 }
    for slot in current {
      if let result = try slot.state.withLockIfAvailable({ connection in try Self.run(connection, pool, body) }) {
        return result
      }
    }
    if let joined = try join(pool) {
      return try joined.state.withLock { connection in try Self.run(connection, pool, body) }
    }
    guard let first = current.first else { throw StoreError(.misuse, "the query generation was unpinned") }
    return try first.state.withLock { connection in try Self.run(connection, pool, body) }
  }

  /// A new connection reading the exported snapshot; `nil` at the limit.
  private func join(_ pool: PostgresPool) throws -> PostgresPool.Slot? {
    try members.withLock { members -> PostgresPool.Slot? in
      guard members.count < limit else { return nil }
      let connection = try pool.target.connect(configuration: pool.configuration)
      do {
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try connection.execute("SET TRANSACTION SNAPSHOT \(quoteLiteral(snapshot))")
      } catch let error as PostgresError {
        connection.close()
        throw error.storeError(location: pool.target.display)
      }
      let slot = PostgresPool.Slot(connection)
      members.append(slot)
      return slot
    }
  }

  private static func run<R: Sendable>(
    _ connection: PostgresConnection?, _ pool: PostgresPool, _ body: (PostgresConnection) throws -> R
  ) throws -> R {
    guard let connection, connection.isOpen else {
      throw StoreError(
        .io,
        "the connection to \(pool.target.display) holding a pinned query generation was lost; unpin it and pin a new one")
    }
    do {
      return try body(connection)
    } catch let error as PostgresError {
      throw error.storeError(location: pool.target.display)
    }
  }

  /// Ends every transaction of the generation.
  func close() {
    for slot in members.withLock({ members in
      defer { members.removeAll() }
      return members
    }) {
      slot.close()
    }
  }
}
