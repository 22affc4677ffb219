import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteSchema: SQLSchemaDescription {
  static func placeholder(_ position: Int) -> String { "?" }
  func qualify(_ table: String) -> String { quote(table) }
}

/// The statements the shared save steps (`SQLSaveOperation`: checks, writes, results, conflict
/// reports) run.
extension SaveOperation: SQLSaveOperation {
  static var reportsUnmatchedRefusals: Bool { true }
  static var deletesJoinRows: Bool { true }

  func firstSnapshot(_ sql: String, _ bindings: [SQLValue], _ table: SQLiteSchema.Table) throws -> Snapshot? {
    try connection.query(sql, bindings) { try $0.snapshot(table, storeIdentifier: storeIdentifier) }.first
  }
}

extension SQLiteConnection: SQLConnection {
  static func isUniqueViolation(_ error: any Error) -> Bool { (error as? SQLiteError)?.isUniqueViolation ?? false }
}

/// An SQLite store as the shared entry points (`SQLStore`) see it.
struct SQLiteStoreCore: SQLStore {
  typealias Operation = SaveOperation
  let store: SQLiteStore

  var schema: SQLiteSchema { store.schema }
  var historyRecorder: SQLHistoryRecorder<SQLiteHistoryTables>? { store.historyRecorder }
  var historyTables: SQLiteHistoryTables { SQLiteHistoryTables(storeIdentifier: store.identifier) }

  /// `body` in one `BEGIN IMMEDIATE` transaction on the writer; its change is yielded under the write
  /// lock, which keeps notifications in commit order.
  func commit<R: Sendable>(_ body: (SQLiteConnection) throws -> (R, StoreChange?)) throws -> R {
    try store.write { connection in
      let (result, change) = try connection.transaction { try body(connection) }
      if let change { store.broadcaster.yield(change) }
      return result
    }
  }

  func readSnapshot<R: Sendable>(_ body: (SQLiteConnection) throws -> R) throws -> R {
    try store.read(generation: nil) { connection in
      try connection.execute("BEGIN")
      defer { try? connection.execute("COMMIT") }
      return try body(connection)
    }
  }

  func layout(of model: ObjectModel) throws -> SQLiteSchema { try SQLiteSchema(model: model) }

  func migrationRun(
    _ migration: ModelMigration, old: SQLiteSchema, new: SQLiteSchema, on connection: SQLiteConnection
  )
    -> SQLiteMigration
  {
    SQLiteMigration(migration: migration, old: old, new: new, storeIdentifier: store.identifier, connection: connection)
  }

  func boundStore(
    _ connection: SQLiteConnection, model: ObjectModel, schema: SQLiteSchema, log: Locked<MigrationChangeLog>?
  ) -> SQLiteStore {
    SQLiteStore(boundTo: connection, of: store, model: model, schema: schema, log: log)
  }

  func checkAfterStage(_ connection: SQLiteConnection) throws {
    guard connection.isInTransaction else {
      throw StoreError(.io, "the migration of \(store.path) was rolled back by SQLite after an error inside a custom stage")
    }
  }
}
