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

  init(txn: LMDBTransaction, schema: LMDBSchema, storeIdentifier: String) {
    self.txn = txn
    self.schema = schema
    self.storeIdentifier = storeIdentifier
  }

  /// The stored snapshot of `id`; `nil` for temporary IDs, other stores' IDs and missing objects.
  func snapshot(for id: ObjectID) throws -> Snapshot? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey, let table = schema.tables[id.entityName]
    else { return nil }
    if let cached = cache[id] { return cached }
    let snapshot = try record(table, pk)
    cache[id] = snapshot
    return snapshot
  }

  /// Reads and decodes the record `pk` of `table` (uncached).
  func record(_ table: LMDBSchema.Table, _ pk: Int64) throws -> Snapshot? {
    try txn.get(table.records, primaryKey: pk) { bytes in
      try bytes.map {
        try RecordCodec.decode($0, primaryKey: pk, entity: table.entity, storeIdentifier: storeIdentifier)
      }
    }
  }

  /// Decodes the objects of `table` in primary-key order into `body` until it returns false;
  /// `remaining` is how many records follow the one handed over.
  func forEachRecord(_ table: LMDBSchema.Table, _ body: (consuming Snapshot, _ remaining: Int) throws -> Bool) throws {
    var remaining = try txn.entries(table.records)
    let decoder = RecordDecoder(entity: table.entity, storeIdentifier: storeIdentifier)
    try txn.withCursor(table.records) { cursor in
      var entry = try cursor.next(.first)
      while let (key, value) = entry {
        let pk = try KeyCoding.primaryKey(key)
        remaining = max(remaining - 1, 0)
        guard try body(try decoder.decode(value, primaryKey: pk), remaining) else { return }
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
    return try txn.primaryKeys(dbi, KeyCoding.primaryKeyBytes(pk)).map {
      ObjectID(entityName: relationship.destination, storeIdentifier: storeIdentifier, primaryKey: $0)
    }
  }
}
