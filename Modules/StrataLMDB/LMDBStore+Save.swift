import CLMDB
import Foundation
import StrataStoreKit

extension LMDBStore {
  /// Applies a change set in one LMDB write transaction, all or nothing.
  ///
  /// ```swift
  /// let movie = ObjectID.makeTemporary(entityName: "Movie")
  /// let result = try store.save(ChangeSet(inserted: [
  ///   ObjectChange(objectID: movie, attributes: ["Heat", .int(1995)], toOne: [nil])
  /// ]))
  /// let saved = result.permanentIDs[movie]   // strata://…/Movie/p1
  /// ```
  ///
  /// Inserts get version 1 and the next primary key of their entity (`strata.counters`: keys are never
  /// reused); a permanent ID given for an insert keeps its key. Updates increment the version. Deleting
  /// an object sets every to-one reference to it to nil and removes its join-table links. Uniqueness is
  /// judged on the state the whole save produces. Derived attributes are computed inside the transaction,
  /// of the written objects and of those whose derivations read them (``DerivedRecomputation``). When the
  /// map fills up, the save is retried on a larger map.
  ///
  /// - Throws: `.optimisticLockConflict` listing every update or delete whose expected version differs
  ///   from the stored one (or whose object is gone); `.constraintConflict` listing every uniqueness
  ///   clash with both objects; `.validation` for a value of the wrong type or a reference to the wrong
  ///   entity; `.misuse` for a malformed change set or a closed store; `.readOnly`; `.io`. After any
  ///   error the environment is exactly as before.
  public func save(_ changes: ChangeSet) throws -> SaveResult {
    try checkOpen()
    if changes.isEmpty { return SaveResult() }
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    let scope = self.scope
    let history = options.tracksHistory ? schema.history : nil
    saveLock.lock()
    defer { saveLock.unlock() }
    let outcome: (result: SaveResult, change: StoreChange, transactionID: Int)
    do {
      let written = changes.inserted.count + changes.updated.count
      if written >= LMDBWriteEstimate.threshold {
        let objects = changes.inserted.count >= changes.updated.count ? changes.inserted : changes.updated
        let sample = LMDBWriteEstimate.samplePositions(objects.count).map { objects[$0].attributes }
        try environment.reserve(extraBytes: LMDBWriteEstimate.bytes(count: written, sample: sample))
      }
      outcome = try environment.write { txn in
        var saved = try scope.save(changes, in: txn, recordsHistory: history != nil)
        if let history {
          let token = try LMDBHistory.append(
            txn, scope.schema, history, saved.history, author: changes.author, contextName: changes.contextName,
            storeIdentifier: scope.storeIdentifier)
          saved.result.historyToken = token
          saved.change.historyToken = token
        }
        return (saved.result, saved.change, mdb_txn_id(txn.txn))
      }
    } catch let error as LMDBError {
      throw error.storeError(path: path)
    }
    announce(outcome.change, transactionID: outcome.transactionID)
    return outcome.result
  }
}

/// What a save wrote: its result, its announcement and — when asked for — the changes history records.
struct LMDBSaved {
  var result: SaveResult
  var change: StoreChange
  var history: [HistoryChange]
}

extension LMDBScope {
  /// Applies `changes` inside `txn` (``LMDBSaveOperation``); with `recordsHistory`, also works out the
  /// changes a history transaction lists (the caller appends it, or collects them).
  func save(_ changes: ChangeSet, in txn: LMDBTransaction, recordsHistory: Bool) throws -> LMDBSaved {
    // Inside the write transaction, which no other process can hold at once.
    for entity in changes.requiredEmptyEntities {
      for name in schema.model.inheritance.entityAndDescendants(entity) {
        if let table = schema.tables[name], try txn.entries(table.records) > 0 { throw StoreError.storeNotEmpty(entity) }
      }
    }
    var operation = LMDBSaveOperation(
      txn: txn, schema: schema, storeIdentifier: storeIdentifier, maxKeySize: maxKeySize, changes: changes)
    let (result, change) = try operation.apply()
    let history =
      recordsHistory
      ? HistoryLog.changes(
        of: change, changeSet: changes, tombstones: operation.tombstones, recomputed: operation.recomputed, model: model)
      : []
    return LMDBSaved(result: result, change: change, history: history)
  }
}

/// The work of one save, inside its write transaction.
struct LMDBSaveOperation {
  let txn: LMDBTransaction
  let schema: LMDBSchema
  let storeIdentifier: String
  let maxKeySize: Int
  let changes: ChangeSet
  let reader: LMDBReader

  /// The permanent IDs of `changes.inserted`, in order.
  private var insertedIDs: [ObjectID] = []
  /// The ID the context knows each inserted object by → its permanent ID, built only when needed: to
  /// resolve a reference to a temporary ID, or to find an object inserted twice once an insert's ID does
  /// not follow the one before (a permanent ID, or temporary IDs out of order). A save of new objects
  /// that name no unsaved object keeps `insertedIDs` alone.
  private var idLookup: [ObjectID: ObjectID]?
  /// The new version of each written object, by permanent ID.
  private var versions: [ObjectID: Int64] = [:]
  /// Written objects whose values were converted on the way in (their stored state differs from what was sent).
  private var converted = Set<ObjectID>()
  /// The last primary key assigned per entity, read from `strata.counters` once per save.
  private var counters: [String: Int64] = [:]
  /// Objects whose to-one references to deleted objects were cleared, in the order they were cleared.
  private var cleared: [ObjectID] = []
  private let buffer = RecordBuffer()
  /// The values history keeps of deleted objects (those with attributes marked to be kept), by ID.
  private(set) var tombstones: [ObjectID: [String: Value]] = [:]
  /// The snapshots whose derived attributes the save recomputed (history names the ones that changed).
  private(set) var recomputed: [Snapshot] = []

  init(txn: LMDBTransaction, schema: LMDBSchema, storeIdentifier: String, maxKeySize: Int, changes: ChangeSet) {
    self.txn = txn
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.maxKeySize = maxKeySize
    self.changes = changes
    self.reader = LMDBReader(txn: txn, schema: schema, storeIdentifier: storeIdentifier)
    versions.reserveCapacity(changes.updated.count)
  }

  mutating func apply() throws -> (SaveResult, StoreChange) {
    try assignPermanentIDs()
    try checkReferences()
    try OptimisticLocking.check(changes, model: schema.model, storedVersion: { id in try storedVersion(id) }) { id in
      try stored(id)
    }
    var derived = DerivedRecomputation(model: schema.model, changes: changes)
    try derived.noteRelatedObjects(before: LMDBReader(txn: txn, schema: schema, storeIdentifier: storeIdentifier))
    let deleted = try deleteRecords()
    // The updates written; the inserts written are `insertedIDs` (not copied into a list of 100,000 more).
    var written: [ObjectID] = []
    written.reserveCapacity(changes.updated.count)
    for change in changes.updated where !deleted.contains(change.objectID) {
      try update(change)
      written.append(change.objectID)
    }
    try insertAll()
    if written.isEmpty {
      written = insertedIDs
    } else {
      written += insertedIDs
    }
    for link in changes.linkChanges { try apply(link) }
    for list in changes.orderedLists { try apply(list) }
    try clearReferences(to: deleted)
    let recomputed = try writeDerivedAttributes(&derived)
    self.recomputed = recomputed
    let recomputedIDs = Set(recomputed.map(\.objectID))
    if recomputed.isEmpty {
      try checkUniqueness(written)
    } else {
      let writtenSet = Set(written)
      try checkUniqueness(written + recomputed.map(\.objectID).filter { !writtenSet.contains($0) })
    }
    var (result, change) = try results(deleted: deleted, recomputed: recomputedIDs)
    derived.report(recomputed, into: &result, change: &change)
    return (result, change)
  }

  private func stored(_ id: ObjectID) throws -> Snapshot? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey, let table = schema.tables[id.entityName] else {
      return nil
    }
    return try reader.record(table, pk)
  }

  private func storedVersion(_ id: ObjectID) throws -> Int64? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey, let table = schema.tables[id.entityName] else {
      return nil
    }
    return try reader.version(table, pk)
  }

  // MARK: Checks

  /// Refuses references a change set cannot make before anything is written: to a temporary ID it does
  /// not insert, or through an update of an object that is not saved here. (Inserts are checked as their
  /// keys are handed out, by ``assignPermanentIDs()``.)
  private mutating func checkReferences() throws {
    var table: (first: ObjectID, table: LMDBSchema.Table)?
    for list in [changes.inserted, changes.updated] {
      for i in list.indices {
        let id = list[i].objectID
        if table?.first.hasSameEntityAndStore(as: id) != true { table = (id, try entityTable(id)) }
        guard let table = table?.table, !table.references.isEmpty else { continue }
        for (r, target) in list[i].toOne.enumerated() where target?.isTemporary == true && r < table.references.count {
          try checkReference(target, table.entity.name, table.entity.toOneRelationships[r].name)
        }
      }
    }
    for change in changes.updated where change.objectID.isTemporary || change.objectID.storeIdentifier != storeIdentifier {
      throw StoreError(
        .misuse, "cannot update \(change.objectID): it is not a saved object of this store", entity: change.objectID.entityName)
    }
    for link in changes.linkChanges {
      try checkReference(link.source, link.entityName, link.relationship)
      try checkReference(link.target, link.entityName, link.relationship)
    }
  }

  private mutating func checkReference(_ target: ObjectID?, _ entity: String, _ key: String) throws {
    guard let target, target.isTemporary, permanentID(of: target) == nil else { return }
    throw StoreError(
      .misuse, "\(entity).\(key) points at \(target), which is neither saved nor inserted by this save",
      entity: entity, key: key, value: .objectID(target))
  }

  private func entityTable(_ id: ObjectID) throws -> LMDBSchema.Table {
    guard let table = schema.tables[id.entityName] else {
      throw StoreError(.notFound, "\(id) names unknown entity '\(id.entityName)'", entity: id.entityName)
    }
    return table
  }

  // MARK: Keys

  /// The permanent IDs of the inserted objects by the IDs the change set gave them (built when first
  /// needed: see `idLookup`).
  var permanentIDs: [ObjectID: ObjectID] {
    idLookup ?? lookup(ofFirst: insertedIDs.count)
  }

  /// ``permanentIDs``, kept for the rest of the save.
  mutating func keptPermanentIDs() -> [ObjectID: ObjectID] {
    if idLookup == nil { idLookup = lookup(ofFirst: insertedIDs.count) }
    return idLookup ?? [:]
  }

  /// The permanent ID of the object the change set inserts as `id`, if it does.
  mutating func permanentID(of id: ObjectID) -> ObjectID? {
    if idLookup == nil { idLookup = lookup(ofFirst: insertedIDs.count) }
    return idLookup?[id]
  }

  /// The first `count` inserts' IDs → their permanent IDs (which `insertedIDs` lists so far).
  private func lookup(ofFirst count: Int) -> [ObjectID: ObjectID] {
    var lookup: [ObjectID: ObjectID] = [:]
    lookup.reserveCapacity(changes.inserted.count)
    for i in 0..<count { lookup[changes.inserted[i].objectID] = insertedIDs[i] }
    return lookup
  }

  /// Hands out the primary keys of inserted objects, refusing an object inserted twice or one whose ID
  /// belongs to another store.
  private mutating func assignPermanentIDs() throws {
    insertedIDs.reserveCapacity(changes.inserted.count)
    // Inserts come grouped by entity: the counter and the ID scope are looked up once per run, and a run
    // is recognised by comparing scopes, not names.
    var run: (first: ObjectID, scope: ObjectID, last: Int64)?
    // While each insert's ID is a temporary one above the one before (a context numbers its objects as
    // it makes them), none can repeat: the lookup that finds one inserted twice starts at the first that
    // is not.
    var lastTemporary: UInt64 = 0
    for i in changes.inserted.indices {
      let id = changes.inserted[i].objectID
      if run?.first.hasSameEntityAndStore(as: id) != true {
        try schema.model.requireInsertable(id.entityName)
        if let run { counters[schema.model.inheritance.root(of: run.first.entityName)] = run.last }
        run = (
          id, ObjectID(entityName: id.entityName, storeIdentifier: storeIdentifier, primaryKey: 0),
          try lastPrimaryKey(id.entityName)
        )
      }
      guard var current = run else { continue }
      if !id.isTemporary, id.storeIdentifier != storeIdentifier {
        throw StoreError(.misuse, "cannot insert \(id): it belongs to another store", entity: id.entityName)
      }
      let pk: Int64
      if let given = id.primaryKey {
        guard try stored(id) == nil else {
          throw StoreError(.misuse, "cannot insert \(id): it is already saved", entity: id.entityName)
        }
        pk = given
      } else {
        pk = current.last + 1
      }
      current.last = max(current.last, pk)
      run = current
      let permanent = current.scope.withPrimaryKey(pk)
      if idLookup == nil, case .temporary(let n) = id.key, n > lastTemporary {
        lastTemporary = n
      } else {
        if idLookup == nil { idLookup = lookup(ofFirst: i) }
        if case .some(.some) = idLookup?.updateValue(permanent, forKey: id) {
          throw StoreError(.misuse, "\(id) is inserted twice in one change set", entity: id.entityName)
        }
      }
      insertedIDs.append(permanent)
    }
    if let run { counters[schema.model.inheritance.root(of: run.first.entityName)] = run.last }
    try storeCounters()
  }

  /// Writes the last primary key handed out per entity to `strata.counters`.
  func storeCounters() throws {
    for (entityName, last) in counters { try schema.setLastPrimaryKey(last, of: entityName, in: txn) }
  }

  /// Records that keys up to `last` of `entityName` are handed out (stored by ``storeCounters()``).
  mutating func noteLastPrimaryKey(_ last: Int64, of entityName: String) {
    counters[schema.model.inheritance.root(of: entityName)] = last
  }

  /// The last primary key handed out for `entityName`, read from `strata.counters` once per save.
  /// Keys are handed out per hierarchy (by its root entity's counter), so a key names one object of it.
  mutating func lastPrimaryKey(_ entityName: String) throws -> Int64 {
    let counter = schema.model.inheritance.root(of: entityName)
    if let last = counters[counter] { return last }
    let last = try schema.lastPrimaryKey(counter, in: txn) ?? 0
    counters[counter] = last
    return last
  }

  // MARK: Rows

  /// The stored attribute values and to-one targets of a change: values converted to their attribute's
  /// type, transient ones nil, temporary targets replaced by permanent IDs.
  private mutating func row(_ change: ObjectChange, _ table: LMDBSchema.Table) throws -> (AttributeValues, [ObjectID?]) {
    try row(change.objectID, change.attributes, change.toOne, table)
  }

  /// ``row(_:_:)`` of the change of `id` with `sentAttributes` and `sentToOne`, passed apart: the insert
  /// loop reads them where they lie instead of copying the whole change for the call.
  private mutating func row(
    _ id: ObjectID, _ sentAttributes: AttributeValues, _ sentToOne: [ObjectID?], _ table: LMDBSchema.Table
  ) throws -> (AttributeValues, [ObjectID?]) {
    // Checked here, where the values are read anyway, rather than in a pass of its own: a refusal still
    // aborts the transaction before anything is committed.
    if sentAttributes.count != table.types.count || sentToOne.count != table.references.count {
      try ObjectChange(objectID: id, attributes: sentAttributes, toOne: sentToOne).requireShape(
        attributeCount: table.types.count, toOneCount: table.references.count
      ) { table.entity }
    }
    // The usual change is stored as sent: its values are checked in place, and copied only from the
    // first one that must change (a transient value to nil, another to its attribute's type).
    @inline(__always)
    func isStoredAsSent(_ value: Value, _ type: AttributeType, isTransient: Bool) -> Bool {
      isTransient ? value.isNull : type.isCanonical(value)
    }
    var attributes = sentAttributes
    // Scanned through buffers (the shape is checked above, so every index is in range of all three): a
    // value is then checked where it lies, not copied into a closure and out again.
    let values = sentAttributes
    let firstToChange: Int? = table.types.withUnsafeBufferPointer { types in
      table.isTransient.withUnsafeBufferPointer { isTransient in
        for index in values.indices where !isStoredAsSent(values[index], types[index], isTransient: isTransient[index]) {
          return index
        }
        return nil
      }
    }
    for index in (firstToChange ?? attributes.endIndex)..<attributes.endIndex {
      let value = attributes[index]
      if isStoredAsSent(value, table.types[index], isTransient: table.isTransient[index]) { continue }
      if table.isTransient[index] {
        attributes[index] = .null
        continue
      }
      let type = table.types[index]
      guard let coerced = type.coerce(value) else {
        let entity = table.entity
        let attribute = entity.attributes[index]
        throw StoreError(
          .validation,
          "\(entity.name).\(attribute.name) is a \(attribute.type.rawValue) attribute and cannot hold the \(value.kindName) \(value)",
          entity: entity.name, key: attribute.name, value: value)
      }
      attributes[index] = coerced
      converted.insert(id)
    }
    return (attributes, try resolvedToOne(sentToOne, table))
  }

  /// The stored to-one targets of a change that sent `sentToOne`: each checked against its
  /// relationship's destination, temporary targets replaced by permanent IDs.
  private mutating func resolvedToOne(_ sentToOne: [ObjectID?], _ table: LMDBSchema.Table) throws -> [ObjectID?] {
    var toOne = sentToOne
    guard !toOne.isEmpty else { return toOne }
    let entity = table.entity
    for (index, rel) in entity.toOneRelationships.enumerated() {
      guard let target = toOne[index] else { continue }
      guard target.entityName == rel.destination || schema.model.isEntity(target.entityName, kindOf: rel.destination) else {
        throw StoreError(
          .validation, "\(entity.name).\(rel.name) must point at a \(rel.destination), not at \(target)",
          entity: entity.name, key: rel.name, value: .objectID(target))
      }
      if target.isTemporary, let permanent = permanentID(of: target) {
        toOne[index] = permanent
      } else if target.storeIdentifier != storeIdentifier || target.primaryKey == nil {
        throw StoreError(
          .validation, "\(entity.name).\(rel.name) points at \(target), which belongs to another store",
          entity: entity.name, key: rel.name, value: .objectID(target))
      }
    }
    return toOne
  }

  private mutating func update(_ change: ObjectChange) throws {
    let table = try entityTable(change.objectID)
    guard let pk = change.objectID.primaryKey, let old = try reader.record(table, pk) else { return }
    let (attributes, toOne) = try row(change, table)
    let version = old.version + 1
    try write(table, pk, version: version, attributes: attributes, toOne: toOne, replacing: old, flags: 0)
    versions[change.objectID] = version
  }

  private mutating func insertAll() throws {
    // The largest key appended per entity.
    var lastAppended: [String: Int64] = [:]
    // Constants, as is each run's table below: passed on in the loop without counting references.
    let buffer = self.buffer
    // Through a buffer, each change's parts passed apart: the change is not copied (its arrays retained
    // and released) for each insert.
    try changes.inserted.withUnsafeBufferPointer { inserted in
      var start = 0
      while start < inserted.count {
        // A run of inserts of one entity, with its table looked up once.
        let first = inserted[start].objectID
        let table = try entityTable(first)
        var end = start + 1
        while end < inserted.count && inserted[end].objectID.hasSameEntityAndStore(as: first) { end += 1 }
        var appendedUpTo = lastAppended[table.name] ?? .min
        for i in start..<end {
          guard let pk = insertedIDs[i].primaryKey else { continue }
          // Keys the counter hands out grow, so most inserts append to the end of the entity's tree.
          let canAppend = pk > appendedUpTo && inserted[i].objectID.isTemporary
          let flags = canAppend ? MDB_APPEND : MDB_NOOVERWRITE
          if canAppend { appendedUpTo = pk }
          // The usual insert is stored as sent: its values are checked while they are encoded, with no
          // pass or copy of their own. One that is not (wrong shape, a value to convert) takes `row`.
          if inserted[i].toOne.count == table.references.count,
            RecordCodec.encodeAttributesIfStoredAsSent(
              version: 1, attributes: inserted[i].attributes, table: table, into: buffer)
          {
            // A table without index entries has no references either (so no targets to resolve): the
            // change's arrays are not read again. Otherwise the targets follow, as in `row`, after the values.
            guard table.hasIndexEntries else {
              try putRecord(table, pk, flags: flags)
              continue
            }
            let toOne = try resolvedToOne(inserted[i].toOne, table)
            RecordCodec.appendToOne(toOne, to: buffer)
            try putEncoded(table, pk, attributes: inserted[i].attributes, toOne: toOne, replacing: nil, flags: flags)
            continue
          }
          let (attributes, toOne) = try row(inserted[i].objectID, inserted[i].attributes, inserted[i].toOne, table)
          try write(table, pk, version: 1, attributes: attributes, toOne: toOne, replacing: nil, flags: flags)
        }
        lastAppended[table.name] = appendedUpTo
        start = end
      }
    }
  }

  /// Stores a record and brings its index entries up to date (removing those of `old`).
  ///
  /// `uniqueKey` is the new key of the table's first uniqueness constraint, when the caller worked it out.
  mutating func write(
    _ table: LMDBSchema.Table, _ pk: Int64, version: Int64, attributes: AttributeValues, toOne: [ObjectID?],
    replacing old: Snapshot?,
    flags: Int32, uniqueKey: IndexKey? = nil
  ) throws {
    RecordCodec.encode(version: version, attributes: attributes, toOne: toOne, table: table, into: buffer)
    try putEncoded(table, pk, attributes: attributes, toOne: toOne, replacing: old, flags: flags, uniqueKey: uniqueKey)
  }

  /// Stores the record `buffer` holds, encoded from `attributes` and `toOne`, and brings its index
  /// entries up to date (``write(_:_:version:attributes:toOne:replacing:flags:uniqueKey:)``).
  private mutating func putEncoded(
    _ table: LMDBSchema.Table, _ pk: Int64, attributes: AttributeValues, toOne: [ObjectID?], replacing old: Snapshot?,
    flags: Int32, uniqueKey: IndexKey? = nil
  ) throws {
    try putRecord(table, pk, flags: flags)
    // A table without indexes or references has no entries to move.
    guard table.hasIndexEntries else { return }
    try reindex(table, pk, old: old.map { ($0.attributes, $0.toOne) }, new: (attributes, toOne), uniqueKey: uniqueKey)
  }

  /// Puts the record `buffer` holds under `pk` (with `flags`), nothing else. Mutating, though it changes
  /// nothing: called non-mutating from the insert loop, the whole operation was copied for each call.
  private mutating func putRecord(_ table: LMDBSchema.Table, _ pk: Int64, flags: Int32) throws {
    let stored = try withUnsafeBytes(of: KeyCoding.bigEndian(pk)) { key in
      try buffer.withUnsafeBytes { value in try txn.put(table.records, key, value, flags: flags) }
    }
    guard !stored else { return }
    // MDB_APPEND refuses a key that is not the largest: store it normally (the counter makes this rare).
    guard flags == MDB_APPEND else {
      throw StoreError(.misuse, "cannot insert \(table.entity.name) p\(pk): it is already saved", entity: table.entity.name)
    }
    try putRecord(table, pk, flags: MDB_NOOVERWRITE)
  }

  /// Moves the index entries of one object from its `old` values to its `new` ones (either may be nil).
  private func reindex(
    _ table: LMDBSchema.Table, _ pk: Int64, old: (AttributeValues, [ObjectID?])?, new: (AttributeValues, [ObjectID?])?,
    uniqueKey: IndexKey? = nil
  ) throws {
    for index in table.allIndexes {
      let before = old.flatMap { schema.indexKey(index, attributes: $0.0, toOne: $0.1, maxKeySize: maxKeySize) }
      let known = uniqueKey != nil && index === table.uniques.first ? uniqueKey : nil
      let after = known ?? new.flatMap { schema.indexKey(index, attributes: $0.0, toOne: $0.1, maxKeySize: maxKeySize) }
      if before?.bytes == after?.bytes { continue }
      if let before { try txn.deleteIndex(index.dbi, before.bytes, primaryKey: pk) }
      if let after { try txn.putIndex(index.dbi, after.bytes, primaryKey: pk) }
    }
    for (i, dbi) in table.references.enumerated() {
      let before = old.flatMap { i < $0.1.count ? $0.1[i]?.primaryKey : nil }
      let after = new.flatMap { i < $0.1.count ? $0.1[i]?.primaryKey : nil }
      if before == after { continue }
      if let before { try txn.deleteIndex(dbi, KeyCoding.primaryKeyBytes(before), primaryKey: pk) }
      if let after { try txn.putIndex(dbi, KeyCoding.primaryKeyBytes(after), primaryKey: pk) }
    }
  }

  // MARK: Deletes and links

  /// Removes the records of deleted objects and their index entries. Returns the IDs deleted.
  private mutating func deleteRecords() throws -> Set<ObjectID> {
    var deleted = Set<ObjectID>()
    for deletion in changes.deleted {
      let id = deletion.objectID
      let table = try entityTable(id)
      guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey, let old = try reader.record(table, pk) else {
        continue
      }
      if HistoryLog.recordsTombstone(id.entityName, model: schema.model) {
        tombstones[id] = HistoryLog.tombstone(of: old, model: schema.model)
      }
      try txn.delete(table.records, primaryKey: pk)
      try reindex(table, pk, old: (old.attributes, old.toOne), new: nil)
      deleted.insert(id)
    }
    return deleted
  }

  /// Writes one ordered list's record: the source's key → its targets' keys in order (one put, O(n)).
  private mutating func apply(_ list: OrderedListChange) throws {
    guard let rel = schema.model.entity(named: list.entityName)?.relationship(named: list.relationship),
      let dbi = schema.orderDatabase(list.entityName, rel)
    else {
      throw StoreError(
        .misuse, "\(list.entityName).\(list.relationship) is not an ordered to-many relationship of the model",
        entity: list.entityName, key: list.relationship)
    }
    let permanentIDs = keptPermanentIDs()
    func key(_ id: ObjectID) -> Int64? {
      permanentIDs[id]?.primaryKey ?? (id.storeIdentifier == storeIdentifier ? id.primaryKey : nil)
    }
    guard let source = key(list.source) else { return }
    var value: [UInt8] = []
    value.reserveCapacity(list.targets.count * 8)
    for target in list.targets {
      if let targetKey = key(target) { value += KeyCoding.primaryKeyBytes(targetKey) }
    }
    if value.isEmpty {
      try withUnsafeBytes(of: KeyCoding.bigEndian(source)) { _ = try txn.delete(dbi, $0) }
    } else {
      try txn.put(dbi, primaryKey: source, value)
    }
  }

  private mutating func apply(_ link: LinkChange) throws {
    guard let entity = schema.model.entity(named: link.entityName), let rel = entity.relationship(named: link.relationship),
      rel.isToMany
    else {
      throw StoreError(
        .misuse, "\(link.entityName).\(link.relationship) is not a to-many relationship of the model",
        entity: link.entityName, key: link.relationship)
    }
    // A to-many whose inverse is to-one is stored in the inverse's reference, carried by `toOne`.
    guard schema.model.usesJoinTable(rel) else { return }
    for (id, expected) in [(link.source, entity.name), (link.target, rel.destination)]
    where id.entityName != expected && !schema.model.isEntity(id.entityName, kindOf: expected) {
      throw StoreError(
        .validation, "\(entity.name).\(rel.name) links a \(entity.name) to a \(rel.destination), not \(id)",
        entity: entity.name, key: rel.name, value: .objectID(id))
    }
    let owner = schema.model.joinTableOwner(of: entity.name, rel)
    guard let tables = schema.links["\(owner.entity).\(owner.relationship)"] else { return }
    let permanentIDs = keptPermanentIDs()
    func resolved(_ id: ObjectID) -> ObjectID? {
      permanentIDs[id] ?? (id.storeIdentifier == storeIdentifier && id.primaryKey != nil ? id : nil)
    }
    guard let source = resolved(link.source), let target = resolved(link.target),
      let sourceKey = source.primaryKey, let targetKey = target.primaryKey
    else { return }
    let (ownerSource, ownerTarget) = owner.isFlipped ? (targetKey, sourceKey) : (sourceKey, targetKey)
    if link.isInsertion {
      // A link to an object that is not stored (deleted meanwhile) is dropped, as a delete drops its links.
      guard try stored(source) != nil, try stored(target) != nil else { return }
      try txn.putIndex(tables.forward, KeyCoding.primaryKeyBytes(ownerSource), primaryKey: ownerTarget)
      try txn.putIndex(tables.reverse, KeyCoding.primaryKeyBytes(ownerTarget), primaryKey: ownerSource)
    } else {
      try txn.deleteIndex(tables.forward, KeyCoding.primaryKeyBytes(ownerSource), primaryKey: ownerTarget)
      try txn.deleteIndex(tables.reverse, KeyCoding.primaryKeyBytes(ownerTarget), primaryKey: ownerSource)
    }
  }

  /// Sets every to-one reference to a deleted object to nil (the referring object keeps its version, as
  /// in the other stores) and removes the deleted objects' join-table links.
  private mutating func clearReferences(to deleted: Set<ObjectID>) throws {
    guard !deleted.isEmpty else { return }
    var deletedKeys: [String: [Int64]] = [:]
    for id in deleted {
      guard let pk = id.primaryKey else { continue }
      // A reference to a parent entity may name an object of any of its sub-entities.
      var entity: String? = id.entityName
      while let name = entity {
        deletedKeys[name, default: []].append(pk)
        entity = schema.model.inheritance.parent(of: name)
      }
    }
    for key in deletedKeys.keys { deletedKeys[key]?.sort() }
    for entity in schema.model.entities {
      let table = try schema.table(entity.name)
      var referring = Set<Int64>()
      for (index, rel) in entity.toOneRelationships.enumerated() {
        for target in deletedKeys[rel.destination] ?? [] {
          referring.formUnion(try txn.primaryKeys(table.references[index], KeyCoding.primaryKeyBytes(target)))
        }
      }
      for pk in referring.sorted() {
        guard let row = try reader.record(table, pk) else { continue }
        var toOne = row.toOne
        for (index, target) in toOne.enumerated() where target.map(deleted.contains) == true { toOne[index] = nil }
        // A reference to a parent entity whose target was just deleted no longer resolves to its entity.
        for (index, rel) in entity.toOneRelationships.enumerated()
        where index < toOne.count && schema.model.inheritance.hasSubentities(rel.destination) {
          if let pk = toOne[index]?.primaryKey, deletedKeys[rel.destination]?.contains(pk) == true { toOne[index] = nil }
        }
        RecordCodec.encode(version: row.version, attributes: row.attributes, toOne: toOne, table: table, into: buffer)
        try withUnsafeBytes(of: KeyCoding.bigEndian(pk)) { key in
          try buffer.withUnsafeBytes { value in _ = try txn.put(table.records, key, value) }
        }
        try reindex(table, pk, old: (row.attributes, row.toOne), new: (row.attributes, toOne))
        cleared.append(row.objectID)
      }
      for rel in entity.toManyRelationships where schema.model.usesJoinTable(rel) {
        guard let tables = schema.links["\(entity.name).\(rel.name)"] else { continue }
        for pk in deletedKeys[entity.name] ?? [] {
          for target in try txn.primaryKeys(tables.forward, KeyCoding.primaryKeyBytes(pk)) {
            try txn.deleteIndex(tables.reverse, KeyCoding.primaryKeyBytes(target), primaryKey: pk)
          }
          try KeyCoding.primaryKeyBytes(pk).withUnsafeBytes { _ = try txn.delete(tables.forward, $0) }
        }
        for pk in deletedKeys[rel.destination] ?? [] {
          for source in try txn.primaryKeys(tables.reverse, KeyCoding.primaryKeyBytes(pk)) {
            try txn.deleteIndex(tables.forward, KeyCoding.primaryKeyBytes(source), primaryKey: pk)
          }
          try KeyCoding.primaryKeyBytes(pk).withUnsafeBytes { _ = try txn.delete(tables.reverse, $0) }
        }
      }
    }
  }

  // MARK: Results

  /// The save's result and change announcement, as the memory store reports them.
  private func results(deleted: Set<ObjectID>, recomputed: Set<ObjectID>) throws -> (SaveResult, StoreChange) {
    var result = SaveResult()
    if let idLookup {
      result.permanentIDs =
        changes.inserted.allSatisfy(\.objectID.isTemporary) ? idLookup : idLookup.filter { $0.key.isTemporary }
      result.insertedIDs = insertedIDs
    } else {
      // Every insert had a temporary ID, each above the one before (`assignPermanentIDs`).
      result.listInsertedIDs(insertedIDs, of: changes.inserted)
    }
    result.versions = versions
    let clearedSet = Set(cleared)
    // Without deletes, the inserted IDs are announced as they are: shared, not copied one by one.
    let inserted = deleted.isEmpty ? insertedIDs : insertedIDs.filter { !deleted.contains($0) }
    let updated = changes.updated.map(\.objectID).filter { deleted.isEmpty || !deleted.contains($0) }
    // The stored snapshot of a written object is read only when the store may have changed it.
    if !converted.isEmpty || !clearedSet.isEmpty || !recomputed.isEmpty {
      for (list, isInsert) in [(changes.inserted, true), (changes.updated, false)] {
        for i in list.indices {
          let sentID = list[i].objectID
          let id = isInsert ? insertedIDs[i] : sentID
          guard deleted.isEmpty || !deleted.contains(id) else { continue }
          guard converted.contains(sentID) || clearedSet.contains(id) || recomputed.contains(id), let stored = try stored(id)
          else { continue }
          if stored != expected(sent: list[i], stored: stored) { result.storedSnapshots[id] = stored }
        }
      }
    }
    var change = StoreChange(storeIdentifier: storeIdentifier, inserted: inserted)
    change.updated = updated
    if !cleared.isEmpty {
      let written = Set(inserted + updated)
      change.updated += cleared.filter { !written.contains($0) && !deleted.contains($0) }
    }
    change.deleted = changes.deleted.map(\.objectID).filter { deleted.contains($0) }
    return (result, change)
  }

  /// What the store would hold for `sent` if it changed nothing: the snapshot the context already knows.
  private func expected(sent: ObjectChange, stored: Snapshot) -> Snapshot {
    guard let entity = schema.tables[stored.objectID.entityName]?.entity else { return stored }
    var expected = stored
    for (index, attribute) in entity.attributes.enumerated() where !attribute.isTransient && index < sent.attributes.count {
      expected.attributes[index] = sent.attributes[index]
    }
    // Without a lookup, `row` met no reference to a temporary ID (it builds one to resolve the first).
    for index in sent.toOne.indices where index < expected.toOne.count {
      expected.toOne[index] = sent.toOne[index].map { idLookup?[$0] ?? $0 }
    }
    return expected
  }
}
