import Foundation

/// What every store that keeps objects as snapshots does to migrate them (see
/// ``PersistentStore/migrated(by:)``): rewrites each object's snapshot from the old model to the new, and
/// says where each relationship of the new model takes its links from.
///
/// ```swift
/// let migrator = SnapshotMigrator(migration, storeIdentifier: store.identifier)
/// for mapping in migration.entities {
///   let rows = oldRows(of: mapping.source).map { migrator.migrate($0, to: mapping) }
/// }
/// ```
public struct SnapshotMigrator: Sendable {
  /// The migration applied.
  public let migration: ModelMigration
  /// The store's identifier, kept in every migrated object ID.
  public let storeIdentifier: String
  /// Per new entity: for each of its attributes, the mapping (nil for a transient one) and the position
  /// of its source in the old entity's attributes.
  private let attributePlans: [String: [(mapping: AttributeMapping?, sourceIndex: Int?)]]
  /// Per new entity: for each of its to-one relationships, the position of its source in the old
  /// entity's to-one relationships.
  private let toOnePlans: [String: [Int?]]
  /// Per old entity: the new entities its objects become.
  private let newNames: [String: [String]]

  /// A migrator for `migration` in the store `storeIdentifier`.
  public init(_ migration: ModelMigration, storeIdentifier: String) {
    self.migration = migration
    self.storeIdentifier = storeIdentifier
    var attributePlans: [String: [(AttributeMapping?, Int?)]] = [:]
    var toOnePlans: [String: [Int?]] = [:]
    for mapping in migration.entities {
      let old = mapping.source.flatMap { migration.source.entity(named: $0) }
      let byName = Dictionary(mapping.attributes.map { ($0.attribute.name, $0) }, uniquingKeysWith: { first, _ in first })
      attributePlans[mapping.entity.name] = mapping.entity.attributes.map { attribute in
        let attributeMapping = byName[attribute.name]
        return (attributeMapping, attributeMapping?.source.flatMap { old?.attributeIndex(named: $0) })
      }
      toOnePlans[mapping.entity.name] = mapping.entity.toOneRelationships.map { relationship in
        mapping.relationshipSources[relationship.name].flatMap { old?.toOneIndex(named: $0) }
      }
    }
    self.attributePlans = attributePlans
    self.toOnePlans = toOnePlans
    var newNames: [String: [String]] = [:]
    for mapping in migration.entities {
      if let source = mapping.source { newNames[source, default: []].append(mapping.entity.name) }
    }
    self.newNames = newNames
  }

  /// The entity a reference to an object of the old entity `entity` names in the new model, where it is
  /// a target of a relationship to `destination`: the object's own entity under its new name (an object
  /// of a sub-entity stays one), or `destination` when its entity is gone.
  public func targetEntity(of entity: String, destination: String) -> String {
    let inheritance = migration.destination.inheritance
    return newNames[entity]?.first { inheritance.isEntity($0, kindOf: destination) } ?? destination
  }

  /// The snapshot `old` (an object of `mapping.source` in the old model) becomes in the new model: the
  /// same primary key and version under the new entity name, attributes converted, to-one targets
  /// kept (under their destinations' new names).
  public func migrate(_ old: Snapshot, to mapping: EntityMapping) -> Snapshot {
    let entity = mapping.entity
    let attributes = (attributePlans[entity.name] ?? []).map { plan -> Value in
      guard let attributeMapping = plan.mapping else { return .null }
      guard let index = plan.sourceIndex, index < old.attributes.count else { return attributeMapping.fill }
      return attributeMapping.convert(old.attributes[index])
    }
    let toOne = zip(entity.toOneRelationships, toOnePlans[entity.name] ?? []).map { relationship, index -> ObjectID? in
      guard let index, index < old.toOne.count, let target = old.toOne[index], let key = target.primaryKey else { return nil }
      return ObjectID(
        entityName: targetEntity(of: target.entityName, destination: relationship.destination),
        storeIdentifier: storeIdentifier, primaryKey: key)
    }
    return Snapshot(
      objectID: ObjectID(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: old.objectID.primaryKey ?? 0),
      version: old.version, attributes: AttributeValues(attributes, layout: entity.valueLayout), toOne: toOne)
  }

  /// The join-table relationships of the new model, each once from its owning side (see
  /// `ObjectModel.joinTableOwner(of:_:)`), with the old relationship whose links it takes: `nil` for a
  /// new relationship, which starts empty. A to-one relationship made to-many takes the targets its
  /// objects held.
  public var joinTableRelationships:
    [(entity: EntityMapping, relationship: RelationshipDescription, source: RelationshipDescription?)]
  {
    var result: [(EntityMapping, RelationshipDescription, RelationshipDescription?)] = []
    for mapping in migration.entities {
      for relationship in mapping.entity.relationships where migration.destination.usesJoinTable(relationship) {
        let owner = migration.destination.joinTableOwner(of: mapping.entity.name, relationship)
        guard owner.entity == mapping.entity.name, owner.relationship == relationship.name else { continue }
        let old = mapping.source.flatMap { migration.source.entity(named: $0) }
        let source = mapping.relationshipSources[relationship.name].flatMap { old?.relationship(named: $0) }
        result.append((mapping, relationship, source))
      }
    }
    return result
  }

  /// The clashes of `entity`'s uniqueness constraint `keys` among `rows` (migrated snapshots of that
  /// entity): each object after the first that holds a taken combination, named with the one it clashes
  /// with. A nil never clashes, as in SQL.
  public static func uniquenessClashes(
    of keys: [String], in entity: EntityDescription, rows: [Snapshot]
  )
    -> [StoreError.Conflict]
  {
    var owners: [[Value]: Snapshot] = [:]
    var conflicts: [StoreError.Conflict] = []
    for row in rows.sorted(by: { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }) {
      var values: [Value] = []
      for key in keys {
        switch entity.property(named: key) {
        case .attribute(_, let index) where index < row.attributes.count: values.append(row.attributes[index])
        case .toOne(_, let index) where index < row.toOne.count: values.append(row.toOne[index].map(Value.objectID) ?? .null)
        default: values.append(.null)
        }
      }
      guard !values.contains(.null) else { continue }
      if let owner = owners[values] {
        conflicts.append(
          StoreError.Conflict(
            objectID: row.objectID, conflictingObjectID: owner.objectID, entity: entity.name, keys: keys, values: values,
            storedValues: values))
      } else {
        owners[values] = row
      }
    }
    return conflicts
  }
}
