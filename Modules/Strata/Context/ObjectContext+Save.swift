import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// Writes every insert, change and delete to the store in one transaction.
  ///
  /// Before writing, each changed object gets `willSave()`, then the whole save is validated: required
  /// attributes, value bounds, required to-one relationships, to-many counts, and `deny` delete rules.
  /// On success inserted objects get permanent IDs and `didSave()` is called. Each object is validated just
  /// before its change is read for the store, in one pass: a validation method should not change other
  /// objects.
  ///
  /// - Throws: one `StoreError` describing every problem found: `.validation` (all failures listed in
  ///   `conflicts`), `.deleteDenied`, `.constraintConflict`, `.optimisticLockConflict`, or a store error.
  ///   After an error the store is unchanged and the context keeps its changes, so the app can fix them
  ///   or ``rollback()``.
  public func save() throws {
    checkQueue()
    try save(requiringEmpty: [])
  }

  /// Saves like ``save()``, but only while the store holds no `T` objects: the store checks inside its
  /// write transaction, so two processes seeding one empty store at once write one seed, not two ("import
  /// when the store is empty", decided where it cannot race).
  ///
  /// ```swift
  /// for name in ["Tbaar", "Vivi Bubble Tea"] {
  ///   let venue = Venue(context: context)
  ///   venue.name = name
  /// }
  /// if try !context.save(ifStoreHasNo: Venue.self) {
  ///   context.rollback()   // another process seeded the store first
  /// }
  /// ```
  ///
  /// - Returns: `false` when the store already held `T` objects (or objects of a sub-entity): nothing was
  ///   written, and the context keeps its changes.
  /// - Throws: what ``save()`` throws; `.misuse` in a child context, whose parent decides what its store holds.
  @discardableResult
  public func save<T: ManagedObject>(ifStoreHasNo type: T.Type) throws -> Bool {
    checkQueue()
    guard parent == nil else {
      throw StoreError(.misuse, "save(ifStoreHasNo:) saves to the store: call it on a context of the store, not a child context")
    }
    do {
      try save(requiringEmpty: [T.entityName])
      return true
    } catch let error as StoreError where error == StoreError.storeNotEmpty(T.entityName) {
      return false
    }
  }

  private func save(requiringEmpty entities: [String]) throws {
    if let first = tracker.errors.first { throw first }
    processPendingChanges()
    defer { processPendingChanges() }
    let before = allChanges()
    guard !before.inserted.isEmpty || !before.updated.isEmpty || !before.deleted.isEmpty else { return }
    before.inserted.forEachLent { $0.willSave() }
    before.updated.forEachLent { $0.willSave() }
    before.deleted.forEachLent { $0.willSave() }
    let changes = allChanges()
    for object in changes.updated where object.hasChangedKeys { object.fireFault() }

    let assembler = SaveAssembler(
      model: coordinator.model, mergePolicy: mergePolicy, author: transactionAuthor, contextName: name)
    var round = SaveRound(changes)
    // Validated while the first round's change set is assembled: one pass over the objects, not two.
    var validated: ChangeSet? = try validatedChangeSet(
      (round.inserted, round.updated, round.deleted), assembler: assembler)

    let store = try requireStore()
    var resolutions = 0
    while true {
      if validated == nil { round = SaveRound(allChanges()) }
      let (inserted, updated, deleted) = (round.inserted, round.updated, round.deleted)
      if inserted.isEmpty && updated.isEmpty && deleted.isEmpty {
        forgetTransientOnlyChanges(round.unchanged)
        return
      }
      var changeSet = validated.take() ?? assembler.changeSet(inserted: inserted, updated: updated, deleted: deleted)
      changeSet.requiredEmptyEntities = entities
      do {
        let result = try store.save(changeSet)
        takePermanentIDsFromParent()
        forgetTransientOnlyChanges(round.unchanged)
        finishSave(result, inserted: inserted, updated: updated, deleted: deleted)
        return
      } catch let error as StoreError where mergePolicy != .error && resolutions < 8 {
        // Each round settles the conflicts the store reported; a later round may meet new ones.
        resolutions += 1
        guard try resolveConflicts(error, store: store) else { throw error }
      }
    }
  }

  /// The objects one round of a save writes: the changed ones split by whether a persistent value changed.
  private struct SaveRound {
    var inserted: [ManagedObject]
    var updated: [ManagedObject]
    var unchanged: [ManagedObject]
    var deleted: [ManagedObject]

    init(_ changes: (inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject])) {
      inserted = changes.inserted
      updated = changes.updated.filter { $0.hasPersistentChangedValues }
      unchanged = changes.updated.filter { !$0.hasPersistentChangedValues }
      deleted = changes.deleted
    }
  }

  private func forgetTransientOnlyChanges(_ objects: [ManagedObject]) {
    for object in objects {
      object.changedKeys = []
      tracker.updated[object.objectID] = nil
    }
  }

  /// Records a completed save: permanent IDs, new snapshots, cleared change sets.
  func finishSave(
    _ result: SaveResult, inserted savedInserts: [ManagedObject], updated savedUpdates: [ManagedObject],
    deleted savedDeletes: [ManagedObject]
  ) {
    advanceQueryGeneration()
    let listed = result.insertedIDs.count == savedInserts.count ? result.insertedIDs : nil
    // Read only when needed: a store that lists its IDs builds the dictionary on first read.
    var map: [ObjectID: ObjectID]? = listed == nil ? result.permanentIDs : nil
    func rewriteReferences(of object: ManagedObject) {
      guard result.hasPermanentIDs, referencesTemporaryID(object) else { return }
      if map == nil { map = result.permanentIDs }
      rewriteTemporaryReferences(in: object, map ?? [:])
    }
    // One pass over the inserted objects (each one's new state depends on the map alone).
    registeringBatch(of: savedInserts.count, sweeping: !savedInserts.isEmpty) {
      var i = 0
      savedInserts.forEachLent { object in
        defer { i += 1 }
        if let new = listed?[i] ?? map?[object.objectID] {
          formerTemporaryIDs.note(object.objectID, new)
          object.objectID = new
        }
        // Saved into a parent, an object keeps its temporary ID and is registered under it.
        remember(object)
        rewriteReferences(of: object)
        recordSaved(object, result)
      }
    }
    savedUpdates.forEachLent { object in
      rewriteReferences(of: object)
      recordSaved(object, result)
    }
    let recomputed = refreshRecomputed(result, besides: savedInserts, savedUpdates)
    for object in savedUpdates { forgetPrefetched(object.objectID) }
    for object in savedDeletes {
      forgetPrefetched(object.objectID)
      registry.remove(object.objectID)
      object.managedObjectContext = nil
    }
    tracker.removeAll()
    undoManager?.removeAllActions()
    if !savedInserts.isEmpty { noteNewIdentities() }
    savedInserts.forEachLent { $0.didSave() }
    savedUpdates.forEachLent { $0.didSave() }
    savedDeletes.forEachLent { $0.didSave() }
    let notify = saveBroadcaster.hasSubscribers
    let merge = parent == nil && coordinator.hasMergingContexts(besides: self)
    guard notify || merge else { return }
    let save = ContextDidSave(
      contextName: name, insertedObjectIDs: Set(savedInserts.map(\.objectID)),
      updatedObjectIDs: Set(savedUpdates.map(\.objectID)).union(recomputed),
      deletedObjectIDs: Set(savedDeletes.map(\.objectID)),
      historyToken: result.historyToken)
    if notify { saveBroadcaster.yield(save) }
    if merge { coordinator.contextDidSave(save, from: self) }
  }

  /// Shows the values the store computed for objects the save did not write (derived attributes reading
  /// a saved object, such as the count of a list whose item was inserted): each registered one takes the
  /// derived values of its stored snapshot (it has no unsaved changes; transient values stay). Returns
  /// the IDs of all of them, for the save notification.
  private func refreshRecomputed(
    _ result: SaveResult, besides savedInserts: [ManagedObject], _ savedUpdates: [ManagedObject]
  ) -> Set<ObjectID> {
    guard !result.storedSnapshots.isEmpty else { return [] }
    let saved = Set(savedInserts.map(\.objectID)).union(savedUpdates.map(\.objectID))
    var recomputed = Set<ObjectID>()
    for (id, stored) in result.storedSnapshots where !saved.contains(id) {
      recomputed.insert(id)
      forgetPrefetched(id)
      guard let object = liveObject(id), !object.isDeletedStorage else { continue }
      if !object.isFaultStorage, let entity = object.info?.entity {
        for (i, attribute) in entity.attributes.enumerated()
        where attribute.derivation != nil && i < stored.attributes.count && i < object.values.count {
          object.replaceAttribute(stored.attributes[i], at: i)
        }
        object.snapshot = stored
      } else if object.hasSnapshot {
        object.snapshot = stored
      }
    }
    return recomputed
  }

  private func recordSaved(_ object: ManagedObject, _ result: SaveResult) {
    let id = object.objectID
    if !result.storedSnapshots.isEmpty, let stored = result.storedSnapshots[id] {
      object.withObservedChanges { object.load(stored) }
    } else {
      object.snapshot = Snapshot(
        objectID: id, version: (result.versions.isEmpty ? nil : result.versions[id]) ?? (object.snapshotVersion ?? 0) + 1,
        attributes: SaveAssembler.storedAttributes(of: object),
        toOne: object.toOne)
    }
    // Assigned only when there is something to assign: for every saved object, storing an empty array or
    // set over an empty one still counts references.
    if !object.toMany.isEmpty || !object.committedToMany.isEmpty { object.committedToMany = object.toMany }
    if !object.toManyOrder.isEmpty {
      for i in object.toManyOrder.keys { _ = object.orderedTargets(toManyIndex: i) }
      object.committedToManyOrder = object.toManyOrder
    }
    if object.hasChangedKeys { object.changedKeys = [] }
    object.isInsertedStorage = false
  }

}

// MARK: Batch requests

extension ObjectContext {
  /// Runs a batch update or delete in the store, in one transaction, without loading objects into this
  /// context. Merge the result into live contexts with
  /// ``mergeChanges(fromRemoteContextSave:into:)`` so none keeps showing stale or deleted objects.
  ///
  /// ```swift
  /// let request = BatchRequest.update(
  ///   entityName: "Venue", predicate: nil, propertiesToUpdate: ["favorite": .constant(true)])
  /// let result = try context.execute(request)
  /// ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: request), into: [container.viewContext])
  /// ```
  ///
  /// - Throws: `.invalidQuery` for an unknown, relationship or transient key or a bad predicate,
  ///   `.validation` for a value an attribute cannot hold, `.deleteDenied` when a deny rule forbids a
  ///   delete, `.optimisticLockConflict` when an object changed meanwhile; the store is then unchanged.
  ///
  /// The request is recorded in persistent history under this context's ``transactionAuthor`` and ``name``.
  public func execute(_ request: BatchRequest) throws -> BatchResult {
    checkQueue()
    return try requireStore().execute(request, author: transactionAuthor, contextName: name)
  }
}
