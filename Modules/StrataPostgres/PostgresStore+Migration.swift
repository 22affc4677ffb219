import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// Migrates the schema along `steps` (see ``PersistentStore/migrated(along:reporting:)``) in one
  /// transaction — PostgreSQL's DDL is transactional — then closes this store and returns the store
  /// reopened with the last step's destination model.
  ///
  /// The transaction first takes the schema's advisory lock, so two processes migrating the same store
  /// serialize: the second finds the store migrated (and returns it opened with the destination model)
  /// or, when it holds another model than this store's, fails with `.schemaMismatch` and changes
  /// nothing. Each step runs its `willMigrate` stage with a store on its source model, its structural
  /// change, then its `didMigrate` stage with a store on its destination model. The stages' stores run
  /// this store's fetch, save and batch code over the migration's connection (each save in a savepoint)
  /// and answer history, query generations and change streams with `.unsupported` or nothing.
  ///
  /// Tables change in place: `ADD`/`RENAME`/`DROP COLUMN`, `ALTER COLUMN TYPE … USING` for integer
  /// widenings and integers becoming doubles or decimals, `RENAME TO`; any other conversion (to text,
  /// for one) is computed by ``AttributeMapping/convert(_:)`` in Swift and written back in batches.
  /// Indexes, unique constraints and foreign keys that carry over unchanged are kept, the others dropped
  /// and created anew; a unique constraint the rows violate fails the migration with
  /// `.constraintConflict` listing every clash. With `tracksHistory` the migration appends one history
  /// transaction by ``MigrationStep/historyAuthor`` listing what the stages wrote, under the final
  /// model's names. `progress` hears of each step's start and end, each stage and each table.
  ///
  /// ```swift
  /// let split = MigrationStep(try ModelMigration(from: store.model, to: v2), didMigrate: { stage in
  ///   let people = try stage.fetch(FetchDescription(entityName: "Person"), generation: nil)
  ///   // … _ = try stage.save(changes)
  /// })
  /// let migrated = try store.migrated(along: [split], reporting: { print($0.fractionCompleted) })
  /// ```
  ///
  /// - Throws: `.misuse` when `steps` is empty, does not start from this store's model or does not chain,
  ///   and when the store is closed or is itself a stage's store; `.readOnly`; `.schemaMismatch` when
  ///   another process changed the stored model to one this migration does not lead to; what a stage
  ///   throws. On any error the schema is as it was and this store stays open.
  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    let core = PostgresStoreCore(store: self)
    let inputs = try core.migrationInputs(steps, kind: "the PostgreSQL store")
    guard let url else { throw StoreError(.misuse, "the store \(location) has no location to reopen") }
    let destination = inputs.destination
    try writeLock.withLock { _ in
      try pool.withConnection { connection in
        migratingThread.withLock { $0 = pthread_self() }
        defer { migratingThread.withLock { $0 = nil } }
        let reporter = MigrationReporter(report: progress, stepCount: steps.count)
        let done = try connection.transaction { () -> Bool in
          try connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.string("strata:" + schema.name)])
          let stored = try storedFingerprint(connection)
          if stored != model.fingerprint {
            if stored == destination.fingerprint { return true }
            throw StoreError(
              .schemaMismatch,
              "the store \(location) now holds model \(stored ?? "?"), written by another process; "
                + "this migration leads from \(model.fingerprint) to \(destination.fingerprint), so nothing was changed")
          }
          // Every constraint checked statement by statement: no deferred trigger event may stand in the
          // way of an ALTER TABLE.
          try connection.execute("SET CONSTRAINTS ALL IMMEDIATE")
          _ = try core.runMigration(steps, inputs, on: connection, reporter: reporter)
          try notify(connection)
          return false
        }
        if done { reporter.finishAll() }
        // No call may use the old layout once the new one is committed.
        closed.store(true, ordering: .releasing)
      }
    }
    releaseConnections()
    return try PostgresStore(url: url, model: destination, options: options, configuration: configuration)
  }

  /// The stored model's fingerprint, read inside the migration's transaction.
  private func storedFingerprint(_ connection: PostgresConnection) throws -> String? {
    let rows = try connection.query(
      "SELECT \"key\", \"value\" FROM \(schema.qualify(PostgresSchema.metadataTable)) WHERE \"key\" IN ('model', 'model_fingerprint')"
    )
    var values: [String: String] = [:]
    for row in 0..<rows.count { values[rows.text(row, 0)] = rows.text(row, 1) }
    if let fingerprint = values["model_fingerprint"] { return fingerprint }
    return try values["model"].map { try ObjectModel.decode(jsonData: Data($0.utf8)).fingerprint }
  }

  /// Closes the pool, the listening connection and the change streams of a store that was migrated.
  private func releaseConnections() {
    for slot in pinned.withLock({ pinned in
      let all = Array(pinned.values)
      pinned.removeAll()
      return all
    }) {
      slot.close()
    }
    stopWatching()
    pool.close()
    broadcaster.finish()
  }

  /// What migrating along `migration` does to each entity's table, from the plan alone (nothing is read
  /// or written): `.created` for a new entity, `.rewritten` when every row's values are converted (a
  /// column's type changes), `.alteredInPlace` when only columns, names, indexes, constraints or join
  /// tables change, `.unchanged` otherwise.
  ///
  /// ```swift
  /// let changes = try store.storageChanges(for: try ModelMigration(from: store.model, to: v2))   // ["Movie": .alteredInPlace]
  /// ```
  ///
  /// - Throws: `.misuse` when `migration.source` is not this store's model or the store is closed.
  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    try checkOpen()
    guard migration.source == model else {
      throw StoreError(.misuse, "the migration starts from another model than the PostgreSQL store \(location) holds")
    }
    let target = try PostgresSchema(model: migration.destination, schema: schema.name)
    let run = PostgresMigration(
      migration: migration, old: schema, new: target, storeIdentifier: identifier, connection: nil)
    try run.plan()
    return run.storageChanges()
  }
}
