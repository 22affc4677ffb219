import Foundation
internal import StrataStoreKit

/// Records a context's unsaved changes so that they can be undone and redone: inserts, deletes (with
/// the changes their delete rules made), attribute and relationship changes. Give a context one to
/// turn recording on (contexts have none by default, as in Core Data on iOS).
///
/// Each change made through the object graph — setting a property, inserting, deleting — is one undo
/// step; ``beginUndoGrouping()`` and ``endUndoGrouping()`` make several changes one step. Saving,
/// rolling back or resetting the context clears both stacks: what is saved is no longer undoable.
///
/// ```swift
/// context.undoManager = ContextUndoManager()
/// movie.title = "Heat (1995)"
/// context.undoManager?.undo()      // the title is "Heat" again
/// context.undoManager?.redo()
/// ```
///
/// Use it on its context's queue.
public final class ContextUndoManager {
  enum Action {
    case attribute(ManagedObject, index: Int, value: Value)
    case relationship(ManagedObject, RelationshipDescription, targets: [ManagedObject])
    case insert(ManagedObject)
    case uninsert(ManagedObject)
    case delete(ManagedObject)
    case undelete(ManagedObject)
  }

  private enum Mode { case normal, undoing, redoing }

  private var undoStack: [[Action]] = []
  private var redoStack: [[Action]] = []
  private var collecting: [Action] = []
  private var explicitLevel = 0
  private var automaticLevel = 0
  private var mode = Mode.normal

  /// An undo manager with empty stacks: `context.undoManager = ContextUndoManager()`.
  public init() {}

  /// Whether there is a step to undo.
  public var canUndo: Bool { !undoStack.isEmpty || (!collecting.isEmpty && mode == .normal) }
  /// Whether there is an undone step to redo.
  public var canRedo: Bool { !redoStack.isEmpty }
  /// How many steps can be undone.
  public var undoCount: Int { undoStack.count + (collecting.isEmpty ? 0 : 1) }

  /// Starts a step that holds every change until the matching ``endUndoGrouping()``. Groups nest.
  public func beginUndoGrouping() { explicitLevel += 1 }

  /// Ends a step started with ``beginUndoGrouping()``.
  public func endUndoGrouping() {
    guard explicitLevel > 0 else { return }
    explicitLevel -= 1
    closeGroupIfDone()
  }

  /// Forgets every step.
  public func removeAllActions() {
    undoStack = []
    redoStack = []
    collecting = []
  }

  /// Undoes the last step (closing an open group first); does nothing when there is none.
  public func undo() {
    explicitLevel = 0
    closeGroupIfDone()
    guard let group = undoStack.popLast() else { return }
    replay(group, as: .undoing)
  }

  /// Redoes the last undone step; does nothing when there is none.
  public func redo() {
    guard let group = redoStack.popLast() else { return }
    replay(group, as: .redoing)
  }

  // MARK: Recording

  weak var context: ObjectContext?

  func record(_ action: Action) {
    collecting.append(action)
    closeGroupIfDone()
  }

  /// Runs `body` as one step (nested calls join the outer step).
  func grouping<T>(_ body: () throws -> T) rethrows -> T {
    automaticLevel += 1
    defer {
      automaticLevel -= 1
      closeGroupIfDone()
    }
    return try body()
  }

  private func closeGroupIfDone() {
    guard mode == .normal, explicitLevel == 0, automaticLevel == 0, !collecting.isEmpty else { return }
    undoStack.append(collecting)
    collecting = []
    redoStack = []
  }

  private func replay(_ group: [Action], as replayMode: Mode) {
    guard let context else { return }
    mode = replayMode
    collecting = []
    var touched: [ManagedObject] = []
    for action in group.reversed() { touched += context.reverse(action) }
    let inverse = collecting
    collecting = []
    mode = .normal
    if replayMode == .undoing { redoStack.append(inverse) } else { undoStack.append(inverse) }
    context.settleChangedKeys(of: touched, events: replayMode == .undoing ? events(of: group) : events(of: inverse))
  }

  private func events(of group: [Action]) -> SnapshotEvents {
    var events: SnapshotEvents = []
    for action in group {
      switch action {
      case .insert, .uninsert: events.insert(.undoInsertion)
      case .delete, .undelete: events.insert(.undoDeletion)
      case .attribute, .relationship: events.insert(.undoUpdate)
      }
    }
    return events
  }
}

extension ObjectContext {
  /// Records `action` when the context has an undo manager.
  func recordUndo(_ action: @autoclosure () -> ContextUndoManager.Action) {
    guard let undoManager else { return }
    undoManager.context = self
    undoManager.record(action())
  }

  /// Runs `body` as one undo step.
  func undoGrouping<T>(_ body: () throws -> T) rethrows -> T {
    guard let undoManager else { return try body() }
    return try undoManager.grouping(body)
  }

  /// Applies the opposite of `action` (recording its own opposite) and returns the objects it touched.
  func reverse(_ action: ContextUndoManager.Action) -> [ManagedObject] {
    switch action {
    case .attribute(let object, let index, let value):
      recordUndo(.attribute(object, index: index, value: object.values[index]))
      object.replaceAttribute(value, at: index)
      return [object]
    case .relationship(let object, let rel, let targets):
      let previous = currentTargets(of: object, rel)
      setRelationship(object, rel, targets: targets)
      return [object] + previous + targets
    case .insert(let object):
      recordUndo(.uninsert(object))
      object.isDeletedStorage = true
      tracker.uninsert(object)
      return [object]
    case .uninsert(let object):
      object.isDeletedStorage = false
      object.managedObjectContext = self
      registerInserted(object)
      return [object]
    case .delete(let object):
      recordUndo(.undelete(object))
      object.isDeletedStorage = false
      object.managedObjectContext = self
      if object.isInsertedStorage {
        tracker.reinsert(object)
      } else {
        tracker.deleted[object.objectID] = nil
      }
      return [object]
    case .undelete(let object):
      delete(object)
      return [object]
    }
  }

  /// After an undo or redo: each saved object is changed exactly where it differs from its stored state.
  func settleChangedKeys(of objects: [ManagedObject], events: SnapshotEvents) {
    var seen = Set<ObjectIdentifier>()
    for object in objects where seen.insert(ObjectIdentifier(object)).inserted {
      defer { object.awake(fromSnapshotEvents: events) }
      guard !object.isInsertedStorage, !object.isDeletedStorage, let info = object.info else { continue }
      var keys: Set<String> = []
      // A fault's attributes and to-one targets were never loaded, so only its to-many sets can differ.
      if !object.isFaultStorage, let snapshot = object.snapshot {
        for (i, attribute) in info.entity.attributes.enumerated() {
          let stored = attribute.isTransient ? attribute.initialValue : snapshot.attributes[i]
          if object.values[i] != stored { keys.insert(attribute.name) }
        }
        for (i, rel) in info.entity.toOneRelationships.enumerated() where object.toOne[i] != snapshot.toOne[i] {
          keys.insert(rel.name)
        }
      }
      for (i, rel) in info.entity.toManyRelationships.enumerated()
      where object.toMany[i] != nil
        && (object.toMany[i] != object.committedToMany[i]
          || (rel.isOrdered && object.orderedTargets(toManyIndex: i) != object.committedToManyOrder[i]))
      {
        keys.insert(rel.name)
      }
      object.changedKeys = keys
      if keys.isEmpty { tracker.updated[object.objectID] = nil } else { tracker.updated[object.objectID] = object }
    }
  }
}
