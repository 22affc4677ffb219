import Foundation
import StrataStoreKit

/// What a migration of an SQL store works from, checked before anything is written.
package struct SQLMigrationInputs<Schema: SQLSchemaDescription> {
  /// The last step's destination model, the one the store is reopened with.
  package let destination: ObjectModel
  /// The layout of each step's destination model.
  package let schemas: [Schema]
  /// Where the custom stages' writes are collected, when the store tracks history.
  package let log: Locked<MigrationChangeLog>?
}

extension SQLStore {
  /// Checks that the store can be migrated along `steps` (`kind` names the store in messages: `the SQLite
  /// store`) and lays out each step's destination.
  ///
  /// - Throws: `.misuse` for a stage's store, steps that do not chain from the store's model or a
  ///   hierarchy change the backend cannot make, a closed store; `.readOnly`.
  package func migrationInputs(_ steps: [MigrationStep], kind: String) throws -> SQLMigrationInputs<Schema> {
    if store.isBoundToMigration { throw StoreError(.misuse, "a migration stage cannot migrate the store it is handed") }
    let last = try MigrationStep.checkChain(steps, from: store.model, store: "\(kind) \(location)")
    for step in steps { _ = try HierarchyMigration(step.migration, store: "\(kind) \(location)") }
    try store.checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    return SQLMigrationInputs(
      destination: last.migration.destination, schemas: try steps.map { try layout(of: $0.migration.destination) },
      log: options.tracksHistory ? Locked(MigrationChangeLog()) : nil)
  }

  /// Runs `steps` inside the migration's transaction on `connection` (see
  /// ``SQLLayout/runMigrationSteps(_:from:through:reporter:log:run:stage:)``), then stores the destination
  /// model in the metadata and, with history, appends the one transaction listing what the stages wrote.
  /// Returns the last layout.
  package func runMigration(
    _ steps: [MigrationStep], _ inputs: SQLMigrationInputs<Schema>, on connection: Connection, reporter: MigrationReporter
  ) throws -> Schema {
    let log = inputs.log
    let current = try SQLLayout.runMigrationSteps(
      steps, from: schema, through: inputs.schemas, reporter: reporter, log: log,
      run: { step, old, new in migrationRun(step.migration, old: old, new: new, on: connection) },
      stage: { try runStage($0, on: connection, model: $1, schema: $2, log: log) })
    let json = String(decoding: try inputs.destination.jsonData(), as: UTF8.self)
    let p = Schema.placeholder
    for (key, value) in [("model", json), ("model_fingerprint", inputs.destination.fingerprint)] {
      try connection.run(
        "INSERT INTO \(current.qualify(SQLLayout.metadataTable)) (\"key\", \"value\") VALUES (\(p(1)), \(p(2))) "
          + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = excluded.\"value\"",
        [Schema.encode(.string(key)), Schema.encode(.string(value))])
    }
    if let log {
      // One transaction, even an empty one: history readers learn that the schema changed.
      _ = try SQLHistoryRecorder.tables(historyTables, createsTables: true).record(
        log.withLock { $0.changes }, on: connection, author: MigrationStep.historyAuthor, contextName: nil)
    }
    return current
  }

  /// Runs a custom stage with a store on `model` bound to the migration's transaction on `connection`,
  /// then takes the store back: closing it waits for a call another thread may still be making, and
  /// every later call throws `.misuse`.
  private func runStage(
    _ stage: @Sendable (any PersistentStore) throws -> Void, on connection: Connection, model: ObjectModel,
    schema: Schema, log: Locked<MigrationChangeLog>?
  ) throws {
    let bound = boundStore(connection, model: model, schema: schema, log: log)
    do {
      try stage(bound)
    } catch {
      bound.close()
      throw error
    }
    bound.close()
    try checkAfterStage(connection)
  }
}
