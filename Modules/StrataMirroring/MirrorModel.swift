import Foundation
import Strata

/// The model additions mirroring needs, and the checks a model must pass to be mirrored.
///
/// Every root entity gains an optional, indexed `strataMirrorID` UUID attribute: an object's global
/// identity lives in its own row, so it is written in the same local transaction as the object. The
/// mirror's own state (replica identity, acknowledged history token, last pushed and pulled positions)
/// lives in one more entity, `StrataMirrorState`, written in the same local transaction as each
/// applied pull.
///
/// ```swift
/// let mirrored = try MirrorModel.adding(to: ObjectModel(Potato.self, Tasting.self))
/// let potatoes = PersistentContainer(name: "Potatoes", model: mirrored, types: [Potato.self, Tasting.self], registry: registry)
/// ```
public enum MirrorModel {
  /// The attribute holding an object's global identity.
  public static let identityAttribute = "strataMirrorID"
  /// The entity holding the mirror's own state, one object per key.
  public static let stateEntity = "StrataMirrorState"

  /// `model` with the identity attribute on every root entity and the state entity added.
  ///
  /// - Throws: ``MirrorError/unsupported(_:)`` for a model that cannot be mirrored: a to-many relationship
  ///   without an inverse, or a name the mirror uses.
  public static func adding(to model: ObjectModel) throws -> ObjectModel {
    try requireMirrorable(model)
    if isAugmented(model) { return model }
    var entities: [EntityDescription] = model.entities.map { entity in
      guard entity.parentEntity == nil else { return entity }
      return EntityDescription(
        name: entity.name,
        attributes: entity.attributes + [
          AttributeDescription(
            name: identityAttribute, type: .uuid, isOptional: true, isIndexed: true,
            preservesValueInHistoryOnDeletion: true)
        ],
        relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes,
        renamingIdentifier: entity.renamingIdentifier, parentEntity: entity.parentEntity, isAbstract: entity.isAbstract)
    }
    entities.append(
      EntityDescription(
        name: stateEntity,
        attributes: [
          AttributeDescription(name: "key", type: .string),
          AttributeDescription(name: "value", type: .string),
        ], uniquenessConstraints: [["key"]]))
    var augmented = try ObjectModel(entities: entities, fetchRequestTemplates: model.fetchRequestTemplates)
    augmented.versionName = model.versionName
    return augmented
  }

  /// The app's entity names in `model` (the mirror's state entity left out), sorted.
  package static func appEntities(of model: ObjectModel) -> [String] {
    model.entities.map(\.name).filter { $0 != stateEntity }.sorted()
  }

  /// Why a hub of `hub`'s entities refuses a replica (or a hub, or a store) of `other`'s: `nil` when they
  /// are versions of one app's model (one's entity names hold all of the other's), else one line naming
  /// both, for `what` (the other side: "this replica's model") and `hubName` (the hub's side).
  package static func mismatch(hub: [String], other: [String], what: String, hubName: String = "the hub's") -> String? {
    let (mine, theirs) = (Set(hub).subtracting([stateEntity]), Set(other).subtracting([stateEntity]))
    guard !mine.isSubset(of: theirs) && !theirs.isSubset(of: mine) else { return nil }
    func list(_ names: Set<String>) -> String { names.sorted().joined(separator: ", ") }
    return "\(what) (entities \(list(theirs))) is another model than \(hubName) (entities \(list(mine))); nothing was changed"
  }

  /// Whether `candidate` is a newer version of `stored`, the model a hub keeps: it holds every entity of
  /// `stored` with every attribute (of the same type) and every relationship (to the same entity, to-one or
  /// to-many alike), and more. A model carries no order of its versions (its `versionName` is the app's free
  /// text, its `fingerprint` a hash; a `MigrationPlan` orders versions by its own list, which a hub does not
  /// have), so the hub orders them by what they hold: a version that removes, renames or retypes a field,
  /// or changes only options (optionality, defaults, indexes), is not newer.
  package static func isNewer(_ candidate: ObjectModel, than stored: ObjectModel) -> Bool {
    shape(of: stored).isStrictSubset(of: shape(of: candidate))
  }

  /// The entities, attributes (with their types) and relationships (with their destinations and
  /// cardinality) of `model`'s app entities, one string each.
  private static func shape(of model: ObjectModel) -> Set<String> {
    var shape: Set<String> = []
    for entity in model.entities where entity.name != stateEntity {
      shape.insert(entity.name)
      for attribute in entity.attributes { shape.insert("\(entity.name).\(attribute.name): \(attribute.type.rawValue)") }
      for rel in entity.relationships {
        shape.insert("\(entity.name).\(rel.name) -> \(rel.destination)\(rel.isToMany ? " (to-many)" : "")")
      }
    }
    return shape
  }

  /// Whether `model` already holds the mirror's additions.
  static func isAugmented(_ model: ObjectModel) -> Bool {
    model.entity(named: stateEntity) != nil
      && model.entities.allSatisfy {
        $0.name == stateEntity || $0.parentEntity != nil || $0.attribute(named: identityAttribute) != nil
      }
  }

  /// Throws when `model` cannot be mirrored by this milestone.
  static func requireMirrorable(_ model: ObjectModel) throws {
    let augmented = isAugmented(model)
    for entity in model.entities where entity.name != stateEntity {
      if !augmented, entity.attribute(named: identityAttribute) != nil {
        throw MirrorError.unsupported("\(entity.name) already has an attribute named \(identityAttribute)")
      }
      for rel in entity.relationships where rel.isToMany && model.inverse(of: rel) == nil {
        throw MirrorError.unsupported(
          "\(entity.name).\(rel.name) is a to-many relationship without an inverse; mirrored relationships need one")
      }
    }
  }

  /// The names of the fields of one entity that travel, by kind.
  typealias TravellingFields = (attributes: [String], references: [String], lists: [String])

  /// The fields that travel for `entity`: persistent, not derived attributes (the identity aside), to-one
  /// relationships, and the to-many relationships whose targets travel as a list (`lists`): an ordered
  /// to-many with a to-one inverse (its order; membership travels on the to-one side), and the side of a
  /// many-to-many pair that owns its join table (the other side follows from it).
  static func fields(of entity: EntityDescription, in model: ObjectModel) -> TravellingFields {
    let attributes = entity.attributes.filter {
      !$0.isTransient && $0.derivation == nil && $0.name != identityAttribute
    }.map(\.name)
    return (
      attributes, entity.toOneRelationships.map(\.name),
      entity.toManyRelationships.filter { travelsAsList($0, of: entity.name, in: model) }.map(\.name)
    )
  }

  /// Whether the to-many `relationship` of `entityName` travels as a list of targets (see `fields(of:in:)`).
  static func travelsAsList(_ relationship: RelationshipDescription, of entityName: String, in model: ObjectModel) -> Bool {
    guard relationship.isToMany, let inverse = model.inverse(of: relationship) else { return false }
    if !inverse.isToMany { return relationship.isOrdered }
    let owner = model.joinTableOwner(of: entityName, relationship)
    return !owner.isFlipped
  }

  /// Whether `relationship` is the ordered to-many side of a one-to-many pair (its members are the objects
  /// whose to-one inverse points at the owner; only the order is the list's own).
  static func isOrderedOneToMany(_ relationship: RelationshipDescription, in model: ObjectModel) -> Bool {
    relationship.isToMany && relationship.isOrdered && model.inverse(of: relationship).map { !$0.isToMany } == true
  }
}

extension ManagedObject {
  /// The objects the relationship `rel` holds: its target, or its members (in order when it is ordered).
  func related(_ rel: RelationshipDescription) -> [ManagedObject] {
    let value = value(forKey: rel.name)
    guard rel.isToMany else { return (value as? ManagedObject).map { [$0] } ?? [] }
    return rel.isOrdered ? value as? [ManagedObject] ?? [] : Array(value as? Set<ManagedObject> ?? [])
  }
}
