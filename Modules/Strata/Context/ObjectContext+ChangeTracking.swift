import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// Marks `object` deleted and applies its relationships' delete rules now: `nullify` removes it from
  /// the related objects, `cascade` deletes them too. `deny` rules are checked by ``save()``.
  public func delete(_ object: ManagedObject) {
    checkQueue()
    guard object.managedObjectContext === self, !object.isDeletedStorage, object.info != nil else { return }
    undoGrouping { applyDeletion(of: object) }
  }

  private func applyDeletion(of object: ManagedObject) {
    guard let info = object.info else { return }
    recordUndo(.delete(object))
    noteChange(object, .deleted)
    object.prepareForDeletion()
    object.fireFault()
    if object.isDeletedStorage { return }
    object.isDeletedStorage = true
    tracker.markDeleted(object)
    for rel in info.entity.relationships {
      switch rel.deleteRule {
      case .nullify:
        setRelationship(object, rel, targets: [], markingSource: false)
      case .cascade:
        let targets = currentTargets(of: object, rel)
        setRelationship(object, rel, targets: [], markingSource: false)
        for target in targets { delete(target) }
      case .deny, .noAction:
        continue
      }
    }
    if object.isInsertedStorage { object.managedObjectContext = nil }
  }

  // MARK: Undoing work

  /// Discards every unsaved change: inserted objects leave the context, changed and deleted objects get
  /// their last saved values back.
  public func rollback() {
    checkQueue()
    undoManager?.removeAllActions()
    // Inserted objects leave the context as if never inserted (Core Data's rollback): neither inserted
    // nor deleted, with no context.
    for object in tracker.liveInsertions {
      noteChange(object, .deleted)
      object.managedObjectContext = nil
      object.isInsertedStorage = false
    }
    let changed = Array(tracker.updated.values) + Array(tracker.deleted.values)
    tracker.removeAll()
    // Every object whose relationships changed is in `updated` or `deleted`: setting a relationship
    // marks both sides.
    for object in changed {
      restoreSavedState(of: object)
      noteChange(object, .refreshed)
    }
    processPendingChanges()
  }

  /// Forgets every object: the context is as new. Objects handed out before stay detached.
  public func reset() {
    checkQueue()
    advanceQueryGeneration()
    undoManager?.removeAllActions()
    noteInvalidation()
    for object in registeredObjects { object.managedObjectContext = nil }
    registry.removeAll()
    forgetPrefetched()
    tracker.removeAll()
    processPendingChanges()
  }

  // MARK: Recording changes

  /// Counts a new object as inserted (and tells the undo manager and observers, if any).
  func registerInserted(_ object: ManagedObject) {
    tracker.insert(object)
    // Most inserts have no undo manager or observer to tell: one read of the shared flags skips both.
    guard changeLog.signals.wantsChanges else { return }
    recordUndo(.insert(object))
    noteChange(object, .inserted)
  }

  /// Counts a change of a saved object.
  func registerUpdated(_ object: ManagedObject) {
    tracker.markUpdated(object)
  }

  /// Records an error of a relationship change, for the next save to throw.
  func recordError(_ error: StoreError) {
    tracker.recordError(error)
  }

  func isPendingDeletion(_ id: ObjectID) -> Bool { tracker.isPendingDeletion(id) }

  /// Whether any saved object is deleted and not saved yet: when not, loaded targets need no filtering.
  var hasPendingDeletions: Bool { !tracker.deleted.isEmpty }

  /// The inserted object with the temporary ID `id`.
  func insertedObject(with id: ObjectID) -> ManagedObject? {
    tracker.insertedObject(with: id)
  }

  /// The pending changes; inserted objects in the order they were inserted.
  func allChanges() -> (inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject]) {
    tracker.all()
  }

  /// Gives a changed or deleted object its last saved state back.
  func restoreSavedState(of object: ManagedObject) {
    object.withObservedChanges { restoreSavedStateNow(of: object) }
  }

  private func restoreSavedStateNow(of object: ManagedObject) {
    object.isDeletedStorage = false
    object.changedKeys = []
    if let snapshot = object.snapshot {
      object.load(snapshot)
      object.toMany = object.committedToMany
      object.toManyOrder = object.committedToManyOrder
      object.awake(fromSnapshotEvents: .rollback)
    } else {
      object.turnIntoFault()
    }
  }
}
