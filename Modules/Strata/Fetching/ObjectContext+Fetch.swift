import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// The objects matching `request`, as objects of this context (one per ID).
  ///
  /// With ``FetchRequest/includesPendingChanges`` (the default) the answer reflects unsaved work:
  /// inserted objects that match are included, deleted objects are left out, and changed objects are
  /// matched and sorted by their current values. Objects come back as faults that already hold their
  /// values unless ``FetchRequest/returnsObjectsAsFaults`` is false; with a ``FetchRequest/fetchBatchSize``
  /// they hold nothing yet and load a batch at a time; ``FetchRequest/relationshipKeyPathsForPrefetching``
  /// loads related objects along with them.
  ///
  /// ```swift
  /// var request = FetchRequest<Venue>(where: \.specialCount > 0)
  /// request.relationshipKeyPathsForPrefetching = ["location"]
  /// let venues = try context.fetch(request)       // venue.location.address costs no store call
  /// ```
  ///
  /// - Throws: `.invalidQuery` naming the entity and key when the predicate, a sort or a prefetch key
  ///   path names an unknown or transient key or compares incompatible types; `.misuse` when no store is
  ///   loaded.
  public func fetch<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [T] {
    checkQueue()
    let started = StrataLog.level > 0 ? ContinuousClock.now : nil
    let objects = try fetchObjects(request)
    if let started { logFetch(request.entityName, objects.count, started: started) }
    // Every object of an entity is made from the entity's class: when that is `T`, the array is one of
    // `T` already, and is reinterpreted as such rather than copied element by element.
    if let info = coordinator.info(forEntity: request.entityName), info.objectClass == T.self {
      return reinterpretCast(objects, to: T.self)
    }
    return objects.compactMap { $0 as? T }
  }

  /// The IDs of the objects matching `request`, without materializing objects. With
  /// ``FetchRequest/includesPendingChanges``, inserted objects that match are included under their
  /// temporary IDs.
  public func fetchObjectIDs<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [ObjectID] {
    checkQueue()
    let pending = pendingChanges(for: request)
    guard pending.isEmpty else { return try fetchObjects(request).map(\.objectID) }
    var description = request.fetchDescription
    description.resultType = .objectIDs
    let answer = try requireStore().fetch(description, generation: readGeneration)
    takePermanentIDsFromParent()
    guard case .objectIDs(let ids) = answer else { return [] }
    return ids
  }

  /// Rows of values instead of objects, computed by the store (SQL `GROUP BY`, `SUM`, … in SQLite):
  /// the request's `propertiesToFetch` (attributes, key paths through to-one relationships, named
  /// expressions), grouped by `propertiesToGroupBy`, filtered by `havingPredicate`. Nil values are left
  /// out of a row. See `DictionaryFetch` for the rules. As in Core Data, rows reflect the store only,
  /// not the context's unsaved changes.
  ///
  /// ```swift
  /// var request = FetchRequest<Venue>()
  /// request.propertiesToFetch = [
  ///   .keyPath("priceInfo.priceCategory"),
  ///   try .expression("venues", format: "count:(name)", resultType: .int64),
  /// ]
  /// request.propertiesToGroupBy = ["priceInfo.priceCategory"]
  /// let rows = try context.fetchDictionaries(request)   // [["priceInfo.priceCategory": "$", "venues": 61], …]
  /// ```
  ///
  /// - Throws: `.invalidQuery` naming the key for a to-many or unknown key path, an ungrouped property
  ///   beside aggregates, a having predicate reading an unfetched key.
  public func fetchDictionaries<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [[String: Value]] {
    checkQueue()
    var description = request.fetchDescription
    description.resultType = .dictionaries
    guard case .dictionaries(let rows) = try requireStore().fetch(description, generation: readGeneration) else { return [] }
    return rows
  }

  /// The number of objects a fetch of `request` would return, counted by the store without
  /// materializing objects (limit and offset apply). With ``FetchRequest/includesPendingChanges`` the
  /// context's unsaved inserts, edits and deletes of the entity are accounted for: the store counts, and
  /// only the changed objects are matched in memory.
  ///
  /// ```swift
  /// let deals = try context.count(for: FetchRequest<Venue>(format: "specialCount > 0"))
  /// ```
  public func count<T: ManagedObject>(for request: FetchRequest<T>) throws -> Int {
    checkQueue()
    let store = try requireStore()
    let pending = pendingChanges(for: request)
    var description = request.fetchDescription
    description.sortDescriptors = []
    guard !pending.isEmpty else {
      defer { takePermanentIDsFromParent() }
      return try store.count(description, generation: readGeneration)
    }
    description.fetchLimit = nil
    description.fetchOffset = 0
    var total = try store.count(description, generation: readGeneration)
    let storedIDs = pending.changed.map(\.objectID) + pending.deleted.filter { !$0.isTemporary }
    if !storedIDs.isEmpty {
      var stored = description
      let affected = QueryPredicate.comparison(
        Comparison(.evaluatedObject, .in, .constant(.array(storedIDs.map(Value.objectID)))))
      stored.predicate = description.predicate.map { .and([$0, affected]) } ?? affected
      total -= try store.count(stored, generation: readGeneration)
    }
    takePermanentIDsFromParent()
    total += try pending.matching(description.predicate, in: self).count
    total = max(0, total - max(request.fetchOffset, 0))
    if let limit = request.fetchDescription.effectiveLimit { total = min(total, limit) }
    return total
  }

  /// The objects of a fetch, before the cast to the request's type.
  func fetchObjects<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [ManagedObject] {
    let pending = pendingChanges(for: request)
    var description = request.fetchDescription
    if !pending.isEmpty {
      description = description.widened(by: pending.storedRowCount)
    } else if request.fetchBatchSize > 0 {
      description.resultType = .objectIDs
    }
    var objects: [ManagedObject] = []
    if description.resultType == .snapshots {
      // Each object is made as the store reads its row. Objects loaded here are awoken once the store
      // has finished: their awakeFromFetch may use the store.
      let asFault = request.returnsObjectsAsFaults
      let checksValues = fetchedEntitiesCheckValues(request)
      var loaded: [ManagedObject] = []
      var reserved = false
      var batch = SnapshotBatch(capacity: 256)
      try registeringBatch(of: 0) {
        try requireStore().fetchSnapshots(description, generation: readGeneration) { snapshot, remaining in
          if !reserved {
            // A child context takes the parent's new permanent IDs before making objects of its answer.
            takePermanentIDsFromParent()
            reserved = true
            objects.reserveCapacity(remaining + 1)
            reserveRegistry(for: remaining + 1)
          }
          guard pending.deleted.isEmpty || !pending.deleted.contains(snapshot.objectID) else { return }
          if checksValues { try checkStoredValues(snapshot) }
          batch.append(consume snapshot)
          if batch.isFull {
            batch.drain { snapshot in objects.append(materialize(consume snapshot, asFault: asFault, deferringAwakeInto: &loaded))
            }
          }
        }
        batch.drain { snapshot in objects.append(materialize(consume snapshot, asFault: asFault, deferringAwakeInto: &loaded)) }
      }
      takePermanentIDsFromParent()
      for object in loaded { object.awakeFromFetch() }
    } else {
      let answer = try requireStore().fetch(description, generation: readGeneration)
      takePermanentIDsFromParent()
      if case .objectIDs(let ids) = answer { objects = faults(for: ids, batchSize: request.fetchBatchSize) }
    }
    if !pending.isEmpty { objects = try pending.merge(objects, request.fetchDescription, in: self) }
    if !request.relationshipKeyPathsForPrefetching.isEmpty {
      try prefetch(request.relationshipKeyPathsForPrefetching, of: objects, entityName: request.entityName)
    }
    return objects
  }

  /// Whether any entity a fetch of `request` can return has Codable or enum attributes whose stored
  /// values are checked (``checkStoredValues(_:)``): asked once per fetch, not per object.
  private func fetchedEntitiesCheckValues<T: ManagedObject>(_ request: FetchRequest<T>) -> Bool {
    let entities = coordinator.model.inheritance.fetchedEntities(
      request.entityName, includesSubentities: request.includesSubentities)
    return entities.contains { coordinator.info(forEntity: $0).map { !$0.valueChecks.isEmpty } ?? true }
  }

  /// Faults for `ids`, grouped in batches that load together when one of them is first read.
  func faults(for ids: [ObjectID], batchSize: Int) -> [ManagedObject] {
    var objects: [ManagedObject] = []
    objects.reserveCapacity(ids.count)
    registeringBatch(of: ids.count) {
      var start = 0
      while start < ids.count {
        let end = batchSize > 0 ? min(start + batchSize, ids.count) : ids.count
        // Made for the first object that needs it: targets held by a prefetch need none.
        var batch: FaultBatch?
        for id in ids[start..<end] {
          let object = object(with: id)
          if object.isFaultStorage && !object.hasSnapshot && !object.isInsertedStorage {
            if batch == nil { batch = FaultBatch(ids: Array(ids[start..<end])) }
            object.faultBatch = batch
          }
          objects.append(object)
        }
        start = end
      }
    }
    return objects
  }

  /// Loads the snapshots of a fault batch's objects that are still unloaded faults, in one store call.
  func loadFaultBatch(_ batch: FaultBatch) {
    guard !batch.isLoaded else { return }
    batch.isLoaded = true
    var wanted: [ObjectID] = []
    wanted.reserveCapacity(batch.ids.count)
    for id in batch.ids
    where registry.withLive(id, { $0.isFaultStorage && !$0.hasSnapshot && !$0.isInsertedStorage }) ?? false {
      wanted.append(id)
    }
    // In key order (a to-many's targets come in its set's order): a store reading each key through one
    // cursor then steps to the next record instead of searching for it.
    if Self.needsKeyOrder(wanted) { wanted.sort { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) } }
    guard !wanted.isEmpty, let store = try? requireStore(),
      let snapshots = try? store.snapshots(for: wanted, generation: readGeneration)
    else { return }
    takePermanentIDsFromParent()
    for snapshot in snapshots {
      registry.withLive(snapshot.objectID) { object in
        guard object.isFaultStorage, !object.hasSnapshot else { return }
        object.keep(snapshot)
        object.faultBatch = nil
      }
    }
  }

  /// Whether `ids` are of one entity and store but not in key order.
  private static func needsKeyOrder(_ ids: [ObjectID]) -> Bool {
    guard let first = ids.first else { return false }
    var ascending = true
    var previous = Int64.min
    for id in ids {
      guard id.hasSameEntityAndStore(as: first) else { return false }
      let key = id.primaryKey ?? 0
      if key < previous { ascending = false }
      previous = key
    }
    return !ascending
  }

  // MARK: Unsaved changes

  /// The unsaved changes of the request's entity that its answer must reflect (none without
  /// `includesPendingChanges`).
  func pendingChanges<T: ManagedObject>(for request: FetchRequest<T>) -> PendingChanges {
    guard request.includesPendingChanges else { return PendingChanges() }
    let entities = Set(
      coordinator.model.inheritance.fetchedEntities(request.entityName, includesSubentities: request.includesSubentities))
    func fetched(_ object: ManagedObject) -> Bool { object.info.map { entities.contains($0.entity.name) } ?? false }
    let changes = allChanges()
    var pending = PendingChanges()
    pending.inserted = changes.inserted.filter { !$0.isDeletedStorage && fetched($0) }
    pending.changed = changes.updated.filter { $0.isUpdated && fetched($0) }
    for object in changes.deleted where fetched(object) { pending.deleted.insert(object.objectID) }
    return pending
  }

  /// The state of `object` as the context sees it now, as a snapshot for matching and sorting.
  func currentSnapshot(of object: ManagedObject) -> Snapshot {
    if object.isFaultStorage && !object.isInsertedStorage {
      if let stored = object.snapshot { return stored }
      object.fireFault()
    }
    return Snapshot(
      objectID: object.objectID, version: object.snapshotVersion ?? 0, attributes: object.values, toOne: object.toOne)
  }
}

extension FetchDescription {
  /// The request to ask the store when `storedRows` stored rows may leave or move once unsaved changes
  /// are merged: no offset, and that many more rows than the page needs — enough to fill it after
  /// merging, which then applies offset and limit.
  func widened(by storedRows: Int) -> FetchDescription {
    var widened = self
    if let limit = effectiveLimit { widened.fetchLimit = max(fetchOffset, 0) + limit + storedRows }
    widened.fetchOffset = 0
    return widened
  }
}

/// Faults fetched together with a ``FetchRequest/fetchBatchSize``: reading one loads them all.
final class FaultBatch {
  let ids: [ObjectID]
  var isLoaded = false

  init(ids: [ObjectID]) { self.ids = ids }
}

/// A context's unsaved inserts, edits and deletes of one entity, and how they change a fetch's answer.
struct PendingChanges {
  var inserted: [ManagedObject] = []
  var changed: [ManagedObject] = []
  var deleted: Set<ObjectID> = []

  var isEmpty: Bool { inserted.isEmpty && changed.isEmpty && deleted.isEmpty }
  /// How many stored rows the changes can remove from, or move within, the store's answer.
  var storedRowCount: Int { changed.count + deleted.count }

  /// The inserted and changed objects that match `predicate` by their current values.
  func matching(_ predicate: QueryPredicate?, in context: ObjectContext) throws -> [ManagedObject] {
    let candidates = changed + inserted
    guard let predicate, let entity = candidates.first?.info?.entity else { return candidates }
    let evaluator = try PredicateEvaluator(predicate, entity: entity, model: context.coordinator.model)
    let source = ContextEvaluationSource(context: context)
    return try candidates.filter { try evaluator.evaluate(context.currentSnapshot(of: $0), source: source) }
  }

  /// The store's answer `stored` (unpaged, pending deletes already left out) with the changes applied:
  /// changed objects matched again, inserted ones added, everything sorted by current values, then paged.
  func merge(_ stored: [ManagedObject], _ request: FetchDescription, in context: ObjectContext) throws -> [ManagedObject] {
    let changedIDs = Set(changed.map(\.objectID))
    var rows = stored.filter { !changedIDs.contains($0.objectID) }
    rows += try matching(request.predicate, in: context)
    let model = context.coordinator.model
    if let entity = model.entity(named: request.entityName) {
      let sorter = try SnapshotSorter(request.sortDescriptors, entity: entity, model: model)
      let byID = Dictionary(rows.map { ($0.objectID, $0) }, uniquingKeysWith: { first, _ in first })
      let order = try sorter.sorted(rows.map(context.currentSnapshot(of:)), source: ContextEvaluationSource(context: context))
      rows = order.compactMap { byID[$0.objectID] }
    }
    let start = min(max(request.fetchOffset, 0), rows.count)
    let end = request.effectiveLimit.map { min(rows.count, start + $0) } ?? rows.count
    return Array(rows[start..<end])
  }
}

/// The object graph as a context sees it — its objects' current values, the store's for the rest — for
/// matching and sorting unsaved objects with the shared evaluator.
struct ContextEvaluationSource: EvaluationSource {
  let context: ObjectContext

  func snapshot(for id: ObjectID) throws -> Snapshot? {
    try context.currentSnapshots(for: [id]).first
  }

  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    try context.currentRelatedObjectIDs(of: id, relationship: relationship.name)
  }
}

extension ObjectContext {
  /// The snapshots of `ids` as this context sees them now: its objects' current values (objects deleted
  /// here left out), prefetched or stored values for the rest, read in one store call.
  func currentSnapshots(for ids: [ObjectID], generation: QueryGeneration? = nil) throws -> [Snapshot] {
    var found: [Snapshot] = []
    var fromStore: [ObjectID] = []
    for given in ids {
      let id = resolvingFormerTemporaryID(given)
      if let object = registeredObject(for: id) {
        if !object.isDeletedStorage { found.append(currentSnapshot(of: object)) }
      } else if let cached = rowCache[id] {
        found.append(cached)
      } else if !id.isTemporary && !isPendingDeletion(id) {
        fromStore.append(id)
      }
    }
    if !fromStore.isEmpty {
      let stored = try requireStore().snapshots(for: fromStore, generation: generation ?? readGeneration)
      for snapshot in stored { try checkStoredValues(snapshot) }
      found += stored
      takePermanentIDsFromParent()
    }
    return found
  }

  /// The targets of the to-many `relationship` of `id` as this context sees them now.
  func currentRelatedObjectIDs(
    of id: ObjectID, relationship: String, generation: QueryGeneration? = nil
  ) throws
    -> [ObjectID]
  {
    let id = resolvingFormerTemporaryID(id)
    if let object = registeredObject(for: id), let info = object.info, let index = info.toManyIndex[relationship] {
      let set = loadToMany(object, index: index)
      if info.hasOrderedToMany, info.entity.toManyRelationships[index].isOrdered,
        let ordered = object.orderedTargets(toManyIndex: index)
      {
        return ordered
      }
      return Array(set)
    }
    guard !id.isTemporary else { return [] }
    let related = try requireStore().relatedObjectIDs(
      of: id, relationship: relationship, generation: generation ?? readGeneration)
    takePermanentIDsFromParent()
    return related.filter { !isPendingDeletion($0) }
  }
}

/// Where contexts log their fetches and faults (``StrataLog``).
let contextLog = StrataLog.logger("strata.context")

extension ObjectContext {
  /// Logs a fetch: the entity, the object count and, from level 2, its duration.
  func logFetch(_ entityName: String, _ count: Int, started: ContinuousClock.Instant) {
    let context = name.map { " (\($0))" } ?? ""
    let duration = StrataLog.level >= 2 ? " in \(StrataLog.milliseconds(since: started))" : ""
    contextLog.debug("context\(context) fetched \(count) \(entityName) object\(count == 1 ? "" : "s")\(duration)")
  }
}
