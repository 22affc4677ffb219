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

/// Where an SQL backend keeps persistent history (`strata_history_transaction`, `strata_history_change`)
/// and how it appends a transaction, for ``SQLHistoryRecorder``.
package protocol SQLHistoryTables: Sendable {
  associatedtype Connection: SQLConnection

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
