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

/// A PostgreSQL store as the shared entry points (`SQLStore`) see it.
struct PostgresStoreCore: SQLStore {
  typealias Operation = SaveOperation
  let store: PostgresStore

  var schema: PostgresSchema { store.schema }
  var historyRecorder: SQLHistoryRecorder<PostgresHistoryTables>? { store.historyRecorder }
  var historyTables: PostgresHistoryTables { PostgresHistoryTables(schema: store.schema, storeIdentifier: store.identifier) }

  /// `body` in one transaction (retried on serialization failures), sending `NOTIFY` with a change; the
  /// change is yielded once committed. Unique constraints and foreign keys are deferred from `BEGIN`: a
  /// save checks them on its final state (`SaveOperation.checkConstraints(recomputed:)`).
  func commit<R: Sendable>(_ body: (PostgresConnection) throws -> (R, StoreChange?)) throws -> R {
    let bound = store.isBoundToMigration
    let (result, change) = try store.write(deferringConstraints: true) { connection in
      let outcome = try body(connection)
      if outcome.1 != nil, !bound { try store.notify(connection) }
      return outcome
    }
    if let change { store.broadcaster.yield(change) }
    return result
  }

  func readSnapshot<R: Sendable>(_ body: (PostgresConnection) throws -> R) throws -> R {
    try store.read(generation: nil) { connection in
      try connection.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ") { try body(connection) }
    }
  }

  func layout(of model: ObjectModel) throws -> PostgresSchema { try PostgresSchema(model: model, schema: schema.name) }

  func migrationRun(
    _ migration: ModelMigration, old: PostgresSchema, new: PostgresSchema, on connection: PostgresConnection
  ) -> PostgresMigration {
    PostgresMigration(migration: migration, old: old, new: new, storeIdentifier: store.identifier, connection: connection)
  }

  func boundStore(
    _ connection: PostgresConnection, model: ObjectModel, schema: PostgresSchema, log: Locked<MigrationChangeLog>?
  ) -> PostgresStore {
    PostgresStore(boundTo: connection, of: store, model: model, schema: schema, log: log)
  }

  func checkAfterStage(_ connection: PostgresConnection) throws {
    if connection.isTransactionFailed {
      throw StoreError(
        .io, "the migration of \(store.location) failed inside a custom stage: a statement failed and PostgreSQL rolled it back")
    }
    try connection.execute("SET CONSTRAINTS ALL IMMEDIATE")
  }
}
