import CLMDB
import Foundation
import StrataStoreKit

extension LMDBStore {
  /// Runs a batch request in one write transaction: inserts directly when it can (``directInsert(_:)``),
  /// the rest as one change set (``BatchExecution``).
  ///
  /// ```swift
  /// let result = try store.execute(.insert(BatchInsertDescription(entityName: "Studio", objects: [["name": "A24"]])))
  /// ```
  public func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    if case .insert(let insert) = request, !model.inheritance.isInHierarchy(insert.entityName),
      let result = try directInsert(insert, author: author, contextName: contextName)
    {
      return result
    }
    return try BatchExecution(store: self, author: author, contextName: contextName).execute(request)
  }

  /// Runs a batch insert directly in one write transaction: each checked row (``BatchInsertRow``) looks
  /// its key up in the uniqueness constraint's index and either updates that record (the given attributes
  /// over the stored ones; relationships kept; the version bumped once per batch) or is appended under the
  /// next primary key, with its index entries. A row whose key an earlier row of the batch wrote merges
  /// over it, as on the general path. A row that gives only the values its stored object holds writes
  /// nothing (no version bump, no history; `BatchResult.unchangedObjectIDs`). A refused row aborts the
  /// transaction: the environment is unchanged.
  /// With history on, the same transaction appends one history transaction (upserted objects updated with
  /// the attributes the batch's rows gave).
  ///
  /// Returns `nil` for what the general path must run: an entity whose derived attributes (its own or
  /// another entity's) the rows could change, or one with several uniqueness constraints or a constraint
  /// over a relationship.
  func directInsert(_ request: BatchInsertDescription, author: String?, contextName: String?) throws -> BatchResult? {
    let scope = self.scope
    guard let entity = try scope.directInsertEntity(request) else { return nil }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    // A full map makes the environment retry the write, which runs the rows again.
    let request = request.materialized()
    let history = options.tracksHistory ? schema.history : nil
    let namesObjects = request.resultType == .objectIDs || broadcaster.hasSubscribers || history != nil
    saveLock.lock()
    defer { saveLock.unlock() }
    let outcome: (written: LMDBBatchInsert.Written, transactionID: Int)
    do {
      if case .objects(let rows) = request.rows, rows.count >= LMDBWriteEstimate.threshold {
        let sample = LMDBWriteEstimate.samplePositions(rows.count).map { Array(rows[$0].values) }
        try environment.reserve(extraBytes: LMDBWriteEstimate.bytes(count: rows.count, sample: sample))
      }
      outcome = try environment.write { txn in
        var (written, changes) = try scope.directInsert(
          request, of: entity, in: txn, namesObjects: namesObjects, recordsHistory: history != nil)
        if let history, written.count > 0 {
          written.token = try LMDBHistory.append(
            txn, scope.schema, history, changes, author: author, contextName: contextName,
            storeIdentifier: scope.storeIdentifier)
        }
        return (written, mdb_txn_id(txn.txn))
      }
    } catch let error as LMDBError {
      throw error.storeError(path: path)
    }
    guard outcome.written.count > 0 else {
      return BatchResult(count: 0, unchangedObjectIDs: outcome.written.unchanged).reported(as: request.resultType)
    }
    let (ids, updated) = (outcome.written.ids, outcome.written.updated)
    let updatedSet = Set(updated)
    let token = outcome.written.token
    announce(
      StoreChange(
        storeIdentifier: identifier, historyToken: token,
        inserted: updated.isEmpty ? ids : ids.filter { !updatedSet.contains($0) },
        updated: updated),
      transactionID: outcome.transactionID)
    return BatchResult(
      count: outcome.written.count, objectIDs: ids, historyToken: token, updatedObjectIDs: updated,
      unchangedObjectIDs: outcome.written.unchanged
    )
    .reported(as: request.resultType)
  }
}

extension LMDBScope {
  /// The entity of a batch insert that runs directly (``LMDBStore/directInsert(_:author:contextName:)``);
  /// `nil` for one the general path must run.
  func directInsertEntity(_ request: BatchInsertDescription) throws -> EntityDescription? {
    let entity = try model.requireEntity(request.entityName)
    let settable = entity.attributes.filter { $0.isPersistent && $0.derivation == nil }.map(\.name)
    guard entity.uniquenessConstraints.count <= 1,
      entity.uniquenessConstraints.allSatisfy({ $0.allSatisfy { entity.attributeIndex(named: $0) != nil } }),
      !model.derivedAttributes.isAffected(byUpdating: settable, of: entity.name)
    else { return nil }
    return entity
  }

  /// Writes the rows of a (materialized) batch insert of `entity` inside `txn`; returns what was written
  /// and the changes a history transaction lists for it (upserted objects updated with the attributes
  /// the batch's rows gave, when `recordsHistory`). With `namesObjects` false, no IDs are collected
  /// (`recordsHistory` needs them).
  func directInsert(
    _ request: BatchInsertDescription, of entity: EntityDescription, in txn: LMDBTransaction, namesObjects: Bool,
    recordsHistory: Bool
  ) throws -> (LMDBBatchInsert.Written, [HistoryChange]) {
    var batch = try LMDBBatchInsert(
      txn: txn, schema: schema, entity: entity, storeIdentifier: storeIdentifier, maxKeySize: maxKeySize,
      namesObjects: namesObjects)
    var row = BatchInsertRow(rules: batch.rules)
    try request.forEachRow { index, dictionary in
      try row.reload(dictionary, index: index, rules: batch.rules)
      try batch.write(row)
    }
    let written = try batch.finish()
    guard recordsHistory, namesObjects, written.count > 0 else { return (written, []) }
    let updated = Set(written.updated)
    let changes = HistoryLog.changes(
      inserted: updated.isEmpty ? written.ids : written.ids.filter { !updated.contains($0) }, updated: written.updated,
      keys: batch.givenKeys)
    return (written, changes)
  }
}

/// The rows of one direct batch insert, written inside its transaction.
struct LMDBBatchInsert {
  /// How many objects were written (each once), and — when asked for — their IDs in the order rows first
  /// wrote them, and those of them that were stored before the batch.
  struct Written {
    var count = 0
    var ids: [ObjectID] = []
    var updated: [ObjectID] = []
    /// Stored objects whose rows gave only the values they hold (not written), when IDs are asked for.
    var unchanged: [ObjectID] = []
    /// The history token of the batch, when history is on.
    var token: HistoryToken?
  }

  let rules: BatchInsertRow.Rules
  private var operation: LMDBSaveOperation
  private let table: LMDBSchema.Table
  private let unique: LMDBSchema.Index?
  private let noLinks: [ObjectID?]
  private let scope: ObjectID
  private let namesObjects: Bool
  private var written = Written()
  /// The last primary key handed out before the batch: a key found above it is an object the batch inserted.
  private let lastStoredKey: Int64
  private var lastKey: Int64
  /// Stored objects an earlier row of the batch updated (their version is bumped once).
  private var updatedKeys = Set<Int64>()
  /// Stored objects rows named without changing a value, in row order (some a later row may change).
  private var unchangedKeys: [Int64] = []
  /// The attributes rows that updated a stored object gave (what history names as updated).
  private var given = Set<Int>()

  /// The names of the attributes upserting rows gave, in model order.
  var givenKeys: [String] { given.sorted().map { table.entity.attributes[$0].name } }

  init(
    txn: LMDBTransaction, schema: LMDBSchema, entity: EntityDescription, storeIdentifier: String, maxKeySize: Int,
    namesObjects: Bool
  ) throws {
    rules = BatchInsertRow.Rules(entity)
    operation = LMDBSaveOperation(
      txn: txn, schema: schema, storeIdentifier: storeIdentifier, maxKeySize: maxKeySize, changes: ChangeSet())
    table = try schema.table(entity.name)
    unique = table.uniques.first
    noLinks = [ObjectID?](repeating: nil, count: entity.toOneRelationships.count)
    scope = ObjectID(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: 0)
    self.namesObjects = namesObjects
    lastStoredKey = try operation.lastPrimaryKey(entity.name)
    lastKey = lastStoredKey
  }

  mutating func write(_ row: BatchInsertRow) throws {
    let key = uniqueKey(of: row)
    if let stored = try storedKey(key, of: row), let old = try operation.reader.record(table, stored) {
      // A row that gives only the values the object holds writes nothing.
      if row.given.allSatisfy({ old.attributes[$0] == row.values[$0] }) {
        if stored <= lastStoredKey && namesObjects { unchangedKeys.append(stored) }
        return
      }
      var attributes = old.attributes
      for position in row.given { attributes[position] = row.values[position] }
      given.formUnion(row.given)
      // One version step per batch for a stored object; none for an object this batch inserted.
      let isNew = stored > lastStoredKey
      let isFirstUpdate = !isNew && updatedKeys.insert(stored).inserted
      let version = isFirstUpdate ? old.version + 1 : old.version
      try operation.write(table, stored, version: version, attributes: attributes, toOne: old.toOne, replacing: old, flags: 0)
      guard isFirstUpdate else { return }
      written.count += 1
      if namesObjects {
        written.ids.append(scope.withPrimaryKey(stored))
        written.updated.append(scope.withPrimaryKey(stored))
      }
      return
    }
    lastKey += 1
    let pk = lastKey
    try operation.write(
      table, pk, version: 1, attributes: row.values, toOne: noLinks, replacing: nil, flags: MDB_APPEND, uniqueKey: key)
    written.count += 1
    if namesObjects { written.ids.append(scope.withPrimaryKey(pk)) }
  }

  /// Stores the key counter; returns what was written.
  mutating func finish() throws -> Written {
    if lastKey != lastStoredKey {
      operation.noteLastPrimaryKey(lastKey, of: table.entity.name)
      try operation.storeCounters()
    }
    var seen = Set<Int64>()
    for key in unchangedKeys where !updatedKeys.contains(key) && seen.insert(key).inserted {
      written.unchanged.append(scope.withPrimaryKey(key))
    }
    return written
  }

  /// The row's key in the uniqueness constraint's index; `nil` without a constraint or with a nil value.
  private func uniqueKey(of row: BatchInsertRow) -> IndexKey? {
    guard let unique else { return nil }
    return operation.schema.indexKey(unique, attributes: row.values, toOne: noLinks, maxKeySize: operation.maxKeySize)
  }

  /// The primary key of the stored object whose unique key (`key`) the row gives, if any.
  private func storedKey(_ key: IndexKey?, of row: BatchInsertRow) throws -> Int64? {
    guard let unique, let key else { return nil }
    if key.isExact {
      return try operation.txn.get(unique.dbi, key.bytes) { bytes in
        try bytes.map { try KeyCoding.primaryKey($0) }
      }
    }
    // A key cut to liblmdb's length limit: compare the full values of the candidates.
    let full = operation.schema.indexKey(unique, attributes: row.values, toOne: noLinks, maxKeySize: .max)
    for candidate in try operation.txn.primaryKeys(unique.dbi, key.bytes) {
      guard let record = try operation.reader.record(table, candidate) else { continue }
      let stored = operation.schema.indexKey(unique, attributes: record.attributes, toOne: record.toOne, maxKeySize: .max)
      if stored?.bytes == full?.bytes { return candidate }
    }
    return nil
  }
}
