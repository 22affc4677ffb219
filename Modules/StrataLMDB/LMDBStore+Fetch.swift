import CLMDB
import Foundation
import StrataStoreKit

extension LMDBStore {
  /// Runs a fetch in one read transaction with the shared evaluator and sorter: candidates from an
  /// index range when the predicate allows it (see ``IndexPlan``), else every object of the entity;
  /// then filter, sort, offset and limit — the same answers as the SQLite and memory stores.
  ///
  /// ```swift
  /// var request = FetchDescription(entityName: "Movie")
  /// request.predicate = try QueryPredicate(format: "year >= 1990 AND genre CONTAINS[c] 'drama'")
  /// request.sortDescriptors = [QuerySort("title", comparator: .localizedStandard)]
  /// let result = try store.fetch(request, generation: nil)
  /// ```
  ///
  /// A `.count` reads no object when it can: without a predicate it is the entity database's entry
  /// count (`mdb_stat`); for a single comparison on an index, the number of keys in the range.
  ///
  /// Dictionary results follow ``DictionaryFetch`` over the matching records.
  ///
  /// - Throws: `.invalidQuery` / `.unsupported` from the validator and ``DictionaryFetch``, `.misuse` when
  ///   the store is closed or the generation is not pinned.
  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let fetch = try LMDBFetch(request, scope: scope)
    guard StrataLog.level > 0 else { return try read(generation: generation) { txn in try fetch.run(txn) } }
    let started = ContinuousClock.now
    let result = try read(generation: generation) { txn in try fetch.run(txn) }
    let plan = fetch.explanation
    var line = "\(plan.query): \(plan.steps.joined(separator: "; "))"
    if StrataLog.level >= 2 { line += " — \(result.count) results, \(StrataLog.milliseconds(since: started))" }
    lmdbLog.debug("\(line)")
    return result
  }

  /// What a fetch reads — the index range it uses, or a scan of the entity's records — and what it does in
  /// memory, without running it.
  ///
  /// ```swift
  /// let plan = try store.explain(FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "year == 1995")))
  /// // plan.steps == ["index Movie.year.index: 1 key range", "each candidate read and re-checked by the evaluator"]
  /// ```
  public func explain(_ request: FetchDescription) throws -> QueryPlan {
    try LMDBFetch(request, scope: scope).explanation
  }

  /// Streams an unsorted fetch: each record is decoded, checked against the predicate and handed to
  /// `body` before the next is read (candidates from an index range when the predicate allows it, as
  /// for ``fetch(_:generation:)``). A sorted fetch needs every row first, and is collected.
  ///
  /// ```swift
  /// try store.fetchSnapshots(FetchDescription(entityName: "Movie"), generation: nil) { snapshot, _ in
  ///   print(snapshot.objectID)
  /// }
  /// ```
  public func fetchSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws {
    guard request.sortDescriptors.isEmpty else { return try fetchCollectedSnapshots(request, generation: generation, body) }
    let fetch = try LMDBFetch(request, scope: scope)
    guard request.effectiveLimit ?? 1 > 0 else { return }
    try read(generation: generation) { txn in try fetch.stream(txn, body) }
  }

  /// The snapshots of the objects that exist among `ids`; temporary IDs and other stores' IDs are skipped.
  ///
  /// ```swift
  /// let faults = try store.snapshots(for: [heatID, roninID], generation: nil)
  /// ```
  public func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    let scope = self.scope
    return try read(generation: generation) { txn in try scope.snapshots(for: ids, in: txn) }
  }

  /// The snapshot of one object, `nil` when it does not exist (or `id` is temporary or another store's):
  /// one `mdb_get` in the current read transaction, decoded straight from the map.
  ///
  /// ```swift
  /// let heat = try store.snapshot(for: heatID, generation: nil)
  /// ```
  public func snapshot(for id: ObjectID, generation: QueryGeneration?) throws -> Snapshot? {
    let scope = lentScope
    return try read(generation: generation) { txn in
      try scope.with { try $0.snapshot(for: id, in: txn) }
    }
  }

  /// The targets of a relationship of one object, in primary-key order (for a to-one, its target if
  /// any): from the inverse's reference index, or from the join table.
  ///
  /// ```swift
  /// let movies = try store.relatedObjectIDs(of: directorID, relationship: "movies", generation: nil)
  /// ```
  ///
  /// - Throws: `.notFound` for an unknown entity or relationship; `.misuse` when the store is closed.
  public func relatedObjectIDs(
    of id: ObjectID, relationship: String, generation: QueryGeneration?
  ) throws
    -> [ObjectID]
  {
    let scope = self.scope
    let rel = try scope.relationship(relationship, of: id)
    return try read(generation: generation) { txn in try scope.relatedObjectIDs(of: id, relationship: rel, in: txn) }
  }

  // MARK: Query generations

  /// Pins the store's current state: an LMDB read transaction stays open, and reads given the returned
  /// generation run in it, seeing the store as it is now whatever commits later (in any process).
  /// Release it with ``unpin(_:)``; an open generation keeps the pages it sees from being reused.
  ///
  /// ```swift
  /// let generation = try store.pinGeneration()
  /// defer { store.unpin(generation) }
  /// let before = try store.fetch(request, generation: generation)   // unaffected by later saves
  /// ```
  public func pinGeneration() throws -> QueryGeneration {
    try checkOpen()
    let txn: OpaquePointer
    do {
      txn = try environment.beginPinned()
    } catch let error as LMDBError {
      throw error.storeError(path: path)
    }
    let id = nextGeneration.add(1, ordering: .relaxed).newValue
    let transaction = PinnedTransaction(txn)
    pinned.withLock { $0[id] = transaction }
    if closed.load(ordering: .acquiring) {
      // close() may have ended the generations before this one was registered.
      unpin(QueryGeneration(storeIdentifier: identifier, id: id))
      throw StoreError(.misuse, "the store \(path) is closed")
    }
    return QueryGeneration(storeIdentifier: identifier, id: id)
  }

  /// Ends the read transaction of a pinned generation. Unknown generations are ignored.
  public func unpin(_ generation: QueryGeneration) {
    guard generation.storeIdentifier == identifier else { return }
    pinned.withLock { $0.removeValue(forKey: generation.id) }?.end(environment)
  }

  func pinnedTransaction(_ generation: QueryGeneration) throws -> PinnedTransaction {
    guard generation.storeIdentifier == identifier, let transaction = pinned.withLock({ $0[generation.id] }) else {
      throw StoreError(
        .misuse,
        "query generation \(generation.id) is not pinned on the store \(path) (it was unpinned or belongs to another store)")
    }
    return transaction
  }
}

/// Where the LMDB store logs its fetches (``StrataLog``).
let lmdbLog = StrataLog.logger("strata.lmdb")

/// One fetch, checked against the model before any transaction begins and run in one: candidates from an
/// index range when the predicate allows it (see ``IndexPlan``), else every object of the entity; then
/// filter, sort, offset and limit.
struct LMDBFetch {
  let request: FetchDescription
  let scope: LMDBScope
  let table: LMDBSchema.Table
  let evaluator: PredicateEvaluator?
  let plan: IndexPlan?
  let sorter: SnapshotSorter
  let dictionaries: DictionaryFetch?
  /// For a fetch of an entity with sub-entities: the tables of every entity it reads (their keys are
  /// unique across the hierarchy, so their records merge in key order); empty otherwise.
  let hierarchy: [LMDBSchema.Table]
  /// For each table a scan reads (``scannedTables``): the probe that rejects records without decoding
  /// them, when the predicate is made of attribute tests.
  let probes: [RecordProbe?]
  /// When every sort descriptor is an attribute of the entity itself: their positions, so that a sorted
  /// top-N reads a record's sort values without decoding it.
  let sortAttributes: [Int]?

  /// The tables a scan reads: the entity's, or each entity's of its hierarchy.
  var scannedTables: [LMDBSchema.Table] { hierarchy.isEmpty ? [table] : hierarchy }

  /// - Throws: `.invalidQuery` / `.unsupported` from the validator and ``DictionaryFetch``.
  init(_ request: FetchDescription, scope: LMDBScope) throws {
    let model = scope.model
    let entity = try model.requireEntity(request.entityName)
    self.request = request
    self.scope = scope
    evaluator = try request.predicate.map { try PredicateEvaluator($0, entity: entity, model: model) }
    table = try scope.schema.table(entity.name)
    if request.includesSubentities && model.inheritance.hasSubentities(entity.name) {
      hierarchy = try model.inheritance.fetchedEntities(entity.name).map { try scope.schema.table($0) }
      plan = nil
    } else {
      hierarchy = []
      plan = IndexPlan.make(evaluator?.predicate, table: table, maxKeySize: scope.maxKeySize)
    }
    sorter = try SnapshotSorter(request.sortDescriptors, entity: table.entity, model: model)
    dictionaries = request.resultType == .dictionaries ? try DictionaryFetch(request, model: model) : nil
    let scanned = hierarchy.isEmpty ? [table] : hierarchy
    probes = scanned.map { [evaluator] in RecordProbe(evaluator, entity: $0.entity) }
    sortAttributes = Self.sortAttributes(request.sortDescriptors, entity: table.entity)
  }

  /// The query and plan ``LMDBStore/explain(_:)`` reports.
  var explanation: QueryPlan {
    var query = "fetch \(table.name)"
    if let predicate = request.predicate { query += " where \(predicate)" }
    if !request.sortDescriptors.isEmpty {
      query +=
        " sorted by " + request.sortDescriptors.map { "\($0.keyPath)\($0.ascending ? "" : " desc")" }.joined(separator: ", ")
    }
    var steps: [String] = []
    if let plan {
      let ranges = plan.ranges.count == 1 ? "1 key range" : "\(plan.ranges.count) key ranges"
      steps.append("index \(plan.index.name): \(ranges)")
      steps.append(
        plan.answersWholePredicate && request.resultType == .count
          ? "counted from the index keys alone" : "each candidate read and re-checked by the evaluator")
    } else if request.predicate == nil && request.resultType == .count {
      steps.append("entry count of \(table.name)'s records (mdb_stat)")
    } else if !hierarchy.isEmpty {
      steps.append(
        "scan of every record of " + hierarchy.map(\.name).joined(separator: ", ")
          + (request.predicate == nil ? "" : ", each checked by the evaluator"))
    } else {
      steps.append("scan of every \(table.name) record" + (request.predicate == nil ? "" : ", each checked by the evaluator"))
    }
    if !request.sortDescriptors.isEmpty { steps.append("sort in memory") }
    if request.fetchOffset > 0 || request.effectiveLimit != nil {
      steps.append("offset \(request.fetchOffset), limit \(request.effectiveLimit.map(String.init) ?? "none")")
    }
    return QueryPlan(query: query, steps: steps)
  }

  /// The fetch's result, read in `txn`, with work proportional to the answer: a count reads no record
  /// when the entity's entry count or an index answers it; an unsorted page stops at its limit and passes
  /// over its offset (without a predicate, without decoding those records); a sorted page with a limit
  /// keeps a bounded top-N; a record the predicate's probe rejects is never decoded. Only dictionary
  /// results (grouped, then paged) and sorts without a limit hold every match.
  func run(_ txn: LMDBTransaction) throws -> FetchResult {
    let reader = scope.reader(txn)
    if request.resultType == .count && hierarchy.isEmpty {
      if evaluator == nil {
        return .count(Self.page(count: try txn.entries(table.records), request))
      }
      if let evaluator, let plan, plan.answersWholePredicate {
        let total = try plan.count(txn, maxKeySize: scope.maxKeySize) { pk in
          guard let snapshot = try reader.record(table, pk) else { return false }
          return try evaluator.evaluate(snapshot, source: reader)
        }
        return .count(Self.page(count: total, request))
      }
    }
    if request.resultType == .count && dictionaries == nil {
      if evaluator == nil {
        let total = try scannedTables.reduce(0) { $0 + (try txn.entries($1.records)) }
        return .count(Self.page(count: total, request))
      }
      var total = 0
      if plan == nil {
        // Records the probe decides are counted from their tested attributes' bytes, never decoded.
        try scanMatches(
          txn, reader, skipping: 0, admits: nil,
          undecoded: { _ in
            total += 1
            return true
          }
        ) { _, _ in
          total += 1
          return true
        }
        return .count(Self.page(count: total, request))
      }
      try eachMatch(txn, reader, skipping: 0) { _, _ in
        total += 1
        return true
      }
      return .count(Self.page(count: total, request))
    }
    if request.resultType == .objectIDs && request.sortDescriptors.isEmpty && dictionaries == nil {
      if evaluator == nil && hierarchy.isEmpty { return .objectIDs(try keyedIDs(txn)) }
      // IDs as they are read: keeping every snapshot until the end held a million decoded records at
      // once for the IDs of a batched walk.
      var ids: [ObjectID] = []
      let everyCandidateMatches = evaluator == nil
      try stream(txn) { snapshot, remaining in
        if ids.isEmpty && everyCandidateMatches { ids.reserveCapacity(remaining + 1) }
        ids.append(snapshot.objectID)
      }
      return .objectIDs(ids)
    }
    let offset = max(request.fetchOffset, 0)
    let everyCandidateMatches = evaluator == nil
    var rows: [Snapshot] = []
    if dictionaries != nil || (!request.sortDescriptors.isEmpty && request.effectiveLimit == nil) {
      // Every match: dictionaries page their groups, and an unlimited sort returns them all.
      try eachMatch(txn, reader, skipping: 0) { snapshot, remaining in
        // Room for every candidate only when every candidate matches.
        if rows.isEmpty && everyCandidateMatches { rows.reserveCapacity(remaining + 1) }
        rows.append(snapshot)
        return true
      }
      if !request.sortDescriptors.isEmpty { try sorter.sort(&rows, source: reader) }
      return try request.result(from: rows, dictionaries: dictionaries, source: reader)
    }
    if let limit = request.effectiveLimit, !request.sortDescriptors.isEmpty {
      let (top, overflow) = offset.addingReportingOverflow(limit)
      rows = Array(try topMatches(txn, reader, count: overflow ? .max : top).dropFirst(offset))
    } else {
      let limit = request.effectiveLimit ?? .max
      try eachMatch(txn, reader, skipping: offset) { snapshot, remaining in
        if rows.isEmpty && everyCandidateMatches { rows.reserveCapacity(min(remaining + 1, limit)) }
        rows.append(snapshot)
        return rows.count < limit
      }
    }
    switch request.resultType {
    case .objectIDs: return .objectIDs(rows.map(\.objectID))
    case .count: return .count(rows.count)
    default: return .snapshots(rows)
    }
  }

  /// The IDs of every object of the entity, in primary-key order within the request's offset and limit,
  /// from the records' keys alone: with nothing to check, no record is decoded (decoding each one for
  /// its ID was a quarter of walking a store with `fetch(_:batchSize:)`).
  private func keyedIDs(_ txn: LMDBTransaction) throws -> [ObjectID] {
    var page = Page(skipping: request.fetchOffset, limit: request.effectiveLimit)
    let template = table.decoder.idTemplate
    var ids: [ObjectID] = []
    ids.reserveCapacity(Self.page(count: try txn.entries(table.records), request))
    var tally = MapReadTally(txn)
    defer { tally.flush() }
    try txn.withCursor(table.records) { cursor in
      var entry = try cursor.next(.first)
      while let (key, value) = entry {
        tally.add(key, value)
        if page.admit() {
          ids.append(template.withPrimaryKey(try KeyCoding.primaryKey(key)))
          if page.isFull { return }
        }
        entry = try cursor.next(.next)
      }
    }
    return ids
  }

  /// Hands each matching snapshot of an unsorted fetch to `body` as it is read, within the request's
  /// offset and limit.
  func stream(_ txn: LMDBTransaction, _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void) throws {
    var left = request.effectiveLimit ?? .max
    guard left > 0 else { return }
    try eachMatch(txn, scope.reader(txn), skipping: request.fetchOffset) { snapshot, remaining in
      left -= 1
      try body(consume snapshot, min(remaining, left))
      return left > 0
    }
  }

  /// Hands each object that matches to `body`, in candidate order (the index's, else primary keys',
  /// merged across a hierarchy's tables), with how many candidates follow it, until `body` returns false;
  /// the first `skipping` matches are passed over (see ``scanMatches(_:_:skipping:admits:_:)``).
  func eachMatch(
    _ txn: LMDBTransaction, _ reader: LMDBReader, skipping: Int,
    admits: ((_ table: Int, _ pk: Int64, _ record: UnsafeRawBufferPointer) throws -> Bool)? = nil,
    _ body: (consuming Snapshot, _ remaining: Int) throws -> Bool
  ) throws {
    guard let plan else { return try scanMatches(txn, reader, skipping: skipping, admits: admits, body) }
    var skip = max(skipping, 0)
    let candidates = try plan.candidates(txn)
    for (i, pk) in candidates.enumerated() {
      guard let snapshot = try reader.record(table, pk),
        try evaluator.map({ try $0.evaluate(snapshot, source: reader) }) ?? true
      else { continue }
      if skip > 0 {
        skip -= 1
        continue
      }
      guard try body(snapshot, candidates.count - i - 1) else { return }
    }
  }

  /// How many of `count` results remain after the request's offset and limit.
  static func page(count: Int, _ request: FetchDescription) -> Int {
    let remaining = max(count - max(request.fetchOffset, 0), 0)
    return request.effectiveLimit.map { min($0, remaining) } ?? remaining
  }

  /// Offset and limit applied to results as they are found.
  private struct Page {
    var skipping: Int
    var left: Int

    init(skipping offset: Int, limit: Int?) {
      skipping = max(offset, 0)
      left = limit ?? .max
    }

    /// Whether the next result is on the page (false for those the offset skips).
    mutating func admit() -> Bool {
      if skipping > 0 {
        skipping -= 1
        return false
      }
      left -= 1
      return true
    }

    var isFull: Bool { left <= 0 }

    /// At most how many more results the page takes, of `remaining` candidates.
    func bound(_ remaining: Int) -> Int { min(remaining, left) }
  }
}
