import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// Updates `object` from the store. With `mergeChanges` false the object becomes a fault and loses
  /// unsaved changes; with true it takes the stored values but keeps the properties it changed.
  /// Either way transient attributes go back to their defaults, and a loaded object gets
  /// ``ManagedObject/awake(fromSnapshotEvents:)`` with `.refresh`.
  ///
  /// Trackings (`withObservationTracking`) that read a property of the object hear of the refresh when
  /// it changed that property's value; with `mergeChanges` false, the object's values are dropped, so
  /// every property they read counts as changed. An object read under tracking is not turned into a
  /// fault by a refresh with `mergeChanges`: it takes the stored values at once, so that its
  /// observers hear of exactly the properties that changed.
  public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
    checkQueue()
    object.withObservedChanges { refreshNow(object, mergeChanges: mergeChanges) }
  }

  private func refreshNow(_ object: ManagedObject, mergeChanges: Bool) {
    guard object.managedObjectContext === self, !object.isInsertedStorage, let info = object.info else { return }
    forgetPrefetched(object.objectID)
    noteChange(object, .refreshed)
    guard mergeChanges, object.isUpdated || object.isObservedStorage, !object.isFaultStorage else {
      tracker.updated[object.objectID] = nil
      if !object.isDeletedStorage { object.turnIntoFault() }
      return
    }
    guard let snapshot = fetchSnapshot(for: object.objectID) else { return }
    let keep =
      info.hasTransientAttributes
      ? object.changedKeys.filter { info.entity.attribute(named: $0)?.isTransient != true } : object.changedKeys
    var merged = snapshot
    for (i, attribute) in info.entity.attributes.enumerated() where keep.contains(attribute.name) {
      merged.attributes[i] = object.values[i]
    }
    for (i, rel) in info.entity.toOneRelationships.enumerated() where keep.contains(rel.name) {
      merged.toOne[i] = object.toOne[i]
    }
    object.load(merged)
    object.snapshot = snapshot
    object.changedKeys = keep
    if keep.isEmpty { tracker.updated[object.objectID] = nil }
    object.awake(fromSnapshotEvents: .refresh)
  }

  /// Refreshes every registered object, keeping unsaved changes.
  public func refreshAllObjects() {
    checkQueue()
    advanceQueryGeneration()
    forgetPrefetched()
    for object in registeredObjects { refresh(object, mergeChanges: true) }
  }

  // MARK: Notifications

  /// A stream of this context's saves, for merging into other contexts.
  public func didSaveNotifications() -> AsyncStream<ContextDidSave> { saveBroadcaster.stream() }

  /// Applies another context's save to this one: updated objects that have no unsaved changes here are
  /// refreshed, deleted objects leave the context. Objects with unsaved changes keep them.
  public func mergeChanges(fromContextDidSave save: ContextDidSave) {
    checkQueue()
    defer { processPendingChanges() }
    advanceQueryGeneration()
    if changeLog.isObserved {
      for id in save.insertedObjectIDs where liveObject(id) == nil {
        noteChange(object(with: id), .inserted)
      }
    }
    for id in save.updatedObjectIDs {
      forgetPrefetched(id)
      if let object = liveObject(id) { refresh(object, mergeChanges: true) }
    }
    for id in save.deletedObjectIDs {
      forgetPrefetched(id)
      guard let object = liveObject(id) else { continue }
      noteChange(object, .deleted)
      registry.remove(id)
      tracker.forget(id)
      object.isDeletedStorage = true
      object.managedObjectContext = nil
      object.notifyObserversOfEveryProperty()
    }
    dropFromLoadedRelationships(save.deletedObjectIDs)
  }

  /// Takes objects that left the store out of the loaded relationships of this context's objects, as
  /// Core Data does when it merges a deletion: after a batch delete or another context's or process's
  /// delete is merged, `author.books` no longer holds the deleted books. Unloaded relationships read the
  /// store when first used, so they need nothing.
  private func dropFromLoadedRelationships(_ gone: Set<ObjectID>) {
    guard !gone.isEmpty else { return }
    forgetPrefetched()
    for object in registry.objects + tracker.liveInsertions where !object.isFaultStorage {
      object.withObservedChanges { Self.drop(gone, fromRelationshipsOf: object) }
    }
  }

  /// Takes `gone` out of the loaded relationships of `object`.
  private static func drop(_ gone: Set<ObjectID>, fromRelationshipsOf object: ManagedObject) {
    for i in object.toMany.indices {
      if let targets = object.toMany[i], !targets.isDisjoint(with: gone) {
        object.toMany[i] = targets.subtracting(gone)
      }
      if i < object.committedToMany.count, let targets = object.committedToMany[i], !targets.isDisjoint(with: gone) {
        object.committedToMany[i] = targets.subtracting(gone)
      }
    }
    if !object.toManyOrder.isEmpty {
      object.toManyOrder = object.toManyOrder.mapValues { $0.filter { !gone.contains($0) } }
      object.committedToManyOrder = object.committedToManyOrder.mapValues { $0.filter { !gone.contains($0) } }
    }
    for i in object.toOne.indices {
      guard let target = object.toOne[i], gone.contains(target) else { continue }
      object.toOne[i] = nil
      if var state = object.storedState, i < state.toOne.count, state.toOne[i] == target {
        state.toOne[i] = nil
        object.storedState = state
      }
    }
  }

  /// Applies a commit made elsewhere: with object IDs, as a merge of a save; without, every object is
  /// refreshed and observers fetch again.
  func mergeRemoteChange(_ change: StoreChange) {
    if !change.inserted.isEmpty || !change.updated.isEmpty || !change.deleted.isEmpty {
      mergeChanges(
        fromContextDidSave: ContextDidSave(
          contextName: "another process", insertedObjectIDs: Set(change.inserted), updatedObjectIDs: Set(change.updated),
          deletedObjectIDs: Set(change.deleted), historyToken: change.historyToken))
      return
    }
    refreshAllObjects()
    if changeLog.isObserved { changeLog.pending.storeChanged = true }
    processPendingChanges()
  }

  /// Applies changes made outside any context (a batch request, another process) to `contexts`: updated
  /// objects without unsaved changes are refreshed, deleted objects leave each context. Each context is
  /// updated on its own queue.
  public static func mergeChanges(fromRemoteContextSave changes: ContextDidSave, into contexts: [ObjectContext]) {
    for context in contexts {
      context.performAndWait { context.mergeChanges(fromContextDidSave: changes) }
    }
  }
}

/// What one context save changed, as object IDs (`Sendable`, for merging into other contexts).
public struct ContextDidSave: Sendable, Hashable {
  /// The name of the context that saved.
  public var contextName: String?
  /// The objects the save inserted.
  public var insertedObjectIDs: Set<ObjectID>
  /// The objects the save updated.
  public var updatedObjectIDs: Set<ObjectID>
  /// The objects the save deleted.
  public var deletedObjectIDs: Set<ObjectID>
  /// The history token of the save, when the store tracks history.
  public var historyToken: HistoryToken?

  /// A description of a save, for merging changes made elsewhere (another process, say).
  public init(
    contextName: String? = nil, insertedObjectIDs: Set<ObjectID> = [], updatedObjectIDs: Set<ObjectID> = [],
    deletedObjectIDs: Set<ObjectID> = [], historyToken: HistoryToken? = nil
  ) {
    self.contextName = contextName
    self.insertedObjectIDs = insertedObjectIDs
    self.updatedObjectIDs = updatedObjectIDs
    self.deletedObjectIDs = deletedObjectIDs
    self.historyToken = historyToken
  }
}

extension BatchResult {
  /// The result as a save notification: its objects inserted, updated or deleted, as `request` did (a
  /// batch insert's upserted objects as updated), and the objects whose derived attributes it changed as
  /// updated. It names objects only when the request's result type is `BatchResultType.objectIDs`.
  public func changes(of request: BatchRequest) -> ContextDidSave {
    switch request {
    case .update:
      ContextDidSave(
        contextName: "batch update", updatedObjectIDs: Set(objectIDs + recomputedObjectIDs), historyToken: historyToken)
    case .insert:
      ContextDidSave(
        contextName: "batch insert", insertedObjectIDs: Set(objectIDs).subtracting(updatedObjectIDs),
        updatedObjectIDs: Set(updatedObjectIDs + recomputedObjectIDs), historyToken: historyToken)
    case .delete, .deleteObjects:
      ContextDidSave(
        contextName: "batch delete", updatedObjectIDs: Set(recomputedObjectIDs), deletedObjectIDs: Set(objectIDs),
        historyToken: historyToken)
    }
  }
}
