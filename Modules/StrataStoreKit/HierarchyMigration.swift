import Foundation

/// The changes of entity hierarchies a migration makes, as far as stores migrate them: an existing entity
/// gaining new sub-entities (it becomes the root of a hierarchy). Its objects stay objects of the root;
/// the sub-entities start empty. Anything else that involves a hierarchy — a hierarchy in the old model, an
/// existing entity becoming a sub-entity, a new root — is refused until stores can move rows between
/// entities.
///
/// ```swift
/// let change = try HierarchyMigration(step.migration, store: "the SQLite store \(path)")
/// for (root, added) in change.addedSubentities { … }   // ["Movie": ["Remake"]]
/// ```
package struct HierarchyMigration: Sendable {
  /// Each root that gains sub-entities, with them (in model order).
  package let addedSubentities: [String: [String]]

  /// Whether the migration changes no hierarchy.
  package var isEmpty: Bool { addedSubentities.isEmpty }

  /// - Throws: `.unsupported` naming the entity for a hierarchy change the stores cannot migrate.
  package init(_ migration: ModelMigration, store: String) throws {
    let source = migration.source
    let destination = migration.destination
    guard !destination.inheritance.isEmpty || !source.inheritance.isEmpty else {
      addedSubentities = [:]
      return
    }
    func refuse(_ entity: String, _ why: String) -> StoreError {
      StoreError(.unsupported, "\(store) cannot migrate \(entity): \(why)", entity: entity)
    }
    if let entity = source.entities.first(where: { source.inheritance.isInHierarchy($0.name) || $0.isAbstract }) {
      throw refuse(entity.name, "changing a model that has entity hierarchies is not supported yet")
    }
    var added: [String: [String]] = [:]
    for entity in destination.entities where destination.inheritance.isInHierarchy(entity.name) || entity.isAbstract {
      let mapping = migration.entities.first { $0.entity.name == entity.name }
      let root = destination.inheritance.root(of: entity.name)
      if root == entity.name {
        guard let mapping, mapping.source == entity.name, !entity.isAbstract else {
          throw refuse(entity.name, "a new or renamed entity, or an abstract one, cannot become the root of a hierarchy")
        }
      } else {
        guard mapping?.source == nil else {
          throw refuse(entity.name, "an existing entity cannot become a sub-entity (only new sub-entities can be added)")
        }
        added[root, default: []].append(entity.name)
      }
    }
    addedSubentities = added
  }
}
