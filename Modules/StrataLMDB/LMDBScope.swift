import CLMDB
import Foundation
import StrataStoreKit

/// What the store's reads and writes need besides a transaction: the schema (with its model and
/// database handles), the store's identifier and liblmdb's key limit.
///
/// Every read and write is written once against a scope and a transaction: ``LMDBStore`` runs them in
/// the transactions it begins, and the store a migration hands its custom stages (``LMDBBoundStore``)
/// in the migration's own write transaction.
///
/// A class, made once per store: copying the schema (the model's arrays, the tables) into every call cost
/// a few thousand instructions of retains and releases per fault.
final class LMDBScope: Sendable {
  let schema: LMDBSchema
  let storeIdentifier: String
  let maxKeySize: Int
  /// Each table's records and decoder, for ``snapshot(for:in:)``; empty when the model has sub-entities
  /// (their records may need the general path's reader).
  private let recordSources: [RecordSource]
  /// `recordSources`' templates, compared to find a fault's source: IDs count no references, so the
  /// search retains and releases no source it passes (only the one it finds).
  private let sourceTemplates: [ObjectID]

  /// Where the records of one entity are and how to decode them, with an ID of the entity in this store
  /// to recognise the entity's IDs by: comparing interned scopes is one comparison per table, where
  /// `schema.tables[id.entityName]` hashes the name and copies the whole table (a retain per field).
  private final class RecordSource: Sendable {
    let template: ObjectID
    let records: MDB_dbi
    let decoder: RecordDecoder

    init(_ table: LMDBSchema.Table, storeIdentifier: String) {
      template = ObjectID(entityName: table.name, storeIdentifier: storeIdentifier, primaryKey: 0)
      records = table.records
      decoder = table.decoder
    }

    /// The decoder's snapshot of a record of the table. A method of the source: `source.decoder.decode`
    /// in a loop copied the decoder out of the source (retaining each of its fields) for every record.
    func decode(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64) throws -> Snapshot {
      try decoder.decode(bytes, primaryKey: primaryKey)
    }
  }

  init(schema: LMDBSchema, storeIdentifier: String, maxKeySize: Int) {
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.maxKeySize = maxKeySize
    let recordSources =
      schema.model.inheritance.isEmpty ? schema.tables.values.map { RecordSource($0, storeIdentifier: storeIdentifier) } : []
    self.recordSources = recordSources
    sourceTemplates = recordSources.map(\.template)
  }

  var model: ObjectModel { schema.model }

  func reader(_ txn: LMDBTransaction) -> LMDBReader {
    LMDBReader(txn: txn, schema: schema, storeIdentifier: storeIdentifier)
  }

  /// The snapshots of the objects that exist among `ids` (temporary IDs and other stores' IDs skipped).
  /// Records decode straight from the map with their table's decoder; a reader (with its cache) is made
  /// only when to-one targets may need naming by sub-entity. A run of IDs of one entity looks its table
  /// up once. Several IDs are looked up through one cursor per table: liblmdb searches the leaf page the
  /// cursor is on when the next key is there, so nearby keys (a batch of a walk, a relationship's
  /// targets) skip the descent from the root that each `mdb_get` makes.
  func snapshots(for ids: [ObjectID], in txn: LMDBTransaction) throws -> [Snapshot] {
    if !recordSources.isEmpty && ids.count > 1 { return try sourcedSnapshots(for: ids, in: txn) }
    let reader = schema.model.inheritance.isEmpty ? nil : reader(txn)
    var result: [Snapshot] = []
    result.reserveCapacity(ids.count)
    var cursors: [(dbi: MDB_dbi, cursor: LMDBCursor)] = []
    defer { for entry in cursors { mdb_cursor_close(entry.cursor.cursor) } }
    func cursor(_ table: LMDBSchema.Table) throws -> LMDBCursor {
      if let open = cursors.first(where: { $0.dbi == table.records }) { return open.cursor }
      var opened: OpaquePointer?
      try check(mdb_cursor_open(txn.txn, table.records, &opened), "mdb_cursor_open")
      guard let opened else { throw LMDBError(EINVAL, "mdb_cursor_open") }
      cursors.append((table.records, LMDBCursor(cursor: opened)))
      return LMDBCursor(cursor: opened)
    }
    var tally = MapReadTally(txn)
    defer { tally.flush() }
    var last: (id: ObjectID, table: LMDBSchema.Table)?
    for id in ids {
      guard let pk = id.primaryKey else { continue }
      let table: LMDBSchema.Table
      if let last, id.hasSameEntityAndStore(as: last.id) {
        table = last.table
      } else {
        guard id.storeIdentifier == storeIdentifier, let found = schema.tables[id.entityName] else { continue }
        table = found
        last = (id, found)
      }
      let snapshot: Snapshot?
      if let reader {
        snapshot = try reader.record(table, pk)
      } else if ids.count == 1 {
        snapshot = try txn.get(table.records, primaryKey: pk) { bytes in
          try bytes.map { try table.decoder.decode($0, primaryKey: pk) }
        }
      } else {
        let cursor = try cursor(table)
        snapshot = try withUnsafeBytes(of: KeyCoding.bigEndian(pk)) { key in
          try cursor.seek(key, exact: true).map { entry in
            tally.add(entry.key, entry.value)
            return try table.decoder.decode(entry.value, primaryKey: pk)
          }
        }
      }
      if let snapshot { result.append(snapshot) }
    }
    return result
  }

  /// ``snapshots(for:in:)`` of a model without sub-entities: each run of IDs of one entity finds its
  /// ``RecordSource`` once (by interned scope, as ``snapshot(for:in:)`` does) and reads through one cursor
  /// per table, decoding with the source's decoder in place: copying a table or decoder per ID retained
  /// every field of its entity description.
  private func sourcedSnapshots(for ids: [ObjectID], in txn: LMDBTransaction) throws -> [Snapshot] {
    var result: [Snapshot] = []
    result.reserveCapacity(ids.count)
    var cursors: [(dbi: MDB_dbi, cursor: LMDBCursor)] = []
    defer { for entry in cursors { mdb_cursor_close(entry.cursor.cursor) } }
    var tally = MapReadTally(txn)
    defer { tally.flush() }
    var source: RecordSource?
    var cursor: LMDBCursor?
    /// The table and key the cursor of the current source was left on.
    var previous: (dbi: MDB_dbi, pk: Int64)?
    for id in ids {
      guard let pk = id.primaryKey else { continue }
      if source == nil || !id.hasSameEntityAndStore(as: source.unsafelyUnwrapped.template) {
        guard let index = sourceTemplates.firstIndex(where: { $0.hasSameEntityAndStore(as: id) }) else {
          source = nil
          continue
        }
        let found = recordSources[index]
        source = found
        if let open = cursors.first(where: { $0.dbi == found.records }) {
          cursor = open.cursor
        } else {
          var opened: OpaquePointer?
          try check(mdb_cursor_open(txn.txn, found.records, &opened), "mdb_cursor_open")
          guard let opened else { throw LMDBError(EINVAL, "mdb_cursor_open") }
          cursors.append((found.records, LMDBCursor(cursor: opened)))
          cursor = LMDBCursor(cursor: opened)
        }
      }
      guard let source, let cursor else { continue }
      // The key after the last one read is the cursor's next entry when it exists: a step, not a search.
      var entry: LMDBCursor.Entry?
      if let previous, previous.dbi == source.records, pk == previous.pk &+ 1, let next = try cursor.next(.next),
        try KeyCoding.primaryKey(next.key) == pk
      {
        entry = next
      } else {
        entry = try withUnsafeBytes(of: KeyCoding.bigEndian(pk)) { try cursor.seek($0, exact: true) }
      }
      guard let entry else {
        previous = nil
        continue
      }
      previous = (source.records, pk)
      tally.add(entry.key, entry.value)
      result.append(try source.decode(entry.value, primaryKey: pk))
    }
    return result
  }

  /// The snapshot of `id`'s object if it exists: ``snapshots(for:in:)`` for one ID, without its arrays or
  /// a lookup of the table by name. Temporary IDs, other stores' IDs and unknown entities find nothing.
  func snapshot(for id: ObjectID, in txn: LMDBTransaction) throws -> Snapshot? {
    if recordSources.isEmpty { return try snapshots(for: [id], in: txn).first }
    guard let pk = id.primaryKey, let index = sourceTemplates.firstIndex(where: { $0.hasSameEntityAndStore(as: id) })
    else { return nil }
    let source = recordSources[index]
    return try txn.get(source.records, primaryKey: pk) { bytes in
      try bytes.map { try source.decode($0, primaryKey: pk) }
    }
  }

  /// The targets of `relationship` of `id` (``LMDBReader/relatedObjectIDs(of:relationship:)``). A to-many
  /// relationship of a model without sub-entities is read from its index without a reader: making one
  /// copied the whole schema, once per relationship fault.
  func relatedObjectIDs(
    of id: ObjectID, relationship: RelationshipDescription, in txn: LMDBTransaction
  ) throws
    -> [ObjectID]
  {
    guard relationship.isToMany, !recordSources.isEmpty, schema.orderDatabase(id.entityName, relationship) == nil,
      let template = sourceTemplates.first(where: { $0.entityName == relationship.destination })
    else { return try reader(txn).relatedObjectIDs(of: id, relationship: relationship) }
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey,
      let storage = schema.toManyStorage(id.entityName, relationship)
    else { return [] }
    let dbi: MDB_dbi
    switch storage {
    case .references(let references): dbi = references
    case .links(let links): dbi = links
    }
    return try txn.primaryKeys(dbi, KeyCoding.primaryKeyBytes(pk)).map { template.withPrimaryKey($0) }
  }

  /// The relationship `name` of `id`'s entity.
  /// - Throws: `.notFound` for an unknown entity or relationship.
  func relationship(_ name: String, of id: ObjectID) throws -> RelationshipDescription {
    guard let entity = model.entity(named: id.entityName) else {
      throw StoreError(.notFound, "\(id) names unknown entity '\(id.entityName)'", entity: id.entityName)
    }
    guard let relationship = entity.relationship(named: name) else {
      throw StoreError(.notFound, "\(entity.name) has no relationship '\(name)'", entity: entity.name, key: name)
    }
    return relationship
  }
}
