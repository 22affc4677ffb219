import Foundation
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
      var start = 0
      while start < keys.count {
        let chunk = Array(keys[start..<min(start + 500, keys.count)])
        start += chunk.count
        // One key (a fault firing) reuses one cached statement text; a batch builds its IN list.
        let sql =
          chunk.count == 1
          ? table.selectByKeySQL
          : table.selectSQL + " WHERE t0.\"_pk\" IN (" + Array(repeating: "?", count: chunk.count).joined(separator: ", ") + ")"
        let ids = RowIDs(table, storeIdentifier: identifier)
        result += try connection.query(sql, chunk.map(SQLValue.integer)) { try $0.snapshot(table, ids: ids) }
      }
    }
    return try resolvingReferences(result, connection: connection)
  }

  /// `snapshots` with every to-one target whose destination has sub-entities named by the entity it
  /// was inserted as.
  func resolvingReferences(_ snapshots: [Snapshot], connection: SQLiteConnection) throws -> [Snapshot] {
    let inheritance = schema.model.inheritance
    guard !inheritance.isEmpty else { return snapshots }
    var positions: [String: [Int]] = [:]
    var wanted: [ObjectID] = []
    for snapshot in snapshots {
      let entityName = snapshot.objectID.entityName
      if positions[entityName] == nil {
        let rels = schema.tables[entityName]?.entity.toOneRelationships ?? []
        positions[entityName] = rels.indices.filter { inheritance.hasSubentities(rels[$0].destination) }
      }
      for index in positions[entityName] ?? [] where index < snapshot.toOne.count {
        if let target = snapshot.toOne[index] { wanted.append(target) }
      }
    }
    guard !wanted.isEmpty else { return snapshots }
    let resolved = try concreteIDs(wanted, connection: connection)
    return snapshots.map { snapshot in
      guard let indices = positions[snapshot.objectID.entityName], !indices.isEmpty else { return snapshot }
      var snapshot = snapshot
      for index in indices where index < snapshot.toOne.count {
        if let target = snapshot.toOne[index] { snapshot.toOne[index] = resolved[target] ?? target }
      }
      return snapshot
    }
  }

  /// The IDs among `ids` (of entities with sub-entities) named by the entity each object was inserted as.
  func concreteIDs(_ ids: [ObjectID], connection: SQLiteConnection) throws -> [ObjectID: ObjectID] {
    let inheritance = schema.model.inheritance
    var result: [ObjectID: ObjectID] = [:]
    var byRoot: [String: [ObjectID]] = [:]
    for id in ids where id.primaryKey != nil && inheritance.hasSubentities(id.entityName) {
      byRoot[inheritance.root(of: id.entityName), default: []].append(id)
    }
    let identifier = self.identifier
    for (root, group) in byRoot {
      var start = 0
      while start < group.count {
        let chunk = Array(group[start..<min(start + 500, group.count)])
        start += chunk.count
        let placeholders = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
        let rows = try connection.query(
          "SELECT \"_pk\", \(quote(SQLiteSchema.entityColumn)) FROM \(quote(root)) WHERE \"_pk\" IN (\(placeholders))",
          chunk.compactMap { $0.primaryKey.map(SQLValue.integer) }
        ) { ($0.int64(0), $0.text(1)) }
        let entities = Dictionary(rows, uniquingKeysWith: { first, _ in first })
        for id in chunk {
          guard let pk = id.primaryKey, let entity = entities[pk] else { continue }
          result[id] = ObjectID(entityName: entity, storeIdentifier: identifier, primaryKey: pk)
        }
      }
    }
    return result
  }
}
