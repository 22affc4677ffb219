import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteStore {
  /// Runs a batch insert natively when it can: one prepared statement per shape of row (the set of
  /// attributes a row gives), `INSERT INTO t (every stored attribute) VALUES (…)`, with
  /// `ON CONFLICT(<unique columns>) DO UPDATE SET <given columns> = excluded.<column>, _version = _version + 1
  /// WHERE <a given column> IS NOT excluded.<column> OR …` when the entity has one uniqueness constraint (a
  /// row that gives only the values its stored object holds writes nothing: no version bump, no history;
  /// with result type `.objectIDs` its object is looked up for `BatchResult.unchangedObjectIDs`), bound row by row inside one `BEGIN IMMEDIATE` (a savepoint in a migration stage's store). Rows are
  /// checked (``BatchInsertRow``) as they are bound; a refused row rolls the whole batch back. The written
  /// rows are named by an update hook (insert or update), only when the result or a change stream needs
  /// them. Returns `nil` for what the general path must run: an entity whose derived attributes (its own
  /// or another entity's) the rows could change, or one with several uniqueness constraints.
  func nativeInsert(_ request: BatchInsertDescription, author: String?, contextName: String?) throws -> BatchResult? {
    let entity = try model.requireEntity(request.entityName)
    let settable = entity.attributes.filter { $0.isPersistent && $0.derivation == nil }.map(\.name)
    guard entity.uniquenessConstraints.count <= 1, !model.inheritance.isInHierarchy(entity.name),
      !model.derivedAttributes.isAffected(byUpdating: settable, of: entity.name)
    else { return nil }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    let table = try schema.table(entity.name)
    let rules = BatchInsertRow.Rules(entity)
    let stored = table.storedAttributes
    let insert =
      "INSERT INTO \(quote(entity.name)) (\(stored.map { quote(entity.attributes[$0].name) }.joined(separator: ", "))) VALUES ("
      + Array(repeating: "?", count: stored.count).joined(separator: ", ") + ")"
    let uniqueColumns = entity.uniquenessConstraints.first ?? []
    let conflict = entity.uniquenessConstraints.first.map {
      " ON CONFLICT(\($0.map(quote).joined(separator: ", "))) DO UPDATE SET "
    }
    // The stored object of a row that changed nothing, by its key, for the result's unchanged objects.
    let wantsUnchanged = conflict != nil && request.resultType == .objectIDs
    let lookup =
      "SELECT \"_pk\" FROM \(quote(entity.name)) WHERE "
      + uniqueColumns.map { "\(quote($0)) = ?" }.joined(separator: " AND ")
    let keyPositions = uniqueColumns.compactMap { entity.attributeIndex(named: $0) }
    let history = historyRecorder
    let wantsIDs = request.resultType != .statusOnly || broadcaster.hasSubscribers || history != nil
    let identifier = self.identifier
    let broadcaster = self.broadcaster
    let scope = ObjectID(entityName: entity.name, storeIdentifier: identifier, primaryKey: 0)
    let written: Written = try write { connection in
      var statements: [[Int]: Statement] = [:]
      defer { for statement in statements.values { sqlite3_finalize(statement.pointer) } }
      var last: (given: [Int], statement: Statement)?
      func statement(for given: [Int]) throws -> Statement {
        if let last, last.given == given { return last.statement }
        if let statement = statements[given] {
          last = (given, statement)
          return statement
        }
        var sql = insert
        if let conflict {
          sql += conflict
          for position in given {
            let column = quote(entity.attributes[position].name)
            sql += "\(column) = excluded.\(column), "
          }
          sql += "\"_version\" = \"_version\" + 1"
          // Only a row that changes a value updates its stored object.
          let differs = given.map {
            let column = quote(entity.attributes[$0].name)
            return "\(column) IS NOT excluded.\(column)"
          }
          sql += " WHERE " + (differs.isEmpty ? "0" : differs.joined(separator: " OR "))
        }
        let statement = try connection.prepare(sql)
        statements[given] = statement
        last = (given, statement)
        return statement
      }
      var bindings = [SQLValue](repeating: .null, count: stored.count)
      var unchanged: [Int64] = []
      func run() throws {
        var row = BatchInsertRow(rules: rules)
        try request.forEachRow { index, dictionary in
          try row.reload(dictionary, index: index, rules: rules)
          let statement = try statement(for: conflict == nil ? [] : row.given)
          for (column, position) in stored.enumerated() { bindings[column] = SQLiteSchema.encode(row.values[position]) }
          try statement.bind(bindings)
          defer { statement.reset() }
          while try statement.step() {}
          // No row inserted or updated: the key's stored object holds the row's values already.
          if wantsUnchanged, sqlite3_changes(statement.database) == 0 {
            let key = keyPositions.map { SQLiteSchema.encode(row.values[$0]) }
            if let pk = try connection.query(lookup, key, { $0.int64(0) }).first { unchanged.append(pk) }
          }
        }
      }
      return try connection.transaction {
        var written: [(rowID: Int64, isInsert: Bool)] = []
        if wantsIDs { written = try connection.writtenRowIDs(run) } else { try run() }
        var outcome = Written(written, scope: scope)
        outcome.noteUnchanged(unchanged, scope: scope)
        if let history, !outcome.ids.isEmpty {
          // An upserted row changed the attributes its row gave: the union over the batch's row shapes.
          let given = Set(statements.keys.joined()).sorted().map { entity.attributes[$0].name }
          outcome.token = try history.record(
            HistoryLog.changes(inserted: outcome.inserted, updated: outcome.updated, keys: given), on: connection,
            author: author, contextName: contextName)
        }
        return outcome
      }
    }
    guard wantsIDs else { return BatchResult(count: 0) }
    return .nativeInsert(
      ids: written.ids, inserted: written.inserted, updated: written.updated, unchanged: written.unchanged,
      token: written.token, storeIdentifier: identifier, broadcaster: broadcaster, as: request.resultType)
  }
}

/// The objects a native batch insert wrote, each once, in the order rows first wrote it; an upsert of a
/// row the same batch inserted is no update.
private struct Written {
  var ids: [ObjectID] = []
  var inserted: [ObjectID] = []
  var updated: [ObjectID] = []
  /// Stored objects the batch's rows named without changing a value, each once (none the batch wrote).
  var unchanged: [ObjectID] = []
  var token: HistoryToken?

  /// Records the stored objects (primary keys, in row order) whose rows changed nothing, leaving out
  /// those another row of the batch wrote.
  mutating func noteUnchanged(_ keys: [Int64], scope: ObjectID) {
    guard !keys.isEmpty else { return }
    var seen = Set(ids)
    for key in keys {
      let id = scope.withPrimaryKey(key)
      if seen.insert(id).inserted { unchanged.append(id) }
    }
  }

  init(_ written: [(rowID: Int64, isInsert: Bool)], scope: ObjectID) {
    ids.reserveCapacity(written.count)
    // Without updates every row is a new one (the common case, no sets needed).
    if written.allSatisfy(\.isInsert) {
      for (rowID, _) in written { ids.append(scope.withPrimaryKey(rowID)) }
      inserted = ids
      return
    }
    var insertedKeys = Set<Int64>()
    var seen = Set<Int64>()
    for (rowID, isInsert) in written where seen.insert(rowID).inserted {
      if isInsert {
        insertedKeys.insert(rowID)
        inserted.append(scope.withPrimaryKey(rowID))
      } else if !insertedKeys.contains(rowID) {
        updated.append(scope.withPrimaryKey(rowID))
      }
      ids.append(scope.withPrimaryKey(rowID))
    }
  }
}
