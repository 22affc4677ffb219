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

/// The history tables of one SQLite store (``SQLiteHistory``), for the shared `SQLHistoryRecorder`.
struct SQLiteHistoryTables: SQLHistoryTables {
  let storeIdentifier: String

  func createTables(on connection: SQLiteConnection) throws { try SQLiteHistory.createTables(connection) }

  func append(
    _ changes: [HistoryChange], on connection: SQLiteConnection, author: String?, contextName: String?
  ) throws -> HistoryToken {
    try SQLiteHistory.append(connection, changes, author: author, contextName: contextName, storeIdentifier: storeIdentifier)
  }
}

/// An SQLite store as the shared entry points (`SQLStore`) see it.
struct SQLiteStoreCore: SQLStore {
  typealias Operation = SaveOperation
  let store: SQLiteStore

  var identifier: String { store.identifier }
  var options: StoreOptions { store.options }
  var schema: SQLiteSchema { store.schema }
  var location: String { store.path }
  var isBoundToMigration: Bool { store.isBoundToMigration }
  var broadcaster: ChangeBroadcaster { store.broadcaster }
  var historyRecorder: SQLHistoryRecorder<SQLiteHistoryTables>? { store.historyRecorder }
  func checkOpen() throws { try store.checkOpen() }
  func checkEmpty(_ entities: [String], on connection: SQLiteConnection) throws {
    try store.checkEmpty(entities, on: connection)
  }

  /// `body` in one `BEGIN IMMEDIATE` transaction on the writer; its change is yielded under the write
  /// lock, which keeps notifications in commit order.
  func commit<R: Sendable>(_ body: (SQLiteConnection) throws -> (R, StoreChange?)) throws -> R {
    try store.write { connection in
      let (result, change) = try connection.transaction { try body(connection) }
      if let change { store.broadcaster.yield(change) }
      return result
    }
  }
}
