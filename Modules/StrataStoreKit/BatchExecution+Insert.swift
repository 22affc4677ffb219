import Foundation

extension BatchExecution {
  /// Runs a batch insert as one ``ChangeSet`` saved to the store: every row is checked first (nothing is
  /// written when one is refused); with uniqueness constraints on the entity, a row whose key is stored
  /// updates that object's given attributes (its other attributes and its relationships stay), a row
  /// whose key appeared earlier in the batch merges over that row (the later wins), and the rest are
  /// inserted with defaults. The store computes derived attributes and bumps the updated rows' versions.
  /// A stored object whose rows give only the values it already holds is left alone (reported in
  /// `BatchResult.unchangedObjectIDs`); a batch that changes nothing saves nothing.
  ///
  /// ```swift
  /// let result = try BatchExecution(store: store).insert(
  ///   BatchInsertDescription(entityName: "Studio", objects: [["name": "Ghibli"]], resultType: .objectIDs))
  /// ```
  public func insert(_ request: BatchInsertDescription) throws -> BatchResult {
    let entity = try store.model.requireEntity(request.entityName)
    let rules = BatchInsertRow.Rules(entity)
    let constraints: [[Int]] = entity.uniquenessConstraints.map { $0.compactMap { entity.attributeIndex(named: $0) } }
    // The stored objects by the key of each constraint, read only when the entity has constraints.
    var stored: [[[Value]: Snapshot]] = Array(repeating: [:], count: constraints.count)
    if !constraints.isEmpty,
      case .snapshots(let snapshots) = try store.fetch(FetchDescription(entityName: entity.name), generation: nil)
    {
      for snapshot in snapshots where snapshot.objectID.entityName == entity.name {
        for (c, positions) in constraints.enumerated() {
          let key = positions.map { snapshot.attributes[$0] }
          if !key.contains(where: \.isNull) { stored[c][key] = snapshot }
        }
      }
    }
    // Each written object once, in the order rows first named it; `pending` finds a key seen earlier.
    var writes: [(id: ObjectID, values: AttributeValues, given: Set<Int>, base: Snapshot?)] = []
    var pending: [[[Value]: Int]] = Array(repeating: [:], count: constraints.count)
    let noLinks = [ObjectID?](repeating: nil, count: entity.toOneRelationships.count)
    try request.forEachRow { index, dictionary in
      let row = try BatchInsertRow(dictionary, index: index, rules: rules)
      var target: Int?
      var existing: Snapshot?
      var keys: [[Value]?] = []
      for (c, positions) in constraints.enumerated() {
        let key = positions.map { row.values[$0] }
        let usable = key.contains(where: \.isNull) ? nil : key
        keys.append(usable)
        guard let usable, target == nil, existing == nil else { continue }
        if let earlier = pending[c][usable] { target = earlier } else { existing = stored[c][usable] }
      }
      if let target {
        for position in row.given { writes[target].values[position] = row.values[position] }
        writes[target].given.formUnion(row.given)
      } else if let existing {
        var values = existing.attributes
        for position in row.given { values[position] = row.values[position] }
        writes.append((existing.objectID, values, Set(row.given), existing))
      } else {
        writes.append((ObjectID.makeTemporary(entityName: entity.name), row.values, Set(row.given), nil))
      }
      let slot = target ?? writes.count - 1
      for (c, key) in keys.enumerated() { if let key { pending[c][key] = slot } }
    }
    // A stored object whose rows gave only the values it holds is not written: no version bump, no history.
    var unchangedIDs: [ObjectID] = []
    writes.removeAll { write in
      guard let base = write.base, write.given.allSatisfy({ write.values[$0] == base.attributes[$0] }) else { return false }
      unchangedIDs.append(write.id)
      return true
    }
    guard !writes.isEmpty else {
      return BatchResult(count: 0, unchangedObjectIDs: unchangedIDs).reported(as: request.resultType)
    }
    var inserted: [ObjectChange] = []
    var updated: [ObjectChange] = []
    for write in writes {
      if let base = write.base {
        updated.append(
          ObjectChange(
            objectID: write.id, attributes: write.values, toOne: base.toOne, expectedVersion: base.version,
            changedKeys: write.given.sorted().map { entity.attributes[$0].name }))
      } else {
        inserted.append(ObjectChange(objectID: write.id, attributes: write.values, toOne: noLinks))
      }
    }
    let saved = try store.save(ChangeSet(inserted: inserted, updated: updated, author: author, contextName: contextName))
    let ids = writes.map { saved.permanentIDs[$0.id] ?? $0.id }
    let updatedIDs = updated.map(\.objectID)
    let own = Set(ids)
    let recomputed = saved.storedSnapshots.keys.filter { !own.contains($0) }.sorted { $0.description < $1.description }
    return BatchResult(
      count: ids.count, objectIDs: ids, historyToken: saved.historyToken, recomputedObjectIDs: recomputed,
      updatedObjectIDs: updatedIDs, unchangedObjectIDs: unchangedIDs
    ).reported(as: request.resultType)
  }
}
