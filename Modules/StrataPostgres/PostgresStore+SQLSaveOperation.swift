import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresSchema: SQLSchemaDescription {
  static func placeholder(_ position: Int) -> String { "$\(position)" }
}

/// The statements the shared save steps (`SQLSaveOperation`: checks, writes, results, conflict reports)
/// run.
extension SaveOperation: SQLSaveOperation {
  /// The deferred constraints are checked on the save's final state: a written object that no stored
  /// row clashes with clashed with nothing.
  static var reportsUnmatchedRefusals: Bool { false }
  /// Join-table rows go with their objects by `ON DELETE CASCADE`.
  static var deletesJoinRows: Bool { false }

  func firstSnapshot(_ sql: String, _ bindings: [PGParameter], _ table: PostgresSchema.Table) throws -> Snapshot? {
    let found = try connection.query(sql, bindings)
    return found.count > 0 ? try found.snapshot(0, table, storeIdentifier: storeIdentifier) : nil
  }
}

extension PostgresConnection: SQLConnection {
  func query<R>(_ sql: String, _ bindings: [PGParameter], _ row: (PGRow) throws -> R) throws -> [R] {
    let rows = try query(sql, bindings)
    var result: [R] = []
    result.reserveCapacity(Int(rows.count))
    for index in 0..<rows.count { result.append(try row(PGRow(rows: rows, row: index))) }
    return result
  }

  static func isUniqueViolation(_ error: any Error) -> Bool { (error as? PostgresError)?.isUniqueViolation ?? false }
}

/// The history tables of one PostgreSQL store (``PostgresHistory``), for the shared `SQLHistoryRecorder`.
struct PostgresHistoryTables: SQLHistoryTables {
  let schema: PostgresSchema
  let storeIdentifier: String

  /// Made when the store opens (``PostgresHistory/prepare(_:_:tracksHistory:)``).
  func createTables(on connection: PostgresConnection) throws {}

  func append(
    _ changes: [HistoryChange], on connection: PostgresConnection, author: String?, contextName: String?
  ) throws -> HistoryToken {
    try PostgresHistory.record(
      changes, on: connection, schema: schema, storeIdentifier: storeIdentifier, author: author, contextName: contextName)
  }
}

/// A PostgreSQL store as the shared entry points (`SQLStore`) see it.
struct PostgresStoreCore: SQLStore {
  typealias Operation = SaveOperation
  let store: PostgresStore

  var identifier: String { store.identifier }
  var options: StoreOptions { store.options }
  var schema: PostgresSchema { store.schema }
  var location: String { store.location }
  var isBoundToMigration: Bool { store.isBoundToMigration }
  var broadcaster: ChangeBroadcaster { store.broadcaster }
  var historyRecorder: SQLHistoryRecorder<PostgresHistoryTables>? { store.historyRecorder }
  func checkOpen() throws { try store.checkOpen() }
  func checkEmpty(_ entities: [String], on connection: PostgresConnection) throws {
    try store.checkEmpty(entities, on: connection)
  }

  /// `body` in one transaction (retried on serialization failures), sending `NOTIFY` with a change; the
  /// change is yielded once committed.
  func commit<R: Sendable>(_ body: (PostgresConnection) throws -> (R, StoreChange?)) throws -> R {
    let bound = store.isBoundToMigration
    let (result, change) = try store.write { connection in
      let outcome = try body(connection)
      if outcome.1 != nil, !bound { try store.notify(connection) }
      return outcome
    }
    if let change { store.broadcaster.yield(change) }
    return result
  }
}
