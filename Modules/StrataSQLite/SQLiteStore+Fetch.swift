import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteStore {
  /// Runs a fetch as one SQL query: the predicate and sort descriptors are checked by ``QueryValidator``
  /// and compiled to SQL (see docs/QUERY-SEMANTICS.md); nothing is filtered in Swift.
  ///
  /// ```swift
  /// var request = FetchDescription(entityName: "Movie")
  /// request.predicate = .comparison(.init(.keyPath("director.name"), .beginsWith, .constant("Mi"), options: .caseInsensitive))
  /// request.sortDescriptors = [QuerySort("title", comparator: .localizedStandard)]
  /// let result = try store.fetch(request, generation: nil)
  /// ```
  ///
  /// A `.count` fetch counts the objects a snapshot fetch with the same limit and offset would return.
  ///
  /// Dictionary results follow ``DictionaryFetch``, computed by SQL (see ``fetchDictionaries(_:generation:)``).
  ///
  /// - Throws: `.invalidQuery` / `.unsupported` from the validator, `.misuse` when the store is closed.
  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    if request.resultType == .dictionaries { return try fetchDictionaries(request, generation: generation) }
    if request.resultType != .count && schema.model.inheritance.hasSubentities(request.entityName) {
      return try read(generation: generation) { try fetchHierarchy(request, connection: $0) }
    }
    let statement = try selectStatement(for: request)
    let table = statement.table
    let identifier = self.identifier
    return try read(generation: generation) { connection -> FetchResult in
      switch request.resultType {
      case .count:
        guard case .integer(let n) = try connection.scalar(statement.sql, statement.bindings) else { return .count(0) }
        return .count(Int(n))
      case .objectIDs:
        var ids = try connection.query(statement.sql, statement.bindings) {
          [id = RowIDs(table, storeIdentifier: identifier).object] in id.withPrimaryKey($0.int64(0))
        }
        if statement.ordersByKeyAfterwards { Self.restoreKeyOrder(&ids, key: \.primaryKey) }
        return .objectIDs(ids)
      case .snapshots, .dictionaries:
        let ids = RowIDs(table, storeIdentifier: identifier)
        var snapshots = try connection.query(statement.sql, statement.bindings) { try $0.snapshot(table, ids: ids) }
        if statement.ordersByKeyAfterwards { Self.restoreKeyOrder(&snapshots, key: \.objectID.primaryKey) }
        return .snapshots(try SQLiteStoreCore(store: self).resolvingReferences(snapshots, on: connection))
      }
    }
  }

  /// Puts rows read without `ORDER BY` back in primary-key order: a pass that finds them ascending (a
  /// table scan reads them so), a sort when an index gave another order.
  private static func restoreKeyOrder<Row>(_ rows: inout [Row], key: (Row) -> Int64?) {
    var previous = Int64.min
    for row in rows {
      let current = key(row) ?? .min
      if current < previous {
        rows.sort { (key($0) ?? .min) < (key($1) ?? .min) }
        return
      }
      previous = current
    }
  }

  /// The one `SELECT` a snapshot, object-ID or count fetch runs, with its bindings.
  ///
  /// A fetch without sort descriptors, limit or offset has no `ORDER BY`: its rows are put in key order
  /// afterwards (`ordersByKeyAfterwards`), so SQLite's planner may answer the predicate from an index
  /// (`SEARCH t0 USING INDEX`) instead of scanning the table to read it in key order. With a limit or an
  /// offset, `ORDER BY t0._pk` stays: the page must be cut from the ordered results.
  func selectStatement(
    for request: FetchDescription
  ) throws -> (
    sql: String, bindings: [SQLValue], table: SQLiteSchema.Table, ordersByKeyAfterwards: Bool
  ) {
    let query = try SQLiteQueryCompiler.compile(request, schema: schema, storeIdentifier: identifier)
    let table = query.table
    var paging = ""
    var pagingBindings: [SQLValue] = []
    if request.effectiveLimit != nil || request.fetchOffset > 0 {
      paging = " LIMIT ? OFFSET ?"
      pagingBindings = [.integer(Int64(request.effectiveLimit ?? -1)), .integer(Int64(max(request.fetchOffset, 0)))]
    }
    let from = query.fromClause
    let ordersByKeyAfterwards = request.sortDescriptors.isEmpty && paging.isEmpty
    let order = ordersByKeyAfterwards ? "" : " ORDER BY " + query.orderBy.joined(separator: ", ")
    let sql: String
    switch request.resultType {
    case .count:
      sql =
        paging.isEmpty
        ? "SELECT COUNT(*) \(from.sql)" : "SELECT COUNT(*) FROM (SELECT t0.\"_pk\" \(from.sql)\(paging))"
    case .objectIDs:
      sql = "SELECT t0.\"_pk\" \(from.sql)\(order)\(paging)"
    case .snapshots, .dictionaries:
      sql = "SELECT \(table.selectList(alias: "t0")) \(from.sql)\(order)\(paging)"
    }
    return (sql, from.bindings + pagingBindings, table, ordersByKeyAfterwards)
  }

  /// The `SELECT` a fetch compiles to, with its bound values, and SQLite's `EXPLAIN QUERY PLAN` for it,
  /// without running the fetch (a dictionary fetch shows the rows it reads).
  ///
  /// ```swift
  /// let plan = try store.explain(FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "year > 1990")))
  /// // plan.steps == ["SCAN t0"]
  /// ```
  public func explain(_ request: FetchDescription) throws -> QueryPlan {
    var rows = request
    if rows.resultType == .dictionaries { rows.resultType = .snapshots }
    let statement = try selectStatement(for: rows)
    let plan = try read(generation: nil) { connection in
      try connection.query("EXPLAIN QUERY PLAN " + statement.sql, statement.bindings) { row in
        (id: row.int64(0), parent: row.int64(1), detail: row.text(3))
      }
    }
    var depth: [Int64: Int] = [0: -1]
    let steps = plan.map { step -> String in
      let level = (depth[step.parent] ?? -1) + 1
      depth[step.id] = level
      return String(repeating: "  ", count: level) + step.detail
    }
    let values =
      statement.bindings.isEmpty ? "" : "\n  bound: " + statement.bindings.map(\.logDescription).joined(separator: ", ")
    return QueryPlan(query: statement.sql + values, steps: steps)
  }

  /// The snapshots of the objects that exist among `ids`, read with `WHERE _pk IN (…)` per entity.
  /// Temporary IDs and IDs of other stores are skipped.
  ///
  /// ```swift
  /// let faults = try store.snapshots(for: [heatID, roninID], generation: nil)
  /// ```
  public func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    // A batch of one entity's saved objects (a fault batch, a batched walk's batch): its table found by
    // the first ID's interned entity and store, its keys read straight from the IDs, without grouping
    // them by entity name (a string hash and compare per ID) or interning the row IDs per call.
    if let first = ids.first, let keyed = keyedTable(of: first), let keys = Self.primaryKeys(of: ids, allLike: first) {
      return try read(generation: generation) { try readRows(of: keyed.table, keys: keys, ids: keyed.ids, connection: $0) }
    }
    _ = try ObjectID.keysByEntity(ids, storeIdentifier: identifier).map { try schema.table($0.entity) }
    return try read(generation: generation) { try readSnapshots(ids, connection: $0) }
  }

  /// The keyed table of `id`'s entity, found by its interned entity and store; `nil` for another store's ID
  /// or a model with sub-entities.
  private func keyedTable(of id: ObjectID) -> KeyedTable? {
    keyedTables.first { $0.ids.object.hasSameEntityAndStore(as: id) }
  }

  /// The primary keys of `ids` when every one is a saved object of `first`'s entity and store, else `nil`.
  private static func primaryKeys(of ids: [ObjectID], allLike first: ObjectID) -> [Int64]? {
    var keys: [Int64] = []
    keys.reserveCapacity(ids.count)
    for id in ids {
      guard id.hasSameEntityAndStore(as: first), let key = id.primaryKey else { return nil }
      keys.append(key)
    }
    return keys
  }

  /// The snapshot of one object, `nil` when it does not exist (or `id` is temporary or another store's):
  /// one `SELECT … WHERE _pk = ?`, without grouping keys by entity.
  ///
  /// ```swift
  /// let heat = try store.snapshot(for: heatID, generation: nil)
  /// ```
  public func snapshot(for id: ObjectID, generation: QueryGeneration?) throws -> Snapshot? {
    guard let pk = id.primaryKey, let keyed = keyedTable(of: id) else {
      return try snapshots(for: [id], generation: generation).first
    }
    return try read(generation: generation) { connection in
      try connection.query(keyed.table.selectByKeySQL, [.integer(pk)]) { try $0.snapshot(keyed.table, ids: keyed.ids) }.first
    }
  }

  /// The targets of a relationship of one object, in primary-key order (for a to-one relationship, its
  /// target if any).
  ///
  /// ```swift
  /// let movies = try store.relatedObjectIDs(of: directorID, relationship: "movies", generation: nil)
  /// ```
  ///
  /// - Throws: `.notFound` for an unknown entity or relationship; `.misuse` when the store is closed.
  public func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    try schema.relatedObjectIDs(
      of: id, relationship: relationship, storeIdentifier: identifier, read: { try read(generation: generation, $0) },
      keys: { connection, sql, pk in try connection.query(sql, [.integer(pk)]) { $0.int64(0) } },
      concreteIDs: { try SQLiteStoreCore(store: self).concreteIDs($0, on: $1) })
  }

  // MARK: Query generations

  /// Pins the store's current state: reads given the returned generation run on a dedicated connection
  /// holding an open WAL read transaction, so they see the store as it is now whatever commits later.
  /// Release it with ``unpin(_:)``.
  ///
  /// ```swift
  /// let generation = try store.pinGeneration()
  /// defer { store.unpin(generation) }
  /// let before = try store.fetch(request, generation: generation)   // unaffected by later saves
  /// ```
  public func pinGeneration() throws -> QueryGeneration {
    try checkOpen()
    if isBoundToMigration { throw unsupportedInMigration("query generations") }
    let (path, configuration) = (self.path, self.configuration)
    let flags = options.isReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    let slot = ConnectionSlot(opener: { try SQLiteStore.openReader(path: path, flags: flags, configuration: configuration) })
    try slot.withConnection(path: path) { connection in
      try connection.execute("BEGIN DEFERRED")
      _ = try connection.scalar("SELECT count(*) FROM \(quote(SQLiteSchema.metadataTable))")
    }
    let id = nextGeneration.add(1, ordering: .relaxed).newValue
    pinned.withLock { $0[id] = slot }
    return QueryGeneration(storeIdentifier: identifier, id: id)
  }

  /// Ends the read transaction of a pinned generation. Unknown generations are ignored.
  public func unpin(_ generation: QueryGeneration) {
    guard generation.storeIdentifier == identifier else { return }
    let slot = pinned.withLock { $0.removeValue(forKey: generation.id) }
    slot?.close()
  }

  func pinnedSlot(_ generation: QueryGeneration) throws -> ConnectionSlot {
    guard generation.storeIdentifier == identifier, let slot = pinned.withLock({ $0[generation.id] }) else {
      throw StoreError(
        .misuse,
        "query generation \(generation.id) is not pinned on the store \(path) (it was unpinned or belongs to another store)")
    }
    return slot
  }
}
