import Foundation
import StrataSQL
import StrataStoreKit

// Entity hierarchies on SQLite: one table per hierarchy, named after its root entity, holding every
// entity's columns and `_entity` (the entity each row was inserted as); each sub-entity's name is a view of
// its rows and its sub-entities' rows, so reads, joins and `sqlite3` see one table per entity. A row of a
// parent's view may be of any sub-entity: a fetch of an entity with sub-entities reads the keys and entities
// first, then each object's snapshot from its own entity's view, and a reference to such an entity is
// resolved to the entity its target was inserted as.

extension SQLiteStore {
  /// A snapshot or object-ID fetch of an entity with sub-entities: the keys and entities in order, then
  /// the snapshots of each entity's objects.
  func fetchHierarchy(
    _ request: FetchDescription, connection: SQLiteConnection
  ) throws -> FetchResult {
    let query = try SQLiteQueryCompiler.compile(request, schema: schema, storeIdentifier: identifier)
    var paging = ""
    var bindings = query.fromClause.bindings
    if request.effectiveLimit != nil || request.fetchOffset > 0 {
      paging = " LIMIT ? OFFSET ?"
      bindings += [.integer(Int64(request.effectiveLimit ?? -1)), .integer(Int64(max(request.fetchOffset, 0)))]
    }
    let sql =
      "SELECT t0.\"_pk\", t0.\(quote(SQLiteSchema.entityColumn)) \(query.fromClause.sql) ORDER BY "
      + query.orderBy.joined(separator: ", ") + paging
    let identifier = self.identifier
    let ids = try connection.query(sql, bindings) {
      ObjectID(entityName: $0.text(1), storeIdentifier: identifier, primaryKey: $0.int64(0))
    }
    guard request.resultType == .snapshots else { return .objectIDs(ids) }
    let snapshots = try readSnapshots(ids, connection: connection)
    let byID = Dictionary(snapshots.map { ($0.objectID, $0) }, uniquingKeysWith: { first, _ in first })
    return .snapshots(ids.compactMap { byID[$0] })
  }

  /// The snapshots of the stored objects among `ids`, read per entity with `WHERE _pk IN (…)`, references
  /// to entities with sub-entities resolved.
  func readSnapshots(_ ids: [ObjectID], connection: SQLiteConnection) throws -> [Snapshot] {
    let work = try ObjectID.keysByEntity(ids, storeIdentifier: identifier).map { (try schema.table($0.entity), $0.keys) }
    var result: [Snapshot] = []
    for (table, keys) in work {
      result += try readRows(of: table, keys: keys, ids: RowIDs(table, storeIdentifier: identifier), connection: connection)
    }
    return try SQLiteStoreCore(store: self).resolvingReferences(result, on: connection)
  }

  /// The rows of `table` with primary keys among `keys`, named by `ids`, read 500 keys per `WHERE _pk IN (…)`;
  /// one key reuses the table's one-row statement text.
  func readRows(of table: SQLiteSchema.Table, keys: [Int64], ids: RowIDs, connection: SQLiteConnection) throws -> [Snapshot] {
    var result: [Snapshot] = []
    result.reserveCapacity(keys.count)
    var start = 0
    while start < keys.count {
      let end = min(start + 500, keys.count)
      let sql = end - start == 1 ? table.selectByKeySQL : table.selectSQL + Self.keyList(end - start)
      result += try connection.query(sql, keys[start..<end].map(SQLValue.integer)) { try $0.snapshot(table, ids: ids) }
      start = end
    }
    return result
  }

  /// ` WHERE t0."_pk" IN (?, …)` with `count` placeholders, appended to a table's `selectSQL`.
  private static func keyList(_ count: Int) -> String {
    " WHERE t0.\"_pk\" IN (" + String(repeating: "?, ", count: max(count - 1, 0)) + "?)"
  }
}

extension SQLiteStoreCore {
  func entityTags(of keys: [Int64], in root: String, on connection: SQLiteConnection) throws -> [Int64: String] {
    var result: [Int64: String] = [:]
    var start = 0
    while start < keys.count {
      let chunk = Array(keys[start..<min(start + 500, keys.count)])
      start += chunk.count
      let placeholders = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
      let rows = try connection.query(
        "SELECT \"_pk\", \(quote(SQLiteSchema.entityColumn)) FROM \(quote(root)) WHERE \"_pk\" IN (\(placeholders))",
        chunk.map(SQLValue.integer)
      ) { ($0.int64(0), $0.text(1)) }
      for (pk, entity) in rows where result[pk] == nil { result[pk] = entity }
    }
    return result
  }
}
