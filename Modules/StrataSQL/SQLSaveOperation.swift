import Foundation
import StrataStoreKit

/// The work of one save of an SQL backend, as far as it does not depend on the dialect: checking the
/// change set, encoding to-one targets, deleting rows, resolving link changes, building the save's
/// result and change announcement, and reporting uniqueness clashes. A backend's save operation conforms
/// and supplies its tables, its value encoding and the few statements that differ.
package protocol SQLSaveOperation {
  associatedtype Schema: SQLSchemaDescription
  associatedtype Connection: SQLConnection where Connection.Binding == Schema.Binding
  associatedtype HistoryTables: SQLHistoryTables where HistoryTables.Connection == Connection
  typealias Table = Schema.Table

  var schema: Schema { get }
  /// The connection the save runs on, inside its transaction.
  var connection: Connection { get }
  /// Where the save records its history; `nil` when it records none.
  var history: SQLHistoryRecorder<HistoryTables>? { get }
  var storeIdentifier: String { get }
  var changes: ChangeSet { get }
  /// What the save noted so far: permanent IDs, versions, conversions, patches, tombstones.
  var state: SQLSaveState { get set }

  /// The stored version of `id`, the rest of its row unread; `nil` when it is not stored, or (in a
  /// hierarchy) when its row is of an entity that is neither `table`'s nor one of its sub-entities.
  func storedVersion(_ table: Table, _ id: ObjectID) throws -> Int64?
  /// The stored versions of the objects the save checks (``versionCheckedKeys``), by entity name and key,
  /// read at once (a key not stored is left out); `nil`, the default, when the backend reads each with
  /// ``storedVersion(_:_:)`` (an embedded backend, where a cached statement a row costs less than building
  /// a batch; a client-server one pays a round trip a statement).
  func versionsReadAtOnce() throws -> [String: [Int64: Int64]]?
  /// The memberwise initializer of a backend's save operation.
  init(
    connection: Connection, schema: Schema, storeIdentifier: String, changes: ChangeSet,
    history: SQLHistoryRecorder<HistoryTables>?, state: SQLSaveState)
  /// The first row (in `_pk` order) `sql` selects (`table.selectList(alias: "t0")` first).
  func firstSnapshot(_ sql: String, _ bindings: [Schema.Binding], _ table: Table) throws -> Snapshot?
  /// Whether a write a uniqueness constraint refused but whose clash no stored row shows is still
  /// reported (on the entity's first constraint).
  static var reportsUnmatchedRefusals: Bool { get }
  /// Whether deleting an object leaves its join-table rows for the save to delete (else the database
  /// deletes them itself, `ON DELETE CASCADE`).
  static var deletesJoinRows: Bool { get }

  /// Writes the updated objects (but those in `deleted`) and the inserted ones, noting permanent IDs,
  /// versions and the references to patch; throws `.constraintConflict` for what a uniqueness constraint
  /// refuses.
  mutating func writeObjects(excluding deleted: Set<ObjectID>) throws
  /// Writes the positions of one ordered list (see ``orderedListRows(_:)``).
  mutating func writePositions(_ list: OrderedListChange) throws
  /// Sets `column` of `table` to NULL in every row pointing at one of `keys`; the key and entity of each
  /// row changed.
  func clearColumn(_ column: String, of table: Table, pointingAt keys: [Int64]) throws -> [(key: Int64, entity: String)]
  /// Runs once every write is done, before the results are built (checks deferred constraints).
  func checkConstraints(recomputed: [Snapshot]) throws
}

/// What a save of an SQL backend notes as it writes.
package struct SQLSaveState {
  /// The ID the context knows each inserted object by → its permanent ID.
  package var permanentIDs: [ObjectID: ObjectID] = [:]
  /// The new row version of each written object, by permanent ID; inserted objects may be left out
  /// (they are at version 1: a dictionary entry per new object cost a hash here and another in the context).
  package var versions: [ObjectID: Int64] = [:]
  /// Written objects (by the ID the context knows them by) whose values were converted on the way in.
  package var converted = Set<ObjectID>()
  /// To-one columns filled once their temporary target has a key: inserts run in change-set order (so
  /// primary keys follow it), and a reference to an object inserted later is patched in afterwards.
  package var patches: [SQLReferencePatch] = []
  /// The values history keeps of deleted objects, read before their rows go (only with history on).
  package var tombstones: [ObjectID: [String: Value]] = [:]

  package init(reservingFor changes: ChangeSet) {
    permanentIDs.reserveCapacity(changes.inserted.count)
    versions.reserveCapacity(changes.updated.count)
  }
}

/// A to-one column to fill once its temporary target has a key: the `table` (as statements name it)
/// and row `pk` of the object `change` wrote.
package typealias SQLReferencePatch = (change: ObjectChange, table: String, pk: Int64, column: String, target: ObjectID)

extension SQLSaveOperation {
  package var model: ObjectModel { schema.model }
  package var permanentIDs: [ObjectID: ObjectID] { state.permanentIDs }
  package var versions: [ObjectID: Int64] { state.versions }
  package var converted: Set<ObjectID> { state.converted }
  package var patches: [SQLReferencePatch] { state.patches }
  package var tombstones: [ObjectID: [String: Value]] { state.tombstones }
  /// Whether the save records history (and so keeps tombstones of deleted objects).
  package var recordsHistory: Bool { history != nil }

  package func checkConstraints(recomputed: [Snapshot]) throws {}

  /// Position of each inserted and updated object in the change set, for reporting conflicts in order
  /// (only built when a save has conflicts to report).
  package var position: [ObjectID: Int] {
    Dictionary(
      (changes.inserted + changes.updated).enumerated().map { ($1.objectID, $0) }, uniquingKeysWith: { a, _ in a })
  }

  // MARK: Checks

  /// Refuses malformed change sets before anything is written.
  ///
  /// A save's objects come in runs of one entity: what depends on the entity alone (insertable, its
  /// table, its shape) is looked up once per run, recognised by the IDs' shared scope, not per object.
  ///
  /// No set of the inserted IDs is built while they cannot repeat: within runs of one scope whose keys
  /// increase (as a context's temporary IDs do), and no scope coming back after another. The set is made
  /// from the first ID that breaks this on, or when a reference to a temporary ID needs it.
  package func checkChangeSet() throws {
    let model = self.model
    var inserted: Set<ObjectID>?
    var runStarts: [ObjectID] = []
    var previous: ObjectID?
    var lastChecked: ObjectID?
    for (position, change) in changes.inserted.enumerated() {
      let id = change.objectID
      if inserted == nil {
        let distinct: Bool
        if let previous, previous.hasSameEntityAndStore(as: id) {
          distinct = keyPrecedes(previous, id)
        } else {
          distinct = runStarts.count < 16 && !runStarts.contains { $0.hasSameEntityAndStore(as: id) }
          runStarts.append(id)
        }
        if !distinct {
          var set = Set<ObjectID>(minimumCapacity: changes.inserted.count)
          for earlier in changes.inserted[..<position] { set.insert(earlier.objectID) }
          inserted = set
        }
      }
      previous = id
      if inserted?.insert(id).inserted == false {
        throw StoreError(.misuse, "\(id) is inserted twice in one change set", entity: id.entityName)
      }
      // IDs of one scope share entity and store, so the checks below give the same answer.
      if let lastChecked, lastChecked.hasSameEntityAndStore(as: id) { continue }
      try model.requireInsertable(id.entityName)
      if !id.isTemporary, id.storeIdentifier != storeIdentifier {
        throw StoreError(.misuse, "cannot insert \(id): it belongs to another store", entity: id.entityName)
      }
      lastChecked = id
    }
    func isInserted(_ id: ObjectID) -> Bool {
      if inserted == nil { inserted = Set(changes.inserted.map(\.objectID)) }
      return inserted?.contains(id) == true
    }
    // The entity of the current run, and what each change is checked against (locals, so that no
    // change copies the entity's description).
    var lastID: ObjectID?
    var entity: EntityDescription?
    var entityName = ""
    var attributeCount = 0
    var toOneRelationships: [RelationshipDescription] = []
    for change in [changes.inserted, changes.updated].joined() {
      if lastID.map({ !$0.hasSameEntityAndStore(as: change.objectID) }) ?? true {
        let name = change.objectID.entityName
        if entity == nil || entityName != name {
          let found = try schema.table(name).entity
          entity = found
          entityName = found.name
          attributeCount = found.attributes.count
          toOneRelationships = found.toOneRelationships
        }
        lastID = change.objectID
      }
      if change.attributes.count != attributeCount || change.toOne.count != toOneRelationships.count {
        try change.requireShape(attributeCount: attributeCount, toOneCount: toOneRelationships.count) {
          entity ?? EntityDescription(name: entityName)
        }
      }
      guard !change.toOne.isEmpty else { continue }
      for (rel, target) in zip(toOneRelationships, change.toOne) {
        try checkReference(target, entityName, rel.name, isInserted)
      }
    }
    for change in changes.updated where change.objectID.isTemporary || change.objectID.storeIdentifier != storeIdentifier {
      throw StoreError(
        .misuse, "cannot update \(change.objectID): it is not a saved object of this store", entity: change.objectID.entityName)
    }
    for link in changes.linkChanges {
      try checkReference(link.source, link.entityName, link.relationship, isInserted)
      try checkReference(link.target, link.entityName, link.relationship, isInserted)
    }
  }

  private func checkReference(
    _ target: ObjectID?, _ entity: String, _ key: String, _ isInserted: (ObjectID) -> Bool
  ) throws {
    guard let target, target.isTemporary, !isInserted(target) else { return }
    throw StoreError(
      .misuse, "\(entity).\(key) points at \(target), which is neither saved nor inserted by this save",
      entity: entity, key: key, value: .objectID(target))
  }

  /// Throws `.optimisticLockConflict` for every update or delete whose object changed or vanished: each
  /// object's stored version is read alone, its whole row only to describe a conflict.
  package func checkVersions() throws {
    let schema = self.schema
    let read = try versionsReadAtOnce() ?? [:]
    let storeIdentifier = self.storeIdentifier
    try OptimisticLocking.check(
      changes, model: model,
      storedVersion: { id in
        if id.storeIdentifier == storeIdentifier, let versions = read[id.entityName], let pk = id.primaryKey {
          return versions[pk]
        }
        return try storedVersion(try schema.table(id.entityName), id)
      },
      stored: { id in try storedSnapshot(try schema.table(id.entityName), id) })
  }

  package func versionsReadAtOnce() throws -> [String: [Int64: Int64]]? { nil }

  /// The keys of this store's objects whose versions the save checks (the updated ones, and the deleted
  /// ones with an expected version), by entity name.
  package var versionCheckedKeys: [String: [Int64]] {
    var keys: [String: [Int64]] = [:]
    let checked = changes.updated.lazy.map(\.objectID) + changes.deleted.lazy.filter { $0.expectedVersion != nil }.map(\.objectID)
    for id in checked where id.storeIdentifier == storeIdentifier {
      if let pk = id.primaryKey { keys[id.entityName, default: []].append(pk) }
    }
    return keys
  }

  // MARK: Rows

  /// The stored form of a to-one target; `nil` when it is a temporary ID not inserted yet.
  package func encodeTarget(_ target: ObjectID?, _ rel: RelationshipDescription, of entity: String) throws -> Schema.Binding? {
    guard let target else { return Schema.encode(.null) }
    guard target.entityName == rel.destination || model.isEntity(target.entityName, kindOf: rel.destination) else {
      throw StoreError(
        .validation, "\(entity).\(rel.name) must point at a \(rel.destination), not at \(target)",
        entity: entity, key: rel.name, value: .objectID(target))
    }
    if let permanent = permanentIDs[target] { return permanent.primaryKey.map { Schema.encode(.int($0)) } }
    if target.isTemporary { return nil }
    guard target.storeIdentifier == storeIdentifier, let pk = target.primaryKey else {
      throw StoreError(
        .validation, "\(entity).\(rel.name) points at \(target), which belongs to another store",
        entity: entity, key: rel.name, value: .objectID(target))
    }
    return Schema.encode(.int(pk))
  }

  /// Deletes the rows of deleted objects (keeping tombstones when history is recorded); returns the
  /// primary keys deleted, by entity. References to them are the backend's to clear.
  package mutating func deleteRows() throws -> [String: [Int64]] {
    var deleted: [String: [Int64]] = [:]
    for deletion in changes.deleted {
      let id = deletion.objectID
      let table = try schema.table(id.entityName)
      guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { continue }
      if recordsHistory, HistoryLog.recordsTombstone(table.name, model: model), let stored = try storedSnapshot(table, id) {
        state.tombstones[id] = HistoryLog.tombstone(of: stored, model: model)
      }
      if try connection.run(table.deleteSQL, [Schema.encode(.int(pk))]) > 0 {
        deleted[table.name, default: []].append(pk)
      }
    }
    return deleted
  }

  // MARK: Links

  /// The join-table row a link change adds or removes: `nil` when the relationship is stored in a
  /// foreign key (carried by `toOne`) or an end is not stored.
  ///
  /// - Throws: `.misuse` when the relationship is not a to-many of the model, `.validation` when an end
  ///   is of the wrong entity.
  package func linkRow(_ link: LinkChange) throws -> SQLLinkRow? {
    let entity = try schema.table(link.entityName).entity
    guard let rel = entity.relationship(named: link.relationship), rel.isToMany else {
      throw StoreError(
        .misuse, "\(link.entityName).\(link.relationship) is not a to-many relationship of the model",
        entity: link.entityName, key: link.relationship)
    }
    // A to-many whose inverse is to-one is stored in the inverse's column, carried by `toOne`.
    guard case .joinTable(let table, let ownerColumn, _, let destination) = schema.toManyStorage(entity.name, rel) else {
      return nil
    }
    for (id, expected) in [(link.source, entity.name), (link.target, destination)]
    where id.entityName != expected && !model.isEntity(id.entityName, kindOf: expected) {
      throw StoreError(
        .validation, "\(entity.name).\(rel.name) links a \(entity.name) to a \(destination), not \(id)",
        entity: entity.name, key: rel.name, value: .objectID(id))
    }
    func key(_ id: ObjectID) -> Int64? {
      permanentIDs[id]?.primaryKey ?? (id.storeIdentifier == storeIdentifier ? id.primaryKey : nil)
    }
    guard let source = key(link.source), let target = key(link.target) else { return nil }
    let (first, second) = ownerColumn == "source" ? (source, target) : (target, source)
    return SQLLinkRow(
      table: table, source: first, target: second, sourceEntity: entity.name, destination: destination,
      sourceKey: source, destinationKey: target)
  }
}

extension SQLSaveOperation {
  /// The position writes of one ordered list: its position column, the owner's key, and each target's
  /// key with its position (targets not stored, such as ones the save deletes, are left out). The store
  /// runs `UPDATE table SET column = position WHERE keyColumn = owner AND <target key> = target`.
  package func orderedListRows(_ list: OrderedListChange) throws -> (SQLOrderColumn, owner: Int64, [(Int64, Int64)])? {
    let entity = try schema.table(list.entityName).entity
    guard let rel = entity.relationship(named: list.relationship), rel.isToMany,
      let order = SQLLayout.orderColumn(model, entity.name, rel)
    else {
      throw StoreError(
        .misuse, "\(list.entityName).\(list.relationship) is not an ordered to-many relationship of the model",
        entity: list.entityName, key: list.relationship)
    }
    func key(_ id: ObjectID) -> Int64? {
      permanentIDs[id]?.primaryKey ?? (id.storeIdentifier == storeIdentifier ? id.primaryKey : nil)
    }
    guard let owner = key(list.source) else { return nil }
    var rows: [(Int64, Int64)] = []
    rows.reserveCapacity(list.targets.count)
    for (position, target) in list.targets.enumerated() {
      if let targetKey = key(target) { rows.append((targetKey, Int64(position))) }
    }
    return (order, owner, rows)
  }
}

/// Whether `a`'s key comes before `b`'s, both permanent or both temporary.
private func keyPrecedes(_ a: ObjectID, _ b: ObjectID) -> Bool {
  switch (a.key, b.key) {
  case (.permanent(let x), .permanent(let y)): x < y
  case (.temporary(let x), .temporary(let y)): x < y
  default: false
  }
}

/// One join-table row of a link change (see ``SQLSaveOperation/linkRow(_:)``).
package struct SQLLinkRow {
  /// The join table.
  package let table: String
  /// The row's `source` and `target` columns.
  package let source: Int64
  package let target: Int64
  /// The entity owning the relationship, and the destination entity.
  package let sourceEntity: String
  package let destination: String
  /// The primary keys of the link's source object (of `sourceEntity`) and target object (of `destination`).
  package let sourceKey: Int64
  package let destinationKey: Int64
}
