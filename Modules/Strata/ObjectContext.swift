import Foundation
internal import StrataStoreKit
import Synchronization

/// A scratchpad of managed objects: fetch them, change them, then ``save()`` the changes to the store
/// in one transaction — or ``rollback()`` them.
///
/// A context holds at most one object per ``ObjectID``, tracks inserted, updated and deleted objects,
/// keeps both sides of relationships in step, and applies delete rules. It does its work on its own
/// serial queue: call it from that queue (``perform(_:)``, ``performAndWait(_:)``), or, for the
/// ``PersistentContainer/viewContext``, from the main thread. Objects are not `Sendable`; pass their
/// ``ObjectID``s between contexts.
///
/// ```swift
/// let context = container.viewContext
/// let movie = Movie(context: context)
/// movie.title = "Heat"
/// try context.save()
///
/// let dramas = try context.fetch(FetchRequest<Movie>(format: "genre CONTAINS[c] %@", "drama"))
/// ```
public final class ObjectContext: @unchecked Sendable {
  /// Where a context does its work.
  public enum ConcurrencyType: Sendable {
    /// On the main thread (the view context).
    case mainQueue
    /// On a private serial queue of its own.
    case privateQueue
  }

  public let concurrencyType: ConcurrencyType
  /// A name recorded in persistent history and shown in debugging output.
  public var name: String?
  /// The author recorded in persistent history for this context's saves.
  public var transactionAuthor: String?
  /// Whether saves of the container's other contexts are merged into this one as they happen.
  public var automaticallyMergesChangesFromParent = false
  /// How ``save()`` resolves conflicts with the store; `.error` (the default) throws them.
  public var mergePolicy: MergePolicy = .error
  /// Records unsaved changes for undo and redo; `nil` (the default) records nothing.
  public var undoManager: ContextUndoManager? {
    didSet {
      undoManager?.context = self
      changeLog.signals.recordsUndo = undoManager != nil
    }
  }

  let coordinator: StoreCoordinator
  private let queue: DispatchQueue
  private let queueKey = DispatchSpecificKey<ObjectIdentifier>()

  /// One entry per object handed out; objects nothing else holds are swept out as the registry grows.
  let registry = ObjectRegistry()
  private var registrySweepThreshold = 4096
  /// Set while a batch of objects is registered (``registeringBatch(of:_:)``).
  private var sweepsPaused = false
  /// Not counted: the coordinator holds every entity info for as long as the context holds it.
  private var lastEntityInfo: (id: ObjectID, info: Unmanaged<EntityInfo>)?
  /// The entity info of the class last inserted (code inserting many objects inserts many of one class).
  private var lastClassInfo: EntityInfo?
  /// Snapshots fetched ahead of their objects (prefetched relationship targets), used when the object is
  /// made or its fault fires; kept until the object is refreshed, saved or merged, or the context reset.
  var rowCache: [ObjectID: Snapshot] = [:]
  /// Prefetched to-many targets of objects not made yet, by object and relationship name.
  var toManyCache: [ObjectID: [String: [ObjectID]]] = [:]
  /// How many objects of `insertionList` are still inserted (not deleted again).
  @exclusivity(unchecked) var insertedCount = 0
  /// Inserted objects by temporary ID, built the first time a temporary ID is looked up.
  @exclusivity(unchecked) var temporaryIndex: [ObjectID: ManagedObject]?
  /// Inserted objects in insertion order; may hold objects deleted again since (filtered on use).
  @exclusivity(unchecked) var insertionList: [ManagedObject] = []
  @exclusivity(unchecked) var updated: [ObjectID: ManagedObject] = [:]
  @exclusivity(unchecked) var deleted: [ObjectID: ManagedObject] = [:]
  private var pendingErrors: [StoreError] = []
  /// The generation this context reads, when pinned (see ``setQueryGenerationFrom(_:)``).
  var pinnedGeneration: QueryGenerationToken?
  private let saveBroadcaster = Broadcaster<ContextDidSave>()
  let changeLog = ObjectChangeLog()

  /// The context whose objects this child context reads and whose objects its saves change, instead of
  /// the store; `nil` for a context of the store.
  public let parent: ObjectContext?
  private let parentStore: ParentContextStore?
  /// Whether a child context was ever made of this context: only then are the temporary IDs of saved
  /// objects remembered (``formerTemporaryIDs``), since only a child can still name an object by one.
  private let hasHadChildContexts = Atomic(false)
  /// The permanent ID of each object this context saved (or adopted) under a temporary ID a child
  /// context may still use, and those temporary IDs in the order they were given up: each child takes the
  /// ones it has not seen the next time it reads from or saves to this context.
  var formerTemporaryIDs: [ObjectID: ObjectID] = [:]
  var formerTemporaryIDLog: [ObjectID] = []

  init(coordinator: StoreCoordinator, concurrencyType: ConcurrencyType, parent: ObjectContext? = nil) {
    self.coordinator = coordinator
    self.concurrencyType = concurrencyType
    self.parent = parent
    self.parentStore = parent.map(ParentContextStore.init)
    switch concurrencyType {
    case .mainQueue:
      queue = DispatchQueue.main
    case .privateQueue:
      queue = DispatchQueue(label: "strata.context")
      queue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
    }
    changeLog.signals.context = self
    parentStore?.child = self
  }

  // MARK: Running work

  private var isOnOwnQueue: Bool {
    switch concurrencyType {
    case .mainQueue: Thread.isMainThread
    case .privateQueue: DispatchQueue.getSpecific(key: queueKey) == ObjectIdentifier(self)
    }
  }

  /// Runs `body` on the context's queue and waits for it; runs it directly when already there.
  public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
    if isOnOwnQueue { return try body() }
    return try queue.sync(execute: body)
  }

  /// Runs `body` on the context's queue without blocking the caller.
  ///
  /// ```swift
  /// let count = try await background.perform { try background.count(for: FetchRequest<Movie>()) }
  /// ```
  public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    if isOnOwnQueue { return try body() }
    return try await withCheckedThrowingContinuation { continuation in
      queue.async { continuation.resume(with: Result { try body() }) }
    }
  }

  /// Runs `body` on the context's queue later, without waiting (also when called from that queue).
  func performLater(_ body: @escaping @Sendable () -> Void) {
    queue.async(execute: body)
  }

  // MARK: Objects

  /// Every object the context holds in memory.
  public var registeredObjects: Set<ManagedObject> {
    sweepRegistry()
    return Set(registry.objects).union(liveInsertions)
  }
  /// Objects inserted and not saved yet.
  public var insertedObjects: Set<ManagedObject> { Set(liveInsertions) }
  /// Saved objects with unsaved changes.
  public var updatedObjects: Set<ManagedObject> { Set(updated.values.filter(\.isUpdated)) }
  /// Objects deleted and not saved yet.
  public var deletedObjects: Set<ManagedObject> { Set(deleted.values) }
  /// Whether anything was inserted, changed or deleted since the last save.
  public var hasChanges: Bool {
    insertedCount > 0 || !deleted.isEmpty || updated.values.contains { $0.isUpdated }
  }

  /// The object with `id`: the one the context holds, or a fault that loads its values when first read.
  ///
  /// The object is not checked to exist; use ``existingObject(with:)`` for that. As in Core Data, a
  /// temporary ID stops naming its object once the object is saved: use the object's new `objectID`.
  public func object(with id: ObjectID) -> ManagedObject {
    let id = resolvingFormerTemporaryID(id)
    if id.isTemporary, let object = insertedObject(with: id) { return object }
    if let object = liveObject(id) { return object }
    guard let info = coordinator.info(forEntity: id.entityName) else {
      return ManagedObject(.prototype(nil))
    }
    let object = info.objectClass.init(
      .managed(info, self, id, isInserted: false))
    if !rowCache.isEmpty, let cached = rowCache[id] { object.snapshot = cached }
    remember(object)
    return object
  }

  /// Registers the objects `body` materializes — `count` of them at most — in one go: the registry is
  /// swept (when due) and grown once before, not while, since the caller holds every object it makes
  /// until `body` returns and a sweep in between would find nothing to drop.
  func registeringBatch<R>(of count: Int, _ body: () throws -> R) rethrows -> R {
    if registry.count + count >= registrySweepThreshold { sweepRegistry() }
    reserveRegistry(for: count)
    let paused = sweepsPaused
    sweepsPaused = true
    defer {
      sweepsPaused = paused
      registrySweepThreshold = max(registrySweepThreshold, 4096, registry.count * 2)
    }
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

  private func sweepIfDue() {
    guard registry.count >= registrySweepThreshold, !sweepsPaused else { return }
    sweepRegistry()
    registrySweepThreshold = max(4096, registry.count * 2)
  }

  /// The registered object with `id`, unless only the registry holds it: such an object is dropped, as
  /// a weak registry would have dropped it, so that a caller gets it made afresh from the store.
  func liveObject(_ id: ObjectID) -> ManagedObject? {
    registry.live(id)
  }

  /// Drops the objects only the registry holds. Other threads cannot take a new reference to such an
  /// object (they reach objects through this context, on its queue), so the check cannot be outdated.
  func sweepRegistry() {
    registry.sweep()
  }

  /// The object with `id`, loaded from the store.
  /// - Throws: `.notFound` when no such object exists.
  public func existingObject(with id: ObjectID) throws -> ManagedObject {
    let id = resolvingFormerTemporaryID(id)
    if id.isTemporary, let object = insertedObject(with: id) { return object }
    if let object = liveObject(id), !object.isFaultStorage || object.isInsertedStorage {
      if object.isDeletedStorage && object.snapshot == nil {
        throw StoreError(.notFound, "\(id) no longer exists", entity: id.entityName)
      }
      return object
    }
    guard coordinator.info(forEntity: id.entityName) != nil else {
      throw StoreError(.notFound, "the model has no entity '\(id.entityName)' (from \(id))", entity: id.entityName)
    }
    guard let snapshot = try requireStore().snapshots(for: [id], generation: readGeneration).first else {
      throw StoreError(.notFound, "\(id) does not exist in the store", entity: id.entityName)
    }
    return materialize(snapshot)
  }

  /// Inserts a new object of `type`, like `T(context:)`.
  @discardableResult
  public func insert<T: ManagedObject>(_ type: T.Type) -> T {
    guard let object = makeInserted(entityInfo(for: type)) as? T else {
      preconditionFailure("\(type) is registered for another entity")
    }
    return object
  }

  /// Inserts a new object of the entity called `entityName` (for entities without a class of their own).
  /// - Throws: `.invalidQuery` for an unknown entity.
  @discardableResult
  public func insertObject(entityName: String) throws -> ManagedObject {
    guard let info = coordinator.info(forEntity: entityName) else {
      throw StoreError(.invalidQuery, "the model has no entity '\(entityName)'", entity: entityName)
    }
    return makeInserted(info)
  }

  private func makeInserted(_ info: EntityInfo) -> ManagedObject {
    let object = info.objectClass.init(
      .managed(info, self, info.temporaryID.nextTemporary(), isInserted: true))
    registerInserted(object)
    object.awakeFromInsert()
    return object
  }

  /// Marks `object` deleted and applies its relationships' delete rules now: `nullify` removes it from
  /// the related objects, `cascade` deletes them too. `deny` rules are checked by ``save()``.
  public func delete(_ object: ManagedObject) {
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
    if object.isInsertedStorage {
      insertedCount -= 1
      temporaryIndex?[object.objectID] = nil
    } else {
      deleted[object.objectID] = object
      updated[object.objectID] = nil
    }
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
    undoManager?.removeAllActions()
    for object in liveInsertions {
      noteChange(object, .deleted)
      object.managedObjectContext = nil
      object.isDeletedStorage = true
    }
    let changed = Array(updated.values) + Array(deleted.values)
    forgetPendingChanges()
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
    advanceQueryGeneration()
    undoManager?.removeAllActions()
    noteInvalidation()
    for object in registeredObjects { object.managedObjectContext = nil }
    registry.removeAll()
    forgetPrefetched()
    forgetPendingChanges()
    processPendingChanges()
  }

  /// Empties the inserted, updated and deleted sets and the recorded relationship errors.
  private func forgetPendingChanges() {
    insertionList = []
    insertedCount = 0
    temporaryIndex = nil
    updated = [:]
    deleted = [:]
    pendingErrors = []
  }

  /// Updates `object` from the store. With `mergeChanges` false the object becomes a fault and loses
  /// unsaved changes; with true it takes the stored values but keeps the properties it changed.
  /// Either way transient attributes go back to their defaults, and a loaded object gets
  /// ``ManagedObject/awake(fromSnapshotEvents:)`` with `.refresh`.
  public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
    guard object.managedObjectContext === self, !object.isInsertedStorage, let info = object.info else { return }
    forgetPrefetched(object.objectID)
    noteChange(object, .refreshed)
    guard mergeChanges, object.isUpdated, !object.isFaultStorage else {
      updated[object.objectID] = nil
      if !object.isDeletedStorage { object.turnIntoFault() }
      return
    }
    guard let snapshot = fetchSnapshot(for: object.objectID) else { return }
    let keep = info.hasTransientAttributes
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
    if keep.isEmpty { updated[object.objectID] = nil }
    object.awake(fromSnapshotEvents: .refresh)
  }

  /// Refreshes every registered object, keeping unsaved changes.
  public func refreshAllObjects() {
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
      updated[id] = nil
      deleted[id] = nil
      object.isDeletedStorage = true
      object.managedObjectContext = nil
    }
  }

  // MARK: Internals used by objects, fetching and saving

  func requireStore() throws -> any PersistentStore {
    if let parentStore { return parentStore }
    return try coordinator.requireStore()
  }

  /// A context whose parent is this one: it reads this context's objects as they are now (unsaved
  /// changes included) and its ``save()`` hands its changes to this context, which writes them to the
  /// store when it saves itself. For edits that may be thrown away, such as a form.
  ///
  /// ```swift
  /// let editor = container.viewContext.newChildContext()
  /// let draft = editor.object(with: movie.objectID) as? Movie
  /// draft?.title = "Heat (1995)"
  /// try editor.save()                       // the view context has the change, unsaved
  /// try container.viewContext.save()        // now the store has it
  /// ```
  ///
  /// Do not call a child synchronously from its parent's queue (`performAndWait` both ways would wait
  /// for each other). An object a child inserted still has its temporary ID when the parent saves it; the
  /// child can go on editing, relating and deleting it, and it takes its permanent ID the next time the
  /// child reads from or saves to the parent (Core Data leaves it temporary).
  public func newChildContext(concurrencyType: ConcurrencyType = .privateQueue) -> ObjectContext {
    hasHadChildContexts.store(true, ordering: .relaxed)
    let child = ObjectContext(coordinator: coordinator, concurrencyType: concurrencyType, parent: self)
    coordinator.register(child)
    return child
  }

  func entityInfo(for type: ManagedObject.Type) -> EntityInfo {
    if let last = lastClassInfo, last.objectClass == type { return last }
    guard let info = coordinator.info(forClass: type) else {
      preconditionFailure(
        "\(type) is not part of the container's model; pass it to PersistentContainer(name:types:)")
    }
    lastClassInfo = info
    return info
  }

  func registerInserted(_ object: ManagedObject) {
    insertionList.append(object)
    insertedCount += 1
    temporaryIndex?[object.objectID] = object
    // Most inserts have no undo manager or observer to tell: one read of the shared flags skips both.
    guard changeLog.signals.wantsChanges else { return }
    recordUndo(.insert(object))
    noteChange(object, .inserted)
  }

  func registerUpdated(_ object: ManagedObject) {
    guard !object.isInsertedStorage, !object.isDeletedStorage else { return }
    updated[object.objectID] = object
  }

  func recordError(_ error: StoreError) {
    pendingErrors.append(error)
  }

  func fetchSnapshot(for id: ObjectID) -> Snapshot? {
    if !rowCache.isEmpty, let cached = rowCache[id] { return cached }
    // A parent context knows the objects of a temporary ID: its own inserts and the ones it has saved.
    guard !id.isTemporary || parent != nil, let store = try? requireStore() else { return nil }
    return (try? store.snapshots(for: [id], generation: readGeneration))?.first
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
    guard let info = entityInfo(of: id) else {
      return ManagedObject(.prototype(nil))
    }
    // One lookup finds the registered object or the place of a new one.
    var made = false
    let object = registry.claim(id) {
      made = true
      let objectClass = info._withUnsafeGuaranteedRef { $0.objectClass }
      return objectClass.init(.managed(info, self, id, isInserted: false))
    }
    if made || (object.isFaultStorage && !object.isInsertedStorage) {
      if asFault {
        object.snapshot = consume snapshot
        object.faultBatch = nil
      } else {
        object.load(consume snapshot)
        loaded.append(object)
      }
      if made { sweepIfDue() }
    }
    return object
  }

  /// The entity info of `id`'s entity, remembering the last one asked for (fetches ask for one entity
  /// many times; IDs of one entity are recognised without comparing names). Uncounted, as the
  /// coordinator holds it.
  private func entityInfo(of id: ObjectID) -> Unmanaged<EntityInfo>? {
    if let last = lastEntityInfo, last.id.hasSameEntityAndStore(as: id) { return last.info }
    guard let info = coordinator.info(forEntity: id.entityName) else { return nil }
    lastEntityInfo = (id, .passUnretained(info))
    return .passUnretained(info)
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

  /// `id`, or the permanent ID this context saved its object under when `id` is a temporary ID it had.
  func resolvingFormerTemporaryID(_ id: ObjectID) -> ObjectID {
    id.isTemporary ? formerTemporaryIDs[id] ?? id : id
  }

  func isPendingDeletion(_ id: ObjectID) -> Bool { deleted[id] != nil }

  private var liveInsertions: [ManagedObject] { insertionList.filter { !$0.isDeletedStorage } }

  func insertedObject(with id: ObjectID) -> ManagedObject? {
    if temporaryIndex == nil {
      temporaryIndex = Dictionary(liveInsertions.map { ($0.objectID, $0) }, uniquingKeysWith: { first, _ in first })
    }
    return temporaryIndex?[id]
  }

  func pendingDeletionCount(of entityName: String) -> Int {
    deleted.keys.reduce(0) { $0 + ($1.entityName == entityName ? 1 : 0) }
  }

  /// The pending changes; inserted objects in the order they were inserted.
  func allChanges() -> (inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject]) {
    if insertionList.count != insertedCount {
      insertionList.removeAll { $0.isDeletedStorage }
    }
    return (insertionList, Array(updated.values), Array(deleted.values))
  }

  func pendingErrorsToThrow() -> [StoreError] { pendingErrors }

  /// Records a completed save: permanent IDs, new snapshots, cleared change sets.
  func finishSave(_ result: SaveResult, inserted savedInserts: [ManagedObject], updated savedUpdates: [ManagedObject],
    deleted savedDeletes: [ManagedObject])
  {
    advanceQueryGeneration()
    let map = result.permanentIDs
    let listed = result.insertedIDs.count == savedInserts.count ? result.insertedIDs : nil
    // One pass over the inserted objects (each one's new state depends on the map alone).
    registeringBatch(of: savedInserts.count) {
      for (i, object) in savedInserts.enumerated() {
        if let new = listed?[i] ?? map[object.objectID] {
          noteFormerTemporaryID(object.objectID, new)
          object.objectID = new
        }
        // Saved into a parent, an object keeps its temporary ID and is registered under it.
        remember(object)
        if !map.isEmpty { rewriteTemporaryReferences(in: object, map) }
        recordSaved(object, result)
      }
    }
    for object in savedUpdates {
      if !map.isEmpty { rewriteTemporaryReferences(in: object, map) }
      recordSaved(object, result)
    }
    let recomputed = refreshRecomputed(result, besides: savedInserts, savedUpdates)
    for object in savedUpdates { forgetPrefetched(object.objectID) }
    for object in savedDeletes {
      forgetPrefetched(object.objectID)
      registry.remove(object.objectID)
      object.managedObjectContext = nil
    }
    forgetPendingChanges()
    undoManager?.removeAllActions()
    if !savedInserts.isEmpty { noteNewIdentities() }
    for object in savedInserts { object.didSave() }
    for object in savedUpdates { object.didSave() }
    for object in savedDeletes { object.didSave() }
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
          object.values[i] = stored.attributes[i]
        }
        object.snapshot = stored
      } else if object.snapshot != nil {
        object.snapshot = stored
      }
    }
    return recomputed
  }

  private func noteFormerTemporaryID(_ temporary: ObjectID, _ permanent: ObjectID) {
    guard hasHadChildContexts.load(ordering: .relaxed) else { return }
    formerTemporaryIDs[temporary] = permanent
    formerTemporaryIDLog.append(temporary)
  }

  /// The permanent IDs this context gave objects since a child last asked (`seen` counts what it has
  /// taken), keyed by their temporary IDs.
  func formerTemporaryIDs(after seen: inout Int) -> [ObjectID: ObjectID] {
    guard seen < formerTemporaryIDLog.count else { return [:] }
    var map: [ObjectID: ObjectID] = [:]
    for temporary in formerTemporaryIDLog[seen...] { map[temporary] = formerTemporaryIDs[temporary] }
    seen = formerTemporaryIDLog.count
    return map
  }

  /// Gives the objects this child context registered under temporary IDs the permanent IDs its parent
  /// saved them under, and rewrites every reference to them, so the child names them as the store does.
  func adoptPermanentIDs(_ map: [ObjectID: ObjectID]) {
    var adopted = false
    for (temporary, permanent) in map {
      // Passed on to this context's own children, whether or not it still holds the object.
      noteFormerTemporaryID(temporary, permanent)
      guard let object = registry.live(temporary), !object.isInsertedStorage, registry.live(permanent) == nil else { continue }
      registry.remove(temporary)
      object.objectID = permanent
      object.snapshot?.objectID = permanent
      registry.register(object)
      adopted = true
    }
    guard adopted else { return }
    for object in registry.objects where !object.isFaultStorage { rewriteTemporaryReferences(in: object, map) }
    for object in insertionList { rewriteTemporaryReferences(in: object, map) }
  }

  func rewriteTemporaryReferences(in object: ManagedObject, _ map: [ObjectID: ObjectID]) {
    for i in object.toOne.indices {
      if let id = object.toOne[i], id.isTemporary, let permanent = map[id] { object.toOne[i] = permanent }
    }
    for i in object.toMany.indices {
      if let set = object.toMany[i], set.contains(where: \.isTemporary) {
        object.toMany[i] = Set(set.map { map[$0] ?? $0 })
      }
    }
  }

  private func recordSaved(_ object: ManagedObject, _ result: SaveResult) {
    let id = object.objectID
    if !result.storedSnapshots.isEmpty, let stored = result.storedSnapshots[id] {
      object.load(stored)
    } else {
      var attributes = object.values
      if let info = object.info, info.hasTransientAttributes {
        for (i, a) in info.entity.attributes.enumerated() where a.isTransient { attributes[i] = .null }
      }
      object.snapshot = Snapshot(
        objectID: id, version: (result.versions.isEmpty ? nil : result.versions[id]) ?? (object.snapshot?.version ?? 0) + 1,
        attributes: attributes,
        toOne: object.toOne)
    }
    object.committedToMany = object.toMany
    object.changedKeys = []
    object.isInsertedStorage = false
  }

  func restoreSavedState(of object: ManagedObject) {
    object.isDeletedStorage = false
    object.changedKeys = []
    if let snapshot = object.snapshot {
      object.load(snapshot)
      object.toMany = object.committedToMany
      object.awake(fromSnapshotEvents: .rollback)
    } else {
      object.turnIntoFault()
    }
  }
}

/// What one context save changed, as object IDs (`Sendable`, for merging into other contexts).
public struct ContextDidSave: Sendable, Hashable {
  public var contextName: String?
  public var insertedObjectIDs: Set<ObjectID>
  public var updatedObjectIDs: Set<ObjectID>
  public var deletedObjectIDs: Set<ObjectID>
  /// The history token of the save, when the store tracks history.
  public var historyToken: HistoryToken?

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
