import Foundation
import StrataStoreKit

/// A store of an SQL backend, as the shared entry points use it: its layout, its write transaction and
/// the save operation it runs. Each backend has one over its store (`SQLiteStoreCore`,
/// `PostgresStoreCore`, internal types: the stores are public, their layouts and connections are not);
/// a store keeps its connections, how it opens, and what its database does its own way (SQLite's WAL
/// file and lazily made history tables; PostgreSQL's schema, LISTEN/NOTIFY and pinned snapshots).
package protocol SQLStore {
  associatedtype Schema: SQLSchemaDescription
  associatedtype Connection: SQLConnection where Connection.Binding == Schema.Binding
  associatedtype HistoryTables: SQLHistoryTables where HistoryTables.Connection == Connection
  associatedtype Operation: SQLSaveOperation
  where Operation.Schema == Schema, Operation.Connection == Connection, Operation.HistoryTables == HistoryTables

  var identifier: String { get }
  var options: StoreOptions { get }
  var schema: Schema { get }
  /// The store's file or URI, as messages name it.
  var location: String { get }
  /// Whether this is the store a migration hands its custom stages.
  var isBoundToMigration: Bool { get }
  var broadcaster: ChangeBroadcaster { get }
  /// Where the history of a write goes: the history tables, the log of the migration a bound store
  /// writes in, or nowhere (`nil`).
  var historyRecorder: SQLHistoryRecorder<HistoryTables>? { get }

  /// Throws `.misuse` when the store is closed.
  func checkOpen() throws
  /// Runs `body` in one write transaction (a savepoint in a store bound to a migration) and, once it
  /// committed, announces the change `body` returns, in commit order (telling other stores too, where
  /// the database lets them listen); `nil` announces nothing.
  func commit<R: Sendable>(_ body: (Connection) throws -> (R, StoreChange?)) throws -> R
  /// Throws `StoreError.storeNotEmpty(_:)` when one of `entities` holds an object, read inside the write
  /// transaction so that no other writer can insert meanwhile.
  func checkEmpty(_ entities: [String], on connection: Connection) throws
}

extension SQLStore {
  /// Applies a change set in one transaction, all or nothing (see ``SQLSaveOperation/apply()``).
  package func saveChanges(_ changes: ChangeSet) throws -> SaveResult {
    try checkOpen()
    if changes.isEmpty { return SaveResult() }
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    let (schema, identifier, history) = (self.schema, self.identifier, historyRecorder)
    return try commit { connection -> (SaveResult, StoreChange?) in
      try checkEmpty(changes.requiredEmptyEntities, on: connection)
      var operation = Operation(
        connection: connection, schema: schema, storeIdentifier: identifier, changes: changes, history: history)
      let (result, change) = try operation.apply()
      return (result, change)
    }
  }

  /// The error for what a store bound to a migration's transaction does not do.
  package func unsupportedInMigration(_ what: String) -> StoreError {
    StoreError(
      .unsupported,
      "the store a migration stage is handed (on \(location)) has no \(what); use the store the migration returns")
  }
}
