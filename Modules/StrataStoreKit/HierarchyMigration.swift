import Foundation

/// The changes of entity hierarchies a migration makes, and how stores that keep a hierarchy in one table
/// (SQLite, PostgreSQL) carry them out.
///
/// Two cases stay in place: an existing plain entity gaining new sub-entities (``addedSubentities``: it
/// becomes the root of a hierarchy, its objects stay its own, the sub-entities start empty), and a
/// hierarchy that the migration leaves exactly as it was. Every other change that involves a hierarchy —
/// attributes or relationships added, removed, renamed or converted on a root or a sub-entity, sub-entities
/// added below others, removed or renamed, an entity moving into a hierarchy under a new parent or leaving
/// one — rebuilds the storage of the hierarchies involved (``rebuiltStorages``): each new table is filled
/// from the old ones, every object keeping its primary key and its entity (under its new name), the objects
/// of a removed entity dropped. Refused with `.unsupported`: entities of two old tables merged into one
/// hierarchy (their keys could clash), and an entity that has objects becoming abstract.
///
/// ```swift
/// let change = try HierarchyMigration(step.migration, store: "the SQLite store \(path)")
/// for (root, added) in change.addedSubentities { … }   // ["Movie": ["Remake"]]
/// for (table, members) in change.rebuiltStorages { … }   // ["Media": ["Media", "Movie", "Series"]]
/// ```
package struct HierarchyMigration: Sendable {
  /// Each root that gains sub-entities in place, with them (in model order).
  package let addedSubentities: [String: [String]]
  /// Each table of the new model that is built anew (a hierarchy's root, or an entity that leaves a
  /// hierarchy), with the entities of the new model stored in it (in model order).
  package let rebuiltStorages: [String: [String]]
  /// The old tables the rebuilt ones are filled from, dropped once read: roots of old hierarchies that
  /// change, and tables of entities that move into a hierarchy.
  package let consumedStorages: [String]
  /// The sub-entities of the old model whose views go with the consumed tables.
  package let consumedViews: [String]
  /// The entities of the new model whose storage the rebuild makes.
  package let rebuiltEntities: Set<String>
  /// The entities of hierarchies the migration leaves exactly as they were (table, views and rows kept).
  package let keptEntities: Set<String>
  /// Whether objects of an old entity in a rebuilt hierarchy are dropped (the entity is removed), so
  /// references to them must be cleared.
  package let dropsObjects: Bool

  /// Whether the migration changes no hierarchy.
  package var isEmpty: Bool { addedSubentities.isEmpty && rebuiltStorages.isEmpty }

  /// - Throws: `.unsupported` naming the entity for a hierarchy change the stores cannot migrate.
  package init(_ migration: ModelMigration, store: String) throws {
    let source = migration.source
    let destination = migration.destination
    let old = source.inheritance
    let new = destination.inheritance
    func refuse(_ entity: String, _ why: String) -> StoreError {
      StoreError(.unsupported, "\(store) cannot migrate \(entity): \(why)", entity: entity)
    }
    for mapping in migration.entities {
      guard let name = mapping.source, let oldEntity = source.entity(named: name) else { continue }
      if mapping.entity.isAbstract && !oldEntity.isAbstract {
        throw refuse(mapping.entity.name, "an entity that has objects cannot become abstract")
      }
    }
    guard !new.isEmpty || !old.isEmpty else {
      (addedSubentities, rebuiltStorages, consumedStorages, consumedViews) = ([:], [:], [], [])
      (rebuiltEntities, keptEntities, dropsObjects) = ([], [], false)
      return
    }
    let mappings = Dictionary(migration.entities.map { ($0.entity.name, $0) }, uniquingKeysWith: { first, _ in first })
    let oldRoots = source.entities.map(\.name).filter { old.hasSubentities($0) && old.parent(of: $0) == nil }
    // A hierarchy the migration leaves as it was keeps its table, views and rows.
    func isIdentity(_ name: String) -> Bool {
      guard let mapping = mappings[name], mapping.source == name, let oldEntity = source.entity(named: name),
        mapping.entity == oldEntity, new.isInHierarchy(name), new.root(of: name) == old.root(of: name)
      else { return false }
      return mapping.attributes.allSatisfy { $0.source == $0.attribute.name }
        && mapping.relationshipSources.allSatisfy { $0.key == $0.value }
    }
    let unchangedRoots = Set(
      oldRoots.filter { root in
        let members = old.entityAndDescendants(root)
        return members.allSatisfy(isIdentity) && Set(new.entityAndDescendants(root)) == Set(members)
      })
    var added: [String: [String]] = [:]
    var rebuilt: [String: [String]] = [:]
    var fedBy: [String: Set<String>] = [:]
    for entity in destination.entities {
      let mapping = mappings[entity.name]
      let sourceName = mapping?.source
      let storage: String
      if new.isInHierarchy(entity.name) {
        let root = new.root(of: entity.name)
        if unchangedRoots.contains(root) { continue }
        let rootMapping = mappings[root]
        let inPlace =
          rootMapping?.source == root && !old.isInHierarchy(root) && destination.entity(named: root)?.isAbstract == false
          && new.entityAndDescendants(root).allSatisfy { $0 == root || mappings[$0]?.source == nil }
        if inPlace {
          if root != entity.name { added[root, default: []].append(entity.name) }
          continue
        }
        storage = root
      } else {
        guard let sourceName, old.isInHierarchy(sourceName) else { continue }
        storage = entity.name
      }
      rebuilt[storage, default: []].append(entity.name)
      if let sourceName {
        fedBy[storage, default: []].insert(old.isInHierarchy(sourceName) ? old.root(of: sourceName) : sourceName)
      }
    }
    for (storage, sources) in fedBy.sorted(by: { $0.key < $1.key }) where sources.count > 1 {
      throw refuse(
        storage,
        "the objects of \(sources.sorted().joined(separator: " and ")) would share one table and their keys could clash "
          + "(merging existing entities into one hierarchy is not supported)")
    }
    var consumed = Set(fedBy.values.joined())
    consumed.formUnion(oldRoots.filter { !unchangedRoots.contains($0) })
    let consumedList = source.entities.map(\.name).filter { consumed.contains($0) }
    addedSubentities = added
    rebuiltStorages = rebuilt
    consumedStorages = consumedList
    consumedViews = consumedList.flatMap { old.entityAndDescendants($0).dropFirst() }
    rebuiltEntities = Set(rebuilt.values.joined())
    keptEntities = Set(unchangedRoots.flatMap { old.entityAndDescendants($0) })
    let fed = Set(migration.entities.compactMap(\.source))
    dropsObjects = consumedList.flatMap { old.entityAndDescendants($0) }.contains { !fed.contains($0) }
  }

  /// What fills the rebuilt table `storage`: each entity stored in it that has an old entity, with that
  /// entity, the old table holding its rows and whether they are told apart there by `_entity`.
  ///
  /// ```swift
  /// for copy in hierarchy.copies(into: "Media", of: migration) { … }   // Movie from "Movie" (shared)
  /// ```
  package func copies(
    into storage: String, of migration: ModelMigration
  ) -> [(mapping: EntityMapping, source: EntityDescription, oldTable: String, isShared: Bool)] {
    (rebuiltStorages[storage] ?? []).compactMap { name in
      guard let mapping = migration.entities.first(where: { $0.entity.name == name }), let sourceName = mapping.source,
        let source = migration.source.entity(named: sourceName)
      else { return nil }
      let (oldTable, isShared) = Self.oldStorage(of: sourceName, in: migration.source)
      return (mapping, source, oldTable, isShared)
    }
  }

  /// The old table holding the objects of the old entity `entity`, and whether its rows are told apart by
  /// `_entity`.
  package static func oldStorage(of entity: String, in model: ObjectModel) -> (table: String, isShared: Bool) {
    model.inheritance.isInHierarchy(entity) ? (model.inheritance.root(of: entity), true) : (entity, false)
  }
}
