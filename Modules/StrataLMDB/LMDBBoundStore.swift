import CLMDB
import Foundation
import StrataStoreKit

/// The store a migration hands a custom stage (``MigrationStep/willMigrate`` / ``MigrationStep/didMigrate``):
/// every read and write runs in the migration's own write transaction, through the same code as
/// ``LMDBStore``'s (``LMDBScope``), on the model of that point of the migration.
///
/// - Reads see everything the migration wrote so far; nothing is visible elsewhere until it commits.
/// - Each save and batch request runs in a nested transaction (`mdb_txn_begin` with the migration's as
///   parent): one that fails undoes only itself, so a stage may catch the error and go on. Primary keys
///   are handed out from the key counters as usual. Nothing is recorded in history per save: what the
///   stages write is collected (``MigrationChangeLog``) into the migration's one history transaction.
/// - A save that fills the map fails (`.io`) and makes the whole migration run again on a larger map,
///   whatever the stage does with the error: stages must compute what they write from what they read.
/// - History, query generations, change streams and migrating answer `.unsupported` (or nothing);
///   ``close()`` does nothing. Once the stage returns, every call throws `.misuse`.
///
/// Threads: liblmdb ties a write transaction to the thread that began it only through the environment's
/// writer lock, which that thread takes in `mdb_txn_begin` and releases in `mdb_txn_commit` or
/// `mdb_txn_abort` (the environment is opened with `MDB_NOTLS`, so no reader slot is tied to a thread
/// either). The migrating thread begins and ends the transaction and runs the stage itself; a context the
/// stage uses may call this store from its own queue while the stage waits for it, and such calls use the
/// transaction from that thread. They are serialized by `lock` (so two of them never overlap) and end
/// before the stage returns (``end()`` waits for the one in flight); they never enter the environment's
/// resize gate, which the migrating thread holds.
final class LMDBBoundStore: PersistentStore, @unchecked Sendable {
  let storeType = StoreType.lmdb
  let identifier: String
  let url: URL?
  let model: ObjectModel
  let options: StoreOptions
  private let scope: LMDBScope
  private let path: String
  private let log: Locked<MigrationChangeLog>?
  /// Guards the transaction and `isEnded`: one call at a time, from whichever thread.
  private let lock = NSLock()
  private let txn: LMDBTransaction
  private var isEnded = false
  private var filledMap = false

  /// A store on `scope`'s model over the migration's transaction `txn`, recording saves into `log`.
  init(scope: LMDBScope, txn: LMDBTransaction, url: URL?, path: String, options: StoreOptions, log: Locked<MigrationChangeLog>?) {
    self.scope = scope
    self.txn = txn
    self.url = url
    self.path = path
    self.options = options
    self.log = log
    identifier = scope.storeIdentifier
    model = scope.model
  }

  /// Ends the store when its stage returns (after the call in flight, if any).
  /// - Returns: whether a save filled the map (the migration must grow it and run again).
  func end() -> Bool {
    lock.withLock {
      isEnded = true
      return filledMap
    }
  }

  /// Runs `body` with the transaction, one call at a time; liblmdb's errors become ``StoreError``s.
  private func withTransaction<R>(_ body: (LMDBTransaction) throws -> R) throws -> R {
    try lock.withLock {
      guard !isEnded else {
        throw StoreError(
          .misuse, "the store a migration stage was handed is used after the stage returned (keep no reference to it)")
      }
      do {
        return try body(txn)
      } catch let error as LMDBError {
        guard error.isMapFull else { throw error.storeError(path: path) }
        filledMap = true
        throw StoreError(
          .io, "the LMDB store \(path) is full: the migration grows its map and runs again (\(error.operation))")
      }
    }
  }

  /// Runs a write in a transaction nested in the migration's: committed into it when `body` returns,
  /// undone alone when it throws. The history changes it returns go into the log once it is committed,
  /// still inside the lock, so that the log merges writes in the order they were made.
  private func write<R>(_ body: (LMDBTransaction) throws -> (R, [HistoryChange])) throws -> R {
    try withTransaction { txn in
      let (result, changes) = try txn.nested(body)
      log?.withLock { $0.record(changes, model: model) }
      return result
    }
  }

  private func refuseGeneration(_ generation: QueryGeneration?) throws {
    if generation != nil {
      throw StoreError(.misuse, "the store of a migration stage reads the migration's transaction, not a query generation")
    }
  }

  func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    try refuseGeneration(generation)
    let fetch = try LMDBFetch(request, scope: scope)
    return try withTransaction { txn in try fetch.run(txn) }
  }

  func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    try refuseGeneration(generation)
    return try withTransaction { txn in try scope.snapshots(for: ids, in: txn) }
  }

  func snapshot(for id: ObjectID, generation: QueryGeneration?) throws -> Snapshot? {
    try refuseGeneration(generation)
    return try withTransaction { txn in try scope.snapshot(for: id, in: txn) }
  }

  func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    try refuseGeneration(generation)
    let rel = try scope.relationship(relationship, of: id)
    return try withTransaction { txn in try scope.reader(txn).relatedObjectIDs(of: id, relationship: rel) }
  }

  func save(_ changes: ChangeSet) throws -> SaveResult {
    if changes.isEmpty { return SaveResult() }
    return try write { txn in
      let saved = try scope.save(changes, in: txn, recordsHistory: log != nil)
      return (saved.result, saved.history)
    }
  }

  func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    guard case .insert(let description) = request, let entity = try scope.directInsertEntity(description) else {
      // Through this store's fetches and saves, each save nested on its own.
      return try BatchExecution(store: self, author: author, contextName: contextName).execute(request)
    }
    let insert = description.materialized()
    let namesObjects = insert.resultType == .objectIDs || log != nil
    let written = try write { txn in
      try scope.directInsert(insert, of: entity, in: txn, namesObjects: namesObjects, recordsHistory: log != nil)
    }
    return BatchResult(
      count: written.count, objectIDs: written.ids, updatedObjectIDs: written.updated,
      unchangedObjectIDs: written.unchanged
    )
    .reported(as: insert.resultType)
  }

  func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    throw StoreError(.unsupported, "the store of a migration stage does not read persistent history")
  }

  func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    throw StoreError(.unsupported, "the store of a migration stage does not delete persistent history")
  }

  func currentHistoryToken() throws -> HistoryToken? {
    throw StoreError(.unsupported, "the store of a migration stage does not read persistent history")
  }

  func pinGeneration() throws -> QueryGeneration {
    throw StoreError(.unsupported, "the store of a migration stage has no query generations")
  }

  func unpin(_ generation: QueryGeneration) {}

  /// A stream that has already finished: nothing commits until the whole migration does.
  func changes() -> AsyncStream<StoreChange> {
    AsyncStream { $0.finish() }
  }

  /// Does nothing: the migration owns the transaction and the environment.
  func close() {}

  func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    throw StoreError(.misuse, "the store of a migration stage cannot migrate (it is part of a migration already)")
  }
}
