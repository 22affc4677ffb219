import Foundation
import StrataStoreKit

/// One connection of an SQL backend as the shared save, history and migration steps use it: statements
/// with bindings, rows read by column. Each backend's connection conforms (`SQLiteConnection`,
/// `PostgresConnection`); the shared steps are generic over it, so their calls are specialized, never
/// dynamic, and a row is read through the backend's own cursor.
package protocol SQLConnection: AnyObject {
  /// A value bound to a statement parameter.
  associatedtype Binding: Sendable
  /// The cursor a query's rows are read through.
  associatedtype Row: SQLRow

  /// Runs statements without bindings or results (DDL, transaction control).
  func execute(_ sql: String) throws
  /// Runs a statement that returns no rows; the number of rows it changed.
  @discardableResult
  func run(_ sql: String, _ bindings: [Binding]) throws -> Int
  /// Runs a query and maps each row.
  func query<R>(_ sql: String, _ bindings: [Binding], _ row: (Row) throws -> R) throws -> [R]
  /// Whether `error`, thrown by a statement of this connection, is a uniqueness constraint refusing it.
  static func isUniqueViolation(_ error: any Error) -> Bool
}

/// Where an SQL backend keeps persistent history (`strata_history_transaction`, `strata_history_change`):
/// how it appends a transaction (``SQLHistoryRecorder``), and what the shared reading and deletion
/// (``SQLStore``) need of its tables.
package protocol SQLHistoryTables: Sendable {
  associatedtype Connection: SQLConnection

  /// The transaction table as statements name it.
  var transactionTable: String { get }
  /// The change table as statements name it.
  var changeTable: String { get }
  /// What the change table's rows are read as: `transaction_seq, entity, pk, change_type,
  /// updated_properties, tombstone`, the properties comma-separated and the tombstone JSON text.
  var changeColumns: String { get }
  /// Why a store opened read-only finds no history tables, for its `.notFound` error.
  var missingReason: String { get }

  /// Whether the history tables exist.
  func exist(on connection: Connection) throws -> Bool
  /// Makes writers of history wait for one another until the transaction ends (where sequences would
  /// otherwise commit out of order).
  func lock(on connection: Connection) throws
  /// The last sequence a deletion removed (`_strata_metadata.history_purged_through`), 0 when none.
  func purgedThrough(on connection: Connection) throws -> Int64
  func setPurgedThrough(_ sequence: Int64, on connection: Connection) throws
  /// The newest sequence given out (or purged), 0 when none.
  func lastSequence(on connection: Connection) throws -> Int64

  /// Makes the history tables if they are missing, inside the caller's transaction.
  func createTables(on connection: Connection) throws
  /// Appends one transaction inside the caller's write transaction and returns its token.
  func append(
    _ changes: [HistoryChange], on connection: Connection, author: String?, contextName: String?
  ) throws -> HistoryToken
}

/// Where the history of one write of an SQL store goes.
package enum SQLHistoryRecorder<Tables: SQLHistoryTables>: Sendable {
  /// Appended to the history tables as a transaction of its own; `createsTables` when the store has not
  /// seen them yet (made inside the write's transaction).
  case tables(Tables, createsTables: Bool)
  /// Collected for the one transaction a migration records at its end.
  case migration(Locked<MigrationChangeLog>, model: ObjectModel)

  /// Records the `changes` of a write, inside its transaction; the token of the transaction appended,
  /// `nil` when collected.
  package func record(
    _ changes: [HistoryChange], on connection: Tables.Connection, author: String?, contextName: String?
  ) throws -> HistoryToken? {
    switch self {
    case .tables(let tables, let createsTables):
      if createsTables { try tables.createTables(on: connection) }
      return try tables.append(changes, on: connection, author: author, contextName: contextName)
    case .migration(let log, let model):
      log.withLock { $0.record(changes, model: model) }
      return nil
    }
  }
}
