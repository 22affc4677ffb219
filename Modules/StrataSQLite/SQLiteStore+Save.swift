import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteStore {
  /// Applies a change set in one `BEGIN IMMEDIATE` transaction, all or nothing (in a savepoint of the
  /// migration's transaction, in the store a migration stage is handed).
  ///
  /// ```swift
  /// let movie = ObjectID.makeTemporary(entityName: "Movie")
  /// let result = try store.save(ChangeSet(inserted: [
  ///   ObjectChange(objectID: movie, attributes: ["Heat", .int(1995)], toOne: [nil])
  /// ]))
  /// let saved = result.permanentIDs[movie]   // strata://…/Movie/p1
  /// ```
  ///
  /// Inserts get version 1 and a primary key from SQLite, in change-set order (a permanent ID given for an
  /// insert keeps its key); updates increment `_version`. A to-one target that is a temporary ID of an
  /// object inserted by the same save is resolved (written once that object has its key). Deleting an object also sets every
  /// to-one reference to it to nil and removes its join-table rows. Uniqueness is judged on the state the
  /// whole save produces, so objects may swap unique values or reuse the value of a deleted object.
  /// Derived attributes are computed last, inside the transaction, of the written objects and of those
  /// whose derivations read them (``DerivedRecomputation``).
  ///
  /// - Throws: `.optimisticLockConflict` listing every update or delete whose `expectedVersion` differs
  ///   from the stored version (or whose object is gone); `.constraintConflict` listing every uniqueness
  ///   clash with both objects; `.validation` for a missing required value, a value of the wrong type or a
  ///   reference to the wrong entity; `.misuse` for a malformed change set or a closed store; `.readOnly`;
  ///   `.io`. After any error the file is exactly as before.
  public func save(_ changes: ChangeSet) throws -> SaveResult {
    try SQLiteStoreCore(store: self).save(changes)
  }
}

extension SQLiteStoreCore {
  /// Throws `StoreError.storeNotEmpty(_:)` when one of `entities` holds an object, read on the writing
  /// connection inside its transaction (which holds SQLite's write lock: no other process can insert).
  func checkEmpty(_ entities: [String], on connection: SQLiteConnection) throws {
    for entity in entities {
      let statement = try store.selectStatement(for: FetchDescription(entityName: entity, fetchLimit: 1, resultType: .count))
      if case .integer(let count) = try connection.scalar(statement.sql, statement.bindings), count > 0 {
        throw StoreError.storeNotEmpty(entity)
      }
    }
  }
}

/// The work of one save, inside its transaction.
struct SaveOperation {
  let connection: SQLiteConnection
  let schema: SQLiteSchema
  let storeIdentifier: String
  let changes: ChangeSet
  let history: SQLHistoryRecorder<SQLiteHistoryTables>?
  var state: SQLSaveState

  /// Writes updates and inserts, retrying those a uniqueness constraint refused (see ``retry(_:_:)``).
  mutating func writeObjects(excluding deleted: Set<ObjectID>) throws {
    var pendingUpdates = try updateAll(changes.updated.filter { !deleted.contains($0.objectID) })
    var pendingInserts = try insertAll(changes.inserted)
    try retry(&pendingUpdates, &pendingInserts)
    if !pendingUpdates.isEmpty || !pendingInserts.isEmpty {
      throw try constraintConflict(pendingInserts + pendingUpdates)
    }
  }

  // MARK: Checks

  func storedVersion(_ table: SQLiteSchema.Table, _ id: ObjectID) throws -> Int64? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return nil }
    return try connection.withStatement(table.selectVersionByKeySQL, [.integer(pk)]) { try $0.step() ? $0.int64(0) : nil }
  }

  // MARK: Rows

  /// The data-column values of a change (stored attributes, then to-one targets) and the to-one
  /// targets to fill in later. An object whose values had to be converted to their attribute's type is
  /// added to `converted` (its stored state differs from what the context sent).
  private mutating func row(
    _ change: ObjectChange, _ table: SQLiteSchema.Table
  ) throws -> (
    [SQLValue], [(String, ObjectID)]
  ) {
    var values: [SQLValue] = []
    values.reserveCapacity(table.dataColumns.count)
    let later = try appendRow(change, table, to: &values)
    return (values, later)
  }

  /// ``row(_:_:)`` appended to `values` (a statement of several rows binds them all from one array);
  /// returns the to-one targets to fill in later.
  ///
  /// Mutating, as it notes conversions in `state`: a non-mutating method given `&state.converted` had the
  /// whole operation copied for every row, to keep the two accesses apart.
  private mutating func appendRow(
    _ change: ObjectChange, _ table: SQLiteSchema.Table, to values: inout [SQLValue]
  ) throws -> [(String, ObjectID)] {
    // The entity's names are read only for an error: copying its description per row cost more than
    // encoding the row.
    for (index, type) in zip(table.storedAttributes, table.storedTypes) {
      let value = change.attributes[index]
      if !type.isCanonical(value) { state.converted.insert(change.objectID) }
      values.append(
        try SQLiteSchema.encode(value, as: type, entity: table.entity.name, key: table.entity.attributes[index].name))
    }
    var later: [(String, ObjectID)] = []
    guard !change.toOne.isEmpty else { return later }
    let entity = table.entity
    for (rel, target) in zip(entity.toOneRelationships, change.toOne) {
      if let encoded = try encodeTarget(target, rel, of: entity.name) {
        values.append(encoded)
      } else {
        values.append(.null)
        if let target { later.append((rel.name, target)) }
      }
    }
    return later
  }

  /// Writes one update; `false` when a uniqueness constraint refused it (for now).
  private mutating func update(_ change: ObjectChange) throws -> Bool {
    let table = try schema.table(change.objectID.entityName)
    guard let pk = change.objectID.primaryKey else { return true }
    let (values, later) = try row(change, table)
    var bindings = values + [.integer(pk)]
    if let expected = change.expectedVersion { bindings.append(.integer(expected)) }
    let newVersion: SQLValue?
    do {
      newVersion = try connection.scalar(change.expectedVersion == nil ? table.updateSQL : table.checkedUpdateSQL, bindings)
    } catch let error as SQLiteError where error.isUniqueViolation {
      return false
    }
    guard case .integer(let version) = newVersion else {
      // checkVersions() ran under the same write lock, so the row is there at the expected version.
      throw StoreError(
        .optimisticLockConflict, "optimistic locking failure: \(change.objectID) changed during the save",
        entity: table.name,
        conflicts: [StoreError.Conflict(objectID: change.objectID, entity: table.name, keys: change.changedKeys)])
    }
    state.versions[change.objectID] = version
    for (column, target) in later { state.patches.append((change, table.writtenSQLName, pk, column, target)) }
    return true
  }

  /// Writes one insert; `false` when a uniqueness constraint refused it (for now). `statement` is the
  /// table's prepared `insertSQL`, reused across the rows of one entity.
  /// `template` is an ID of the table's entity in this store, whose key is replaced for the new row.
  private mutating func insert(
    _ change: ObjectChange, _ table: SQLiteSchema.Table, _ statement: Statement, _ template: ObjectID
  ) throws -> Bool {
    let (values, later) = try row(change, table)
    do {
      if let pk = change.objectID.primaryKey {
        guard try storedSnapshot(table, change.objectID) == nil else {
          throw StoreError(.misuse, "cannot insert \(change.objectID): it is already saved", entity: table.name)
        }
        try connection.run(table.insertWithKeySQL, [.integer(pk), .integer(1)] + values)
      } else {
        statement.reset()
        try statement.bind(values)
        while try statement.step() {}
      }
    } catch let error as SQLiteError where error.isUniqueViolation {
      return false
    }
    let pk = connection.lastInsertRowID
    let permanent = template.withPrimaryKey(pk)
    state.permanentIDs[change.objectID] = permanent
    for (column, target) in later { state.patches.append((change, table.writtenSQLName, pk, column, target)) }
    return true
  }

  /// Writes new objects (`rows.count` is the table's ``SQLiteSchema/Table/rowsPerInsert``) with one
  /// statement, `sql`. `false` when nothing was written, for the rows to be written one by one: one has a
  /// key of its own, or a constraint refused the statement (SQLite undoes a refused statement whole, and
  /// row by row tells which object it refused and whether it may be retried).
  ///
  /// A table's keys are AUTOINCREMENT, each one above any the table ever held, so the statement's rows
  /// have consecutive keys ending at the last inserted row's.
  private mutating func insertRows(
    _ rows: ArraySlice<ObjectChange>, _ table: SQLiteSchema.Table, _ sql: String, _ template: ObjectID
  ) throws -> Bool {
    guard rows.allSatisfy({ $0.objectID.primaryKey == nil }) else { return false }
    var bindings: [SQLValue] = []
    bindings.reserveCapacity(rows.count * table.dataColumns.count)
    var later: [(offset: Int, column: String, target: ObjectID)] = []
    for (offset, change) in rows.enumerated() {
      for (column, target) in try appendRow(change, table, to: &bindings) { later.append((offset, column, target)) }
    }
    do {
      try connection.runCopyingTextOnce(sql, bindings)
    } catch let error as SQLiteError where error.code == SQLITE_CONSTRAINT {
      return false
    }
    let first = connection.lastInsertRowID - Int64(rows.count - 1)
    for (offset, change) in rows.enumerated() {
      let permanent = template.withPrimaryKey(first + Int64(offset))
      state.permanentIDs[change.objectID] = permanent
    }
    for (offset, column, target) in later {
      state.patches.append((rows[rows.startIndex + offset], table.writtenSQLName, first + Int64(offset), column, target))
    }
    return true
  }

  /// Retries writes refused by a uniqueness constraint until no more succeed, then rewrites the updates
  /// still refused (objects swapping unique values in a cycle) by deleting and reinserting their rows
  /// under the same keys. Whatever still fails clashes in the final state.
  private mutating func retry(_ updates: inout [ObjectChange], _ inserts: inout [ObjectChange]) throws {
    try settle(&updates, &inserts)
    guard !updates.isEmpty else { return }
    var rewrites: [(ObjectChange, SQLiteSchema.Table, Int64, Int64)] = []
    for change in updates {
      let table = try schema.table(change.objectID.entityName)
      guard let pk = change.objectID.primaryKey, let stored = try storedSnapshot(table, change.objectID) else { continue }
      rewrites.append((change, table, pk, stored.version))
    }
    for (_, table, pk, _) in rewrites {
      try connection.run(table.deleteSQL, [.integer(pk)])
    }
    var failed: [ObjectChange] = []
    for (change, table, pk, version) in rewrites {
      let (values, later) = try row(change, table)
      do {
        try connection.run(table.insertWithKeySQL, [.integer(pk), .integer(version + 1)] + values)
        state.versions[change.objectID] = version + 1
        for (column, target) in later { state.patches.append((change, table.writtenSQLName, pk, column, target)) }
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
    var start = changes.startIndex
    while start < changes.endIndex {
      let entityName = changes[start].objectID.entityName
      var end = start + 1
      while end < changes.endIndex,
        changes[end].objectID.hasSameEntityAndStore(as: changes[start].objectID)
          || changes[end].objectID.entityName == entityName
      {
        end += 1
      }
      let table = try schema.table(entityName)
      let template = ObjectID(entityName: entityName, storeIdentifier: storeIdentifier, primaryKey: 0)
      try connection.withStatement(table.insertSQL) { statement in
        var next = start
        while next < end {
          // Runs of new objects go in statements of several rows: each INSERT of a table with
          // AUTOINCREMENT reads and writes `sqlite_sequence`, which cost as much as writing the row.
          let chunkEnd = next + table.rowsPerInsert
          if let sql = table.insertRowsSQL, chunkEnd <= end,
            try insertRows(changes[next..<chunkEnd], table, sql, template)
          {
            next = chunkEnd
            continue
          }
          // Rows one by one: the last few, or a chunk that needs them (a key of its own, a constraint).
          for change in changes[next..<min(max(chunkEnd, next + 1), end)] where try !insert(change, table, statement, template) {
            refused.append(change)
          }
          next = min(max(chunkEnd, next + 1), end)
        }
      }
      start = end
    }
    return refused
  }

  // MARK: Ordered lists and references

  /// Writes the positions of one ordered list: O(n) in the list, one indexed update per target.
  mutating func writePositions(_ list: OrderedListChange) throws {
    guard let (order, owner, rows) = try orderedListRows(list) else { return }
    let sql =
      "UPDATE \(quote(order.table)) SET \(quote(order.column)) = ? "
      + "WHERE \(quote(order.keyColumn)) = ? AND \(quote(order.targetColumn)) = ?"
    for (target, position) in rows {
      try connection.run(sql, [.integer(position), .integer(owner), .integer(target)])
    }
  }

  func clearColumn(
    _ column: String, of table: SQLiteSchema.Table, pointingAt keys: [Int64]
  ) throws -> [(key: Int64, entity: String)] {
    let returning = table.isInHierarchy ? "\"_pk\", \(quote(SQLiteSchema.entityColumn))" : "\"_pk\""
    let sql = "UPDATE \(quote(table.storageName)) SET \(quote(column)) = NULL WHERE \(quote(column)) = ? RETURNING \(returning)"
    var rows: [(key: Int64, entity: String)] = []
    for pk in keys {
      rows += try connection.query(sql, [.integer(pk)]) { ($0.int64(0), table.isInHierarchy ? $0.text(1) : table.name) }
    }
    return rows
  }
}
