import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// Applies a change set in one transaction, all or nothing.
  ///
  /// ```swift
  /// let movie = ObjectID.makeTemporary(entityName: "Movie")
  /// let result = try store.save(ChangeSet(inserted: [
  ///   ObjectChange(objectID: movie, attributes: ["Heat", .int(1995)], toOne: [nil])
  /// ]))
  /// let saved = result.permanentIDs[movie]   // strata://…/Movie/p1
  /// ```
  ///
  /// Inserts get version 1 and a key from the table's identity sequence, in change-set order; updates
  /// increment `_version` only when it still holds the expected version (optimistic locking). Unique
  /// constraints and foreign keys are deferred to the end of the save, so uniqueness is judged on the
  /// state the whole save produces. Derived attributes are computed last, inside the transaction.
  ///
  /// - Throws: `.optimisticLockConflict` listing every stale update or delete; `.constraintConflict`
  ///   listing every uniqueness clash with both objects; `.validation`; `.misuse`; `.readOnly`; `.io`
  ///   when the connection was lost during the save (the message says whether it was committed, which
  ///   the store asks the server on a new connection) or when serialization failures or deadlocks
  ///   outlasted ``PostgresStoreConfiguration/retryLimit``.
  public func save(_ changes: ChangeSet) throws -> SaveResult {
    try PostgresStoreCore(store: self).save(changes)
  }

  /// Tells other stores on the schema that a transaction committed (delivered at commit).
  func notify(_ connection: PostgresConnection) throws {
    try connection.query("SELECT pg_notify($1, $2)", [.string(channel), .string(instanceID)])
  }
}

extension PostgresStoreCore {
  /// Throws `StoreError.storeNotEmpty(_:)` when one of `entities` holds an object. Each entity's table is
  /// locked against other writers first (SHARE ROW EXCLUSIVE conflicts with itself and with inserts), so two
  /// processes importing into an empty store at once cannot both find it empty.
  func checkEmpty(_ entities: [String], on connection: PostgresConnection) throws {
    for entity in entities {
      let query = try PostgresQueryCompiler.compile(
        FetchDescription(entityName: entity, resultType: .count), schema: schema, storeIdentifier: identifier)
      try connection.execute("LOCK TABLE \(query.table.qualified) IN SHARE ROW EXCLUSIVE MODE")
      let sql = Fragment("SELECT COUNT(*) FROM (SELECT t0.\"_pk\" ") + query.fromClause + Fragment(" LIMIT 1) AS page")
      if try connection.query(sql.numbered(), sql.bindings).int64(0, 0) > 0 { throw StoreError.storeNotEmpty(entity) }
    }
  }
}

/// The work of one save, inside its transaction.
struct SaveOperation {
  let connection: PostgresConnection
  let schema: PostgresSchema
  let storeIdentifier: String
  let changes: ChangeSet
  let history: SQLHistoryRecorder<PostgresHistoryTables>?
  var state: SQLSaveState

  mutating func writeObjects(excluding deleted: Set<ObjectID>) throws {
    for change in changes.updated where !deleted.contains(change.objectID) { try update(change) }
    try insertAll(changes.inserted)
  }

  // MARK: Checks

  func storedVersion(_ table: PostgresSchema.Table, _ id: ObjectID) throws -> Int64? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return nil }
    let rows = try connection.queryPrepared(table.selectVersionByKeySQL, [.int(pk)])
    return rows.count > 0 ? rows.int64(0, 0) : nil
  }

  /// One `SELECT … WHERE "_pk" = ANY($1)` per entity with more than one checked object: a round trip
  /// for the save, not one an object.
  func versionsReadAtOnce() throws -> [String: [Int64: Int64]]? {
    var read: [String: [Int64: Int64]] = [:]
    for (entity, keys) in versionCheckedKeys where keys.count > 1 {
      let rows = try connection.queryPrepared(
        try schema.table(entity).selectVersionsByKeysSQL, [.text("{" + keys.map(String.init).joined(separator: ",") + "}")])
      var versions: [Int64: Int64] = [:]
      versions.reserveCapacity(Int(rows.count))
      for row in 0..<rows.count { versions[rows.int64(row, 0)] = rows.int64(row, 1) }
      read[entity] = versions
    }
    return read
  }

  /// Checks the deferred constraints now, in a savepoint: a uniqueness clash becomes `.constraintConflict`
  /// listing every clash of the final state, a dangling reference `.validation`. (The save's transaction
  /// deferred them from its `BEGIN`: see `PostgresStoreCore.commit(_:)`.)
  func checkConstraints(recomputed: [Snapshot]) throws {
    do {
      try connection.savepoint("SET CONSTRAINTS ALL IMMEDIATE")
    } catch let error as PostgresError where error.isUniqueViolation {
      var written = changes.inserted + changes.updated
      for snapshot in recomputed {
        let known = state.permanentIDs.first { $0.value == snapshot.objectID && $0.key.isTemporary }?.key ?? snapshot.objectID
        written.append(ObjectChange(objectID: known, attributes: snapshot.attributes, toOne: snapshot.toOne))
      }
      throw try constraintConflict(
        written.filter { change in
          !(schema.model.entity(named: change.objectID.entityName)?.uniquenessConstraints.isEmpty ?? true)
        })
    } catch let error as PostgresError where error.sqlState == "23503" {
      throw StoreError(.validation, "a to-one relationship points at an object that is not stored (\(error.message))")
    }
  }

  // MARK: Rows

  /// The column values of `change`, and the to-one targets to fill in once they have keys.
  private func row(
    _ change: ObjectChange, _ table: PostgresSchema.Table, noting converted: inout Set<ObjectID>
  ) throws -> ([PGParameter], [(String, ObjectID)]) {
    let entity = table.entity
    var values: [PGParameter] = []
    values.reserveCapacity(table.dataColumns.count)
    for index in table.storedAttributes {
      let value = change.attributes[index]
      let attribute = entity.attributes[index]
      if !attribute.type.isCanonical(value) { converted.insert(change.objectID) }
      if value.isNull && !attribute.isOptional {
        throw StoreError(
          .validation, "\(entity.name).\(attribute.name) is required but the value is nil", entity: entity.name,
          key: attribute.name, value: .null)
      }
      values.append(try PostgresSchema.encode(value, as: attribute.type, entity: entity.name, key: attribute.name))
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

  private mutating func update(_ change: ObjectChange) throws {
    let table = try schema.table(change.objectID.entityName)
    guard let pk = change.objectID.primaryKey else { return }
    let (values, later) = try row(change, table, noting: &state.converted)
    var bindings = values + [.int(pk)]
    if let expected = change.expectedVersion { bindings.append(.int(expected)) }
    let rows = try connection.query(change.expectedVersion == nil ? table.updateSQL : table.checkedUpdateSQL, bindings)
    guard rows.count == 1 else {
      throw StoreError(
        .optimisticLockConflict, "optimistic locking failure: \(change.objectID) changed during the save",
        entity: table.name,
        conflicts: [StoreError.Conflict(objectID: change.objectID, entity: table.name, keys: change.changedKeys)])
    }
    state.versions[change.objectID] = rows.int64(0, 0)
    for (column, target) in later { state.patches.append((change, table.qualified, pk, column, target)) }
  }

  mutating func insert(_ change: ObjectChange) throws {
    let table = try schema.table(change.objectID.entityName)
    let (values, later) = try row(change, table, noting: &state.converted)
    let pk: Int64
    if let given = change.objectID.primaryKey {
      guard try storedSnapshot(table, change.objectID) == nil else {
        throw StoreError(.misuse, "cannot insert \(change.objectID): it is already saved", entity: table.name)
      }
      try connection.run(table.insertWithKeySQL, [.int(given), .int(1)] + values)
      pk = given
    } else {
      pk = try connection.query(table.insertSQL, values).int64(0, 0)
    }
    let permanent = ObjectID(entityName: table.name, storeIdentifier: storeIdentifier, primaryKey: pk)
    state.permanentIDs[change.objectID] = permanent
    state.versions[permanent] = 1
    for (column, target) in later { state.patches.append((change, table.qualified, pk, column, target)) }
  }

  // MARK: Ordered lists and references

  /// Writes the positions of one ordered list in one statement: O(n) in the list, each target found by
  /// key (an `UPDATE … FROM unnest(…)` over the targets' keys and positions).
  mutating func writePositions(_ list: OrderedListChange) throws {
    guard let (order, owner, rows) = try orderedListRows(list), !rows.isEmpty else { return }
    let keys = "{" + rows.map { String($0.0) }.joined(separator: ",") + "}"
    let positions = "{" + rows.map { String($0.1) }.joined(separator: ",") + "}"
    try connection.run(
      "UPDATE \(schema.qualify(order.table)) AS t SET \(quoteIdentifier(order.column)) = u.position "
        + "FROM unnest($2::bigint[], $3::bigint[]) AS u(key, position) "
        + "WHERE t.\(quoteIdentifier(order.keyColumn)) = $1 AND t.\(quoteIdentifier(order.targetColumn)) = u.key",
      [.int(owner), .text(keys), .text(positions)])
  }

  func clearColumn(
    _ column: String, of table: PostgresSchema.Table, pointingAt keys: [Int64]
  ) throws -> [(key: Int64, entity: String)] {
    let inHierarchy = schema.model.inheritance.isInHierarchy(table.name)
    let list = "{" + keys.map(String.init).joined(separator: ",") + "}"
    let returning = inHierarchy ? "\"_pk\", \(quoteIdentifier(PostgresSchema.entityColumn))" : "\"_pk\""
    return try connection.query(
      "UPDATE \(table.qualified) SET \(quoteIdentifier(column)) = NULL "
        + "WHERE \(quoteIdentifier(column)) = ANY($1::bigint[]) RETURNING \(returning)", [.text(list)]
    ) { ($0.int64(0), inHierarchy ? $0.text(1) : table.name) }
  }
}
