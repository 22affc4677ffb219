import Foundation
import StrataStoreKit

extension SQLSaveOperation {
  /// The save's result and change announcement: permanent IDs, new versions, and the stored snapshots of
  /// written objects whose stored state differs from what the context sent (values converted to their
  /// attribute's type, dates rounded to the stored precision, references to deleted objects cleared,
  /// derived attributes computed: `recomputed` holds those snapshots as stored).
  package func results(deleted: Set<ObjectID>, cleared: Set<String>, recomputed: [Snapshot]) throws -> (SaveResult, StoreChange) {
    var result = SaveResult()
    result.permanentIDs = permanentIDs.keys.allSatisfy(\.isTemporary) ? permanentIDs : permanentIDs.filter { $0.key.isTemporary }
    result.versions = deleted.isEmpty ? versions : versions.filter { !deleted.contains($0.key) }
    var clearedIDs: [ObjectID] = []
    var seen = Set<ObjectID>()
    for key in cleared.sorted() {
      let parts = key.split(separator: "/")
      guard parts.count == 3, let pk = Int64(parts[1]) else { continue }
      let id = ObjectID(entityName: String(parts[0]), storeIdentifier: storeIdentifier, primaryKey: pk)
      if !deleted.contains(id), seen.insert(id).inserted { clearedIDs.append(id) }
    }
    // What was stored equals what was sent unless values were converted on the way in, the save cleared
    // references to deleted objects, or the store computed derived attributes; only then is the stored
    // state worth rebuilding.
    let derived = recomputed.isEmpty ? [:] : Dictionary(recomputed.map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
    var inserted: [ObjectID] = []
    var updated: [ObjectID] = []
    inserted.reserveCapacity(changes.inserted.count)
    updated.reserveCapacity(changes.updated.count)
    // Read once, and asked only when not empty: this loop runs for every written object, and a lookup in
    // an empty dictionary or set still hashes the key.
    let permanentIDs = self.permanentIDs
    let converted = self.converted
    for (changeList, isInsert) in [(changes.inserted, true), (changes.updated, false)] {
      for change in changeList {
        guard let id = isInsert ? permanentIDs[change.objectID] : change.objectID else { continue }
        if !deleted.isEmpty && deleted.contains(id) { continue }
        if isInsert { inserted.append(id) } else { updated.append(id) }
        guard
          !cleared.isEmpty || (!derived.isEmpty && derived[id] != nil)
            || (!converted.isEmpty && converted.contains(change.objectID)),
          let version = versions[id] ?? (isInsert ? 1 : nil)
        else { continue }
        let table = try schema.table(id.entityName)
        let stored = try derived[id] ?? storedState(change, id: id, version: version, table: table, cleared: cleared)
        if stored != sentState(change, stored: stored, table: table) { result.storedSnapshots[id] = stored }
      }
    }
    // Every insert's ID, in the change set's order: the context matches them up without a lookup each.
    if inserted.count == changes.inserted.count { result.insertedIDs = inserted }
    let written = clearedIDs.isEmpty ? [] : Set(inserted + updated)
    let change = StoreChange(
      storeIdentifier: storeIdentifier, inserted: inserted,
      updated: updated + clearedIDs.filter { !written.contains($0) },
      deleted: changes.deleted.map(\.objectID).filter { deleted.contains($0) })
    return (result, change)
  }

  /// What the store now holds for a written object, computed from what was written.
  private func storedState(
    _ change: ObjectChange, id: ObjectID, version: Int64, table: Table, cleared: Set<String>
  ) throws -> Snapshot {
    let entity = table.entity
    var attributes = AttributeValues(layout: entity.valueLayout)
    for index in table.storedAttributes {
      let attribute = entity.attributes[index]
      attributes[index] = try Schema.storedForm(
        change.attributes[index], as: attribute.type, entity: entity.name, key: attribute.name)
    }
    let pk = id.primaryKey ?? 0
    let toOne = zip(entity.toOneRelationships, change.toOne).map { rel, target -> ObjectID? in
      guard let target, !cleared.contains("\(entity.name)/\(pk)/\(rel.name)") else { return nil }
      return permanentIDs[target] ?? target
    }
    return Snapshot(objectID: id, version: version, attributes: attributes, toOne: toOne)
  }

  /// The snapshot the context expects after the save: what it sent, with temporary IDs resolved.
  private func sentState(_ change: ObjectChange, stored: Snapshot, table: Table) -> Snapshot {
    var expected = stored
    for index in table.storedAttributes { expected.attributes[index] = change.attributes[index] }
    expected.toOne = change.toOne.map { target in target.map { permanentIDs[$0] ?? $0 } }
    return expected
  }

  // MARK: Conflicts

  /// The `.constraintConflict` error for writes a uniqueness constraint refused: every clash, each
  /// reported once, the object written first in the change set named first.
  package func constraintConflict(_ refused: [ObjectChange]) throws -> StoreError {
    var conflicts: [StoreError.Conflict] = []
    var reported = Set<Set<ObjectID>>()
    let position = self.position
    for change in refused.sorted(by: { (position[$0.objectID] ?? 0) < (position[$1.objectID] ?? 0) }) {
      for conflict in try clashes(of: change, position: position) {
        let pair = Set([conflict.objectID, conflict.conflictingObjectID].compactMap { $0 })
        if pair.count == 2, !reported.insert(pair).inserted { continue }
        conflicts.append(conflict)
      }
    }
    return StoreError.uniquenessViolation(conflicts)
      ?? StoreError(.constraintConflict, "uniqueness constraint violated", conflicts: conflicts)
  }

  /// Every uniqueness constraint `change` clashes on, with the object holding the same values.
  private func clashes(of change: ObjectChange, position: [ObjectID: Int]) throws -> [StoreError.Conflict] {
    let table = try schema.table(change.objectID.entityName)
    let entity = table.entity
    var result: [StoreError.Conflict] = []
    constraints: for keys in entity.uniquenessConstraints {
      var values: [Value] = []
      for key in keys {
        switch entity.property(named: key) {
        case .attribute(let attribute, let index):
          let value = try Schema.storedForm(change.attributes[index], as: attribute.type, entity: entity.name, key: key)
          if value.isNull { continue constraints }
          values.append(value)
        case .toOne(_, let index):
          guard let target = change.toOne[index], (permanentIDs[target] ?? target).primaryKey != nil else {
            continue constraints
          }
          values.append(.objectID(permanentIDs[target] ?? target))
        default:
          continue constraints
        }
      }
      var bindings = values.map(Schema.encode)
      let conditions = keys.enumerated().map { "t0.\(SQLLayout.quote($1)) = \(Schema.placeholder($0 + 1))" }
      var sql =
        "SELECT \(table.selectList(alias: "t0")) FROM \(table.sqlName) AS t0 WHERE \(conditions.joined(separator: " AND "))"
      if let pk = (permanentIDs[change.objectID] ?? change.objectID).primaryKey {
        sql += " AND t0.\"_pk\" <> \(Schema.placeholder(bindings.count + 1))"
        bindings.append(Schema.encode(.int(pk)))
      }
      guard let other = try firstSnapshot(sql + " ORDER BY t0.\"_pk\" LIMIT 1", bindings, table) else { continue }
      let otherID = permanentIDs.first { $0.value == other.objectID && $0.key.isTemporary }?.key ?? other.objectID
      let storedValues: [Value] = keys.map { key in
        switch entity.property(named: key) {
        case .attribute(_, let index): other.attributes[index]
        case .toOne(_, let index): other.toOne[index].map(Value.objectID) ?? .null
        default: .null
        }
      }
      if let otherPosition = position[otherID], otherPosition < (position[change.objectID] ?? Int.max) {
        result.append(
          StoreError.Conflict(
            objectID: otherID, conflictingObjectID: change.objectID, entity: entity.name, keys: keys,
            values: storedValues, storedValues: values))
      } else {
        result.append(
          StoreError.Conflict(
            objectID: change.objectID, conflictingObjectID: otherID, entity: entity.name, keys: keys, values: values,
            storedValues: storedValues))
      }
    }
    if result.isEmpty && Self.reportsUnmatchedRefusals {
      result.append(
        StoreError.Conflict(objectID: change.objectID, entity: entity.name, keys: entity.uniquenessConstraints.first ?? []))
    }
    return result
  }
}
