import Foundation
import StrataStoreKit

/// How the SQL stores name a reference into a hierarchy: a to-one target whose destination has
/// sub-entities is stored as a bare key, so reading it back asks the hierarchy's table which entity each
/// target was inserted as (its `_entity`). The stores answer that one question (``Lookup``); the rest is
/// here, once.
///
/// ```swift
/// let resolved = try SQLHierarchyReferences.resolvingReferences(snapshots, model: model) { root, keys in
///   try entityColumn(of: keys, in: root)   // [4: "Series", 9: "Movie"]
/// }
/// ```
package enum SQLHierarchyReferences {
  /// For the root of a hierarchy and some primary keys, the entity each stored row was inserted as;
  /// keys without a row are left out.
  package typealias Lookup = (_ root: String, _ keys: [Int64]) throws -> [Int64: String]

  /// `snapshots` with every to-one target whose destination has sub-entities named by the entity it was
  /// inserted as (a target whose row is gone keeps its ID).
  package static func resolvingReferences(
    _ snapshots: [Snapshot], model: ObjectModel, lookup: Lookup
  ) throws -> [Snapshot] {
    let inheritance = model.inheritance
    guard !inheritance.isEmpty else { return snapshots }
    var positions: [String: [Int]] = [:]
    var wanted: [ObjectID] = []
    for snapshot in snapshots {
      let entityName = snapshot.objectID.entityName
      if positions[entityName] == nil {
        let rels = model.entity(named: entityName)?.toOneRelationships ?? []
        positions[entityName] = rels.indices.filter { inheritance.hasSubentities(rels[$0].destination) }
      }
      for index in positions[entityName] ?? [] where index < snapshot.toOne.count {
        if let target = snapshot.toOne[index] { wanted.append(target) }
      }
    }
    guard !wanted.isEmpty else { return snapshots }
    let resolved = try concreteIDs(wanted, model: model, lookup: lookup)
    return snapshots.map { snapshot in
      guard let indices = positions[snapshot.objectID.entityName], !indices.isEmpty else { return snapshot }
      var snapshot = snapshot
      for index in indices where index < snapshot.toOne.count {
        if let target = snapshot.toOne[index] { snapshot.toOne[index] = resolved[target] ?? target }
      }
      return snapshot
    }
  }

  /// The IDs among `ids` of entities with sub-entities, each named by the entity its object was inserted
  /// as; IDs of other entities, and of objects that are not stored, are left out.
  package static func concreteIDs(_ ids: [ObjectID], model: ObjectModel, lookup: Lookup) throws -> [ObjectID: ObjectID] {
    let inheritance = model.inheritance
    var byRoot: [String: [ObjectID]] = [:]
    for id in ids where id.primaryKey != nil && inheritance.hasSubentities(id.entityName) {
      byRoot[inheritance.root(of: id.entityName), default: []].append(id)
    }
    var result: [ObjectID: ObjectID] = [:]
    for (root, group) in byRoot {
      let entities = try lookup(root, group.compactMap(\.primaryKey))
      for id in group {
        guard let pk = id.primaryKey, let entity = entities[pk] else { continue }
        result[id] = ObjectID(entityName: entity, storeIdentifier: id.storeIdentifier, primaryKey: pk)
      }
    }
    return result
  }
}

extension SQLSchemaDescription {
  /// `relatedObjectIDs` of an SQL store: the targets of `relationship` of `id`, in primary-key order (an
  /// ordered relationship's in its order; a to-one's target if any), each resolved to its own entity
  /// when the destination has sub-entities. `read` runs its body on a connection of the wanted
  /// generation; `keys` runs a one-column query with the object's key bound; `concreteIDs` is the store's
  /// ``SQLHierarchyReferences/concreteIDs(_:model:lookup:)``.
  ///
  /// - Throws: `.notFound` for an unknown entity or relationship; what the three closures throw.
  package func relatedObjectIDs<Connection>(
    of id: ObjectID, relationship: String, storeIdentifier: String,
    read: ((Connection) throws -> [ObjectID]) throws -> [ObjectID],
    keys: @escaping (Connection, String, Int64) throws -> [Int64],
    concreteIDs: @escaping ([ObjectID], Connection) throws -> [ObjectID: ObjectID]
  ) throws -> [ObjectID] {
    let (table, rel) = try self.relationship(relationship, of: id)
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return [] }
    let sql = relatedKeysSQL(table.name, rel)
    let resolves = model.inheritance.hasSubentities(rel.destination)
    return try read { connection in
      let found = try keys(connection, sql, pk)
      guard let first = found.first else { return [] }
      // One ID interned for the destination (under a lock), the others made from it.
      let template = ObjectID(entityName: rel.destination, storeIdentifier: storeIdentifier, primaryKey: first)
      let ids = found.map { template.withPrimaryKey($0) }
      guard resolves else { return ids }
      let concrete = try concreteIDs(ids, connection)
      return ids.map { concrete[$0] ?? $0 }
    }
  }
}

extension SQLLayout {
  /// The entity whose table stores the hierarchy under `root`: every attribute and relationship of every
  /// entity in it, each once (the first to declare it), those of sub-entities optional. `_entity` is the
  /// dialect's to add.
  package static func hierarchyStorage(_ root: String, in model: ObjectModel) -> EntityDescription {
    var attributes: [AttributeDescription] = []
    var relationships: [RelationshipDescription] = []
    var seen = Set<String>()
    for name in model.inheritance.entityAndDescendants(root) {
      guard let member = model.entity(named: name) else { continue }
      for var attribute in member.attributes where seen.insert(attribute.name).inserted {
        if name != root { attribute.isOptional = true }
        attributes.append(attribute)
      }
      for rel in member.relationships where seen.insert(rel.name).inserted { relationships.append(rel) }
    }
    return EntityDescription(name: root, attributes: attributes, relationships: relationships)
  }
}
