import CLMDB
import Foundation
import StrataStoreKit

/// The named databases of a Strata LMDB environment and their handles, derived from the model.
///
/// | database | key → value |
/// |---|---|
/// | `strata.meta` | `format`, `store_id`, `model` (JSON), `model_fingerprint`, `created_at` → UTF-8 text |
/// | `strata.counters` | entity name → the last primary key assigned (8 bytes) |
/// | `Entity` | primary key (8 bytes, big-endian, sign flipped) → record (see ``RecordCodec``) |
/// | `Entity.a+b.unique` | index key of a uniqueness constraint's values → primary keys (dupsort) |
/// | `Entity.attr.index` | index key of an indexed attribute (nil included) → primary keys (dupsort) |
/// | `Entity.rel.ref` | primary key of a to-one target → primary keys of the objects pointing at it |
/// | `Entity.rel.links` / `.links-reverse` | join-table relationship: source → targets / target → sources |
/// | `Entity.rel.order` | ordered to-many relationship: source primary key → its targets' keys in order (8 bytes each) |
/// | `strata.history` | history sequence (8 bytes, like primary keys) → transaction as JSON (``LMDBHistory``) |
struct LMDBSchema: Sendable {
  static let format = "strata-lmdb-1"
  static let metaName = "strata.meta"
  static let countersName = "strata.counters"

  /// A secondary index over one or more values of an entity's objects.
  final class Index: Sendable {
    let name: String
    let dbi: MDB_dbi
    /// The attributes or to-one relationships whose values make the key, in order.
    let keys: [String]
    /// Whether objects with a nil among the values are indexed (attribute indexes) or left out
    /// (uniqueness constraints: nil never clashes).
    let includesNil: Bool
    let isUnique: Bool
    /// Where each of `keys` is found in a row, worked out once.
    let slots: [Slot]

    enum Slot: Sendable {
      case attribute(Int)
      case toOne(Int)
      case missing
    }

    /// The values of `keys` in `row` (a to-one as its target's ID, nil as `.null`).
    func values(of row: Snapshot) -> [Value] {
      slots.map { slot in
        switch slot {
        case .attribute(let i) where i < row.attributes.count: row.attributes[i]
        case .toOne(let i) where i < row.toOne.count: row.toOne[i].map(Value.objectID) ?? .null
        default: .null
        }
      }
    }

    init(name: String, dbi: MDB_dbi, keys: [String], includesNil: Bool, isUnique: Bool, entity: EntityDescription) {
      self.name = name
      self.dbi = dbi
      self.keys = keys
      self.includesNil = includesNil
      self.isUnique = isUnique
      slots = keys.map { key in
        switch entity.property(named: key) {
        case .attribute(_, let i): .attribute(i)
        case .toOne(_, let i): .toOne(i)
        default: .missing
        }
      }
    }
  }

  /// The databases of one entity.
  final class Table: Sendable {
    let entity: EntityDescription
    /// The entity's name (reading `entity.name` copies the whole description first).
    let name: String
    let records: MDB_dbi
    let uniques: [Index]
    let indexes: [Index]
    /// Aligned with `entity.toOneRelationships`: target primary key → source primary keys.
    let references: [MDB_dbi]
    /// The uniqueness constraints' indexes, then the attribute indexes.
    let allIndexes: [Index]
    /// The positions of the attributes a record stores (all but the transient ones), in order.
    let storedPositions: [Int]
    /// Aligned with `entity.attributes`: each attribute's type, and whether it is transient.
    let types: [AttributeType]
    let isTransient: [Bool]
    /// Whether a record has index entries to keep: the table has indexes or to-one references.
    let hasIndexEntries: Bool
    /// Decodes this entity's records, naming objects with the store's identifier: made once, since making
    /// one (field kinds, interned ID templates) cost more than decoding the record it was made for.
    let decoder: RecordDecoder

    init(
      entity: EntityDescription, records: MDB_dbi, uniques: [Index], indexes: [Index], references: [MDB_dbi],
      storeIdentifier: String
    ) {
      self.entity = entity
      name = entity.name
      self.records = records
      self.uniques = uniques
      self.indexes = indexes
      self.references = references
      allIndexes = uniques + indexes
      storedPositions = entity.attributes.indices.filter { !entity.attributes[$0].isTransient }
      types = entity.attributes.map(\.type)
      isTransient = entity.attributes.map(\.isTransient)
      hasIndexEntries = !allIndexes.isEmpty || !references.isEmpty
      decoder = RecordDecoder(entity: entity, storeIdentifier: storeIdentifier)
    }

    /// The index a query on the single attribute `name` can use, if any.
    func index(on name: String) -> Index? {
      indexes.first { $0.keys == [name] } ?? uniques.first { $0.keys == [name] }
    }
  }

  /// The two databases of one join-table relationship, on its owning side.
  struct Links: Sendable {
    let forward: MDB_dbi
    let reverse: MDB_dbi
  }

  let model: ObjectModel
  let meta: MDB_dbi
  let counters: MDB_dbi
  let tables: [String: Table]
  /// Keyed by the owner's `Entity.relationship`.
  let links: [String: Links]
  /// The list database of each ordered to-many relationship, by `DeclaringEntity.relationship`.
  let orders: [String: MDB_dbi]
  /// Every handle of the model's databases, by name.
  let handles: [String: MDB_dbi]
  /// `strata.history` (see ``LMDBHistory``), when the store was ever opened with history tracking.
  var history: MDB_dbi?
  /// ``toManyStorage(_:_:)`` of every to-many relationship of every entity, by entity and relationship
  /// name, worked out once: finding it walks the model's entities by name for the inverse.
  private var toManyStorages: [String: [String: ToManyStorage]] = [:]

  /// Every database name the model needs, with whether it holds duplicates.
  static func databases(for model: ObjectModel) -> [(name: String, isDuplicateSorted: Bool)] {
    var names: [(String, Bool)] = [(metaName, false), (countersName, false)]
    for entity in model.entities {
      names.append((entity.name, false))
      // In a hierarchy, a uniqueness constraint's index is kept by the entity that declares it and a
      // to-one's references and a join table's links by the entity that declares the relationship: one
      // database for the objects of every sub-entity.
      for keys in entity.uniquenessConstraints where model.constraintScope(of: keys, in: entity.name) == entity.name {
        names.append(("\(entity.name).\(keys.joined(separator: "+")).unique", true))
      }
      for keys in indexedKeys(entity) { names.append(("\(entity.name).\(keys.joined(separator: "+")).index", true)) }
      for rel in entity.toOneRelationships where model.declaringEntity(of: rel.name, in: entity.name) == entity.name {
        names.append(("\(entity.name).\(rel.name).ref", true))
      }
      for rel in entity.toManyRelationships
      where model.usesJoinTable(rel) && model.declaringEntity(of: rel.name, in: entity.name) == entity.name {
        let owner = model.joinTableOwner(of: entity.name, rel)
        guard !owner.isFlipped else { continue }
        names.append(("\(entity.name).\(rel.name).links", true))
        names.append(("\(entity.name).\(rel.name).links-reverse", true))
      }
      for rel in entity.toManyRelationships
      where rel.isOrdered && model.declaringEntity(of: rel.name, in: entity.name) == entity.name {
        names.append(("\(entity.name).\(rel.name).order", false))
      }
    }
    return names
  }

  /// The attribute sets an entity keeps an index on: each indexed attribute, then each declared index.
  static func indexedKeys(_ entity: EntityDescription) -> [[String]] {
    var result: [[String]] = entity.attributes.filter { $0.isIndexed && !$0.isTransient }.map { [$0.name] }
    for keys in entity.indexes where !result.contains(keys) { result.append(keys) }
    return result
  }

  /// Builds the schema from database handles opened by name, for the store `storeIdentifier`.
  init(model: ObjectModel, handles: [String: MDB_dbi], storeIdentifier: String) throws {
    func handle(_ name: String) throws -> MDB_dbi {
      guard let dbi = handles[name] else {
        throw StoreError(.corrupted, "the LMDB store has no '\(name)' database")
      }
      return dbi
    }
    self.model = model
    self.handles = handles
    meta = try handle(Self.metaName)
    counters = try handle(Self.countersName)
    var tables: [String: Table] = [:]
    var links: [String: Links] = [:]
    var orders: [String: MDB_dbi] = [:]
    for entity in model.entities {
      for rel in entity.toManyRelationships
      where rel.isOrdered && model.declaringEntity(of: rel.name, in: entity.name) == entity.name {
        orders["\(entity.name).\(rel.name)"] = try handle("\(entity.name).\(rel.name).order")
      }
      let uniques = try entity.uniquenessConstraints.map { keys in
        let name = "\(model.constraintScope(of: keys, in: entity.name)).\(keys.joined(separator: "+")).unique"
        return Index(name: name, dbi: try handle(name), keys: keys, includesNil: false, isUnique: true, entity: entity)
      }
      let indexes = try Self.indexedKeys(entity).map { keys in
        let name = "\(entity.name).\(keys.joined(separator: "+")).index"
        return Index(name: name, dbi: try handle(name), keys: keys, includesNil: true, isUnique: false, entity: entity)
      }
      let references = try entity.toOneRelationships.map {
        try handle("\(model.declaringEntity(of: $0.name, in: entity.name)).\($0.name).ref")
      }
      tables[entity.name] = Table(
        entity: entity, records: try handle(entity.name), uniques: uniques, indexes: indexes, references: references,
        storeIdentifier: storeIdentifier)
      for rel in entity.toManyRelationships
      where model.usesJoinTable(rel) && model.declaringEntity(of: rel.name, in: entity.name) == entity.name {
        let owner = model.joinTableOwner(of: entity.name, rel)
        guard !owner.isFlipped else { continue }
        links["\(entity.name).\(rel.name)"] = Links(
          forward: try handle("\(entity.name).\(rel.name).links"),
          reverse: try handle("\(entity.name).\(rel.name).links-reverse"))
      }
    }
    self.tables = tables
    self.links = links
    self.orders = orders
    var storages: [String: [String: ToManyStorage]] = [:]
    for entity in model.entities {
      for rel in entity.toManyRelationships {
        if let storage = findToManyStorage(entity.name, rel) { storages[entity.name, default: [:]][rel.name] = storage }
      }
    }
    toManyStorages = storages
  }

  /// The list database of the ordered relationship `rel` of `entityName` (`nil` when it is unordered).
  func orderDatabase(_ entityName: String, _ rel: RelationshipDescription) -> MDB_dbi? {
    guard rel.isOrdered else { return nil }
    return orders["\(model.declaringEntity(of: rel.name, in: entityName)).\(rel.name)"]
  }

  /// The last primary key handed out for `entityName` (`strata.counters`), `nil` before the first.
  func lastPrimaryKey(_ entityName: String, in txn: LMDBTransaction) throws -> Int64? {
    try txn.get(counters, Array(entityName.utf8)) { bytes -> Int64? in
      guard let bytes else { return nil }
      guard bytes.count == 8 else {
        throw StoreError(.corrupted, "the key counter of \(entityName) is damaged", entity: entityName)
      }
      return Int64(littleEndian: bytes.loadUnaligned(as: Int64.self))
    }
  }

  /// Records `last` as the last primary key handed out for `entityName`.
  func setLastPrimaryKey(_ last: Int64, of entityName: String, in txn: LMDBTransaction) throws {
    try withUnsafeBytes(of: last.littleEndian) { value in _ = try txn.put(counters, Array(entityName.utf8), Array(value)) }
  }

  func table(_ entityName: String) throws -> Table {
    guard let table = tables[entityName] else {
      throw StoreError(.notFound, "the model has no entity '\(entityName)'", entity: entityName)
    }
    return table
  }

  /// How the targets of a to-many relationship are found.
  enum ToManyStorage: Sendable {
    /// Through the inverse to-one's reference index: the destination objects pointing at the source.
    case references(MDB_dbi)
    /// Through a join table; `dbi` maps the source's key to its targets' keys.
    case links(MDB_dbi)
  }

  func toManyStorage(_ entityName: String, _ rel: RelationshipDescription) -> ToManyStorage? {
    toManyStorages[entityName]?[rel.name] ?? findToManyStorage(entityName, rel)
  }

  private func findToManyStorage(_ entityName: String, _ rel: RelationshipDescription) -> ToManyStorage? {
    if model.usesJoinTable(rel) {
      let owner = model.joinTableOwner(of: entityName, rel)
      guard let tables = links["\(owner.entity).\(owner.relationship)"] else { return nil }
      return .links(owner.isFlipped ? tables.reverse : tables.forward)
    }
    guard let inverse = model.inverse(of: rel), let destination = tables[rel.destination],
      let index = destination.entity.toOneIndex(named: inverse.name), index < destination.references.count
    else { return nil }
    return .references(destination.references[index])
  }

  /// The index key of `keys` in a row, or `nil` when a value is nil and the index leaves nils out.
  func indexKey(
    _ index: Index, attributes: AttributeValues, toOne: [ObjectID?], maxKeySize: Int
  )
    -> IndexKey?
  {
    var key = IndexKey()
    for slot in index.slots {
      let value: Value
      switch slot {
      case .attribute(let i) where i < attributes.count: value = attributes[i]
      case .toOne(let i) where i < toOne.count: value = toOne[i].map(Value.objectID) ?? .null
      default: value = .null
      }
      if value.isNull && !index.includesNil { return nil }
      key.append(value)
    }
    return key.limited(to: maxKeySize)
  }
}
