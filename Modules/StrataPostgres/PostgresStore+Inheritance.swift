import Foundation
import StrataSQL
import StrataStoreKit

// Entity hierarchies on PostgreSQL, laid out as on SQLite: one table per hierarchy, named after its root
// entity, holding every entity's columns and `_entity`; each sub-entity's name is an automatically
// updatable view of its rows (and its sub-entities'), whose `_entity` defaults to the entity, so every
// statement of the store works on it as on a table. A fetch of an entity with sub-entities reads the keys
// and entities first, then each object from its own entity's view; references to such an entity are
// resolved to the entity the target was inserted as.

extension PostgresStore {
  /// A snapshot or object-ID fetch of an entity with sub-entities.
  func fetchHierarchy(
    _ request: FetchDescription, _ query: PostgresQueryCompiler.Query, connection: PostgresConnection
  ) throws -> FetchResult {
    var paging = Fragment("")
    if let limit = request.effectiveLimit { paging = paging + Fragment(" LIMIT ?", [.int(Int64(limit))]) }
    if request.fetchOffset > 0 { paging = paging + Fragment(" OFFSET ?", [.int(Int64(request.fetchOffset))]) }
    let sql =
      Fragment("SELECT t0.\"_pk\", t0.\(quoteIdentifier(PostgresSchema.entityColumn)) ") + query.fromClause
      + Fragment(" ORDER BY " + query.orderBy.joined(separator: ", ")) + paging
    let rows = try connection.query(sql.numbered(), sql.bindings)
    let identifier = self.identifier
    let ids = (0..<rows.count).map {
      ObjectID(entityName: rows.text($0, 1), storeIdentifier: identifier, primaryKey: rows.int64($0, 0))
    }
    guard request.resultType == .snapshots else { return .objectIDs(ids) }
    let snapshots = try readSnapshots(ids, connection: connection)
    let byID = Dictionary(snapshots.map { ($0.objectID, $0) }, uniquingKeysWith: { first, _ in first })
    return .snapshots(ids.compactMap { byID[$0] })
  }

  /// The snapshots of the stored objects among `ids`, read per entity with `_pk = ANY(…)`, references to
  /// entities with sub-entities resolved.
  func readSnapshots(_ ids: [ObjectID], connection: PostgresConnection) throws -> [Snapshot] {
    let work = try ObjectID.keysByEntity(ids, storeIdentifier: identifier).map { (try schema.table($0.entity), $0.keys) }
    var result: [Snapshot] = []
    for (table, keys) in work {
      // One key (a fault) is the commonest read: a statement prepared once per connection.
      if keys.count == 1, let key = keys.first {
        let sql = "SELECT \(table.selectList(alias: "t0")) FROM \(table.qualified) AS t0 WHERE t0.\"_pk\" = $1"
        result += try connection.queryPrepared(sql, [.int(key)]).snapshots(table, storeIdentifier: identifier)
        continue
      }
      let list = "{" + keys.map(String.init).joined(separator: ",") + "}"
      let sql = "SELECT \(table.selectList(alias: "t0")) FROM \(table.qualified) AS t0 WHERE t0.\"_pk\" = ANY($1::bigint[])"
      result += try connection.query(sql, [.text(list)]).snapshots(table, storeIdentifier: identifier)
    }
    return try PostgresStoreCore(store: self).resolvingReferences(result, on: connection)
  }
}

extension PostgresStoreCore {
  func entityTags(of keys: [Int64], in root: String, on connection: PostgresConnection) throws -> [Int64: String] {
    let rows = try connection.query(
      "SELECT \"_pk\", \(quoteIdentifier(PostgresSchema.entityColumn)) FROM \(schema.qualify(root)) "
        + "WHERE \"_pk\" = ANY($1::bigint[])", [.text("{" + keys.map(String.init).joined(separator: ",") + "}")])
    var entities: [Int64: String] = [:]
    for row in 0..<rows.count { entities[rows.int64(row, 0)] = rows.text(row, 1) }
    return entities
  }
}
