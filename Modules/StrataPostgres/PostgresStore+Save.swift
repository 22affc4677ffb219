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
    try checkOpen()
    if changes.isEmpty { return SaveResult() }
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    let schema = self.schema
    let identifier = self.identifier
    let history = historyRecorder
    let bound = isBoundToMigration
    let (result, change) = try write { connection -> (SaveResult, StoreChange) in
      try checkEmpty(changes.requiredEmptyEntities, on: connection)
      var operation = SaveOperation(
        connection: connection, schema: schema, storeIdentifier: identifier, changes: changes, history: history)
      let outcome = try operation.apply()
      if !bound { try notify(connection) }
      return outcome
    }
    broadcaster.yield(change)
    return result
  }

  /// Tells other stores on the schema that a transaction committed (delivered at commit).
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

  func notify(_ connection: PostgresConnection) throws {
    try connection.query("SELECT pg_notify($1, $2)", [.string(channel), .string(instanceID)])
  }
}

/// The work of one save, inside its transaction.
struct SaveOperation {
  let connection: PostgresConnection
  let schema: PostgresSchema
  let storeIdentifier: String
  let changes: ChangeSet
  /// Where the save records its history; `nil` when it records none.
  let history: PostgresHistory.Recorder?

  var permanentIDs: [ObjectID: ObjectID] = [:]
  var versions: [ObjectID: Int64] = [:]
  var converted = Set<ObjectID>()
  var patches: [(change: ObjectChange, table: PostgresSchema.Table, pk: Int64, column: String, target: ObjectID)] = []
  var tombstones: [ObjectID: [String: Value]] = [:]

  init(
    connection: PostgresConnection, schema: PostgresSchema, storeIdentifier: String, changes: ChangeSet,
    history: PostgresHistory.Recorder?
  ) {
    self.connection = connection
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.changes = changes
    self.history = history
  }

  mutating func apply() throws -> (SaveResult, StoreChange) {
    try connection.execute("SET CONSTRAINTS ALL DEFERRED")
    try checkChangeSet()
    try checkVersions()
    var derived = DerivedRecomputation(model: schema.model, changes: changes)
    try derived.noteRelatedObjects(before: transactionSource)
    let deleted = try deleteRows()
    let deletedIDs = Set(
      deleted.flatMap { entity, keys in
        keys.map { ObjectID(entityName: entity, storeIdentifier: storeIdentifier, primaryKey: $0) }
      })
    for change in changes.updated where !deletedIDs.contains(change.objectID) { try update(change) }
    try insertAll(changes.inserted)
    try applyPatches()
    for link in changes.linkChanges { try apply(link) }
    for list in changes.orderedLists { try apply(list) }
    let cleared = try clearReferences(to: deleted)
    let recomputed = try writeDerivedAttributes(&derived)
    try checkConstraints(recomputed: recomputed)
    var (result, change) = try results(deleted: deletedIDs, cleared: cleared, recomputed: recomputed)
    derived.report(recomputed, into: &result, change: &change)
    if let history {
      let token = try history.record(
        HistoryLog.changes(
          of: change, changeSet: changes, tombstones: tombstones, recomputed: recomputed, model: schema.model),
        on: connection, schema: schema, storeIdentifier: storeIdentifier, author: changes.author,
        contextName: changes.contextName)
      result.historyToken = token
      change.historyToken = token
    }
    return (result, change)
  }

  // MARK: Checks

  func storedVersion(_ table: PostgresSchema.Table, _ id: ObjectID) throws -> Int64? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return nil }
    let rows = try connection.queryPrepared(table.selectVersionByKeySQL, [.int(pk)])
    return rows.count > 0 ? rows.int64(0, 0) : nil
  }

  /// Checks the deferred constraints now, in a savepoint: a uniqueness clash becomes `.constraintConflict`
  /// listing every clash of the final state, a dangling reference `.validation`.
  private func checkConstraints(recomputed: [Snapshot]) throws {
    do {
      try connection.savepoint { try connection.execute("SET CONSTRAINTS ALL IMMEDIATE") }
    } catch let error as PostgresError where error.isUniqueViolation {
      var written = changes.inserted + changes.updated
      for snapshot in recomputed {
        let known = permanentIDs.first { $0.value == snapshot.objectID && $0.key.isTemporary }?.key ?? snapshot.objectID
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
    let (values, later) = try row(change, table, noting: &converted)
    var bindings = values + [.int(pk)]
    if let expected = change.expectedVersion { bindings.append(.int(expected)) }
    let rows = try connection.query(change.expectedVersion == nil ? table.updateSQL : table.checkedUpdateSQL, bindings)
    guard rows.count == 1 else {
      throw StoreError(
        .optimisticLockConflict, "optimistic locking failure: \(change.objectID) changed during the save",
        entity: table.name,
        conflicts: [StoreError.Conflict(objectID: change.objectID, entity: table.name, keys: change.changedKeys)])
    }
    versions[change.objectID] = rows.int64(0, 0)
    for (column, target) in later { patches.append((change, table, pk, column, target)) }
  }

  mutating func insert(_ change: ObjectChange) throws {
    let table = try schema.table(change.objectID.entityName)
    let (values, later) = try row(change, table, noting: &converted)
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
    permanentIDs[change.objectID] = permanent
    versions[permanent] = 1
    for (column, target) in later { patches.append((change, table, pk, column, target)) }
  }

  private mutating func applyPatches() throws {
    for patch in patches {
      guard let target = permanentIDs[patch.target]?.primaryKey else { continue }
      try connection.run(
        "UPDATE \(patch.table.qualified) SET \(quoteIdentifier(patch.column)) = $1 WHERE \"_pk\" = $2",
        [.int(target), .int(patch.pk)])
    }
  }

  // MARK: Links and deletes

  private mutating func apply(_ link: LinkChange) throws {
    guard let row = try linkRow(link) else { return }
    if link.isInsertion {
      try connection.run(
        "INSERT INTO \(schema.qualify(row.table)) (\"source\", \"target\") SELECT $1, $2 "
          + "WHERE EXISTS (SELECT 1 FROM \(schema.qualify(row.sourceEntity)) WHERE \"_pk\" = $3) "
          + "AND EXISTS (SELECT 1 FROM \(schema.qualify(row.destination)) WHERE \"_pk\" = $4) ON CONFLICT DO NOTHING",
        [.int(row.source), .int(row.target), .int(row.sourceKey), .int(row.destinationKey)])
    } else {
      try connection.run(
        "DELETE FROM \(schema.qualify(row.table)) WHERE \"source\" = $1 AND \"target\" = $2",
        [.int(row.source), .int(row.target)])
    }
  }

  /// Writes the positions of one ordered list in one statement: O(n) in the list, each target found by
  /// key (an `UPDATE … FROM unnest(…)` over the targets' keys and positions).
  private mutating func apply(_ list: OrderedListChange) throws {
    guard let (order, owner, rows) = try orderedListRows(list), !rows.isEmpty else { return }
    let keys = "{" + rows.map { String($0.0) }.joined(separator: ",") + "}"
    let positions = "{" + rows.map { String($0.1) }.joined(separator: ",") + "}"
    try connection.run(
      "UPDATE \(schema.qualify(order.table)) AS t SET \(quoteIdentifier(order.column)) = u.position "
        + "FROM unnest($2::bigint[], $3::bigint[]) AS u(key, position) "
        + "WHERE t.\(quoteIdentifier(order.keyColumn)) = $1 AND t.\(quoteIdentifier(order.targetColumn)) = u.key",
      [.int(owner), .text(keys), .text(positions)])
  }

  /// Sets every to-one reference to a deleted object to NULL (join-table rows go by `ON DELETE CASCADE`).
  /// Returns the `entity/pk/relationship` of each cleared reference.
  private func clearReferences(to deleted: [String: [Int64]]) throws -> Set<String> {
    guard !deleted.isEmpty else { return [] }
    var cleared = Set<String>()
    let model = schema.model
    // A reference to a parent entity may name an object of any of its sub-entities.
    var deleted = deleted
    for (entityName, keys) in deleted {
      var ancestor = model.inheritance.parent(of: entityName)
      while let parent = ancestor {
        deleted[parent, default: []] += keys
        ancestor = model.inheritance.parent(of: parent)
      }
    }
    for entity in model.entities {
      let inHierarchy = model.inheritance.isInHierarchy(entity.name)
      // An inherited relationship's column is cleared once, by the entity that declares it.
      for rel in entity.toOneRelationships where model.declaringEntity(of: rel.name, in: entity.name) == entity.name {
        guard let keys = deleted[rel.destination], !keys.isEmpty else { continue }
        let list = "{" + keys.map(String.init).joined(separator: ",") + "}"
        let returning = inHierarchy ? "\"_pk\", \(quoteIdentifier(PostgresSchema.entityColumn))" : "\"_pk\""
        let rows = try connection.query(
          "UPDATE \(schema.qualify(entity.name)) SET \(quoteIdentifier(rel.name)) = NULL "
            + "WHERE \(quoteIdentifier(rel.name)) = ANY($1::bigint[]) RETURNING \(returning)", [.text(list)])
        for row in 0..<rows.count {
          let owner = inHierarchy ? rows.text(row, 1) : entity.name
          cleared.insert("\(owner)/\(rows.int64(row, 0))/\(rel.name)")
        }
      }
    }
    return cleared
  }
}
