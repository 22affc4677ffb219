import Foundation
internal import StrataStoreKit

/// How a context's ``ObjectContext/save()`` settles conflicts with the store — Core Data's merge
/// policies. Two kinds of conflict exist:
///
/// - *Optimistic locking*: an object this context changed or deleted was changed (or deleted) in the
///   store since the context read it.
/// - *Uniqueness*: an inserted object's unique key is already used by a stored object.
///
/// ```swift
/// context.mergePolicy = .mergeByPropertyObjectTrump
/// let studio = Studio(context: context)
/// studio.name = "Warner"          // already stored: the save updates that row instead of failing
/// try context.save()
/// ```
public enum MergePolicy: Sendable, Hashable {
  /// Throw every conflict (the default): one `.optimisticLockConflict` or `.constraintConflict` error
  /// listing each object, key and both values; the store is unchanged.
  case error
  /// Property by property, this context's changes win: the stored values of everything else are kept.
  /// An insert whose unique key exists becomes an update of the stored row writing only the
  /// properties the app set (those that differ from a new object's initial values): nothing is blanked.
  case mergeByPropertyObjectTrump
  /// Property by property, the store's changes win: this context's changes survive only for properties
  /// nobody else changed. An insert whose unique key exists takes the stored row's values.
  case mergeByPropertyStoreTrump
  /// This context's objects are written whole, whatever the store holds (no version check). An insert
  /// whose unique key exists replaces the stored row's attributes.
  case overwrite
  /// This context's conflicting changes are dropped and the objects take the store's state.
  case rollback
}

extension ObjectContext {
  /// Settles the conflicts of `error` by the merge policy so that the save can be tried again.
  /// - Returns: false when nothing could be settled (the caller rethrows `error`).
  func resolveConflicts(_ error: StoreError, store: any PersistentStore) throws -> Bool {
    switch error.code {
    case .optimisticLockConflict: try resolveLockConflicts(error.conflicts, store: store)
    case .constraintConflict: try resolveUniquenessConflicts(error.conflicts, store: store)
    default: false
    }
  }

  private func resolveLockConflicts(_ conflicts: [StoreError.Conflict], store: any PersistentStore) throws -> Bool {
    let ids = conflicts.compactMap(\.objectID)
    guard !ids.isEmpty else { return false }
    let stored = Dictionary(
      try store.snapshots(for: ids, generation: nil).map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
    takePermanentIDsFromParent()
    for id in ids {
      guard let object = registeredObject(for: id), let info = object.info else { return false }
      guard let current = stored[id] else {
        // The object was deleted in the store: its changes cannot be written.
        guard mergePolicy == .rollback || mergePolicy == .mergeByPropertyStoreTrump || object.isDeletedStorage else {
          return false
        }
        tracker.forget(id)
        registry.remove(id)
        object.isDeletedStorage = true
        object.managedObjectContext = nil
        continue
      }
      if object.isDeletedStorage {
        if mergePolicy == .rollback {
          tracker.deleted[id] = nil
          object.isDeletedStorage = false
          adopt(current, into: object, keeping: [], events: .mergePolicy)
        } else {
          object.snapshot = current
        }
        continue
      }
      let original = object.snapshot
      var keep = object.changedKeys
      switch mergePolicy {
      case .mergeByPropertyStoreTrump:
        for key in keep where storeChanged(key, of: info.entity, from: original, to: current) { keep.remove(key) }
      case .rollback:
        keep = []
      case .mergeByPropertyObjectTrump, .overwrite, .error:
        break
      }
      adopt(current, into: object, keeping: keep, events: .mergePolicy)
    }
    return true
  }

  private func storeChanged(_ key: String, of entity: EntityDescription, from original: Snapshot?, to current: Snapshot) -> Bool {
    guard let original else { return true }
    switch entity.property(named: key) {
    case .attribute(_, let index): return original.attributes[index] != current.attributes[index]
    case .toOne(_, let index): return original.toOne[index] != current.toOne[index]
    case .toMany, nil: return false
    }
  }

  /// Gives `object` the stored state `stored`, except for the properties in `keep`, which keep the
  /// object's values and stay changed.
  private func adopt(_ stored: Snapshot, into object: ManagedObject, keeping keep: Set<String>, events: SnapshotEvents) {
    object.withObservedChanges { adoptNow(stored, into: object, keeping: keep, events: events) }
  }

  private func adoptNow(_ stored: Snapshot, into object: ManagedObject, keeping keep: Set<String>, events: SnapshotEvents) {
    guard let info = object.info else { return }
    var values = stored.attributes
    var toOne = stored.toOne
    for (i, attribute) in info.entity.attributes.enumerated() where keep.contains(attribute.name) || attribute.isTransient {
      values[i] = object.values[i]
    }
    for (i, rel) in info.entity.toOneRelationships.enumerated() where keep.contains(rel.name) {
      toOne[i] = object.toOne[i]
    }
    object.values = values
    object.toOne = toOne
    object.snapshot = stored
    object.isFaultStorage = false
    for (i, rel) in info.entity.toManyRelationships.enumerated() where !keep.contains(rel.name) {
      object.toMany[i] = object.committedToMany[i]
      object.toManyOrder[i] = object.committedToManyOrder[i]
    }
    object.changedKeys = keep
    if keep.isEmpty { tracker.updated[object.objectID] = nil } else { registerUpdated(object) }
    object.awake(fromSnapshotEvents: events)
  }

  private func resolveUniquenessConflicts(_ conflicts: [StoreError.Conflict], store: any PersistentStore) throws -> Bool {
    var targets: [(object: ManagedObject, storedID: ObjectID)] = []
    for conflict in conflicts {
      guard let id = conflict.objectID, id.isTemporary, let storedID = conflict.conflictingObjectID, !storedID.isTemporary,
        let object = insertedObject(with: id), !targets.contains(where: { $0.object === object })
      else { return false }
      targets.append((object, storedID))
    }
    guard !targets.isEmpty else { return false }
    let stored = Dictionary(
      try store.snapshots(for: targets.map(\.storedID), generation: nil).map { ($0.objectID, $0) },
      uniquingKeysWith: { a, _ in a })
    takePermanentIDsFromParent()
    var renamed: [ObjectID: ObjectID] = [:]
    for (object, storedID) in targets {
      guard let snapshot = stored[storedID] else { return false }
      renamed[object.objectID] = storedID
      takeOver(snapshot, with: object)
    }
    for object in tracker.insertionList where !object.isDeletedStorage { rewriteTemporaryReferences(in: object, renamed) }
    for object in tracker.updated.values { rewriteTemporaryReferences(in: object, renamed) }
    return true
  }

  /// Turns the inserted `object` into the stored object `stored` names: the insert becomes an update
  /// of that row, writing what the merge policy lets through.
  private func takeOver(_ stored: Snapshot, with object: ManagedObject) {
    guard let info = object.info else { return }
    let entity = info.entity
    var set: Set<String> = []
    for (i, attribute) in entity.attributes.enumerated()
    where attribute.derivation == nil && !attribute.isTransient && object.values[i] != info.initialValues[i] {
      set.insert(attribute.name)
    }
    for (i, rel) in entity.toOneRelationships.enumerated() where object.toOne[i] != nil { set.insert(rel.name) }
    for (i, rel) in entity.toManyRelationships.enumerated() where !(object.toMany[i] ?? []).isEmpty { set.insert(rel.name) }
    let keep: Set<String>
    switch mergePolicy {
    case .mergeByPropertyObjectTrump: keep = set
    case .overwrite: keep = Set(entity.attributes.filter { $0.derivation == nil && !$0.isTransient }.map(\.name)).union(set)
    case .mergeByPropertyStoreTrump, .rollback, .error: keep = []
    }
    if let previous = liveObject(stored.objectID), previous !== object {
      previous.managedObjectContext = nil
    }
    tracker.uninsert(object)
    object.objectID = stored.objectID
    object.isInsertedStorage = false
    remember(object)
    let model = coordinator.model
    for (i, rel) in entity.toManyRelationships.enumerated() {
      if model.usesJoinTable(rel), keep.contains(rel.name), let added = object.toMany[i], !added.isEmpty {
        // Links already stored are not written again.
        let existing = Set(
          (try? requireStore().relatedObjectIDs(of: stored.objectID, relationship: rel.name, generation: nil)) ?? [])
        takePermanentIDsFromParent()
        object.committedToMany[i] = existing
        object.toMany[i] = added.union(existing)
      } else {
        // Loaded from the store when read; targets added to a foreign-key to-many point here themselves.
        object.toMany[i] = nil
        object.committedToMany[i] = nil
        object.toManyOrder[i] = nil
        object.committedToManyOrder[i] = nil
      }
    }
    adopt(stored, into: object, keeping: keep, events: .mergePolicy)
  }
}
