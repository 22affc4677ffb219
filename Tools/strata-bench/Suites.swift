import Foundation
import Strata

/// The batch size of the batched-fetch scenario.
let benchBatchSize = 500

/// One run of the SQLite or LMDB scenarios over `rows`: each scenario's raw side, then its Strata side,
/// on files made for this run.
func runBackendScenarios(_ backend: String, rows: [Row], options: Options, recorder: Recorder) throws {
  func wants(_ scenario: String) -> Bool { options.wants(scenario, in: backend) }
  let n = rows.count
  let directory = try freshDirectory()
  defer { try? FileManager.default.removeItem(at: directory) }
  let isSQLite = backend == "sqlite"
  let type: StoreType = isSQLite ? .sqlite : .lmdb
  let rawURL = directory.appending(path: "raw.\(backend)")
  let store = StoreDescription(type: type, url: directory.appending(path: "strata.\(backend)"))
  let reads = [
    "fetch", "faults", "loaded_reads", "loaded_writes", "batched_fetch", "frc_initial", "frc_diffs", "count_where", "sum",
    "batch_update",
  ]
  if wants("insert") || reads.contains(where: wants) {
    let rawInsert = { try isSQLite ? rawSQLiteInsert(rows, at: rawURL) : rawLMDBInsert(rows, at: rawURL) }
    let strataSide = { try strataInsert(rows, store: store) }
    if wants("insert") {
      try recorder.raw("insert", backend, rawInsert)
      try recorder.strata("insert", backend, strataSide)
    } else {
      _ = try rawInsert()
      _ = try strataSide()
    }
  }
  if wants("fetch") {
    try recorder.raw("fetch", backend) {
      try isSQLite ? rawSQLiteScan(expecting: n, at: rawURL) : rawLMDBScan(expecting: n, at: rawURL)
    }
    try recorder.strata("fetch", backend) { try strataFetch(expecting: n, store: store) }
  }
  if wants("faults") {
    let order = shuffledPositions(n)
    let keys = order.map { $0 + 1 }
    let stored = try strataItemIDs(store: store)
    let ids = order.map { stored[$0] }
    try recorder.raw("faults", backend) { try isSQLite ? rawSQLiteGets(keys, at: rawURL) : rawLMDBGets(keys, at: rawURL) }
    try recorder.strata("faults", backend) { try strataFaults(ids, store: store) }
  }
  if wants("loaded_reads") {
    try recorder.raw("loaded_reads", backend) { try rawLoadedReads(rows, passes: loadedReadPasses) }
    try recorder.strata("loaded_reads", backend) {
      try strataLoadedReads(expecting: n, passes: loadedReadPasses, store: store)
    }
  }
  if wants("loaded_writes") {
    try recorder.raw("loaded_writes", backend) { try rawLoadedWrites(rows) }
    try recorder.strata("loaded_writes", backend) { try strataLoadedWrites(expecting: n, store: store) }
  }
  if wants("batched_fetch") {
    try recorder.raw("batched_fetch", backend) {
      try isSQLite ? rawSQLiteScan(expecting: n, at: rawURL, keeps: false) : rawLMDBScan(expecting: n, at: rawURL, keeps: false)
    }
    try recorder.strata("batched_fetch", backend) {
      try strataBatchedFetch(expecting: n, batchSize: benchBatchSize, store: store)
    }
  }
  if wants("count_where") {
    let expected = rows.filter { $0.category == "category-3" && $0.amount > 1000 }.count
    try recorder.raw("count_where", backend) {
      try isSQLite
        ? rawSQLite(
          "SELECT COUNT(*) FROM BenchItem WHERE category = 'category-3' AND amount > 1000", at: rawURL,
          expecting: Double(expected))
        : rawLMDBCountWhere(expecting: expected, at: rawURL)
    }
    try recorder.strata("count_where", backend) { try strataCountWhere(rows, store: store) }
  }
  if isSQLite {
    if wants("sum") {
      try recorder.raw("sum", backend) {
        try rawSQLite("SELECT SUM(amount) FROM BenchItem", at: rawURL, expecting: rows.reduce(0) { $0 + $1.amount })
      }
      try recorder.strata("sum", backend) { try strataSum(rows, store: store) }
    }
    if wants("batch_update") {
      try recorder.raw("batch_update", backend) {
        try rawSQLite("UPDATE BenchItem SET count = count + 1", at: rawURL, expecting: nil)
      }
      try recorder.strata("batch_update", backend) { try strataBatchUpdate(rows, store: store) }
    }
  }
  if wants("frc_initial") || wants("frc_diffs") {
    let changes = max(1, n / 100)
    var rawFigures = (initial: 0.0, diffs: 0.0)
    var strataFigures = (initial: 0.0, diffs: 0.0)
    try recorder.raw("frc_initial", backend) {
      rawFigures =
        try isSQLite
        ? rawSQLiteFetchedResults(expecting: n, changes: changes, at: rawURL)
        : rawLMDBFetchedResults(expecting: n, changes: changes, at: rawURL)
      return rawFigures.initial
    }
    try recorder.strata("frc_initial", backend) {
      strataFigures = try strataFetchedResults(expecting: n, changes: changes, store: store)
      return strataFigures.initial
    }
    recorder.record("frc_diffs", backend, strata: strataFigures.diffs, raw: rawFigures.diffs)
  }
  if wants("batch_insert") {
    let objects = dictionaries(rows)
    try recorder.raw("batch_insert", backend) {
      try isSQLite
        ? rawSQLiteUpsert(rows, at: directory.appending(path: "raw-upsert.sqlite"))
        : rawLMDBUpsert(rows, at: directory.appending(path: "raw-upsert.lmdb"))
    }
    try recorder.strata("batch_insert", backend) {
      try strataBatchInsert(objects, store: StoreDescription(type: type, url: directory.appending(path: "upsert.\(backend)")))
    }
  }
  if wants("traverse_prefetch") || wants("traverse_faults") {
    let movies = max(moviesPerDirector, n / moviesPerDirector * moviesPerDirector)
    let rawTraversal = directory.appending(path: "raw-traversal.\(backend)")
    let traversal = StoreDescription(type: type, url: directory.appending(path: "traversal.\(backend)"))
    try isSQLite
      ? rawSQLiteInsertDirectors(movies: movies, at: rawTraversal) : rawLMDBInsertDirectors(movies: movies, at: rawTraversal)
    try strataInsertDirectors(movies: movies, store: traversal)
    for prefetching in [true, false] {
      let scenario = prefetching ? "traverse_prefetch" : "traverse_faults"
      guard wants(scenario) else { continue }
      try recorder.raw(scenario, backend) {
        try isSQLite
          ? rawSQLiteTraversal(movies: movies, joining: prefetching, at: rawTraversal)
          : rawLMDBTraversal(movies: movies, at: rawTraversal)
      }
      try recorder.strata(scenario, backend) { try strataTraversal(movies: movies, prefetching: prefetching, store: traversal) }
    }
  }
}

/// One run of the batch insert with persistent history on ("strata") and off ("raw"), alternating which
/// goes first.
func runHistoryScenario(_ backend: String, objects: [[String: Strata.Value]], run: Int, recorder: Recorder) throws {
  let directory = try freshDirectory()
  defer { try? FileManager.default.removeItem(at: directory) }
  for tracksHistory in run % 2 == 0 ? [false, true] : [true, false] {
    let store = StoreDescription(
      type: StoreType(backend), url: directory.appending(path: "history-\(tracksHistory).\(backend)"),
      options: StoreOptions(tracksHistory: tracksHistory))
    if tracksHistory {
      try recorder.strata("batch_insert_history", backend) { try strataBatchInsert(objects, store: store) }
    } else {
      try recorder.raw("batch_insert_history", backend) { try strataBatchInsert(objects, store: store) }
    }
  }
}

/// One run of the SQLite migration (a column added with a default, one renamed) against raw ALTER TABLEs.
func runSQLiteMigrationScenario(rows: [Row], recorder: Recorder) throws {
  let directory = try freshDirectory()
  defer { try? FileManager.default.removeItem(at: directory) }
  try recorder.raw("migrate_add_rename", "sqlite") {
    try rawSQLiteMigration(rows, at: directory.appending(path: "raw-migration.sqlite"))
  }
  try recorder.strata("migrate_add_rename", "sqlite") {
    try strataMigration(rows, store: StoreDescription(type: .sqlite, url: directory.appending(path: "migration.sqlite")))
  }
}

/// One run of the LMDB migration against a raw loop that reads every record of a copy of the same
/// environment, re-encodes it with the added value and puts it back; also the floor of copying records whole.
func runLMDBMigrationScenario(rows: [Row], run: Int, recorder: Recorder) throws {
  let directory = try freshDirectory()
  defer { try? FileManager.default.removeItem(at: directory) }
  let url = directory.appending(path: "migrate.lmdb")
  _ = try strataInsert(rows, store: StoreDescription(type: .lmdb, url: url))
  // The raw loops get copies of the environment, made before anything is timed.
  let copies = ["raw-migrate.lmdb", "raw-copy.lmdb"].map { directory.appending(path: $0) }
  for copy in copies {
    try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
    try FileManager.default.copyItem(at: url.appending(path: "data.mdb"), to: copy.appending(path: "data.mdb"))
    // On disk before timing, as the store's own file is (else the raw commit's fdatasync writes the copy).
    let handle = try FileHandle(forUpdating: copy.appending(path: "data.mdb"))
    try handle.synchronize()
    try handle.close()
  }
  // Which runs first alternates (the later one finds the allocator's memory already mapped).
  let strataSide = { try strataMigrate(expecting: rows.count, at: url) }
  if run % 2 == 1 { try recorder.strata("migrate", "lmdb", strataSide) }
  try recorder.raw("migrate", "lmdb") { try rawLMDBMigrate(expecting: rows.count, at: copies[0]) }
  try recorder.note("migrate", "lmdb", "raw_copy_ms", rawLMDBMigrate(expecting: rows.count, at: copies[1], reencodes: false))
  if run % 2 == 0 { try recorder.strata("migrate", "lmdb", strataSide) }
}

/// The concurrent saves, once per backend: `processes` workers of each side for `seconds`; times are
/// milliseconds per save over all workers, and every save must be in the store.
func runConcurrentScenario(options: Options, recorder: Recorder) throws {
  for backend in ["sqlite", "lmdb"] {
    let raw = try runConcurrently(side: "raw", backend: backend, processes: options.processes, seconds: options.seconds)
    let strata = try runConcurrently(side: "strata", backend: backend, processes: options.processes, seconds: options.seconds)
    let scenario = "concurrent_saves"
    recorder.record(
      scenario, backend, strata: options.seconds * 1000 / Double(max(strata, 1)),
      raw: options.seconds * 1000 / Double(max(raw, 1)))
    recorder.note(scenario, backend, "strata_saves_per_s", Double(strata) / options.seconds)
    recorder.note(scenario, backend, "raw_saves_per_s", Double(raw) / options.seconds)
    recorder.note(scenario, backend, "processes", Double(options.processes))
    recorder.note(scenario, backend, "lost", 0)
  }
}
