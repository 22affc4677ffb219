import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// Loads the targets of `keyPaths` (relationship names joined by dots) for `objects`, one store call per
  /// relationship hop: to-one targets by ID, to-many targets through the inverse's foreign key. Join-table
  /// relationships (many-to-many, or without an inverse) read each object's links, then every target in
  /// one call. Loaded targets become faults holding their values (or wait in the row cache until made).
  ///
  /// - Throws: `.invalidQuery` naming the entity and key when a component is not a relationship.
  func prefetch(_ keyPaths: [String], of objects: [ManagedObject], entityName: String) throws {
    let model = coordinator.model
    guard let root = model.entity(named: entityName) else { return }
    let paths = try keyPaths.map { try Self.prefetchPath($0, from: root, model: model) }
    guard !objects.isEmpty else { return }
    let store = try requireStore()
    let roots = objects.map { currentSnapshot(of: $0) }
    for path in paths {
      var sources = roots
      var entity = root
      for rel in path {
        sources = try prefetchHop(rel, of: sources, entity: entity, store: store)
        guard let next = model.entity(named: rel.destination) else { break }
        entity = next
      }
    }
  }

  private static func prefetchPath(
    _ keyPath: String, from root: EntityDescription, model: ObjectModel
  ) throws
    -> [RelationshipDescription]
  {
    var entity = root
    var path: [RelationshipDescription] = []
    for name in keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
      guard let rel = entity.relationship(named: name), let next = model.entity(named: rel.destination) else {
        throw StoreError(
          .invalidQuery,
          "relationshipKeyPathsForPrefetching: \(entity.name) has no relationship '\(name)' (in '\(keyPath)')",
          entity: entity.name, key: name)
      }
      path.append(rel)
      entity = next
    }
    return path
  }

  /// Loads the targets of `rel` for `sources` (snapshots of `entity`) and returns the targets' snapshots.
  private func prefetchHop(
    _ rel: RelationshipDescription, of sources: [Snapshot], entity: EntityDescription, store: any PersistentStore
  ) throws -> [Snapshot] {
    let model = coordinator.model
    if !rel.isToMany {
      guard let index = entity.toOneIndex(named: rel.name) else { return [] }
      var seen = Set<ObjectID>()
      let ids = sources.compactMap { $0.toOne[index] }.filter { seen.insert($0).inserted }
      return try knownSnapshots(of: ids, store: store)
    }
    let sourceIDs = sources.map(\.objectID).filter { !$0.isTemporary }
    guard !sourceIDs.isEmpty else { return [] }
    let targetsOfSource: (Int) -> [ObjectID]
    var targets: [Snapshot]
    // An ordered relationship's order is the store's: its targets come from `relatedObjectIDs`.
    if !model.usesJoinTable(rel), !rel.isOrdered, let inverse = model.inverse(of: rel),
      let destination = model.entity(named: rel.destination), let inverseIndex = destination.toOneIndex(named: inverse.name)
    {
      var request = FetchDescription(entityName: rel.destination)
      // Past the constants a predicate may hold, every target that has an owner, kept when the owner is
      // a source: one store call still, where chunks of IDs would each scan a store without such an index.
      let isWide = sourceIDs.count > QueryLimits.maxConstants
      request.predicate = .comparison(
        isWide
          ? Comparison(.keyPath(inverse.name), .notEqualTo, .constant(.null))
          : Comparison(.keyPath(inverse.name), .in, .constant(.array(sourceIDs.map(Value.objectID)))))
      let answer = try store.fetch(request, generation: readGeneration)
      takePermanentIDsFromParent()
      guard case .snapshots(let found) = answer else { return [] }
      // Targets sorted to their sources by counting: each owner's position found without hashing its ID
      // (``IDPositions``), then one flat array of target IDs, each source's a stretch of it in store order.
      let positions = IDPositions(sourceIDs)
      var owners: [Int] = []
      owners.reserveCapacity(found.count)
      var counts = [Int](repeating: 0, count: sourceIDs.count)
      targets = []
      targets.reserveCapacity(found.count)
      for snapshot in found {
        let position = snapshot.toOne[inverseIndex].flatMap { positions.position(of: $0) }
        if isWide && position == nil { continue }
        owners.append(position ?? -1)
        if let position { counts[position] += 1 }
        targets.append(snapshot)
      }
      var starts = [Int](repeating: 0, count: sourceIDs.count + 1)
      for position in counts.indices { starts[position + 1] = starts[position] + counts[position] }
      var next = starts
      var grouped = [ObjectID](repeating: sourceIDs[0], count: starts[sourceIDs.count])
      for (snapshot, owner) in zip(targets, owners) where owner >= 0 {
        grouped[next[owner]] = snapshot.objectID
        next[owner] += 1
      }
      targetsOfSource = { source in
        guard let position = positions.position(of: sourceIDs[source]) else { return [] }
        return Array(grouped[starts[position]..<starts[position + 1]])
      }
      rowCache.reserveCapacity(rowCache.count + targets.count)
      for snapshot in targets { keep(snapshot) }
    } else {
      var all: [ObjectID] = []
      var seen = Set<ObjectID>()
      var related: [[ObjectID]] = []
      related.reserveCapacity(sourceIDs.count)
      for id in sourceIDs {
        let ids = try store.relatedObjectIDs(of: id, relationship: rel.name, generation: readGeneration)
        takePermanentIDsFromParent()
        related.append(ids)
        all += ids.filter { seen.insert($0).inserted }
      }
      targetsOfSource = { related[$0] }
      targets = try knownSnapshots(of: all, store: store)
    }
    guard let info = coordinator.info(forEntity: entity.name), let index = info.toManyIndex[rel.name] else {
      return targets
    }
    let checksDeletions = hasPendingDeletions
    for (source, id) in sourceIDs.enumerated() {
      let targets = targetsOfSource(source)
      guard let object = liveObject(id) else {
        toManyCache[id, default: [:]][rel.name] = targets
        continue
      }
      guard object.toMany[index] == nil else { continue }
      let kept = checksDeletions ? targets.filter { !isPendingDeletion($0) } : targets
      let loaded = Set(kept)
      object.toMany[index] = loaded
      object.committedToMany[index] = loaded
      if rel.isOrdered {
        object.toManyOrder[index] = kept
        object.committedToManyOrder[index] = kept
      }
    }
    return targets
  }

  /// The snapshots of `ids`: what the context already holds, and the rest from the store in one call.
  private func knownSnapshots(of ids: [ObjectID], store: any PersistentStore) throws -> [Snapshot] {
    var result: [Snapshot] = []
    var missing: [ObjectID] = []
    for id in ids {
      if let object = registeredObject(for: id), !object.isFaultStorage || object.hasSnapshot {
        result.append(currentSnapshot(of: object))
      } else if let cached = rowCache[id] {
        result.append(cached)
      } else if !id.isTemporary {
        missing.append(id)
      }
    }
    guard !missing.isEmpty else { return result }
    let found = try store.snapshots(for: missing, generation: readGeneration)
    takePermanentIDsFromParent()
    for snapshot in found {
      try checkStoredValues(snapshot)
      keep(snapshot)
      result.append(snapshot)
    }
    return result
  }

  /// Hands a prefetched snapshot to its object when it is an empty fault, else keeps it for later.
  private func keep(_ snapshot: Snapshot) {
    if let object = liveObject(snapshot.objectID) {
      if object.isFaultStorage && !object.hasSnapshot && !object.isInsertedStorage {
        object.keep(snapshot)
        object.faultBatch = nil
      }
    } else {
      rowCache[snapshot.objectID] = snapshot
    }
  }
}
