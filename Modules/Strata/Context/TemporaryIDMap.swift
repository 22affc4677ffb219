import Foundation
internal import StrataStoreKit
import Synchronization

/// The permanent ID of each object a context saved (or adopted) under a temporary ID that a child
/// context may still use, and those temporary IDs in the order they were given up: each child takes the
/// ones it has not seen the next time it reads from or saves to the context.
///
/// Nothing is remembered until the context has had a child (``startRemembering()``): only a child can
/// still name a saved object by its temporary ID. Used on the context's queue, except the flag.
final class TemporaryIDMap: @unchecked Sendable {
  /// Set, from any thread, when the context makes its first child.
  private let remembers = Atomic(false)
  private var permanentIDs: [ObjectID: ObjectID] = [:]
  private var log: [ObjectID] = []

  func startRemembering() {
    remembers.store(true, ordering: .relaxed)
  }

  /// Records that the object of `temporary` is now `permanent` (when a child may ask).
  func note(_ temporary: ObjectID, _ permanent: ObjectID) {
    guard remembers.load(ordering: .relaxed) else { return }
    permanentIDs[temporary] = permanent
    log.append(temporary)
  }

  /// `id`, or the permanent ID its object was saved under when `id` is a temporary ID given up.
  func resolving(_ id: ObjectID) -> ObjectID {
    id.isTemporary ? permanentIDs[id] ?? id : id
  }

  /// The permanent IDs given since a child last asked (`seen` counts what it has taken), keyed by
  /// their temporary IDs.
  func permanentIDs(after seen: inout Int) -> [ObjectID: ObjectID] {
    guard seen < log.count else { return [:] }
    var map: [ObjectID: ObjectID] = [:]
    for temporary in log[seen...] { map[temporary] = permanentIDs[temporary] }
    seen = log.count
    return map
  }
}

/// What a parent store hands its child context: the parent's permanent IDs for temporary IDs, collected
/// on the parent's queue with each answer and taken by the child on its own queue before it uses the
/// answer (an asynchronous fetch reads the parent from another thread, hence the lock).
final class PermanentIDHandover: Sendable {
  private let state = Locked<(seen: Int, pending: [ObjectID: ObjectID])>((0, [:]))

  /// Adds the permanent IDs `map` gave since the last collection (call on the parent's queue).
  func collect(from map: TemporaryIDMap) {
    state.withLock { state in
      let saved = map.permanentIDs(after: &state.seen)
      if !saved.isEmpty { state.pending.merge(saved) { _, new in new } }
    }
  }

  /// The permanent IDs collected and not taken yet.
  func take() -> [ObjectID: ObjectID] {
    state.withLock { state in
      defer { state.pending = [:] }
      return state.pending
    }
  }
}

extension ObjectContext {
  /// `id`, or the permanent ID this context saved its object under when `id` is a temporary ID it had.
  func resolvingFormerTemporaryID(_ id: ObjectID) -> ObjectID {
    formerTemporaryIDs.resolving(id)
  }

  /// In a child context, after an answer of its parent and before using it: the parent store hands over
  /// the permanent IDs the parent saved objects under since the last answer, and this context's objects
  /// registered under those temporary IDs take them.
  func takePermanentIDsFromParent() {
    guard let parentStore else { return }
    let map = parentStore.takePermanentIDs()
    if !map.isEmpty { adoptPermanentIDs(map) }
  }

  /// Gives the objects this child context registered under temporary IDs the permanent IDs its parent
  /// saved them under, and rewrites every reference to them, so the child names them as the store does.
  private func adoptPermanentIDs(_ map: [ObjectID: ObjectID]) {
    var adopted = false
    for (temporary, permanent) in map {
      // Passed on to this context's own children, whether or not it still holds the object.
      formerTemporaryIDs.note(temporary, permanent)
      guard let object = registry.live(temporary), !object.isInsertedStorage, registry.live(permanent) == nil else { continue }
      registry.remove(temporary)
      object.objectID = permanent
      registry.register(object)
      adopted = true
    }
    guard adopted else { return }
    for object in registry.objects where !object.isFaultStorage { rewriteTemporaryReferences(in: object, map) }
    for object in tracker.insertionList { rewriteTemporaryReferences(in: object, map) }
  }

  /// Whether a relationship of `object` names a temporary ID (what ``rewriteTemporaryReferences(in:_:)``
  /// may rewrite).
  func referencesTemporaryID(_ object: ManagedObject) -> Bool {
    guard !object.toOne.isEmpty || !object.toMany.isEmpty || !object.committedToManyOrder.isEmpty else { return false }
    return object.toOne.contains { $0?.isTemporary == true }
      || object.toMany.contains { $0?.contains(where: \.isTemporary) == true }
      || object.toManyOrder.values.contains { $0.contains(where: \.isTemporary) }
      || object.committedToManyOrder.values.contains { $0.contains(where: \.isTemporary) }
  }

  /// Points the relationships of `object` that name a temporary ID of `map` at its permanent ID.
  func rewriteTemporaryReferences(in object: ManagedObject, _ map: [ObjectID: ObjectID]) {
    for i in object.toOne.indices {
      if let id = object.toOne[i], id.isTemporary, let permanent = map[id] { object.toOne[i] = permanent }
    }
    for i in object.toMany.indices {
      if let set = object.toMany[i], set.contains(where: \.isTemporary) {
        object.toMany[i] = Set(set.map { map[$0] ?? $0 })
      }
    }
    for (i, order) in object.toManyOrder where order.contains(where: \.isTemporary) {
      object.toManyOrder[i] = order.map { map[$0] ?? $0 }
    }
    for (i, order) in object.committedToManyOrder where order.contains(where: \.isTemporary) {
      object.committedToManyOrder[i] = order.map { map[$0] ?? $0 }
    }
  }
}
