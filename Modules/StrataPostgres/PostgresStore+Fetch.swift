import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// Runs a fetch as one SQL query in the server: the predicate and sort descriptors are checked by
  /// ``QueryValidator`` and compiled to SQL; nothing is filtered in Swift.
  ///
  /// ```swift
  /// var request = FetchDescription(entityName: "Movie")
  /// request.predicate = try QueryPredicate(format: "director.name BEGINSWITH[c] 'mi'")
  /// request.sortDescriptors = [QuerySort("title", comparator: .localizedStandard)]
  /// let result = try store.fetch(request, generation: nil)
  /// ```
  ///
  /// - Throws: `.invalidQuery` / `.unsupported` from the validator, `.misuse` when the store is closed, `.io`.
  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    if request.resultType == .dictionaries { return try fetchDictionaries(request, generation: generation) }
    let query = try PostgresQueryCompiler.compile(request, schema: schema, storeIdentifier: identifier)
    if request.resultType != .count && schema.model.inheritance.hasSubentities(request.entityName) {
      return try read(generation: generation) { try fetchHierarchy(request, query, connection: $0) }
    }
    let table = query.table
    var paging = Fragment("")
    if let limit = request.effectiveLimit { paging = paging + Fragment(" LIMIT ?", [.int(Int64(limit))]) }
    if request.fetchOffset > 0 { paging = paging + Fragment(" OFFSET ?", [.int(Int64(request.fetchOffset))]) }
    let from = query.fromClause
    let order = " ORDER BY " + query.orderBy.joined(separator: ", ")
    let identifier = self.identifier
    return try read(generation: generation) { connection -> FetchResult in
      switch request.resultType {
      case .count:
        let sql =
          paging.sql.isEmpty
          ? Fragment("SELECT COUNT(*) ") + from
          : Fragment("SELECT COUNT(*) FROM (SELECT t0.\"_pk\" ") + from + paging + Fragment(") AS page")
        return .count(Int(try connection.query(sql.numbered(), sql.bindings).int64(0, 0)))
      case .objectIDs:
        let sql = Fragment("SELECT t0.\"_pk\" ") + from + Fragment(order) + paging
        let rows = try connection.query(sql.numbered(), sql.bindings)
        return .objectIDs(
          (0..<rows.count).map { ObjectID(entityName: table.name, storeIdentifier: identifier, primaryKey: rows.int64($0, 0)) })
      case .snapshots, .dictionaries:
        let sql = Fragment("SELECT \(table.selectList(alias: "t0")) ") + from + Fragment(order) + paging
        let snapshots = try connection.query(sql.numbered(), sql.bindings).snapshots(table, storeIdentifier: identifier)
        return .snapshots(try PostgresStoreCore(store: self).resolvingReferences(snapshots, on: connection))
      }
    }
  }

  /// The snapshots of the objects that exist among `ids`, read with `_pk = ANY(…)` per entity.
  ///
  /// ```swift
  /// let faults = try store.snapshots(for: [heatID, roninID], generation: nil)
  /// ```
  public func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    _ = try ObjectID.keysByEntity(ids, storeIdentifier: identifier).map { try schema.table($0.entity) }
    return try read(generation: generation) { try readSnapshots(ids, connection: $0) }
  }

  /// The targets of a relationship of one object, in primary-key order.
  ///
  /// ```swift
  /// let movies = try store.relatedObjectIDs(of: directorID, relationship: "movies", generation: nil)
  /// ```
  ///
  /// - Throws: `.notFound` for an unknown entity or relationship; `.misuse` when the store is closed.
  public func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    try schema.relatedObjectIDs(
      of: id, relationship: relationship, storeIdentifier: identifier, read: { try read(generation: generation, $0) },
      keys: { connection, sql, pk in try connection.query(sql, [.int(pk)]) { $0.int64(0) } },
      concreteIDs: { try PostgresStoreCore(store: self).concreteIDs($0, on: $1) })
  }

  // MARK: Query generations

  /// Pins the store's current state: a `REPEATABLE READ` transaction exports its snapshot
  /// (`pg_export_snapshot()`), and reads given the returned generation run on its connection or, when
  /// that one is busy, on further connections that join the same snapshot (`SET TRANSACTION SNAPSHOT`),
  /// so contexts sharing the generation read one state of the store side by side.
  ///
  /// ```swift
  /// let generation = try store.pinGeneration()
  /// defer { store.unpin(generation) }
  /// let before = try store.fetch(request, generation: generation)
  /// ```
  public func pinGeneration() throws -> QueryGeneration {
    try checkOpen()
    if isBoundToMigration { throw unsupportedInMigration("query generations") }
    let generation = try PinnedGeneration(pool: pool)
    let id = nextGeneration.add(1, ordering: .relaxed).newValue
    pinned.withLock { $0[id] = generation }
    return QueryGeneration(storeIdentifier: identifier, id: id)
  }

  /// Ends the transactions of a pinned generation. Unknown generations are ignored.
  public func unpin(_ generation: QueryGeneration) {
    guard generation.storeIdentifier == identifier else { return }
    pinned.withLock { $0.removeValue(forKey: generation.id) }?.close()
  }
}
