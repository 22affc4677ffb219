import Foundation
internal import StrataStoreKit

/// What changed among a context's objects since the previous notification, as object IDs (`Sendable`).
/// Core Data's `NSManagedObjectContextObjectsDidChange`.
public struct ObjectsDidChange: Sendable, Hashable {
  /// Objects inserted into the context, or merged in as new from another context's save.
  public var inserted: Set<ObjectID> = []
  /// Objects whose properties changed in the context.
  public var updated: Set<ObjectID> = []
  /// Objects deleted in the context, or removed by a merge.
  public var deleted: Set<ObjectID> = []
  /// Objects whose values were replaced from the store (a refresh, a merge, a rollback).
  public var refreshed: Set<ObjectID> = []
  /// Whether the context was reset: every object it held is gone.
  public var invalidatedAll = false

  /// An empty set of changes.
  public init() {}
}

/// The objects behind an ``ObjectsDidChange``, for observers on the context's queue.
struct ObjectChanges {
  var inserted: [ObjectIdentifier: ManagedObject] = [:]
  var updated: [ObjectIdentifier: ManagedObject] = [:]
  var deleted: [ObjectIdentifier: ManagedObject] = [:]
  var refreshed: [ObjectIdentifier: ManagedObject] = [:]
  var invalidatedAll = false
  /// Saved inserts got permanent IDs (nothing else changed).
  var identitiesChanged = false
  /// Another process changed the store in ways not known object by object: results must be fetched again.
  var storeChanged = false

  var isEmpty: Bool {
    inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && !invalidatedAll && !identitiesChanged
      && !storeChanged
  }

  /// Every object that changed in any way.
  var all: [ManagedObject] { Array(inserted.values) + Array(updated.values) + Array(deleted.values) + Array(refreshed.values) }

  var notification: ObjectsDidChange {
    var note = ObjectsDidChange()
    note.inserted = Set(inserted.values.map(\.objectID))
    note.updated = Set(updated.values.map(\.objectID))
    note.deleted = Set(deleted.values.map(\.objectID))
    note.refreshed = Set(refreshed.values.map(\.objectID))
    note.invalidatedAll = invalidatedAll
    return note
  }
}

/// Whether the changes of a context's objects must be reported to it — for undo or to change observers.
/// Each object holds its context's signals and reads them on every change before it loads its (weak, so
/// costly to load) context reference: most contexts record nothing, and setting a value is then a store.
///
/// It is also how objects reach their context: one weak reference here serves every object of the
/// context, so making an object forms no weak reference of its own.
@usableFromInline
final class ChangeSignals {
  weak var context: ObjectContext?
  /// The same context, uncounted: valid only while that context runs work on the current thread (see
  /// ``withContext(_:)`` in `Unsafe.swift`).
  var unretainedContext: Unmanaged<ObjectContext>?
  // Read for every change of every object, on the context's queue only: not checked for overlapping access.
  @usableFromInline @exclusivity(unchecked) var recordsUndo = false
  /// Whether observers or streams may be listening (the context checks exactly).
  @usableFromInline @exclusivity(unchecked) var mayBeObserved = false

  @inlinable var wantsChanges: Bool { recordsUndo || mayBeObserved }
}

/// The context's record of object changes not yet announced, and who listens.
final class ObjectChangeLog {
  enum Kind { case inserted, updated, deleted, refreshed }

  var pending = ObjectChanges()
  var isScheduled = false
  var observers: [UInt64: (ObjectChanges) -> Void] = [:] {
    didSet { signals.mayBeObserved = mayBeObserved }
  }
  var nextObserver: UInt64 = 0
  let broadcaster = Broadcaster<ObjectsDidChange>()
  /// Shared with the context's objects.
  let signals = ChangeSignals()

  /// Whether a stream was ever asked for (cheaper to read per change than the broadcaster's lock).
  var hasHadStreams = false {
    didSet { signals.mayBeObserved = mayBeObserved }
  }

  /// Whether anyone may be listening: observers, or streams asked for (which may have ended since).
  private var mayBeObserved: Bool { !observers.isEmpty || hasHadStreams }

  var isObserved: Bool { !observers.isEmpty || (hasHadStreams && broadcaster.hasSubscribers) }

  func record(_ object: ManagedObject, _ kind: Kind) {
    let key = ObjectIdentifier(object)
    switch kind {
    case .inserted:
      if pending.deleted.removeValue(forKey: key) != nil {
        pending.refreshed[key] = object
      } else {
        pending.inserted[key] = object
      }
    case .updated:
      if pending.inserted[key] == nil { pending.updated[key] = object }
    case .deleted:
      if pending.inserted.removeValue(forKey: key) == nil { pending.deleted[key] = object }
      pending.updated[key] = nil
      pending.refreshed[key] = nil
    case .refreshed:
      if pending.inserted[key] == nil && pending.deleted[key] == nil { pending.refreshed[key] = object }
    }
  }
}

extension ObjectContext {
  /// A stream of the context's object changes, one element per ``processPendingChanges()``. Ask for it on
  /// the context's queue (it tells the context to record changes); iterate it anywhere.
  ///
  /// ```swift
  /// for await change in context.objectsDidChange() { print(change.updated.count, "objects changed") }
  /// ```
  public func objectsDidChange() -> AsyncStream<ObjectsDidChange> {
    checkQueue()
    changeLog.hasHadStreams = true
    return changeLog.broadcaster.stream()
  }

  /// Announces the object changes made since the last call to the context's observers (fetched results
  /// controllers, ``objectsDidChange()`` streams). The context calls it on its queue after the work that
  /// made the changes, after each save, merge, rollback and reset; call it to announce changes at once.
  public func processPendingChanges() {
    checkQueue()
    let log = changeLog
    log.isScheduled = false
    guard !log.pending.isEmpty else { return }
    let changes = log.pending
    log.pending = ObjectChanges()
    for observer in log.observers.values { observer(changes) }
    if log.broadcaster.hasSubscribers { log.broadcaster.yield(changes.notification) }
  }

  /// Notes a change of `object` for the next ``processPendingChanges()``, scheduling that call.
  func noteChange(_ object: ManagedObject, _ kind: ObjectChangeLog.Kind) {
    let log = changeLog
    guard log.isObserved else { return }
    log.record(object, kind)
    scheduleProcessing()
  }

  /// Notes that saved inserts have permanent IDs now.
  func noteNewIdentities() {
    let log = changeLog
    guard log.isObserved else { return }
    log.pending.identitiesChanged = true
    scheduleProcessing()
  }

  /// Notes that every object was dropped (a reset, which announces it at once).
  func noteInvalidation() {
    let log = changeLog
    guard log.isObserved else { return }
    log.pending = ObjectChanges()
    log.pending.invalidatedAll = true
  }

  private func scheduleProcessing() {
    let log = changeLog
    guard !log.isScheduled else { return }
    log.isScheduled = true
    performLater { [weak self] in self?.processPendingChanges() }
  }

  /// Calls `observer` with every batch of object changes; returns a token for ``removeObjectsObserver(_:)``.
  func addObjectsObserver(_ observer: @escaping (ObjectChanges) -> Void) -> UInt64 {
    let log = changeLog
    log.nextObserver += 1
    log.observers[log.nextObserver] = observer
    return log.nextObserver
  }

  func removeObjectsObserver(_ token: UInt64) {
    changeLog.observers[token] = nil
  }
}
