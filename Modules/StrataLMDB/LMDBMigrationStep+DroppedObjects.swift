import CLMDB
import Foundation
import StrataStoreKit

/// The objects of an entity the new model no longer has (a removed sub-entity) are dropped with their
/// database, as Core Data's inferred mapping drops an entity with no destination; what pointed at them is
/// cleared as a save's deletes clear it: to-ones become nil (the referring object keeps its version),
/// join-table links and ordered-list entries go.
extension LMDBMigrationStep {
  /// The keys of the objects of every old entity no entity of the new model takes its objects from, under
  /// each new entity a reference to them may name: one whose objects come from an ancestor of theirs, and
  /// that entity's ancestors in the new model. Keys are unique within a hierarchy (one counter), and only
  /// references to those entities are looked at, so a key of another hierarchy is never taken for one.
  func droppedKeys(_ txn: LMDBTransaction, old: LMDBSchema) throws -> [String: [Int64]] {
    let migration = plan.migration
    let fed = Set(migration.entities.compactMap(\.source))
    var dropped: [String: [Int64]] = [:]
    for entity in migration.source.entities where !fed.contains(entity.name) {
      var kinds = Set<String>()
      for mapping in migration.entities {
        guard let source = mapping.source, migration.source.isEntity(entity.name, kindOf: source) else { continue }
        var name: String? = mapping.entity.name
        while let current = name {
          kinds.insert(current)
          name = migration.destination.inheritance.parent(of: current)
        }
      }
      guard !kinds.isEmpty, let table = old.tables[entity.name] else { continue }
      var keys: [Int64] = []
      try txn.withCursor(table.records) { cursor in
        var entry = try cursor.next(.first)
        while let (key, _) = entry {
          keys.append(try KeyCoding.primaryKey(key))
          entry = try cursor.next(.next)
        }
      }
      for kind in kinds { dropped[kind, default: []] += keys }
    }
    return dropped.mapValues { $0.sorted() }
  }

  /// Clears, in the new model's databases, every reference to the dropped objects `dropped` lists (see
  /// ``droppedKeys(_:old:)``): to-ones of records (with their reference and index entries), join-table
  /// links in both directions, and ordered lists owned by or holding them.
  func clearReferences(to dropped: [String: [Int64]], txn: LMDBTransaction, schema: LMDBSchema) throws {
    guard !dropped.isEmpty else { return }
    let model = schema.model
    let reader = LMDBReader(txn: txn, schema: schema, storeIdentifier: storeIdentifier)
    let buffer = RecordBuffer()
    for entity in model.entities {
      let table = try schema.table(entity.name)
      for (index, rel) in entity.toOneRelationships.enumerated() where index < table.references.count {
        let targets = Set(dropped[rel.destination] ?? [])
        for target in targets.sorted() {
          let targetKey = KeyCoding.primaryKeyBytes(target)
          // An inherited to-one's reference database is shared: a referrer may be another entity's record.
          for pk in try txn.primaryKeys(table.references[index], targetKey) {
            guard let row = try reader.record(table, pk) else { continue }
            var toOne = row.toOne
            toOne[index] = nil
            RecordCodec.encode(version: row.version, attributes: row.attributes, toOne: toOne, table: table, into: buffer)
            try withUnsafeBytes(of: KeyCoding.bigEndian(pk)) { key in
              try buffer.withUnsafeBytes { value in _ = try txn.put(table.records, key, value) }
            }
            try txn.deleteIndex(table.references[index], targetKey, primaryKey: pk)
            for dbIndex in table.allIndexes where dbIndex.keys.contains(rel.name) {
              let before = schema.indexKey(dbIndex, attributes: row.attributes, toOne: row.toOne, maxKeySize: maxKeySize)
              let after = schema.indexKey(dbIndex, attributes: row.attributes, toOne: toOne, maxKeySize: maxKeySize)
              if before?.bytes == after?.bytes { continue }
              if let before { try txn.deleteIndex(dbIndex.dbi, before.bytes, primaryKey: pk) }
              if let after { try txn.putIndex(dbIndex.dbi, after.bytes, primaryKey: pk) }
            }
          }
        }
      }
      for rel in entity.toManyRelationships {
        if let tables = schema.links["\(entity.name).\(rel.name)"] {
          try clearLinks(tables, sources: dropped[entity.name] ?? [], targets: dropped[rel.destination] ?? [], txn: txn)
        }
        if rel.isOrdered, model.declaringEntity(of: rel.name, in: entity.name) == entity.name,
          let list = schema.orderDatabase(entity.name, rel)
        {
          try clearLists(list, sources: dropped[entity.name] ?? [], targets: Set(dropped[rel.destination] ?? []), txn: txn)
        }
      }
    }
  }

  /// Removes the links of a join table whose source is among `sources` or whose target is among `targets`.
  private func clearLinks(_ tables: LMDBSchema.Links, sources: [Int64], targets: [Int64], txn: LMDBTransaction) throws {
    for pk in sources {
      for target in try txn.primaryKeys(tables.forward, KeyCoding.primaryKeyBytes(pk)) {
        try txn.deleteIndex(tables.reverse, KeyCoding.primaryKeyBytes(target), primaryKey: pk)
      }
      try KeyCoding.primaryKeyBytes(pk).withUnsafeBytes { _ = try txn.delete(tables.forward, $0) }
    }
    for pk in targets {
      for source in try txn.primaryKeys(tables.reverse, KeyCoding.primaryKeyBytes(pk)) {
        try txn.deleteIndex(tables.forward, KeyCoding.primaryKeyBytes(source), primaryKey: pk)
      }
      try KeyCoding.primaryKeyBytes(pk).withUnsafeBytes { _ = try txn.delete(tables.reverse, $0) }
    }
  }

  /// Removes the lists of an ordered relationship owned by `sources`, and `targets` from the others (one
  /// scan of the list database, only when a target was dropped: lists have no reverse index).
  private func clearLists(_ dbi: MDB_dbi, sources: [Int64], targets: Set<Int64>, txn: LMDBTransaction) throws {
    for pk in sources { _ = try txn.delete(dbi, primaryKey: pk) }
    guard !targets.isEmpty else { return }
    var rewritten: [(Int64, [UInt8])] = []
    try txn.withCursor(dbi) { cursor in
      var entry = try cursor.next(.first)
      while let (key, value) = entry {
        var kept: [UInt8] = []
        var changed = false
        var offset = 0
        while offset + 8 <= value.count {
          let element = UnsafeRawBufferPointer(rebasing: value[offset..<offset + 8])
          if targets.contains(try KeyCoding.primaryKey(element)) {
            changed = true
          } else {
            kept += element
          }
          offset += 8
        }
        if changed { rewritten.append((try KeyCoding.primaryKey(key), kept)) }
        entry = try cursor.next(.next)
      }
    }
    for (pk, kept) in rewritten {
      if kept.isEmpty {
        _ = try txn.delete(dbi, primaryKey: pk)
      } else {
        _ = try txn.put(dbi, primaryKey: pk, kept)
      }
    }
  }
}
