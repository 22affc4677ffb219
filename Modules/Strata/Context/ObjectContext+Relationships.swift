import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// The targets of a to-many relationship, loading them from the store the first time.
  func loadToMany(_ object: ManagedObject, index: Int) -> Set<ObjectID> {
    if let loaded = object.toMany[index] { return loaded }
    var ids = Set<ObjectID>()
    var ordered: [ObjectID] = []
    if !object.isInsertedStorage, !object.objectID.isTemporary, let info = object.info,
      let store = try? requireStore()
    {
      let rel = info.entity.toManyRelationships[index]
      do {
        if let prefetched = toManyCache[object.objectID]?[rel.name] {
          ordered = prefetched
        } else {
          ordered = try store.relatedObjectIDs(of: object.objectID, relationship: rel.name, generation: readGeneration)
          takePermanentIDsFromParent()
        }
        ids = Set(ordered)
      } catch let error as StoreError {
        recordError(error)
      } catch {
        recordError(StoreError(.io, "loading \(info.entity.name).\(rel.name) failed: \(error)"))
      }
      if hasPendingDeletions { ids = ids.filter { !isPendingDeletion($0) } }
      if rel.isOrdered {
        ordered = ordered.filter { ids.contains($0) }
        object.toManyOrder[index] = ordered
        object.committedToManyOrder[index] = ordered
      }
    }
    object.toMany[index] = ids
    object.committedToMany[index] = ids
    return ids
  }

  /// The objects a relationship of `object` points at now.
  func currentTargets(of object: ManagedObject, _ rel: RelationshipDescription) -> [ManagedObject] {
    guard let info = object.info else { return [] }
    if rel.isToMany {
      guard let index = info.toManyIndex[rel.name] else { return [] }
      let set = loadToMany(object, index: index)
      let ids = rel.isOrdered ? (object.orderedTargets(toManyIndex: index) ?? Array(set)) : Array(set)
      return ids.map { self.object(with: $0) }
    }
    guard let index = info.entity.toOneIndex(named: rel.name) else { return [] }
    object.fireFault()
    return object.toOne[index].map { [self.object(with: $0)] } ?? []
  }

  /// Points `rel` of `object` at `targets` and keeps every inverse in step.
  func setRelationship(
    _ object: ManagedObject, _ rel: RelationshipDescription, targets: [ManagedObject], markingSource: Bool = true
  ) {
    guard let info = object.info else { return }
    for target in targets
    where target.managedObjectContext !== self
      || (target.entity.name != rel.destination && !coordinator.model.isEntity(target.entity.name, kindOf: rel.destination))
    {
      recordError(
        StoreError(
          .validation,
          target.managedObjectContext !== self
            ? "\(info.entity.name).\(rel.name) cannot point at \(target.objectID): it belongs to another context"
            : "\(info.entity.name).\(rel.name) takes \(rel.destination) objects, not \(target.entity.name)",
          entity: info.entity.name, key: rel.name))
      return
    }
    let inverse = coordinator.model.inverse(of: rel)
    if rel.isToMany {
      guard let index = info.toManyIndex[rel.name] else { return }
      let current = loadToMany(object, index: index)
      let wanted = Set(targets.map(\.objectID))
      if rel.isOrdered {
        // NSOrderedSet semantics: an object appears once, at its first occurrence.
        var seen = Set<ObjectID>()
        let wantedOrder = targets.map(\.objectID).filter { seen.insert($0).inserted }
        let currentOrder = object.orderedTargets(toManyIndex: index) ?? []
        guard wantedOrder != currentOrder else { return }
        recordUndo(.relationship(object, rel, targets: currentOrder.map { self.object(with: $0) }))
        object.toManyOrder[index] = wantedOrder
        if wanted == current {
          markRelationshipChanged(object, rel.name, marking: markingSource)
          return
        }
      } else {
        guard wanted != current else { return }
        recordUndo(.relationship(object, rel, targets: current.map { self.object(with: $0) }))
      }
      object.toMany[index] = wanted
      markRelationshipChanged(object, rel.name, marking: markingSource)
      guard let inverse else { return }
      for id in current.subtracting(wanted) { unlink(self.object(with: id), inverse, from: object) }
      for target in targets where !current.contains(target.objectID) { link(target, inverse, to: object) }
    } else {
      guard let index = info.entity.toOneIndex(named: rel.name) else { return }
      object.fireFault()
      let old = object.toOne[index]
      let new = targets.first?.objectID
      guard old != new else { return }
      recordUndo(.relationship(object, rel, targets: old.map { [self.object(with: $0)] } ?? []))
      object.toOne[index] = new
      markRelationshipChanged(object, rel.name, marking: markingSource)
      guard let inverse else { return }
      if let old { unlink(self.object(with: old), inverse, from: object) }
      if let target = targets.first { link(target, inverse, to: object) }
    }
  }

  /// Adds `source` to `target`'s side `rel` (the inverse of the relationship that changed).
  private func link(_ target: ManagedObject, _ rel: RelationshipDescription, to source: ManagedObject) {
    guard let info = target.info else { return }
    if rel.isToMany {
      guard let index = info.toManyIndex[rel.name] else { return }
      var set = loadToMany(target, index: index)
      guard set.insert(source.objectID).inserted else { return }
      if rel.isOrdered {
        // As Core Data: setting the to-one side appends the object at the end of the ordered list.
        var order = target.orderedTargets(toManyIndex: index) ?? []
        order.append(source.objectID)
        target.toManyOrder[index] = order
      }
      target.toMany[index] = set
    } else {
      guard let index = info.entity.toOneIndex(named: rel.name) else { return }
      target.fireFault()
      let previous = target.toOne[index]
      guard previous != source.objectID else { return }
      target.toOne[index] = source.objectID
      if let previous, let forward = coordinator.model.inverse(of: rel) {
        let partner = object(with: previous)
        if let partnerInfo = partner.info, let i = partnerInfo.entity.toOneIndex(named: forward.name) {
          partner.fireFault()
          partner.toOne[i] = nil
          markRelationshipChanged(partner, forward.name)
        }
      }
    }
    markRelationshipChanged(target, rel.name)
  }

  /// Removes `source` from `target`'s side `rel`.
  private func unlink(_ target: ManagedObject, _ rel: RelationshipDescription, from source: ManagedObject) {
    guard let info = target.info, !(target.isDeletedStorage && target.isInsertedStorage) else { return }
    if rel.isToMany {
      guard let index = info.toManyIndex[rel.name] else { return }
      var set = loadToMany(target, index: index)
      // A set loaded after `source` was marked deleted already leaves it out; the target still changed.
      guard set.remove(source.objectID) != nil || isPendingDeletion(source.objectID) else { return }
      target.toMany[index] = set
    } else {
      guard let index = info.entity.toOneIndex(named: rel.name) else { return }
      target.fireFault()
      guard target.toOne[index] == source.objectID else { return }
      target.toOne[index] = nil
    }
    markRelationshipChanged(target, rel.name)
  }

  /// Tells the trackings of `object`'s relationship `key` that it changed and, when `marking`, marks the
  /// object changed.
  private func markRelationshipChanged(_ object: ManagedObject, _ key: String, marking: Bool = true) {
    object.notifyObservers(ofProperty: key)
    guard marking else { return }
    if !object.isDeletedStorage { noteChange(object, .updated) }
    guard !object.isInsertedStorage, !object.isDeletedStorage else { return }
    object.changedKeys.insert(key)
    registerUpdated(object)
  }
}
