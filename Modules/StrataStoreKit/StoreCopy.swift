import Foundation

/// Copies every object and link of one store into another, empty store of the same model — of any
/// backend — in one save: what moves an app's data from SQLite to LMDB or back (Core Data's
/// `migratePersistentStore`). Objects get the destination's keys (and its store identifier); links
/// follow them, and ordered relationships keep their order (``OrderedListChange``). Persistent history is not copied: it describes the source store's transactions.
///
/// ```swift
/// let copied = try StoreCopy.copy(from: sqliteStore, to: lmdbStore, author: "copy")
/// ```
package enum StoreCopy {
  /// Copies everything in `source` into `destination` and returns the number of objects copied.
  ///
  /// - Throws: `.misuse` when the two stores have different models or `destination` holds objects;
  ///   what the destination's save throws (nothing is written then).
  @discardableResult
  package static func copy(
    from source: any PersistentStore, to destination: any PersistentStore, author: String? = nil,
    progress: (@Sendable (Int, Int) -> Void)? = nil
  ) throws -> Int {
    let model = source.model
    guard destination.model == model else {
      throw StoreError(.misuse, "a store can be copied only into a store of the same model")
    }
    // Each entity's own objects: a fetch of a parent entity would bring its sub-entities' again.
    func own(_ entity: EntityDescription) -> FetchDescription {
      var request = FetchDescription(entityName: entity.name)
      request.includesSubentities = false
      return request
    }
    for entity in model.entities where try destination.count(own(entity)) > 0 {
      throw StoreError(.misuse, "the destination store already holds \(entity.name) objects: copy into an empty store")
    }
    var rows: [(entity: EntityDescription, snapshots: [Snapshot])] = []
    for entity in model.entities where !model.inheritance.isAbstract(entity.name) {
      guard case .snapshots(let snapshots) = try source.fetch(own(entity), generation: nil) else { continue }
      rows.append((entity, snapshots))
    }
    let total = rows.reduce(0) { $0 + $1.snapshots.count }
    var temporary: [ObjectID: ObjectID] = [:]
    for (entity, snapshots) in rows {
      for snapshot in snapshots { temporary[snapshot.objectID] = .makeTemporary(entityName: entity.name) }
    }
    var inserted: [ObjectChange] = []
    var links: [LinkChange] = []
    var lists: [OrderedListChange] = []
    inserted.reserveCapacity(total)
    for (entity, snapshots) in rows {
      let joins = entity.toManyRelationships.filter { relationship in
        let owner = model.joinTableOwner(of: entity.name, relationship)
        return model.inverse(of: relationship)?.isToMany != false && !owner.isFlipped
      }
      for snapshot in snapshots {
        guard let id = temporary[snapshot.objectID] else { continue }
        inserted.append(
          ObjectChange(objectID: id, attributes: snapshot.attributes, toOne: snapshot.toOne.map { $0.flatMap { temporary[$0] } }))
        for relationship in joins {
          for target in try source.relatedObjectIDs(of: snapshot.objectID, relationship: relationship.name, generation: nil) {
            guard let mapped = temporary[target] else { continue }
            links.append(
              LinkChange(entityName: entity.name, relationship: relationship.name, source: id, target: mapped, isInsertion: true))
          }
        }
        for relationship in entity.toManyRelationships where relationship.isOrdered {
          let targets = try source.relatedObjectIDs(of: snapshot.objectID, relationship: relationship.name, generation: nil)
          guard !targets.isEmpty else { continue }
          lists.append(
            OrderedListChange(
              entityName: entity.name, relationship: relationship.name, source: id,
              targets: targets.compactMap { temporary[$0] }))
        }
        progress?(inserted.count, total)
      }
    }
    var changes = ChangeSet(inserted: inserted, linkChanges: links, author: author)
    changes.orderedLists = lists
    _ = try destination.save(changes)
    return total
  }
}
