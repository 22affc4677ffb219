import Foundation
import StrataStoreKit

extension MemoryStore {
  /// Applies a change set atomically: the next state is built on a copy, checked, then swapped in.
  ///
  /// Inserts get permanent IDs (primary keys from 1 upward per entity) and version 1; updates increment
  /// the stored version. Temporary IDs in to-one targets and link changes are replaced by permanent ones.
  /// Deleting an object also clears to-one references to it and its join-table links. Derived attributes
  /// are computed on the new state (``DerivedRecomputation``), of the written objects and of those whose
  /// derivations read them.
  ///
  /// - Throws: `.optimisticLockConflict` listing every update or delete whose expected version differs
  ///   from the stored one (or whose object is gone); `.constraintConflict` listing every uniqueness clash
  ///   in the final state; `.validation` for a value of the wrong type or a reference to the wrong entity;
  ///   `.readOnly`; `.misuse` for a closed store or a malformed change set. The store is unchanged.
  public func save(_ changes: ChangeSet) throws -> SaveResult {
    let model = self.model
    let identifier = self.identifier
    let isReadOnly = options.isReadOnly
    let tracksHistory = options.tracksHistory
    let broadcaster = self.broadcaster
    return try storage.withLock { storage -> SaveResult in
      guard !storage.isClosed else { throw StoreError(.misuse, "the memory store \(identifier) is closed") }
      if changes.isEmpty { return SaveResult() }
      guard !isReadOnly else { throw StoreError(.readOnly, "the memory store \(identifier) was opened read-only") }
      for entity in changes.requiredEmptyEntities
      where model.inheritance.entityAndDescendants(entity).contains(where: { storage.state.rows[$0]?.isEmpty == false }) {
        throw StoreError.storeNotEmpty(entity)
      }
      var transaction = MemorySaveTransaction(state: storage.state, model: model, storeIdentifier: identifier)
      var (result, change) = try transaction.apply(changes)
      if tracksHistory {
        let tombstones = MemoryHistory.tombstones(
          of: change.deleted, in: storage.state, model: model, storeIdentifier: identifier)
        let token = storage.history.append(
          HistoryLog.changes(
            of: change, changeSet: changes, tombstones: tombstones, recomputed: transaction.recomputed, model: model),
          author: changes.author, contextName: changes.contextName, storeIdentifier: identifier)
        result.historyToken = token
        change.historyToken = token
      }
      storage.state = transaction.state
      storage.state.makeDerived()
      // Yielding under the lock keeps notifications in commit order.
      broadcaster.yield(change)
      return result
    }
  }
}

/// One save, applied to a copy of the store's state.
struct MemorySaveTransaction {
  private let original: MemoryState
  private(set) var state: MemoryState
  private let model: ObjectModel
  private let storeIdentifier: String
  /// Temporary ID of each inserted object → its permanent ID.
  private var permanentIDs: [ObjectID: ObjectID] = [:]
  /// Permanent ID of each inserted object → the ID the context knows it by.
  private var contextIDs: [ObjectID: ObjectID] = [:]
  /// The snapshots whose derived attributes the save recomputed (history names the ones that changed).
  private(set) var recomputed: [Snapshot] = []

  init(state: MemoryState, model: ObjectModel, storeIdentifier: String) {
    self.original = state
    self.state = state
    self.model = model
    self.storeIdentifier = storeIdentifier
  }

  mutating func apply(_ changes: ChangeSet) throws -> (SaveResult, StoreChange) {
    try assignPermanentIDs(changes.inserted)
    try checkVersions(changes)
    var derived = DerivedRecomputation(model: model, changes: changes)
    try derived.noteRelatedObjects(
      before: MemoryEvaluationSource(state: original, model: model, storeIdentifier: storeIdentifier))

    var written: [(change: ObjectChange, snapshot: Snapshot)] = []
    for insert in changes.inserted {
      let id = permanentIDs[insert.objectID] ?? insert.objectID
      written.append((insert, try makeRow(insert, id: id, version: 1)))
    }
    for update in changes.updated {
      let version = (original.snapshot(for: update.objectID, storeIdentifier: storeIdentifier)?.version ?? 0) + 1
      written.append((update, try makeRow(update, id: update.objectID, version: version)))
    }
    for (_, row) in written {
      if let pk = row.objectID.primaryKey { state.rows[row.objectID.entityName, default: [:]][pk] = row }
    }
    try applyLinks(changes.linkChanges)
    try applyOrderedLists(changes.orderedLists)
    let (deleted, cleared) = deleteObjects(changes.deleted)
    let recomputed = try derived.recompute(
      permanentIDs: permanentIDs,
      source: MemoryEvaluationSource(state: state, model: model, storeIdentifier: storeIdentifier))
    for row in recomputed {
      if let pk = row.objectID.primaryKey { state.rows[row.objectID.entityName, default: [:]][pk] = row }
    }
    self.recomputed = recomputed
    let writtenIDs = written.map(\.snapshot.objectID)
    let writtenSet = Set(writtenIDs)
    try checkUniqueness(writtenIDs + recomputed.map(\.objectID).filter { !writtenSet.contains($0) })

    var result = SaveResult()
    var change = StoreChange(storeIdentifier: storeIdentifier)
    for (original, row) in written {
      guard let stored = state.snapshot(for: row.objectID, storeIdentifier: storeIdentifier) else { continue }
      result.versions[row.objectID] = stored.version
      if stored != expectedSnapshot(sent: original, stored: stored) { result.storedSnapshots[row.objectID] = stored }
    }
    result.permanentIDs = permanentIDs.filter { $0.key.isTemporary }
    let insertedIDs = Set(changes.inserted.compactMap { permanentIDs[$0.objectID] })
    change.inserted = written.map(\.snapshot.objectID).filter { insertedIDs.contains($0) && !deleted.contains($0) }
    let updatedIDs = changes.updated.map(\.objectID).filter { !deleted.contains($0) }
    change.updated = updatedIDs + cleared.filter { !insertedIDs.contains($0) && !updatedIDs.contains($0) }
    change.deleted = changes.deleted.map(\.objectID).filter { deleted.contains($0) }
    derived.report(recomputed, into: &result, change: &change)
    return (result, change)
  }

  // MARK: IDs and versions

  private mutating func assignPermanentIDs(_ inserts: [ObjectChange]) throws {
    for insert in inserts {
      let id = insert.objectID
      _ = try entity(for: id)
      try model.requireInsertable(id.entityName)
      guard permanentIDs[id] == nil else {
        throw StoreError(.misuse, "\(id) is inserted twice in one change set", entity: id.entityName)
      }
      // Keys are unique across a hierarchy (as in the SQL stores' one table per hierarchy), so a reference
      // to a parent entity names one object.
      let root = model.inheritance.root(of: id.entityName)
      let primaryKey: Int64
      if let pk = id.primaryKey {
        let taken = model.inheritance.entityAndDescendants(root).contains { state.rows[$0]?[pk] != nil }
        guard id.storeIdentifier == storeIdentifier, !taken else {
          throw StoreError(.misuse, "cannot insert \(id): it is already saved or belongs to another store", entity: id.entityName)
        }
        primaryKey = pk
      } else {
        primaryKey = (state.lastPrimaryKey[root] ?? 0) + 1
      }
      state.lastPrimaryKey[root] = max(state.lastPrimaryKey[root] ?? 0, primaryKey)
      let permanent = ObjectID(entityName: id.entityName, storeIdentifier: storeIdentifier, primaryKey: primaryKey)
      permanentIDs[id] = permanent
      contextIDs[permanent] = id
    }
  }

  private func checkVersions(_ changes: ChangeSet) throws {
    for update in changes.updated where update.objectID.isTemporary || update.objectID.storeIdentifier != storeIdentifier {
      throw StoreError(
        .misuse, "cannot update \(update.objectID): it is not a saved object of this store", entity: update.objectID.entityName)
    }
    try OptimisticLocking.check(changes, model: model) { original.snapshot(for: $0, storeIdentifier: storeIdentifier) }
  }

  // MARK: Rows

  private func entity(for id: ObjectID) throws -> EntityDescription {
    guard let entity = model.entity(named: id.entityName) else {
      throw StoreError(.notFound, "\(id) names unknown entity '\(id.entityName)'", entity: id.entityName)
    }
    return entity
  }

  private func makeRow(_ change: ObjectChange, id: ObjectID, version: Int64) throws -> Snapshot {
    let entity = try entity(for: id)
    try change.requireShape(of: entity)
    var attributes = AttributeValues(layout: entity.valueLayout)
    for (index, (attribute, value)) in zip(entity.attributes, change.attributes).enumerated() {
      if attribute.isTransient {
        continue
      } else if let converted = attribute.type.coerce(value) {
        attributes[index] = converted
      } else {
        throw StoreError(
          .validation,
          "\(entity.name).\(attribute.name) is a \(attribute.type.rawValue) and cannot hold \(value) (\(value.kindName))",
          entity: entity.name, key: attribute.name, value: value)
      }
    }
    var toOne: [ObjectID?] = []
    for (rel, target) in zip(entity.toOneRelationships, change.toOne) {
      toOne.append(try reference(target, entityName: entity.name, relationship: rel.name, destination: rel.destination))
    }
    return Snapshot(objectID: id, version: version, attributes: attributes, toOne: toOne)
  }

  /// `target` with a temporary ID of this change set replaced by its permanent ID.
  private func reference(
    _ target: ObjectID?, entityName: String, relationship: String, destination: String
  ) throws
    -> ObjectID?
  {
    guard let target else { return nil }
    guard model.isEntity(target.entityName, kindOf: destination) else {
      throw StoreError(
        .validation, "\(entityName).\(relationship) must point at a \(destination), not at \(target)",
        entity: entityName, key: relationship, value: .objectID(target))
    }
    guard target.isTemporary else { return target }
    guard let permanent = permanentIDs[target] else {
      throw StoreError(
        .misuse, "\(entityName).\(relationship) points at \(target), which is neither saved nor inserted by this save",
        entity: entityName, key: relationship, value: .objectID(target))
    }
    return permanent
  }

  /// What the store would hold for `sent` if it changed nothing: the snapshot the context already knows.
  private func expectedSnapshot(sent: ObjectChange, stored: Snapshot) -> Snapshot {
    guard let entity = model.entity(named: stored.objectID.entityName) else { return stored }
    var expected = stored
    for (index, attribute) in entity.attributes.enumerated() where !attribute.isTransient {
      if index < sent.attributes.count { expected.attributes[index] = sent.attributes[index] }
    }
    for index in sent.toOne.indices where index < expected.toOne.count {
      expected.toOne[index] = sent.toOne[index].map { permanentIDs[$0] ?? $0 }
    }
    return expected
  }

  // MARK: Links and deletes

  private mutating func applyLinks(_ linkChanges: [LinkChange]) throws {
    for link in linkChanges {
      guard let entity = model.entity(named: link.entityName), let rel = entity.relationship(named: link.relationship),
        rel.isToMany
      else {
        throw StoreError(
          .misuse, "\(link.entityName).\(link.relationship) is not a to-many relationship of the model",
          entity: link.entityName, key: link.relationship)
      }
      // A to-many whose inverse is to-one is stored in the inverse's foreign key, carried by `toOne`.
      guard model.usesJoinTable(rel) else { continue }
      guard
        let source = try reference(
          link.source, entityName: link.entityName, relationship: link.relationship, destination: link.entityName),
        let target = try reference(
          link.target, entityName: link.entityName, relationship: link.relationship, destination: rel.destination),
        let sourceKey = source.primaryKey, let targetKey = target.primaryKey
      else { continue }
      let owner = model.joinTableOwner(of: entity.name, rel)
      let key = MemoryState.linkKey(owner)
      let (ownerSource, ownerTarget) = owner.isFlipped ? (targetKey, sourceKey) : (sourceKey, targetKey)
      if link.isInsertion {
        // A link to an object that is not stored (deleted meanwhile) is dropped, as a delete drops its links.
        guard state.snapshot(for: source, storeIdentifier: storeIdentifier) != nil,
          state.snapshot(for: target, storeIdentifier: storeIdentifier) != nil
        else { continue }
        state.links[key, default: LinkTable()].insert(source: ownerSource, target: ownerTarget)
      } else {
        state.links[key]?.remove(source: ownerSource, target: ownerTarget)
      }
    }
  }

  /// Records each changed list's keys in order; membership came with the rows and links.
  private mutating func applyOrderedLists(_ lists: [OrderedListChange]) throws {
    for list in lists {
      guard let rel = model.entity(named: list.entityName)?.relationship(named: list.relationship), rel.isOrdered
      else {
        throw StoreError(
          .misuse, "\(list.entityName).\(list.relationship) is not an ordered to-many relationship of the model",
          entity: list.entityName, key: list.relationship)
      }
      guard let source = (permanentIDs[list.source] ?? list.source).primaryKey else { continue }
      let keys = list.targets.compactMap { (permanentIDs[$0] ?? $0).primaryKey }
      state.orders[MemoryState.orderKey(rel), default: [:]][source] = keys.isEmpty ? nil : keys
    }
  }

  /// Removes deleted rows, clears to-one references to them and their links.
  /// - Returns: the deleted IDs, and the IDs of other objects whose references were cleared.
  private mutating func deleteObjects(_ deletions: [ObjectDeletion]) -> (deleted: Set<ObjectID>, cleared: [ObjectID]) {
    var deleted = Set<ObjectID>()
    var deletedKeys: [String: Set<Int64>] = [:]
    for deletion in deletions {
      let id = deletion.objectID
      guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey,
        state.rows[id.entityName]?.removeValue(forKey: pk) != nil
      else { continue }
      deleted.insert(id)
      deletedKeys[id.entityName, default: []].insert(pk)
    }
    guard !deleted.isEmpty else { return (deleted, []) }
    // A reference to a parent entity may name an object of any of its sub-entities.
    for (entityName, keys) in deletedKeys {
      var ancestor = model.inheritance.parent(of: entityName)
      while let parent = ancestor {
        deletedKeys[parent, default: []].formUnion(keys)
        ancestor = model.inheritance.parent(of: parent)
      }
    }
    var cleared: [ObjectID] = []
    for entity in model.entities {
      for (index, rel) in entity.toOneRelationships.enumerated() where deletedKeys[rel.destination] != nil {
        let dangling = (state.rows[entity.name] ?? [:]).filter { _, row in
          index < row.toOne.count && row.toOne[index].map(deleted.contains) == true
        }
        for (pk, row) in dangling.sorted(by: { $0.key < $1.key }) {
          var row = row
          row.toOne[index] = nil
          state.rows[entity.name]?[pk] = row
          if !cleared.contains(row.objectID) { cleared.append(row.objectID) }
        }
      }
      for rel in entity.toManyRelationships where model.usesJoinTable(rel) {
        let owner = model.joinTableOwner(of: entity.name, rel)
        guard !owner.isFlipped else { continue }
        let key = MemoryState.linkKey(owner)
        guard var table = state.links[key] else { continue }
        for pk in deletedKeys[entity.name] ?? [] { table.removeAll(source: pk) }
        for pk in deletedKeys[rel.destination] ?? [] { table.removeAll(target: pk) }
        state.links[key] = table.isEmpty ? nil : table
      }
    }
    return (deleted, cleared)
  }

  // MARK: Uniqueness

  /// Checks every uniqueness constraint of the written objects against the final state.
  private func checkUniqueness(_ writtenIDs: [ObjectID]) throws {
    var written: [String: [Int64]] = [:]
    var entityOrder: [String] = []
    for id in writtenIDs {
      guard let pk = id.primaryKey, state.rows[id.entityName]?[pk] != nil else { continue }
      if written[id.entityName] == nil { entityOrder.append(id.entityName) }
      written[id.entityName, default: []].append(pk)
    }
    var conflicts: [StoreError.Conflict] = []
    for entityName in entityOrder {
      guard let entity = model.entity(named: entityName), let changed = written[entityName] else { continue }
      let changedSet = Set(changed)
      for keys in entity.uniquenessConstraints {
        // A constraint holds among the objects of the entity that declares it and of its sub-entities.
        let scope = model.inheritance.entityAndDescendants(model.constraintScope(of: keys, in: entityName))
        var table = state.rows[entityName] ?? [:]
        for other in scope where other != entityName {
          table.merge(state.rows[other] ?? [:], uniquingKeysWith: { first, _ in first })
        }
        var owners: [[Value]: [Int64]] = [:]
        for (pk, row) in table {
          if let key = constraintKey(row, keys, entity) { owners[key, default: []].append(pk) }
        }
        var reportedPairs = Set<[Int64]>()
        for pk in changed {
          guard let row = table[pk], let key = constraintKey(row, keys, entity) else { continue }
          let others = (owners[key] ?? []).filter { $0 != pk }.sorted()
          guard let other = others.first(where: { !changedSet.contains($0) }) ?? others.first,
            let otherRow = table[other]
          else { continue }
          if changedSet.contains(other), !reportedPairs.insert([min(pk, other), max(pk, other)]).inserted { continue }
          conflicts.append(
            StoreError.Conflict(
              objectID: contextIDs[row.objectID] ?? row.objectID,
              conflictingObjectID: contextIDs[otherRow.objectID] ?? otherRow.objectID, entity: entityName, keys: keys,
              values: key, storedValues: constraintKey(otherRow, keys, entity) ?? []))
        }
      }
    }
    if let error = StoreError.uniquenessViolation(conflicts) { throw error }
  }

  /// The values of `keys` in `row`, or `nil` when one is nil (a nil never clashes, as in SQL UNIQUE).
  private func constraintKey(_ row: Snapshot, _ keys: [String], _ entity: EntityDescription) -> [Value]? {
    var values: [Value] = []
    for key in keys {
      let value: Value
      switch entity.property(named: key) {
      case .attribute(_, let index) where index < row.attributes.count: value = row.attributes[index]
      case .toOne(_, let index) where index < row.toOne.count: value = row.toOne[index].map(Value.objectID) ?? .null
      default: value = .null
      }
      if value.isNull { return nil }
      values.append(value)
    }
    return values
  }

}
