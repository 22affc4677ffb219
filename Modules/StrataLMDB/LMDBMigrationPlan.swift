import CLMDB
import Foundation
import StrataStoreKit

/// What one structural migration step does to each database of the environment, decided from the two
/// models alone (a dry run asks it through ``storageChanges``).
///
/// A database of the new model is *kept* when it already holds exactly what the new model needs: an
/// entity's records when the entity keeps its name and every value keeps its stored form (a delete rule,
/// a validation rule or a new index changes nothing in them); an index, uniqueness or reference database
/// when its entity keeps its name and every key keeps its name and its values; a join table when its
/// owner and relationship keep their names. Everything else is written: records re-encoded
/// (``RecordTranscoder``) in place when the entity keeps its name, else copied into the new entity's
/// database; index and reference databases rebuilt from the new records; join tables refilled from the
/// old links. An ordered relationship's list database stays when its entity and relationship keep their
/// names and it stays ordered; otherwise, while it stays ordered, its lists are copied into the new
/// database (a rebuilt hierarchy, a renamed entity or relationship). One made ordered starts empty (lists
/// in primary-key order), one made unordered is dropped.
struct LMDBMigrationPlan {
  /// One entity of the new model.
  struct Entity {
    let mapping: EntityMapping
    /// The old entity its objects come from.
    let source: EntityDescription?
    let transcoder: RecordTranscoder?
    /// Whether the entity keeps its name, and so its records' database.
    let isInPlace: Bool
    /// The entity's index, uniqueness and reference databases filled from its records.
    let rebuilt: Set<String>
    /// Whether the old records are read into memory before anything is written: another entity of the
    /// new model writes into their database.
    let buffersSource: Bool

    var name: String { mapping.entity.name }
    /// Whether the records stay as they are.
    var keepsRecords: Bool { isInPlace && transcoder?.isIdentity == true }
    /// Whether the step reads the entity's records at all.
    var readsRecords: Bool { source != nil && (!keepsRecords || !rebuilt.isEmpty) }
  }

  let migration: ModelMigration
  let oldNames: [(name: String, isDuplicateSorted: Bool)]
  let newNames: [(name: String, isDuplicateSorted: Bool)]
  let entities: [Entity]
  /// The new model's databases that hold what it needs already.
  let kept: Set<String>
  /// The join tables of the new model filled again, with the old relationship whose links they take
  /// (`nil`: none, the table starts empty).
  let refilledLinks: [(key: String, mapping: EntityMapping, source: RelationshipDescription?)]

  init(_ migration: ModelMigration) {
    self.migration = migration
    oldNames = LMDBSchema.databases(for: migration.source)
    newNames = LMDBSchema.databases(for: migration.destination)
    let old = Set(oldNames.map(\.name))
    let new = Set(newNames.map(\.name))
    var kept = Set<String>()
    var entities: [Entity] = []
    // In a hierarchy a uniqueness index and a to-one's references are shared by several entities (see
    // `LMDBSchema.databases(for:)`): when a hierarchy changes, they are all built again from the records.
    let hierarchical = Set(
      (migration.source.entities.map(\.name).filter(migration.source.inheritance.isInHierarchy)
        + migration.entities.compactMap { mapping in
          migration.destination.inheritance.isInHierarchy(mapping.entity.name) ? mapping.source : nil
        }))
    for mapping in migration.entities {
      let entity = mapping.entity
      let source = mapping.source.flatMap { migration.source.entity(named: $0) }
      let transcoder = source.map { RecordTranscoder(from: $0, to: mapping) }
      let isInPlace = source?.name == entity.name
      let inHierarchy =
        migration.destination.inheritance.isInHierarchy(entity.name) || (source.map { hierarchical.contains($0.name) } ?? false)
      if let source, isInPlace, !inHierarchy {
        if transcoder?.isIdentity == true { kept.insert(entity.name) }
        for (name, keys) in Self.indexDatabases(of: entity) where old.contains(name) {
          if keys.allSatisfy({ Self.keepsValues(of: $0, mapping, old: source) }) { kept.insert(name) }
        }
        for relationship in entity.toOneRelationships where mapping.relationshipSources[relationship.name] == relationship.name {
          let name = "\(entity.name).\(relationship.name).ref"
          if old.contains(name) { kept.insert(name) }
        }
        for relationship in entity.toManyRelationships where mapping.relationshipSources[relationship.name] == relationship.name {
          let name = "\(entity.name).\(relationship.name).links"
          if old.contains(name) && new.contains(name) {
            kept.insert(name)
            kept.insert(name + "-reverse")
          }
          // An ordered list stays while the relationship stays ordered (a relationship made ordered gets
          // an empty database: its lists read in primary-key order until saved).
          let order = "\(entity.name).\(relationship.name).order"
          if old.contains(order) && new.contains(order) { kept.insert(order) }
        }
      }
      let model = migration.destination
      let databases =
        entity.uniquenessConstraints.map {
          "\(model.constraintScope(of: $0, in: entity.name)).\($0.joined(separator: "+")).unique"
        }
        + LMDBSchema.indexedKeys(entity).map { "\(entity.name).\($0.joined(separator: "+")).index" }
        + entity.toOneRelationships.map { "\(model.declaringEntity(of: $0.name, in: entity.name)).\($0.name).ref" }
      // Another entity writes into the source's database (rewrites it in place, or fills it under its name).
      let sourceIsOverwritten = source.map { !isInPlace && new.contains($0.name) } ?? false
      entities.append(
        Entity(
          mapping: mapping, source: source, transcoder: transcoder, isInPlace: isInPlace,
          rebuilt: Set(databases.filter { !kept.contains($0) }), buffersSource: sourceIsOverwritten))
    }
    self.entities = entities
    self.kept = kept
    let migrator = SnapshotMigrator(migration, storeIdentifier: "")
    refilledLinks = migrator.joinTableRelationships.compactMap { mapping, relationship, source in
      let key = "\(mapping.entity.name).\(relationship.name)"
      return kept.contains(key + ".links") ? nil : (key, mapping, source)
    }
  }

  /// The entity's uniqueness and index databases, with their keys.
  private static func indexDatabases(of entity: EntityDescription) -> [(name: String, keys: [String])] {
    entity.uniquenessConstraints.map { ("\(entity.name).\($0.joined(separator: "+")).unique", $0) }
      + LMDBSchema.indexedKeys(entity).map { ("\(entity.name).\($0.joined(separator: "+")).index", $0) }
  }

  /// Whether every object keeps the value of `key` (same name, same stored form, nil stays nil).
  private static func keepsValues(of key: String, _ mapping: EntityMapping, old: EntityDescription) -> Bool {
    if let attribute = mapping.attributes.first(where: { $0.attribute.name == key }) {
      guard attribute.source == key, let oldAttribute = old.attribute(named: key), !oldAttribute.isTransient else {
        return false
      }
      return RecordField(oldAttribute.type) == RecordField(attribute.attribute.type)
        && (oldAttribute.type == .json) == (attribute.attribute.type == .json)
        && (attribute.convert(.null).isNull || !oldAttribute.isOptional)
    }
    return mapping.entity.toOneIndex(named: key) != nil && mapping.relationshipSources[key] == key
      && old.toOneIndex(named: key) != nil
  }

  /// What the step does to the storage of each entity of the new model (see ``StorageChange``): `.created`
  /// for a new entity; `.rewritten` when its records are re-encoded or copied under a new name;
  /// `.alteredInPlace` when the records stay but one of its index, reference or join-table databases is
  /// built, refilled or dropped (one read of its records, no record written); `.unchanged` when nothing
  /// of it is written.
  var storageChanges: [String: StorageChange] {
    let new = Set(newNames.map(\.name))
    var changes: [String: StorageChange] = [:]
    for entity in entities {
      if entity.source == nil {
        changes[entity.name] = .created
      } else if !entity.keepsRecords {
        changes[entity.name] = .rewritten
      } else {
        let prefix = "\(entity.name)."
        let dropped = oldNames.contains { $0.name.hasPrefix(prefix) && !new.contains($0.name) }
        let refilled = refilledLinks.contains { $0.mapping.entity.name == entity.name }
        changes[entity.name] = entity.rebuilt.isEmpty && !dropped && !refilled ? .unchanged : .alteredInPlace
      }
    }
    return changes
  }
}

/// One structural step inside the migration's write transaction (see ``LMDBMigrationPlan``): reads what
/// the writes would overwrite, empties the databases filled again, rewrites every entity's records and
/// rebuilds their indexes (checking the new uniqueness constraints), refills the key counters and join
/// tables, and deletes the databases the new model no longer has.
struct LMDBMigrationStep {
  let plan: LMDBMigrationPlan
  let storeIdentifier: String
  let maxKeySize: Int
  /// `strata.history`, carried into the new schema.
  let history: MDB_dbi?

  /// What is read before anything is written.
  private struct Contents {
    /// The records of old entities whose database another entity fills, by old name: keys and bytes.
    var buffered: [String: [(Int64, [UInt8])]] = [:]
    /// The last primary key handed out, by the new counter's name (a hierarchy's root).
    var counters: [(String, Int64)] = []
    /// The source → target primary keys of each refilled join table, by its owner's key.
    var links: [(LMDBSchema.Links, [(Int64, Int64)])] = []
    /// The keys of the objects of removed entities, by each entity of the new model a reference to them
    /// may name (see ``LMDBMigrationStep/clearReferences(to:txn:schema:)``).
    var dropped: [String: [Int64]] = [:]
    /// The lists of ordered relationships whose list database is not kept (a rebuilt hierarchy, a renamed
    /// relationship or entity), by the new database's name: each owner's key and its list record.
    var lists: [String: [(Int64, [UInt8])]] = [:]
  }

  /// How many records the step reads (for progress), counted in `txn` before the step runs.
  func recordCount(_ txn: LMDBTransaction) throws -> Int {
    var total = 0
    for entity in plan.entities where entity.readsRecords {
      guard let source = entity.source, let dbi = try txn.openDatabase(source.name, isDuplicateSorted: false, create: false)
      else { continue }
      total += try txn.entries(dbi)
    }
    return total
  }

  /// Runs the step; `advance` is told how many more records were rewritten. Returns the new model's schema.
  func run(_ txn: LMDBTransaction, advance: (Int) -> Void) throws -> LMDBSchema {
    var oldHandles: [String: MDB_dbi] = [:]
    for (name, isDuplicateSorted) in plan.oldNames {
      oldHandles[name] = try txn.openDatabase(name, isDuplicateSorted: isDuplicateSorted, create: false)
    }
    var newHandles: [String: MDB_dbi] = [:]
    for (name, isDuplicateSorted) in plan.newNames {
      newHandles[name] = try txn.openDatabase(name, isDuplicateSorted: isDuplicateSorted, create: true)
    }
    let old = try LMDBSchema(model: plan.migration.source, handles: oldHandles, storeIdentifier: storeIdentifier)
    var new = try LMDBSchema(model: plan.migration.destination, handles: newHandles, storeIdentifier: storeIdentifier)
    new.history = history
    let contents = try read(txn, old: old, new: new)

    // The new model's databases that are filled again start empty (one may share its name with an old one).
    let oldNames = Set(plan.oldNames.map(\.name))
    let inPlace = Set(plan.entities.filter(\.isInPlace).map(\.name))
    for (name, _) in plan.newNames
    where name != LMDBSchema.metaName && oldNames.contains(name) && !plan.kept.contains(name) && !inPlace.contains(name) {
      guard let dbi = newHandles[name] else { continue }
      try txn.drop(dbi, name: name, delete: false)
    }
    var conflicts: [StoreError.Conflict] = []
    let rewrite = RecordRewrite(txn: txn, schema: new, storeIdentifier: storeIdentifier, maxKeySize: maxKeySize)
    for entity in plan.entities where entity.readsRecords {
      guard let source = entity.source, let oldTable = old.tables[source.name] else { continue }
      try rewrite.rewrite(
        entity, from: oldTable, buffered: contents.buffered[source.name], conflicts: &conflicts, advance: advance)
    }
    if let error = StoreError.uniquenessViolation(conflicts) { throw error }
    for (entityName, last) in contents.counters { try new.setLastPrimaryKey(last, of: entityName, in: txn) }
    for (tables, pairs) in contents.links {
      for (source, target) in pairs {
        try txn.putIndex(tables.forward, KeyCoding.primaryKeyBytes(source), primaryKey: target)
        try txn.putIndex(tables.reverse, KeyCoding.primaryKeyBytes(target), primaryKey: source)
      }
    }
    for (name, entries) in contents.lists {
      guard let dbi = newHandles[name] else { continue }
      for (owner, list) in entries { _ = try txn.put(dbi, primaryKey: owner, list) }
    }
    try clearReferences(to: contents.dropped, txn: txn, schema: new)
    // Last, so that nothing of the step fails after a handle is closed.
    let kept = Set(plan.newNames.map(\.name))
    for (name, _) in plan.oldNames where !kept.contains(name) {
      guard let dbi = oldHandles[name] else { continue }
      try txn.drop(dbi, name: name, delete: true)
    }
    return new
  }

  /// The list records of every ordered relationship that stays ordered but whose list database the plan
  /// does not keep, read from the old database (or databases, for a relationship an entity now inherits)
  /// under the new database's name. Object keys survive a migration, so the records are copied as they are.
  private func carriedLists(_ txn: LMDBTransaction, old: LMDBSchema) throws -> [String: [(Int64, [UInt8])]] {
    let migration = plan.migration
    var lists: [String: [(Int64, [UInt8])]] = [:]
    var read: Set<String> = []
    for mapping in migration.entities {
      guard let sourceName = mapping.source, let source = migration.source.entity(named: sourceName) else { continue }
      for relationship in mapping.entity.toManyRelationships where relationship.isOrdered {
        let declaring = migration.destination.declaringEntity(of: relationship.name, in: mapping.entity.name)
        let name = "\(declaring).\(relationship.name).order"
        guard !plan.kept.contains(name), let oldName = mapping.relationshipSources[relationship.name],
          let oldRelationship = source.relationship(named: oldName), oldRelationship.isOrdered,
          let oldDBI = old.orderDatabase(source.name, oldRelationship)
        else { continue }
        let oldDatabase = "\(migration.source.declaringEntity(of: oldName, in: source.name)).\(oldName).order"
        guard read.insert(name + "\u{0}" + oldDatabase).inserted else { continue }
        var entries: [(Int64, [UInt8])] = []
        try txn.withCursor(oldDBI) { cursor in
          var entry = try cursor.next(.first)
          while let (key, value) = entry {
            entries.append((try KeyCoding.primaryKey(key), Array(value)))
            entry = try cursor.next(.next)
          }
        }
        lists[name, default: []] += entries
      }
    }
    return lists
  }

  /// Reads the records another entity's writes would overwrite, the key counters and the links of the
  /// join tables filled again.
  private func read(_ txn: LMDBTransaction, old: LMDBSchema, new: LMDBSchema) throws -> Contents {
    var contents = Contents()
    for entity in plan.entities {
      guard let source = entity.source else { continue }
      if entity.buffersSource, contents.buffered[source.name] == nil, let table = old.tables[source.name] {
        var records: [(Int64, [UInt8])] = []
        records.reserveCapacity(try txn.entries(table.records))
        try txn.withCursor(table.records) { cursor in
          var entry = try cursor.next(.first)
          while let (key, value) = entry {
            records.append((try KeyCoding.primaryKey(key), Array(value)))
            entry = try cursor.next(.next)
          }
        }
        contents.buffered[source.name] = records
      }
      // Keys come from the counter of the hierarchy's root (the entity itself outside a hierarchy).
      let counter = plan.migration.destination.inheritance.root(of: entity.name)
      if let last = try old.lastPrimaryKey(plan.migration.source.inheritance.root(of: source.name), in: txn) {
        if let index = contents.counters.firstIndex(where: { $0.0 == counter }) {
          contents.counters[index].1 = max(contents.counters[index].1, last)
        } else {
          contents.counters.append((counter, last))
        }
      }
    }
    contents.dropped = try droppedKeys(txn, old: old)
    contents.lists = try carriedLists(txn, old: old)
    let reader = LMDBReader(txn: txn, schema: old, storeIdentifier: storeIdentifier)
    for (key, mapping, source) in plan.refilledLinks {
      guard let tables = new.links[key] else { continue }
      guard let source, let oldEntity = mapping.source, old.tables[oldEntity] != nil else {
        contents.links.append((tables, []))
        continue
      }
      var pairs: [(Int64, Int64)] = []
      // An inherited relationship's links belong to the objects of the sub-entities too.
      for member in old.model.inheritance.entityAndDescendants(oldEntity) {
        guard let oldTable = old.tables[member] else { continue }
        let scope = ObjectID(entityName: member, storeIdentifier: storeIdentifier, primaryKey: 0)
        try txn.withCursor(oldTable.records) { cursor in
          var entry = try cursor.next(.first)
          while let (key, _) = entry {
            let pk = try KeyCoding.primaryKey(key)
            for target in try reader.relatedObjectIDs(of: scope.withPrimaryKey(pk), relationship: source) {
              if let targetKey = target.primaryKey { pairs.append((pk, targetKey)) }
            }
            entry = try cursor.next(.next)
          }
        }
      }
      pairs.sort { ($0.0, $0.1) < ($1.0, $1.1) }
      contents.links.append((tables, pairs))
    }
    return contents
  }
}

/// Rewrites the records of one entity after another and fills their rebuilt indexes.
private struct RecordRewrite {
  let txn: LMDBTransaction
  let schema: LMDBSchema
  let storeIdentifier: String
  let maxKeySize: Int
  private let buffer = RecordBuffer()
  /// Progress is told every this many records.
  static let reportEvery = 4096

  init(txn: LMDBTransaction, schema: LMDBSchema, storeIdentifier: String, maxKeySize: Int) {
    self.txn = txn
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.maxKeySize = maxKeySize
  }

  /// Rewrites `entity`'s records from `oldTable` (or from `buffered`, read before) and fills its
  /// rebuilt indexes; clashes with a rebuilt uniqueness constraint go to `conflicts`.
  func rewrite(
    _ entity: LMDBMigrationPlan.Entity, from oldTable: LMDBSchema.Table, buffered: [(Int64, [UInt8])]?,
    conflicts: inout [StoreError.Conflict], advance: (Int) -> Void
  ) throws {
    guard var transcoder = entity.transcoder else { return }
    let table = try schema.table(entity.name)
    let indexer = Indexer(
      table: table, rebuilt: entity.rebuilt, schema: schema, storeIdentifier: storeIdentifier, maxKeySize: maxKeySize,
      txn: txn)
    var done = 0
    func tick() {
      done += 1
      if done == Self.reportEvery {
        advance(done)
        done = 0
      }
    }
    defer { if done > 0 { advance(done) } }
    let damaged = { (pk: Int64) in
      StoreError(
        .corrupted, "the stored record of \(oldTable.name) p\(pk) is damaged (it is not a record of its entity)",
        entity: oldTable.name)
    }
    if entity.isInPlace {
      try txn.withCursor(table.records) { cursor in
        var entry = try cursor.next(.first)
        while let (key, value) = entry {
          let pk = try KeyCoding.primaryKey(key)
          if entity.keepsRecords {
            try indexer.add(pk, record: value, conflicts: &conflicts)
          } else {
            guard transcoder.transcode(value, into: buffer) else { throw damaged(pk) }
            try withUnsafeBytes(of: KeyCoding.bigEndian(pk)) { key in
              try buffer.withUnsafeBytes { record in
                try cursor.replaceCurrent(key, record)
                try indexer.add(pk, record: record, conflicts: &conflicts)
              }
            }
          }
          tick()
          entry = try cursor.next(.next)
        }
      }
      return
    }
    // Keys come in ascending order into an empty database: each record appends.
    func write(_ pk: Int64, _ value: UnsafeRawBufferPointer) throws {
      guard transcoder.transcode(value, into: buffer) else { throw damaged(pk) }
      try withUnsafeBytes(of: KeyCoding.bigEndian(pk)) { key in
        try buffer.withUnsafeBytes { record in
          _ = try txn.put(table.records, key, record, flags: MDB_APPEND)
          try indexer.add(pk, record: record, conflicts: &conflicts)
        }
      }
      tick()
    }
    if let buffered {
      for (pk, bytes) in buffered { try bytes.withUnsafeBytes { try write(pk, $0) } }
      return
    }
    try txn.withCursor(oldTable.records) { cursor in
      var entry = try cursor.next(.first)
      while let (key, value) = entry {
        try write(try KeyCoding.primaryKey(key), value)
        entry = try cursor.next(.next)
      }
    }
  }
}

/// Fills the rebuilt index, uniqueness and reference databases of one entity from its new records,
/// in primary-key order: an object whose unique key an earlier one holds is a clash with that object.
private struct Indexer {
  let table: LMDBSchema.Table
  let schema: LMDBSchema
  let maxKeySize: Int
  let txn: LMDBTransaction
  let indexes: [LMDBSchema.Index]
  let references: [(position: Int, dbi: MDB_dbi)]
  let decoder: RecordDecoder
  let reader: LMDBReader

  init(
    table: LMDBSchema.Table, rebuilt: Set<String>, schema: LMDBSchema, storeIdentifier: String, maxKeySize: Int,
    txn: LMDBTransaction
  ) {
    self.table = table
    self.schema = schema
    self.maxKeySize = maxKeySize
    self.txn = txn
    indexes = table.allIndexes.filter { rebuilt.contains($0.name) }
    references = table.entity.toOneRelationships.enumerated().compactMap { position, relationship in
      rebuilt.contains("\(schema.model.declaringEntity(of: relationship.name, in: table.name)).\(relationship.name).ref")
        && position < table.references.count
        ? (position, table.references[position]) : nil
    }
    decoder = RecordDecoder(entity: table.entity, storeIdentifier: storeIdentifier)
    reader = LMDBReader(txn: txn, schema: schema, storeIdentifier: storeIdentifier)
  }

  func add(_ pk: Int64, record: UnsafeRawBufferPointer, conflicts: inout [StoreError.Conflict]) throws {
    guard !indexes.isEmpty || !references.isEmpty else { return }
    let row = try decoder.decode(record, primaryKey: pk)
    for index in indexes {
      guard let key = schema.indexKey(index, attributes: row.attributes, toOne: row.toOne, maxKeySize: maxKeySize) else {
        continue
      }
      if index.isUnique, let owner = try owner(of: key, in: index, row: row) {
        conflicts.append(
          StoreError.Conflict(
            objectID: row.objectID, conflictingObjectID: owner.objectID, entity: table.name, keys: index.keys,
            values: index.values(of: row), storedValues: index.values(of: owner)))
        continue
      }
      try txn.putIndex(index.dbi, key.bytes, primaryKey: pk)
    }
    for (position, dbi) in references {
      guard position < row.toOne.count, let target = row.toOne[position]?.primaryKey else { continue }
      try txn.putIndex(dbi, KeyCoding.primaryKeyBytes(target), primaryKey: pk)
    }
  }

  /// The object already indexed under `key` with the same values as `row`, if any.
  private func owner(of key: IndexKey, in index: LMDBSchema.Index, row: Snapshot) throws -> Snapshot? {
    if key.isExact {
      let owner = try txn.get(index.dbi, key.bytes) { bytes in try bytes.map { try KeyCoding.primaryKey($0) } }
      return try owner.flatMap { try reader.record(table, $0) }
    }
    // A key cut to liblmdb's length limit (or holding a NaN): compare the full values.
    let full = schema.indexKey(index, attributes: row.attributes, toOne: row.toOne, maxKeySize: .max)?.bytes
    for candidate in try txn.primaryKeys(index.dbi, key.bytes) {
      guard let other = try reader.record(table, candidate) else { continue }
      if schema.indexKey(index, attributes: other.attributes, toOne: other.toOne, maxKeySize: .max)?.bytes == full {
        return other
      }
    }
    return nil
  }
}
