import Foundation
internal import StrataStoreKit

/// A context's unsaved work: the objects inserted, updated and deleted since the last save, and the
/// relationship errors to throw from the next ``ObjectContext/save()``. The context owns one and
/// confines it to its queue.
struct ChangeTracker {
  /// Inserted objects in insertion order; may hold objects deleted again since (filtered on use).
  private(set) var insertionList: [ManagedObject] = []
  /// How many objects of `insertionList` are still inserted (not deleted again).
  private(set) var insertedCount = 0
  /// Inserted objects by temporary ID, built the first time a temporary ID is looked up.
  private var temporaryIndex: [ObjectID: ManagedObject]?
  /// Saved objects with changes (some may have none left: see ``ManagedObject/isUpdated``).
  var updated: [ObjectID: ManagedObject] = [:]
  /// Saved objects deleted.
  var deleted: [ObjectID: ManagedObject] = [:]
  /// Errors met while changing relationships, thrown by the next save.
  private(set) var errors: [StoreError] = []

  /// Whether anything was inserted, changed or deleted.
  var hasChanges: Bool {
    insertedCount > 0 || !deleted.isEmpty || updated.values.contains { $0.isUpdated }
  }

  /// The inserted objects not deleted again, in insertion order.
  var liveInsertions: [ManagedObject] { insertionList.filter { !$0.isDeletedStorage } }

  // Inlined: once per new object (called out of line, it cost about 17 instructions more per insert).
  @inline(__always)
  mutating func insert(_ object: ManagedObject) {
    insertionList.append(object)
    insertedCount += 1
    temporaryIndex?[object.objectID] = object
  }

  /// Takes an inserted object out of the inserts (an undone insert, or one that took over a stored row).
  mutating func uninsert(_ object: ManagedObject) {
    insertedCount -= 1
    temporaryIndex?[object.objectID] = nil
    insertionList.removeAll { $0 === object }
  }

  /// Counts an inserted object whose deletion was undone as inserted again.
  mutating func reinsert(_ object: ManagedObject) {
    insertedCount += 1
    if !insertionList.contains(where: { $0 === object }) { insertionList.append(object) }
    temporaryIndex?[object.objectID] = object
  }

  /// Records that `object` (already marked deleted) was deleted: an insert is no longer counted, a saved
  /// object moves from the updated to the deleted objects.
  mutating func markDeleted(_ object: ManagedObject) {
    if object.isInsertedStorage {
      insertedCount -= 1
      temporaryIndex?[object.objectID] = nil
    } else {
      deleted[object.objectID] = object
      updated[object.objectID] = nil
    }
  }

  /// Records a change of a saved object that is not deleted.
  @inline(__always)
  mutating func markUpdated(_ object: ManagedObject) {
    guard !object.isInsertedStorage, !object.isDeletedStorage else { return }
    updated[object.objectID] = object
  }

  /// Forgets the pending update or delete of `id`.
  mutating func forget(_ id: ObjectID) {
    updated[id] = nil
    deleted[id] = nil
  }

  mutating func recordError(_ error: StoreError) {
    errors.append(error)
  }

  /// The inserted object with the temporary ID `id`.
  mutating func insertedObject(with id: ObjectID) -> ManagedObject? {
    if temporaryIndex == nil {
      temporaryIndex = Dictionary(liveInsertions.map { ($0.objectID, $0) }, uniquingKeysWith: { first, _ in first })
    }
    return temporaryIndex?[id]
  }

  @inline(__always)
  func isPendingDeletion(_ id: ObjectID) -> Bool { !deleted.isEmpty && deleted[id] != nil }

  /// The pending changes; inserted objects in the order they were inserted.
  mutating func all() -> (inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject]) {
    if insertionList.count != insertedCount {
      insertionList.removeAll { $0.isDeletedStorage }
    }
    return (insertionList, Array(updated.values), Array(deleted.values))
  }

  /// Empties the inserted, updated and deleted objects and the recorded errors.
  mutating func removeAll() {
    self = ChangeTracker()
  }
}
