import Foundation

/// The entity hierarchies of a model, worked out once when the model is built.
///
/// An entity with a ``EntityDescription/parentEntity`` is a *sub-entity*: it has every attribute,
/// relationship, uniqueness constraint and index of its parent, then its own. A fetch of an entity
/// returns the objects of its sub-entities too (unless the request says otherwise), and a uniqueness
/// constraint applies to every object of the entity that declares it and of that entity's sub-entities.
///
/// ```swift
/// model.inheritance.subentities(of: "Media")          // ["Film", "Series"]
/// model.inheritance.root(of: "Film")                   // "Media"
/// model.isEntity("Film", kindOf: "Media")              // true
/// ```
public struct EntityInheritance: Sendable, Hashable {
  private var parents: [String: String] = [:]
  private var children: [String: [String]] = [:]
  private var abstract: Set<String> = []
  private var order: [String] = []

  /// No hierarchy.
  public init() {}

  init(entities: [EntityDescription]) {
    order = entities.map(\.name)
    for entity in entities {
      if let parent = entity.parentEntity {
        parents[entity.name] = parent
        children[parent, default: []].append(entity.name)
      }
      if entity.isAbstract { abstract.insert(entity.name) }
    }
  }

  /// Whether no entity of the model has a parent or is abstract.
  public var isEmpty: Bool { parents.isEmpty && abstract.isEmpty }

  /// The parent of `entity`, or `nil`.
  public func parent(of entity: String) -> String? { parents[entity] }

  /// The direct sub-entities of `entity`, in model order.
  public func subentities(of entity: String) -> [String] { children[entity] ?? [] }

  /// Whether `entity` has sub-entities.
  public func hasSubentities(_ entity: String) -> Bool { children[entity] != nil }

  /// Whether `entity` belongs to a hierarchy (has a parent or sub-entities).
  public func isInHierarchy(_ entity: String) -> Bool { parents[entity] != nil || children[entity] != nil }

  /// Whether `entity` is abstract.
  public func isAbstract(_ entity: String) -> Bool { abstract.contains(entity) }

  /// The topmost ancestor of `entity` (itself for a root entity).
  public func root(of entity: String) -> String {
    var current = entity
    var steps = 0
    while let parent = parents[current], steps <= parents.count {
      current = parent
      steps += 1
    }
    return current
  }

  /// `entity` and every entity below it, `entity` first, then depth first in model order.
  public func entityAndDescendants(_ entity: String) -> [String] {
    var result = [entity]
    var index = 0
    while index < result.count, result.count <= order.count {
      result.append(contentsOf: children[result[index]] ?? [])
      index += 1
    }
    return result
  }

  /// The entities whose objects a fetch of `entity` returns: `entity` and its descendants with
  /// `includesSubentities`, else `entity` alone; abstract entities are left out (they have no objects).
  public func fetchedEntities(_ entity: String, includesSubentities: Bool = true) -> [String] {
    (includesSubentities ? entityAndDescendants(entity) : [entity]).filter { !abstract.contains($0) }
  }

  /// Whether `entity` is `ancestor` or one of its descendants.
  public func isEntity(_ entity: String, kindOf ancestor: String) -> Bool {
    var current = entity
    var steps = 0
    while current != ancestor {
      guard let parent = parents[current], steps <= parents.count else { return false }
      current = parent
      steps += 1
    }
    return true
  }
}

extension ObjectModel {
  /// Whether `entity` is `ancestor` or one of its sub-entities (at any depth).
  public func isEntity(_ entity: String, kindOf ancestor: String) -> Bool {
    inheritance.isEntity(entity, kindOf: ancestor)
  }

  /// The topmost entity among `entity` and its ancestors that has the property `name`: where an inherited
  /// relationship is declared (its join table is named after it).
  public func declaringEntity(of name: String, in entity: String) -> String {
    var declaring = entity
    while let parent = inheritance.parent(of: declaring), let parentEntity = self.entity(named: parent),
      parentEntity.property(named: name) != nil
    {
      declaring = parent
    }
    return declaring
  }

  /// The topmost entity that declares the uniqueness constraint `keys` among `entity` and its ancestors:
  /// the constraint holds among the objects of that entity and its sub-entities.
  public func constraintScope(of keys: [String], in entity: String) -> String {
    var scope = entity
    var current = entity
    while let parent = inheritance.parent(of: current), let parentEntity = self.entity(named: parent) {
      if parentEntity.uniquenessConstraints.contains(keys) { scope = parent }
      current = parent
    }
    return scope
  }

  /// Adds to each sub-entity what it inherits (its parent's attributes, relationships, constraints and
  /// indexes before its own), parents first. A model already resolved comes back unchanged, so a stored
  /// model decodes to itself.
  static func resolvingInheritance(_ entities: [EntityDescription]) throws -> [EntityDescription] {
    guard entities.contains(where: { $0.parentEntity != nil }) else { return entities }
    func invalid(_ message: String, _ entity: String, _ key: String? = nil) -> StoreError {
      StoreError(.invalidModel, "invalid model: \(message)", entity: entity, key: key)
    }
    let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    var resolved: [String: EntityDescription] = [:]
    func resolve(_ entity: EntityDescription, _ path: [String]) throws -> EntityDescription {
      if let done = resolved[entity.name] { return done }
      guard let parentName = entity.parentEntity else {
        resolved[entity.name] = entity
        return entity
      }
      guard !path.contains(entity.name) else {
        throw invalid("the entity hierarchy \((path + [entity.name]).joined(separator: " → ")) is a cycle", entity.name)
      }
      guard let declaredParent = byName[parentName] else {
        throw invalid("\(entity.name)'s parent entity '\(parentName)' is not in the model", entity.name)
      }
      let parent = try resolve(declaredParent, path + [entity.name])
      var attributes = parent.attributes
      for attribute in entity.attributes {
        if let inherited = parent.attribute(named: attribute.name) {
          guard inherited == attribute else {
            throw invalid(
              "\(entity.name).\(attribute.name) redeclares an attribute it inherits from \(parent.name)",
              entity.name, attribute.name)
          }
        } else if parent.relationship(named: attribute.name) != nil {
          throw invalid(
            "\(entity.name).\(attribute.name) redeclares a relationship it inherits from \(parent.name)",
            entity.name, attribute.name)
        } else {
          attributes.append(attribute)
        }
      }
      var relationships = parent.relationships
      for relationship in entity.relationships {
        if let inherited = parent.relationship(named: relationship.name) {
          guard inherited == relationship else {
            throw invalid(
              "\(entity.name).\(relationship.name) redeclares a relationship it inherits from \(parent.name)",
              entity.name, relationship.name)
          }
        } else if parent.attribute(named: relationship.name) != nil {
          throw invalid(
            "\(entity.name).\(relationship.name) redeclares an attribute it inherits from \(parent.name)",
            entity.name, relationship.name)
        } else {
          relationships.append(relationship)
        }
      }
      func merged(_ inherited: [[String]], _ own: [[String]]) -> [[String]] {
        inherited + own.filter { !inherited.contains($0) }
      }
      let result = EntityDescription(
        name: entity.name, attributes: attributes, relationships: relationships,
        uniquenessConstraints: merged(parent.uniquenessConstraints, entity.uniquenessConstraints),
        indexes: merged(parent.indexes, entity.indexes), renamingIdentifier: entity.renamingIdentifier,
        parentEntity: parentName, isAbstract: entity.isAbstract)
      resolved[entity.name] = result
      return result
    }
    let result = try entities.map { try resolve($0, []) }
    try checkSharedNames(result)
    return result
  }

  /// Refuses two entities of one hierarchy, neither inheriting from the other, that declare a property of
  /// the same name differently: the SQL stores keep a hierarchy in one table, where they would share a
  /// column.
  private static func checkSharedNames(_ entities: [EntityDescription]) throws {
    let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    func root(_ entity: EntityDescription) -> String {
      var current = entity
      var steps = 0
      while let parent = current.parentEntity.flatMap({ byName[$0] }), steps <= entities.count {
        current = parent
        steps += 1
      }
      return current.name
    }
    var declared: [String: [String: (entity: String, property: String)]] = [:]
    for entity in entities where entity.parentEntity != nil || entities.contains(where: { $0.parentEntity == entity.name }) {
      let parent = entity.parentEntity.flatMap { byName[$0] }
      let own =
        entity.attributes.filter { parent?.attribute(named: $0.name) == nil }.map { ($0.name, "\($0)") }
        + entity.relationships.filter { parent?.relationship(named: $0.name) == nil }.map { ($0.name, "\($0)") }
      let hierarchy = root(entity)
      for (name, description) in own {
        if let other = declared[hierarchy]?[name], other.property != description {
          throw StoreError(
            .invalidModel,
            "invalid model: \(other.entity).\(name) and \(entity.name).\(name) are declared differently in the hierarchy of "
              + "\(hierarchy), whose objects share one table; give them different names or declare the property on a "
              + "common parent", entity: entity.name, key: name)
        }
        declared[hierarchy, default: [:]][name] = (entity.name, description)
      }
    }
  }
}

extension ObjectModel {
  /// Throws unless objects of `entity` can be inserted: an abstract entity has none of its own.
  ///
  /// - Throws: ``StoreError`` `.validation` naming the abstract entity and the sub-entities to insert
  ///   instead.
  public func requireInsertable(_ entity: String) throws {
    guard inheritance.isAbstract(entity) else { return }
    let concrete = inheritance.fetchedEntities(entity).filter { $0 != entity }
    let hint =
      concrete.isEmpty ? "it has no sub-entities" : "insert one of its sub-entities (\(concrete.joined(separator: ", ")))"
    throw StoreError(.validation, "\(entity) is an abstract entity and cannot be inserted: \(hint)", entity: entity)
  }
}
