import CSQLite
import Foundation
import StrataCore

extension SQLiteStore {
  /// Applies a change set in one `BEGIN IMMEDIATE` transaction, all or nothing.
  ///
  /// ```swift
  /// let movie = ObjectID.makeTemporary(entityName: "Movie")
  /// let result = try store.save(ChangeSet(inserted: [
  ///   ObjectChange(objectID: movie, attributes: ["Heat", .int(1995)], toOne: [nil])
  /// ]))
  /// let saved = result.permanentIDs[movie]   // strata://…/Movie/p1
  /// ```
  ///
  /// Order: deletes (with their join-table rows, and to-one references without an inverse set to nil),
  /// updates, inserts (to-one targets that are temporary IDs of objects inserted in the same change
  /// set are patched in once those have primary keys), then many-to-many link changes. Uniqueness
  /// clashes that later writes of the same save resolve (two objects swapping a unique value, a
  /// deleted object's value reused) are not conflicts.
  ///
  /// - Throws: `.optimisticLockConflict` listing every object whose stored version differs from its
  ///   `expectedVersion` (or that was deleted meanwhile); otherwise `.constraintConflict` listing every
  ///   uniqueness clash with both objects; `.validation` for a missing required value or a value of the
  ///   wrong type; `.readOnly`; `.io`. After any error the file is exactly as before.
  public func save(_ changes: ChangeSet) throws -> SaveResult {
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    if changes.isEmpty { return SaveResult() }
    let schema = self.schema
    let identifier = self.identifier
    let (result, change) = try write { connection -> (SaveResult, StoreChange) in
      var operation = SaveOperation(connection: connection, schema: schema, storeIdentifier: identifier)
      try connection.execute("BEGIN IMMEDIATE")
      do {
        let outcome = try operation.apply(changes)
        try connection.execute("COMMIT")
        return outcome
      } catch {
        connection.rollback()
        throw error
      }
    }
    broadcaster.yield(change)
    return result
  }
}

/// The work of one save, inside its transaction.
private struct SaveOperation {
  let connection: SQLiteConnection
  let schema: SQLiteSchema
  let storeIdentifier: String

  var permanentIDs: [ObjectID: ObjectID] = [:]
  /// Rows inserted by this save, by entity and primary key: the temporary ID the context knows them by.
  var insertedRows: [String: [Int64: ObjectID]] = [:]
  var versions: [ObjectID: Int64] = [:]
  var lockConflicts: [StoreError.Conflict] = []
  var lockDetails: [String] = []
  /// To-one columns to fill once the temporary target has a primary key: (table, row, column, target).
  var patches: [(table: String, pk: Int64, column: String, target: ObjectID)] = []

  init(connection: SQLiteConnection, schema: SQLiteSchema, storeIdentifier: String) {
    self.connection = connection
    self.schema = schema
    self.storeIdentifier = storeIdentifier
  }

  mutating func apply(_ changes: ChangeSet) throws -> (SaveResult, StoreChange) {
    try check(changes)
    var deleted: [ObjectID] = []
    for deletion in changes.deleted {
      if try delete(deletion) { deleted.append(deletion.objectID) }
    }
    var pendingUpdates = try updateAll(changes.updated)
    var pendingInserts = try insertAll(changes.inserted)
    try retry(&pendingUpdates, &pendingInserts)
    if !lockConflicts.isEmpty {
      throw StoreError(
        .optimisticLockConflict,
        "optimistic locking failed: \(lockDetails.joined(separator: "; ")) changed in the store since they were read",
        entity: lockConflicts.first?.entity, conflicts: lockConflicts)
    }
    if !pendingUpdates.isEmpty || !pendingInserts.isEmpty {
      var conflicts: [StoreError.Conflict] = []
      for change in pendingUpdates + pendingInserts { conflicts += try clashes(of: change) }
      let described = conflicts.map(\.description).joined(separator: "; ")
      throw StoreError(
        .constraintConflict, "uniqueness constraint violated: \(described)", entity: conflicts.first?.entity,
        key: conflicts.first?.keys.joined(separator: "+"), value: conflicts.first?.values.first, conflicts: conflicts)
    }
    for patch in patches {
      guard let target = permanentIDs[patch.target]?.primaryKey else { continue }
      try connection.run(
        "UPDATE \(quote(patch.table)) SET \(quote(patch.column)) = ? WHERE \"_pk\" = ?",
        [.integer(target), .integer(patch.pk)])
    }
    for link in changes.linkChanges { try apply(link) }
    let result = SaveResult(permanentIDs: permanentIDs, versions: versions)
    let change = StoreChange(
      storeIdentifier: storeIdentifier, inserted: changes.inserted.compactMap { permanentIDs[$0.objectID] },
      updated: changes.updated.map(\.objectID), deleted: deleted)
    return (result, change)
  }

  // MARK: Checks

  /// Refuses malformed changes before anything is written.
  private func check(_ changes: ChangeSet) throws {
    let insertedIDs = Set(changes.inserted.map(\.objectID))
    for change in changes.inserted + changes.updated {
      let entity = try schema.table(change.objectID.entityName).entity
      guard change.attributes.count == entity.attributes.count, change.toOne.count == entity.toOneRelationships.count
      else {
        throw StoreError(
          .misuse,
          "the change of \(change.objectID) holds \(change.attributes.count) attribute values and \(change.toOne.count) "
            + "to-one targets; \(entity.name) has \(entity.attributes.count) and \(entity.toOneRelationships.count)",
          entity: entity.name)
      }
      for (rel, target) in zip(entity.toOneRelationships, change.toOne) {
        if let target, target.isTemporary, !insertedIDs.contains(target) {
          throw StoreError(
            .misuse, "\(entity.name).\(rel.name) of \(change.objectID) points at \(target), a temporary object that this save does not insert",
            entity: entity.name, key: rel.name, value: .objectID(target))
        }
      }
    }
    for change in changes.updated where change.objectID.isTemporary {
      throw StoreError(.misuse, "cannot update \(change.objectID): it is temporary (insert it instead)", entity: change.objectID.entityName)
    }
  }

  /// The stored form of a to-one target; `nil` when it is a temporary ID not inserted yet.
  private func encodeTarget(_ target: ObjectID?, _ rel: RelationshipDescription, of entity: String) throws -> SQLValue? {
    guard let target else { return .null }
    guard target.entityName == rel.destination else {
      throw StoreError(
        .validation, "\(entity).\(rel.name) must point at a \(rel.destination), not at \(target)",
        entity: entity, key: rel.name, value: .objectID(target))
    }
    if target.isTemporary { return permanentIDs[target]?.primaryKey.map(SQLValue.integer) }
    guard target.storeIdentifier == storeIdentifier, let pk = target.primaryKey else {
      throw StoreError(
        .validation, "\(entity).\(rel.name) points at \(target), which belongs to another store",
        entity: entity, key: rel.name, value: .objectID(target))
    }
    return .integer(pk)
  }

  /// The data-column values of a change (stored attributes, then to-one targets) and the to-one
  /// targets to patch in later.
  private func row(_ change: ObjectChange, _ table: SQLiteSchema.Table) throws -> ([SQLValue], [(String, ObjectID)]) {
    let entity = table.entity
    var values: [SQLValue] = []
    values.reserveCapacity(table.dataColumns.count)
    for index in table.storedAttributes {
      let attribute = entity.attributes[index]
      values.append(try SQLiteSchema.encode(change.attributes[index], as: attribute.type, entity: entity.name, key: attribute.name))
    }
    var later: [(String, ObjectID)] = []
    for (rel, target) in zip(entity.toOneRelationships, change.toOne) {
      if let encoded = try encodeTarget(target, rel, of: entity.name) {
        values.append(encoded)
      } else {
        values.append(.null)
        if let target { later.append((rel.name, target)) }
      }
    }
    return (values, later)
  }

  // MARK: Writes

  /// Deletes one object and the references to it that no context maintains; `false` when it was gone.
  private mutating func delete(_ deletion: ObjectDeletion) throws -> Bool {
    let id = deletion.objectID
    let table = try schema.table(id.entityName)
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return false }
    let changed: Int
    if let expected = deletion.expectedVersion {
      changed = try connection.run(table.deleteSQL(checked: true), [.integer(pk), .integer(expected)])
      if changed == 0, let stored = try storedVersion(table, pk) {
        recordLockConflict(id, table, expected: expected, stored: stored, change: nil)
        return false
      }
    } else {
      changed = try connection.run(table.deleteSQL(checked: false), [.integer(pk)])
    }
    guard changed > 0 else { return false }
    for join in schema.joinTables {
      if join.sourceEntity == table.name {
        try connection.run("DELETE FROM \(quote(join.name)) WHERE \"source\" = ?", [.integer(pk)])
      }
      if join.targetEntity == table.name {
        try connection.run("DELETE FROM \(quote(join.name)) WHERE \"target\" = ?", [.integer(pk)])
      }
    }
    for entity in schema.model.entities {
      for rel in entity.toOneRelationships where rel.destination == table.name && rel.inverse == nil {
        try connection.run(
          "UPDATE \(quote(entity.name)) SET \(quote(rel.name)) = NULL WHERE \(quote(rel.name)) = ?", [.integer(pk)])
      }
    }
    return true
  }

  /// Writes one update; `false` when a uniqueness constraint refused it (for now).
  private mutating func update(_ change: ObjectChange) throws -> Bool {
    let id = change.objectID
    let table = try schema.table(id.entityName)
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else {
      throw StoreError(.misuse, "cannot update \(id): it does not belong to this store", entity: id.entityName)
    }
    let (values, later) = try row(change, table)
    var bindings = values + [.integer(pk)]
    if let expected = change.expectedVersion { bindings.append(.integer(expected)) }
    let newVersion: SQLValue?
    do {
      newVersion = try connection.scalar(table.updateSQL(checked: change.expectedVersion != nil), bindings)
    } catch let error as SQLiteError where error.isUniqueViolation {
      return false
    }
    guard case .integer(let version) = newVersion else {
      let stored = try storedVersion(table, pk)
      recordLockConflict(id, table, expected: change.expectedVersion, stored: stored, change: change)
      return true
    }
    versions[id] = version
    for (column, target) in later { patches.append((table.name, pk, column, target)) }
    return true
  }

  /// Writes one insert; `false` when a uniqueness constraint refused it (for now).
  private mutating func insert(_ change: ObjectChange) throws -> Bool {
    let table = try schema.table(change.objectID.entityName)
    let (values, later) = try row(change, table)
    do {
      try connection.run(table.insertSQL, values)
    } catch let error as SQLiteError where error.isUniqueViolation {
      return false
    }
    let pk = connection.lastInsertRowID
    let permanent = ObjectID(entityName: table.name, storeIdentifier: storeIdentifier, primaryKey: pk)
    permanentIDs[change.objectID] = permanent
    insertedRows[table.name, default: [:]][pk] = change.objectID
    versions[permanent] = 1
    for (column, target) in later { patches.append((table.name, pk, column, target)) }
    return true
  }

  /// Retries writes refused by a uniqueness constraint until no more succeed, then rewrites the
  /// updates still refused (a cycle of objects swapping unique values) by deleting and reinserting
  /// their rows under the same primary keys. Whatever still fails is a real conflict.
  private mutating func retry(_ updates: inout [ObjectChange], _ inserts: inout [ObjectChange]) throws {
    try settle(&updates, &inserts)
    guard !updates.isEmpty else { return }
    var reinserts: [(ObjectChange, SQLiteSchema.Table, Int64, Int64)] = []
    for change in updates {
      let table = try schema.table(change.objectID.entityName)
      guard let pk = change.objectID.primaryKey, let stored = try storedVersion(table, pk) else { continue }
      if let expected = change.expectedVersion, expected != stored {
        recordLockConflict(change.objectID, table, expected: expected, stored: stored, change: change)
        continue
      }
      reinserts.append((change, table, pk, stored))
    }
    for (_, table, pk, _) in reinserts {
      try connection.run(table.deleteSQL(checked: false), [.integer(pk)])
    }
    var failed: [ObjectChange] = []
    for (change, table, pk, stored) in reinserts {
      let (values, later) = try row(change, table)
      let columns = (["_pk", "_version"] + table.dataColumns).map(quote).joined(separator: ", ")
      let placeholders = Array(repeating: "?", count: values.count + 2).joined(separator: ", ")
      do {
        try connection.run(
          "INSERT INTO \(quote(table.name)) (\(columns)) VALUES (\(placeholders))",
          [.integer(pk), .integer(stored + 1)] + values)
        versions[change.objectID] = stored + 1
        for (column, target) in later { patches.append((table.name, pk, column, target)) }
      } catch let error as SQLiteError where error.isUniqueViolation {
        failed.append(change)
      }
    }
    updates = failed
    var none: [ObjectChange] = []
    try settle(&none, &inserts)
  }

  private mutating func settle(_ updates: inout [ObjectChange], _ inserts: inout [ObjectChange]) throws {
    var progress = true
    while progress && (!updates.isEmpty || !inserts.isEmpty) {
      let before = updates.count + inserts.count
      updates = try updateAll(updates)
      inserts = try insertAll(inserts)
      progress = updates.count + inserts.count < before
    }
  }

  /// Writes the updates; returns those a uniqueness constraint refused.
  private mutating func updateAll(_ changes: [ObjectChange]) throws -> [ObjectChange] {
    var refused: [ObjectChange] = []
    for change in changes {
      if try !update(change) { refused.append(change) }
    }
    return refused
  }

  /// Writes the inserts; returns those a uniqueness constraint refused.
  private mutating func insertAll(_ changes: [ObjectChange]) throws -> [ObjectChange] {
    var refused: [ObjectChange] = []
    for change in changes {
      if try !insert(change) { refused.append(change) }
    }
    return refused
  }

  private func storedVersion(_ table: SQLiteSchema.Table, _ pk: Int64) throws -> Int64? {
    if case .integer(let v) = try connection.scalar("SELECT \"_version\" FROM \(quote(table.name)) WHERE \"_pk\" = ?", [.integer(pk)]) {
      return v
    }
    return nil
  }

  private mutating func recordLockConflict(
    _ id: ObjectID, _ table: SQLiteSchema.Table, expected: Int64?, stored: Int64?, change: ObjectChange?
  ) {
    let entity = table.entity
    let keys = change?.changedKeys ?? []
    var values: [Value] = []
    var storedValues: [Value] = []
    let current: Snapshot? = stored == nil ? nil : try? connection.query(
      "SELECT \(table.selectList(alias: "t0")) FROM \(quote(table.name)) AS t0 WHERE t0.\"_pk\" = ?",
      [.integer(id.primaryKey ?? 0)]
    ) { try $0.snapshot(table, storeIdentifier: storeIdentifier) }.first
    for key in keys {
      switch entity.property(named: key) {
      case .attribute(_, let index):
        values.append(change?.attributes[index] ?? .null)
        if let current { storedValues.append(current.attributes[index]) }
      case .toOne(_, let index):
        values.append(change?.toOne[index].map(Value.objectID) ?? .null)
        if let current { storedValues.append(current.toOne[index].map(Value.objectID) ?? .null) }
      default:
        continue
      }
    }
    lockConflicts.append(
      StoreError.Conflict(objectID: id, entity: entity.name, keys: keys, values: values, storedValues: storedValues))
    if let stored {
      let expectation = expected.map { ", expected \($0)" } ?? ""
      lockDetails.append("\(id) (stored version \(stored)\(expectation))")
    } else {
      lockDetails.append("\(id) (deleted)")
    }
  }

  // MARK: Conflicts

  /// Every uniqueness constraint `change` clashes on, with the object already holding the values.
  private func clashes(of change: ObjectChange) throws -> [StoreError.Conflict] {
    let table = try schema.table(change.objectID.entityName)
    let entity = table.entity
    var result: [StoreError.Conflict] = []
    constraints: for keys in entity.uniquenessConstraints {
      var bindings: [SQLValue] = []
      var values: [Value] = []
      for key in keys {
        switch entity.property(named: key) {
        case .attribute(let attribute, let index):
          let value = change.attributes[index]
          let encoded = try SQLiteSchema.encode(value, as: attribute.type, entity: entity.name, key: key)
          if encoded == .null { continue constraints }
          bindings.append(encoded)
          values.append(value)
        case .toOne(let rel, let index):
          guard let encoded = try encodeTarget(change.toOne[index], rel, of: entity.name), encoded != .null else {
            continue constraints
          }
          bindings.append(encoded)
          values.append(change.toOne[index].map(Value.objectID) ?? .null)
        default:
          continue constraints
        }
      }
      let conditions = keys.map { "\(quote($0)) = ?" }.joined(separator: " AND ")
      var sql = "SELECT \(table.selectList(alias: "t0")) FROM \(quote(table.name)) AS t0 WHERE \(conditions)"
      if let pk = change.objectID.primaryKey, !change.objectID.isTemporary {
        sql += " AND \"_pk\" != ?"
        bindings.append(.integer(pk))
      }
      let found = try connection.query(sql + " LIMIT 1", bindings) { try $0.snapshot(table, storeIdentifier: storeIdentifier) }
      guard let other = found.first else { continue }
      let otherID = other.objectID.primaryKey.flatMap { insertedRows[table.name]?[$0] } ?? other.objectID
      let storedValues: [Value] = keys.map { key in
        switch entity.property(named: key) {
        case .attribute(_, let index): other.attributes[index]
        case .toOne(_, let index): other.toOne[index].map(Value.objectID) ?? .null
        default: .null
        }
      }
      result.append(
        StoreError.Conflict(
          objectID: change.objectID, conflictingObjectID: otherID, entity: entity.name, keys: keys, values: values,
          storedValues: storedValues))
    }
    if result.isEmpty {
      result.append(StoreError.Conflict(objectID: change.objectID, entity: entity.name, keys: entity.uniquenessConstraints.first ?? []))
    }
    return result
  }

  // MARK: Links

  private mutating func apply(_ link: LinkChange) throws {
    let entity = try schema.table(link.entityName).entity
    guard let rel = entity.relationship(named: link.relationship), rel.isToMany else {
      throw StoreError(
        .misuse, "\(link.entityName).\(link.relationship) is not a to-many relationship", entity: link.entityName,
        key: link.relationship)
    }
    // A to-many whose inverse is to-one is stored in the inverse's column, carried by `toOne`.
    guard case .joinTable(let table, let ownerColumn, let targetColumn, _) = schema.toManyStorage(entity.name, rel) else {
      return
    }
    func key(_ id: ObjectID) -> Int64? {
      id.isTemporary ? permanentIDs[id]?.primaryKey : (id.storeIdentifier == storeIdentifier ? id.primaryKey : nil)
    }
    guard let source = key(link.source), let target = key(link.target) else { return }
    let (first, second) = ownerColumn == "source" ? (source, target) : (target, source)
    _ = targetColumn
    if link.isInsertion {
      try connection.run(
        "INSERT OR IGNORE INTO \(quote(table)) (\"source\", \"target\") VALUES (?, ?)", [.integer(first), .integer(second)])
    } else {
      try connection.run(
        "DELETE FROM \(quote(table)) WHERE \"source\" = ? AND \"target\" = ?", [.integer(first), .integer(second)])
    }
  }
}
