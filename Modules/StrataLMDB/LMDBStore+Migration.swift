import CLMDB
import Foundation
import StrataStoreKit

extension LMDBStore {
  /// Migrates the environment along `steps` in one LMDB write transaction (see
  /// ``PersistentStore/migrated(along:reporting:)``) and returns the store opened on it with the last
  /// step's model; this one is closed.
  ///
  /// ```swift
  /// let split = MigrationStep(try ModelMigration(from: store.model, to: v2), didMigrate: { store in
  ///   // fetch, change and save through `store`: it reads and writes the migration's transaction
  /// })
  /// let migrated = try store.migrated(along: [split], reporting: { print($0.phase, $0.fractionCompleted) })
  /// ```
  ///
  /// Each step runs its `willMigrate` stage with a store on its source model bound to the transaction
  /// (``LMDBBoundStore``), then its structural change (``LMDBMigrationPlan``), then its `didMigrate`
  /// stage with a store on its destination model. The structural change rewrites what the new model
  /// stores differently and nothing else: records are re-encoded byte by byte (``RecordTranscoder``) in
  /// place, or copied when their entity is renamed; index, uniqueness and reference databases whose keys
  /// keep their values stay, the others are rebuilt from the new records (checking added uniqueness
  /// constraints); join tables are refilled from the old links only when their relationship changes;
  /// key counters follow renamed entities; databases the new model no longer has are deleted. Last, the
  /// model and its fingerprint are written to `strata.meta` and, with ``StoreOptions/tracksHistory``, one
  /// history transaction by ``MigrationStep/historyAuthor`` lists what the stages inserted, updated and
  /// deleted (``MigrationChangeLog``), under the last model's names — even when they wrote nothing.
  /// `store_id` and the earlier history stay, so tokens taken before stay valid.
  ///
  /// `progress` is called on the migrating thread at the start and end of every step and every 4096
  /// records rewritten, with fractions that never go back; the last one is 1. A map that fills up grows
  /// and the whole transaction runs again, stages included (they compute what they write from what they
  /// read); progress then stays where it was until the new run passes it.
  ///
  /// - Throws: `.misuse` when `steps` is empty, the first step does not start from this store's model, a
  ///   step does not start where the previous one ended, the store is closed, another store of this
  ///   process uses the same environment, or a stage calls this store rather than the one it is handed;
  ///   `.readOnly`; `.constraintConflict` listing the clashes of an added uniqueness constraint; what a
  ///   stage throws; `.io`. After any error the environment holds the old model and data, and this store
  ///   stays open with the old model.
  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    let last = try MigrationStep.checkChain(steps, from: model, store: "the LMDB store \(path)")
    for step in steps {
      _ = try HierarchyMigration(step.migration, store: "the LMDB store \(path)")
    }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    guard environment.users <= 1 else {
      // Their database handles would name databases the migration deletes or fills differently.
      throw StoreError(
        .misuse, "cannot migrate the LMDB store \(path) while other stores of this process have it open; close them first")
    }
    // Room for a copy of every page of the model's databases (records rewritten, indexes rebuilt), so
    // that the transaction rarely runs out of map and runs again.
    do {
      let handles = Array(schema.handles.values)
      let bytes = try environment.read { txn in try handles.reduce(0) { $0 + (try txn.bytes($1)) } }
      try environment.reserve(extraBytes: 2 * bytes)
    } catch let error as LMDBError {
      throw error.storeError(path: path)
    }
    let run = LMDBMigrationRun(
      steps: steps, scope: scope, history: options.tracksHistory ? schema.history : nil, url: url, path: path,
      options: options, reporter: MigrationReporter(report: progress, stepCount: steps.count))
    saveLock.lock()
    migratingThread.store(Self.currentThread, ordering: .releasing)
    do {
      try environment.write { txn in try run.run(txn) }
    } catch {
      migratingThread.store(0, ordering: .releasing)
      restoreHandles()
      saveLock.unlock()
      if let error = error as? LMDBError { throw error.storeError(path: path) }
      throw error
    }
    migratingThread.store(0, ordering: .releasing)
    let mapSize = environment.mapSize
    saveLock.unlock()
    close()
    return try LMDBStore(
      url: URL(fileURLWithPath: path), model: last.migration.destination, options: options, mapSize: mapSize)
  }

  /// What migrating along `migration` would do to each entity of its destination model, without
  /// opening a transaction (see ``LMDBMigrationPlan/storageChanges``): `.created` for a new entity,
  /// `.rewritten` when its records are re-encoded or copied under a new name, `.alteredInPlace` when its
  /// records stay but an index, uniqueness, reference or join-table database of it is built, refilled or
  /// dropped (one read of its records, none written), `.unchanged` when nothing of it is written (a
  /// delete rule or a validation rule changed, say).
  ///
  /// ```swift
  /// let changes = try store.storageChanges(for: try ModelMigration(from: store.model, to: appModel))
  /// ```
  ///
  /// - Throws: `.misuse` when `migration` does not start from this store's model.
  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    guard migration.source == model else {
      throw StoreError(.misuse, "the migration starts from another model than the LMDB store \(path) holds")
    }
    return LMDBMigrationPlan(migration).storageChanges
  }

  /// The calling thread, as ``migratingThread`` keeps it.
  static var currentThread: UInt { UInt(pthread_self()) }

  /// Refuses a call of this store from the thread that is migrating it (a stage that calls the store it
  /// migrates rather than the one it is handed), which would wait for the migration forever.
  func checkNotMigrating() throws {
    let thread = migratingThread.load(ordering: .acquiring)
    if thread != 0 && thread == Self.currentThread {
      throw StoreError(
        .misuse,
        "a migration stage called the LMDB store \(path) it migrates; it reads and writes through the store it is handed")
    }
  }

  /// After a failed migration: deleting a database closes its handle even when the transaction then
  /// aborts, so the old model's databases are opened again. They take back their handles (liblmdb gives
  /// the lowest free one, and they are opened in their handles' order); if one cannot, the store closes
  /// rather than read a database under another's handle.
  private func restoreHandles() {
    let names = LMDBSchema.databases(for: model).sorted { (schema.handles[$0.name] ?? 0) < (schema.handles[$1.name] ?? 0) }
    let reopened = try? environment.openDatabases(names, create: false)
    if reopened.map({ reopened in names.allSatisfy { reopened[$0.name] == schema.handles[$0.name] } }) != true { close() }
  }
}

/// A whole migration inside its write transaction: the steps in order with their stages, then the new
/// model in `strata.meta` and the migration's history transaction. Run again from the start when the map
/// grows.
struct LMDBMigrationRun {
  let steps: [MigrationStep]
  /// The store's scope, on the first step's source model.
  let scope: LMDBScope
  /// `strata.history`, when the store records history.
  let history: MDB_dbi?
  let url: URL?
  let path: String
  let options: StoreOptions
  let reporter: MigrationReporter

  func run(_ txn: LMDBTransaction) throws {
    let log = history == nil ? nil : Locked(MigrationChangeLog())
    // Handles opened by name in this transaction: a run before this one (on a map that was too small)
    // deleted databases, which closed their handles.
    var handles: [String: MDB_dbi] = [:]
    for (name, isDuplicateSorted) in LMDBSchema.databases(for: scope.model) {
      handles[name] = try txn.openDatabase(name, isDuplicateSorted: isDuplicateSorted, create: false)
    }
    var schema = try LMDBSchema(model: scope.model, handles: handles, storeIdentifier: scope.storeIdentifier)
    schema.history = history
    for (index, step) in steps.enumerated() {
      let plan = LMDBMigrationPlan(step.migration)
      let structure = LMDBMigrationStep(
        plan: plan, storeIdentifier: scope.storeIdentifier, maxKeySize: scope.maxKeySize, history: history)
      let stages = (step.willMigrate == nil ? 0 : 1) + (step.didMigrate == nil ? 0 : 1)
      let records = try structure.recordCount(txn)
      reporter.start(step: index, total: records + stages, phase: "step \(index + 1) of \(steps.count): starting")
      if let stage = step.willMigrate {
        try runStage(stage, schema: schema, txn: txn, log: log)
        reporter.advance("step \(index + 1) of \(steps.count): ran the stage before it")
      }
      let phase = "step \(index + 1) of \(steps.count): rewriting records"
      schema = try structure.run(txn) { reporter.advance(by: $0, phase) }
      log?.withLock { $0.carry(through: step.migration) }
      if let stage = step.didMigrate {
        try runStage(stage, schema: schema, txn: txn, log: log)
        reporter.advance("step \(index + 1) of \(steps.count): ran the stage after it")
      }
      reporter.finish("step \(index + 1) of \(steps.count): done")
    }
    let destination = schema.model
    let json = String(decoding: try destination.jsonData(), as: UTF8.self)
    try txn.put(schema.meta, Array("model".utf8), Array(json.utf8))
    try txn.put(schema.meta, Array("model_fingerprint".utf8), Array(destination.fingerprint.utf8))
    if let history, let log {
      // One transaction, even an empty one: history readers learn that the model changed.
      _ = try LMDBHistory.append(
        txn, schema, history, log.withLock { $0.changes }, author: MigrationStep.historyAuthor, contextName: nil,
        storeIdentifier: scope.storeIdentifier)
    }
  }

  /// Runs a custom stage on this thread with a store on `schema`'s model bound to `txn`.
  private func runStage(
    _ stage: @Sendable (any PersistentStore) throws -> Void, schema: LMDBSchema, txn: LMDBTransaction,
    log: Locked<MigrationChangeLog>?
  ) throws {
    let store = LMDBBoundStore(
      scope: LMDBScope(schema: schema, storeIdentifier: scope.storeIdentifier, maxKeySize: scope.maxKeySize), txn: txn,
      url: url, path: path, options: options, log: log)
    let outcome = Result { try stage(store) }
    // A save that filled the map leaves the migration to run again on a larger one, whatever the stage did.
    if store.end() { throw LMDBError(MDB_MAP_FULL, "a save of a migration stage") }
    try outcome.get()
  }
}
