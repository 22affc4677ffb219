import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// The object with `id`: the one the context holds, or a fault that loads its values when first read.
  ///
  /// The object is not checked to exist; use ``existingObject(with:)`` for that. As in Core Data, a
  /// temporary ID stops naming its object once the object is saved: use the object's new `objectID`.
  public func object(with id: ObjectID) -> ManagedObject {
    checkQueue()
    let id = resolvingFormerTemporaryID(id)
    if id.isTemporary, let object = insertedObject(with: id) { return object }
    // The entity's info from the last one asked for (no lookup by name), and one registry lookup that
    // finds the live object or the place of a new one.
    guard let binding = entityBinding(of: id) else { return liveObject(id) ?? ManagedObject(.prototype(nil)) }
    var made = false
    let object = registry.claim(id) {
      made = true
      let objectClass = binding.withObject { $0.info.objectClass }
      return objectClass.init(.managed(binding, id, isInserted: false))
    }
    if made {
      if !rowCache.isEmpty, let cached = rowCache[id] { object.keep(cached) }
      sweepIfDue()
    }
    return object
  }

  /// Registers the objects `body` materializes — `count` of them at most — in one go: the registry is
  /// swept (when due) and grown once before, not while, since the caller holds every object it makes
  /// until `body` returns and a sweep in between would find nothing to drop. The batch's objects are young
  /// for the first sweep after it. Without `sweeping` (a batch known to register nothing, such as a save
  /// without inserts) no sweep runs: sweeps are paid for by registrations, so that a save of a few
  /// changes after a large fetch does not read every registered object.
  func registeringBatch<R>(of count: Int, sweeping: Bool = true, _ body: () throws -> R) rethrows -> R {
    if sweeping { registry.sweepIfDue(adding: count) }
    reserveRegistry(for: count)
    let paused = sweepsPaused
    sweepsPaused = true
    defer { sweepsPaused = paused }
    return try body()
  }

  /// Makes room in the registry for `count` more objects (of a batch whose size is known late).
  func reserveRegistry(for count: Int) {
    registry.reserveCapacity(count)
  }

  /// Registers `object` under its ID, sweeping now and then so that walking a large result keeps the
  /// registry about as small as the objects still in use.
  func remember(_ object: ManagedObject) {
    registry.register(object)
    sweepIfDue()
  }

  /// Sweeps the registry when due (``ObjectRegistry/sweepIfDue(adding:)``), outside batches.
  @inline(__always)
  private func sweepIfDue() {
    guard !sweepsPaused else { return }
    registry.sweepIfDue()
  }

  /// The registered object with `id`, unless only the registry holds it: such an object is dropped, as
  /// a weak registry would have dropped it, so that a caller gets it made afresh from the store.
  func liveObject(_ id: ObjectID) -> ManagedObject? {
    registry.live(id)
  }

  /// Drops every object only the registry holds. Other threads cannot take a new reference to such an
  /// object (they reach objects through this context, on its queue), so the check cannot be outdated.
  func sweepRegistry() {
    registry.sweep()
  }

  /// The object with `id`, loaded from the store.
  /// - Throws: `.notFound` when no such object exists.
  public func existingObject(with id: ObjectID) throws -> ManagedObject {
    checkQueue()
    let id = resolvingFormerTemporaryID(id)
    if id.isTemporary, let object = insertedObject(with: id) { return object }
    if let object = liveObject(id), !object.isFaultStorage || object.isInsertedStorage {
      if object.isDeletedStorage && !object.hasSnapshot {
        throw StoreError(.notFound, "\(id) no longer exists", entity: id.entityName)
      }
      return object
    }
    guard entityBinding(of: id) != nil else {
      throw StoreError(.notFound, "the model has no entity '\(id.entityName)' (from \(id))", entity: id.entityName)
    }
    let found = try requireStore().snapshot(for: id, generation: readGeneration)
    takePermanentIDsFromParent()
    guard let snapshot = found else {
      throw StoreError(.notFound, "\(id) does not exist in the store", entity: id.entityName)
    }
    try checkStoredValues(snapshot)
    return materialize(snapshot)
  }

  /// Inserts a new object of `type`, like `T(context:)`.
  @discardableResult
  public func insert<T: ManagedObject>(_ type: T.Type) -> T {
    checkQueue()
    guard let object = makeInserted(entityBinding(for: type)) as? T else {
      preconditionFailure("\(type) is registered for another entity")
    }
    return object
  }

  /// Inserts a new object of the entity called `entityName` (for entities without a class of their own).
  /// - Throws: `.invalidQuery` for an unknown entity.
  @discardableResult
  public func insertObject(entityName: String) throws -> ManagedObject {
    checkQueue()
    guard let info = coordinator.info(forEntity: entityName) else {
      throw StoreError(.invalidQuery, "the model has no entity '\(entityName)'", entity: entityName)
    }
    try coordinator.model.requireInsertable(entityName)
    return makeInserted(binding(for: info))
  }

  // Not through `init(context:)`: called on a metatype it would have to be `required`, and it finds the
  // binding by class, which an entity without a class of its own does not have.
  private func makeInserted(_ binding: EntityBinding) -> ManagedObject {
    let object = binding.info.objectClass.init(.inserted(Unretained(binding)))
    registerInserted(object)
    object.awakeFromInsert()
    return object
  }

  func entityInfo(for type: ManagedObject.Type) -> EntityInfo {
    entityBinding(for: type).info
  }

  /// ``entityBinding(for:)`` not retained for the caller: the context keeps every binding it made.
  @inline(__always)
  func unretainedEntityBinding(for type: ManagedObject.Type) -> Unretained<EntityBinding> {
    if let last = lastClassBinding, last.info.objectClass == type { return Unretained(last) }
    return Unretained(entityBinding(for: type))
  }

  /// The binding of `type`'s entity in this context, remembering the class last asked for.
  func entityBinding(for type: ManagedObject.Type) -> EntityBinding {
    if let last = lastClassBinding, last.info.objectClass == type { return last }
    guard let info = coordinator.info(forClass: type) else {
      preconditionFailure(
        "\(type) is not part of the container's model; pass it to PersistentContainer(name:types:)")
    }
    let found = binding(for: info)
    lastClassBinding = found
    return found
  }

  /// What the context's objects of `info`'s entity share: made once per entity and kept.
  func binding(for info: EntityInfo) -> EntityBinding {
    if let found = bindings[ObjectIdentifier(info)] { return found }
    let made = EntityBinding(info: info, signals: changeLog.signals)
    bindings[ObjectIdentifier(info)] = made
    return made
  }

  func fetchSnapshot(for id: ObjectID) -> Snapshot? {
    if !rowCache.isEmpty, let cached = rowCache[id] { return cached }
    // A parent context knows the objects of a temporary ID: its own inserts and the ones it has saved.
    guard !id.isTemporary || parent != nil, let store = faultingStore() else { return nil }
    let found = try? store.snapshot(for: id, generation: readGeneration)
    takePermanentIDsFromParent()
    return found ?? nil
  }

  /// The registered object for `snapshot`, or a new one. A fault is loaded with the snapshot (and
  /// awoken) — or, with `asFault`, keeps it to load from when first read.
  func materialize(_ snapshot: consuming Snapshot, asFault: Bool = false) -> ManagedObject {
    var loaded: [ManagedObject] = []
    let object = materialize(snapshot, asFault: asFault, deferringAwakeInto: &loaded)
    for object in loaded { object.awakeFromFetch() }
    return object
  }

  /// ``materialize(_:asFault:)`` for a caller that awakes the objects it loads later (a fetch, once the
  /// store has finished reading): they are added to `loaded`.
  func materialize(
    _ snapshot: consuming Snapshot, asFault: Bool, deferringAwakeInto loaded: inout [ManagedObject]
  ) -> ManagedObject {
    let id = snapshot.objectID
    guard let binding = entityBinding(of: id) else {
      return ManagedObject(.prototype(nil))
    }
    // One lookup finds the registered object or the place of a new one.
    var made = false
    let object = registry.claim(id) {
      made = true
      let objectClass = binding.withObject { $0.info.objectClass }
      return objectClass.init(.managed(binding, id, isInserted: false))
    }
    if made || (object.isFaultStorage && !object.isInsertedStorage) {
      if asFault {
        object.keep(snapshot)
        // A new object belongs to no fault batch.
        if !made { object.faultBatch = nil }
      } else {
        object.load(consume snapshot)
        loaded.append(object)
      }
      if made { sweepIfDue() }
    }
    return object
  }

  /// The binding of `id`'s entity, remembering the last one asked for (fetches ask for one entity
  /// many times; IDs of one entity are recognised without comparing names). Uncounted, as the context
  /// keeps it.
  func entityBinding(of id: ObjectID) -> Unretained<EntityBinding>? {
    if let last = lastEntityBinding, last.id.hasSameEntityAndStore(as: id) { return last.binding }
    guard let info = coordinator.info(forEntity: id.entityName) else { return nil }
    let found = Unretained(binding(for: info))
    lastEntityBinding = LastEntityBinding(id: id, binding: found)
    return found
  }

  /// Drops prefetched values: of one object, or of every object.
  func forgetPrefetched(_ id: ObjectID? = nil) {
    guard !rowCache.isEmpty || !toManyCache.isEmpty else { return }
    if let id {
      rowCache[id] = nil
      toManyCache[id] = nil
    } else {
      rowCache = [:]
      toManyCache = [:]
    }
  }

  /// The object registered under `id`, if it is alive (under a temporary ID: an inserted object, or one
  /// saved into the parent).
  func registeredObject(for id: ObjectID) -> ManagedObject? {
    if id.isTemporary, let object = insertedObject(with: id) { return object }
    return liveObject(id)
  }
}
