import CLMDB
import Foundation
import StrataStoreKit

/// Reads objects and relationships from one LMDB transaction for the store and the shared evaluator.
/// Decoded snapshots are cached for the length of the transaction, so a key path such as
/// `director.name` over many films decodes each director once.
final class LMDBReader: EvaluationSource {
  let txn: LMDBTransaction
  let schema: LMDBSchema
  let storeIdentifier: String
  private var cache: [ObjectID: Snapshot?] = [:]
  /// Counts the records decoded in the task that sets it (tests; see ``RecordDecodeCounter``).
  @TaskLocal package static var decodeCounter: RecordDecodeCounter?

  init(txn: LMDBTransaction, schema: LMDBSchema, storeIdentifier: String) {
    self.txn = txn
    self.schema = schema
    self.storeIdentifier = storeIdentifier
  }

  /// The stored snapshot of `id`; `nil` for temporary IDs, other stores' IDs and missing objects.
  func snapshot(for id: ObjectID) throws -> Snapshot? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey, schema.tables[id.entityName] != nil else { return nil }
    let id = try concrete(id)
    guard let table = schema.tables[id.entityName] else { return nil }
    if let cached = cache[id] { return cached }
    let snapshot = try record(table, pk)
    cache[id] = snapshot
    return snapshot
  }

  /// The version of the record `pk` of `table`, `nil` when there is none; the values are not decoded.
  func version(_ table: LMDBSchema.Table, _ pk: Int64) throws -> Int64? {
    try txn.get(table.records, primaryKey: pk) { bytes in try bytes.map { try table.decoder.version($0, primaryKey: pk) } }
  }

  /// Reads and decodes the record `pk` of `table` (uncached).
  func record(_ table: LMDBSchema.Table, _ pk: Int64) throws -> Snapshot? {
    let snapshot = try txn.get(table.records, primaryKey: pk) { bytes in
      try bytes.map { try table.decoder.decode($0, primaryKey: pk) }
    }
    if snapshot != nil { Self.decodeCounter?.add() }
    guard let snapshot, !schema.model.inheritance.isEmpty else { return snapshot }
    return try resolvingReferences(snapshot)
  }

  /// `snapshot` with each to-one target whose destination has sub-entities named by the entity it was
  /// inserted as (records store the key alone; keys are unique across a hierarchy).
  func resolvingReferences(_ snapshot: Snapshot) throws -> Snapshot {
    let inheritance = schema.model.inheritance
    guard let entity = schema.tables[snapshot.objectID.entityName]?.entity else { return snapshot }
    var snapshot = snapshot
    for (index, rel) in entity.toOneRelationships.enumerated()
    where index < snapshot.toOne.count && inheritance.hasSubentities(rel.destination) {
      if let target = snapshot.toOne[index] { snapshot.toOne[index] = try concrete(target) }
    }
    return snapshot
  }

  /// The record `pk` of `table`'s entity, or, in a hierarchy, of any entity of it (a uniqueness
  /// constraint's index holds the keys of every sub-entity of the entity that declares it).
  func recordInHierarchy(_ table: LMDBSchema.Table, _ pk: Int64) throws -> Snapshot? {
    if let found = try record(table, pk) { return found }
    let inheritance = schema.model.inheritance
    guard inheritance.isInHierarchy(table.name) else { return nil }
    for name in inheritance.entityAndDescendants(inheritance.root(of: table.name)) where name != table.name {
      if let other = schema.tables[name], let found = try record(other, pk) { return found }
    }
    return nil
  }

  /// `id` named by the entity its object was inserted as, when its entity has sub-entities.
  func concrete(_ id: ObjectID) throws -> ObjectID {
    guard let pk = id.primaryKey, schema.model.inheritance.hasSubentities(id.entityName) else { return id }
    for name in schema.model.inheritance.entityAndDescendants(id.entityName) {
      guard let table = schema.tables[name] else { continue }
      if try txn.get(table.records, primaryKey: pk, { $0 != nil }) {
        return ObjectID(entityName: name, storeIdentifier: storeIdentifier, primaryKey: pk)
      }
    }
    return id
  }

  /// Decodes the objects of `table` in primary-key order into `body` until it returns false;
  /// `remaining` is how many records follow the one handed over.
  func forEachRecord(_ table: LMDBSchema.Table, _ body: (consuming Snapshot, _ remaining: Int) throws -> Bool) throws {
    var remaining = try txn.entries(table.records)
    let decoder = table.decoder
    let inheritance = schema.model.inheritance
    let resolves = table.entity.toOneRelationships.contains { inheritance.hasSubentities($0.destination) }
    var tally = MapReadTally(txn)
    defer { tally.flush() }
    let counter = Self.decodeCounter
    try txn.withCursor(table.records) { cursor in
      var entry = try cursor.next(.first)
      while let (key, value) = entry {
        tally.add(key, value)
        let pk = try KeyCoding.primaryKey(key)
        remaining = max(remaining - 1, 0)
        counter?.add()
        var snapshot = try decoder.decode(value, primaryKey: pk)
        if resolves { snapshot = try resolvingReferences(snapshot) }
        // Moved, not copied: a copy retained the snapshot's arrays for the call and released them after.
        guard try body(consume snapshot, remaining) else { return }
        entry = try cursor.next(.next)
      }
    }
  }

  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return [] }
    if !relationship.isToMany {
      guard let entity = schema.tables[id.entityName]?.entity, let index = entity.toOneIndex(named: relationship.name),
        let snapshot = try snapshot(for: id), index < snapshot.toOne.count, let target = snapshot.toOne[index]
      else { return [] }
      return [target]
    }
    guard let storage = schema.toManyStorage(id.entityName, relationship) else { return [] }
    let dbi: MDB_dbi
    switch storage {
    case .references(let references): dbi = references
    case .links(let links): dbi = links
    }
    let keys = try txn.primaryKeys(dbi, KeyCoding.primaryKeyBytes(pk))
    let members: [ObjectID]
    if let first = keys.first {
      // One ID interned for the destination, the others made from it (interning looks the entity and
      // store up under a lock); only a destination with sub-entities needs each target's own entity.
      let template = ObjectID(entityName: relationship.destination, storeIdentifier: storeIdentifier, primaryKey: first)
      if schema.model.inheritance.hasSubentities(relationship.destination) {
        members = try keys.map { try concrete(template.withPrimaryKey($0)) }
      } else {
        members = keys.map { template.withPrimaryKey($0) }
      }
    } else {
      members = []
    }
    guard let orderDBI = schema.orderDatabase(id.entityName, relationship) else { return members }
    return OrderedListChange.arrange(members, by: try orderedKeys(orderDBI, pk))
  }

  /// The target keys an ordered relationship's list record holds for `pk` (empty without one).
  func orderedKeys(_ dbi: MDB_dbi, _ pk: Int64) throws -> [Int64] {
    try txn.get(dbi, primaryKey: pk) { bytes -> [Int64] in
      guard let bytes else { return [] }
      guard bytes.count % 8 == 0 else {
        throw StoreError(.corrupted, "an ordered-list record of \(bytes.count) bytes is damaged")
      }
      return try stride(from: 0, to: bytes.count, by: 8).map {
        try KeyCoding.primaryKey(UnsafeRawBufferPointer(rebasing: bytes[$0..<($0 + 8)]))
      }
    }
  }
}
