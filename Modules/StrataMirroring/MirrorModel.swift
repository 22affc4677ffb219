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
  /// - Throws: ``MirrorError/unsupported(_:)`` for a model this milestone cannot mirror: a many-to-many
  ///   relationship, or a Deny delete rule (neither is enforced on the hub yet), or a name the mirror uses.
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
      for rel in entity.relationships {
        if rel.deleteRule == .deny {
          throw MirrorError.unsupported(
            "\(entity.name).\(rel.name) has the Deny delete rule, which the hub does not enforce yet")
        }
        if rel.isToMany, rel.isOrdered {
          throw MirrorError.unsupported("\(entity.name).\(rel.name) is ordered; ordered relationships are not mirrored yet")
        }
        if rel.isToMany {
          let inverse = rel.inverse.flatMap { model.entity(named: rel.destination)?.relationship(named: $0) }
          if inverse == nil || inverse?.isToMany == true {
            throw MirrorError.unsupported(
              "\(entity.name).\(rel.name) is a to-many relationship without a to-one inverse; "
                + "only relationships stored on a to-one side are mirrored yet")
          }
        }
      }
    }
  }

  /// The fields that travel for `entity`: persistent, not derived attributes (the identity aside) and
  /// to-one relationships.
  static func fields(of entity: EntityDescription) -> (attributes: [String], references: [String]) {
    let attributes = entity.attributes.filter {
      !$0.isTransient && $0.derivation == nil && $0.name != identityAttribute
    }.map(\.name)
    return (attributes, entity.toOneRelationships.map(\.name))
  }
}
