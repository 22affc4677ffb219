import CLMDB
import CSQLite
import Foundation
import Strata

/// The queries a user types first (issue 42), each timed as a whole — Strata through a container it opens,
/// the raw side through a connection or environment it opens — against the raw library doing the same
/// matching on the same rows:
/// - `query_first`: open, then the first object (`LIMIT 1`);
/// - `query_page`: the five objects at offset n − 10, in primary-key order;
/// - `query_top10`: the first ten by name (`ORDER BY name LIMIT 10`; no index);
/// - `query_search`: how many names contain "ITEM 99" ignoring case and diacritics (`CONTAINS[cd]`; raw
///   SQLite's `LIKE '%ITEM 99%'` and PostgreSQL's `ILIKE '%ITEM 99%'`, case-insensitive, give the same answer
///   on these ASCII names; raw LMDB lowercases each name and searches it);
/// - `query_count`: how many are in "category-3" (no index).
/// Run with `--only queries` (SQLite, LMDB, and PostgreSQL on the server of `--postgres-uri` or
/// `STRATA_POSTGRES_URI` when one is given), `--rows` or `--scaling` for 100k and 1M. On PostgreSQL each
/// run loads fresh schemas (raw libpq table and Strata store, both vacuumed and analysed before timing)
/// and drops them afterwards.
func runQueryScenarios(_ backend: String, rows: [Row], options: Options, recorder: Recorder) throws {
  func wants(_ scenario: String) -> Bool { options.wants(scenario, in: "queries") }
  let scenarios = ["query_first", "query_page", "query_top10", "query_search", "query_count"]
  guard scenarios.contains(where: wants) else { return }
  let n = rows.count
  let directory = try freshDirectory()
  defer { try? FileManager.default.removeItem(at: directory) }
  let rawURL = directory.appending(path: "raw.\(backend)")
  // The raw side of SQLite and PostgreSQL: a query whose first column, as text, must be `expected`.
  let rawSQL: ((_ sql: String, _ expected: [String]) throws -> Double)?
  // The raw table, its name column as searched and sorted, and its search.
  var table = "BenchItem"
  var nameColumn = "name"
  var like = "LIKE"
  let store: StoreDescription
  var dropSchemas: () -> Void = {}
  defer { dropSchemas() }
  var afterLoad: () throws -> Void = {}
  switch backend {
  case "sqlite":
    _ = try rawSQLiteInsert(rows, at: rawURL)
    store = StoreDescription(type: .sqlite, url: directory.appending(path: "strata.sqlite"))
    rawSQL = { sql, expected in try rawSQLiteNames(sql, at: rawURL, expecting: expected) }
  case "postgres":
    guard let uri = options.postgresURI else { throw BenchError.usage("the PostgreSQL queries need --postgres-uri URI") }
    let schema = "bench_" + UUID().uuidString.lowercased().filter(\.isHexDigit).prefix(12)
    let connection = try RawPG(uri)
    dropSchemas = {
      try? connection.exec("DROP SCHEMA IF EXISTS \(schema) CASCADE")
      try? connection.exec("DROP SCHEMA IF EXISTS \(schema)_strata CASCADE")
    }
    try connection.exec("CREATE SCHEMA \(schema)")
    _ = try rawPostgresInsert(rows, connection, schema: schema)
    store = StoreDescription(type: .postgres, url: try postgresLocation(uri, schema: schema + "_strata"))
    table = "\(schema).raw_insert"
    like = "ILIKE"
    nameColumn = "name COLLATE \"C\""  // as Strata's text columns are: code-point order, ASCII-only folding
    rawSQL = { sql, expected in try rawPostgresNames(sql, uri: uri, expecting: expected) }
    // Both tables as a server holds them after a while: visibility hints set, statistics gathered.
    afterLoad = {
      try connection.exec("VACUUM ANALYZE \(table)")
      try connection.exec("VACUUM ANALYZE \(schema)_strata.\"BenchItem\"")
    }
  default:
    _ = try rawLMDBInsert(rows, at: rawURL)
    store = StoreDescription(type: .lmdb, url: directory.appending(path: "strata.lmdb"))
    rawSQL = nil
  }
  _ = try strataInsert(rows, store: store)
  try afterLoad()

  let names = rows.map(\.name)
  let firstName = names.first ?? ""
  let pageNames = Array(names[max(n - 10, 0)..<max(n - 5, 0)])
  let topNames = Array(names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.prefix(10))
  let searchCount = names.filter { $0.lowercased().contains("item 99") }.count
  let categoryCount = rows.filter { $0.category == "category-3" }.count

  func strata(_ scenario: String, _ request: FetchRequest<BenchItem>, _ expected: [String]) throws {
    try recorder.strata(scenario, backend) {
      var found: [String] = []
      let time = try milliseconds {
        let container = try benchContainer(store)
        defer { container.close() }
        let context = container.newBackgroundContext()
        found = try context.performAndWait { try context.fetch(request).map(\.name) }
      }
      guard found == expected else { throw BenchError.store("\(scenario): \(found.prefix(3)), expected \(expected.prefix(3))") }
      return time
    }
  }
  func strataCount(_ scenario: String, _ format: String, _ expected: Int) throws {
    try recorder.strata(scenario, backend) {
      var counted = 0
      let time = try milliseconds {
        let container = try benchContainer(store)
        defer { container.close() }
        let context = container.newBackgroundContext()
        counted = try context.performAndWait { try context.count(for: FetchRequest<BenchItem>(format: format)) }
      }
      guard counted == expected else { throw BenchError.store("\(scenario): \(counted), expected \(expected)") }
      return time
    }
  }

  if wants("query_first") {
    try recorder.raw("query_first", backend) {
      try rawSQL?("SELECT name FROM \(table) ORDER BY _pk LIMIT 1", [firstName])
        ?? rawLMDBNames(at: rawURL, skipping: 0, taking: 1, expecting: [firstName])
    }
    try strata("query_first", FetchRequest<BenchItem>(fetchLimit: 1), [firstName])
  }
  if wants("query_page") {
    try recorder.raw("query_page", backend) {
      try rawSQL?("SELECT name FROM \(table) ORDER BY _pk LIMIT 5 OFFSET \(max(n - 10, 0))", pageNames)
        ?? rawLMDBNames(at: rawURL, skipping: max(n - 10, 0), taking: 5, expecting: pageNames)
    }
    try strata("query_page", FetchRequest<BenchItem>(fetchLimit: 5, fetchOffset: max(n - 10, 0)), pageNames)
  }
  if wants("query_top10") {
    try recorder.raw("query_top10", backend) {
      try rawSQL?("SELECT name FROM \(table) ORDER BY \(nameColumn) LIMIT 10", topNames)
        ?? rawLMDBTopNames(at: rawURL, expecting: topNames)
    }
    try strata("query_top10", FetchRequest<BenchItem>(sortDescriptors: [QuerySort("name")], fetchLimit: 10), topNames)
  }
  if wants("query_search") {
    try recorder.raw("query_search", backend) {
      try rawSQL?("SELECT COUNT(*) FROM \(table) WHERE \(nameColumn) \(like) '%ITEM 99%'", ["\(searchCount)"])
        ?? rawLMDBCount(at: rawURL, expecting: searchCount) { row in row.name.lowercased().contains("item 99") }
    }
    try strataCount("query_search", "name CONTAINS[cd] 'ITEM 99'", searchCount)
  }
  if wants("query_count") {
    try recorder.raw("query_count", backend) {
      try rawSQL?("SELECT COUNT(*) FROM \(table) WHERE category = 'category-3'", ["\(categoryCount)"])
        ?? rawLMDBCount(at: rawURL, expecting: categoryCount) { $0.category == "category-3" }
    }
    try strataCount("query_count", "category == 'category-3'", categoryCount)
  }
}

/// Times `run` (which opens what it reads), whose rows must be `expected`.
private func rawNames(_ sql: String, expecting expected: [String], _ run: () throws -> [String]) throws -> Double {
  var found: [String] = []
  let time = try milliseconds { found = try run() }
  guard found == expected else { throw BenchError.store("raw \(sql): \(found.prefix(3)), expected \(expected.prefix(3))") }
  return time
}

/// Opens the raw file and runs `sql`, whose rows' first column (as text) must be `expected`.
private func rawSQLiteNames(_ sql: String, at url: URL, expecting expected: [String]) throws -> Double {
  try rawNames(sql, expecting: expected) {
    var found: [String] = []
    let raw = try RawSQLite(url)
    try raw.withStatement(sql) { statement in
      while sqlite3_step(statement) == SQLITE_ROW { found.append(sqliteText(statement, 0)) }
    }
    return found
  }
}

/// Connects to the server at `uri` and runs `sql`, whose rows' first column (as text) must be `expected`.
private func rawPostgresNames(_ sql: String, uri: String, expecting expected: [String]) throws -> Double {
  try rawNames(sql, expecting: expected) { try RawPG(uri).texts(sql) }
}

/// Opens the raw environment and walks its records with one cursor: `body` gets each record's bytes until
/// it returns false.
private func rawLMDBWalk(at url: URL, _ body: (UnsafeRawBufferPointer) -> Bool) throws -> Double {
  try milliseconds {
    let raw = try RawLMDB(path: url)
    try raw.transaction(readOnly: true) { txn in
      try RawLMDB.forEachRecord(in: txn) { _, value in body(value) }
    }
  }
}

/// The names of `taking` records after `skipping` (passed over without decoding).
private func rawLMDBNames(at url: URL, skipping: Int, taking: Int, expecting expected: [String]) throws -> Double {
  var found: [String] = []
  var skip = skipping
  let time = try rawLMDBWalk(at: url) { record in
    if skip > 0 {
      skip -= 1
      return true
    }
    found.append(decodeRawRecord(record).name)
    return found.count < taking
  }
  guard found == expected else { throw BenchError.lmdb("\(found.prefix(3)), expected \(expected.prefix(3))") }
  return time
}

/// The ten first names in code-point order, kept sorted while every record is decoded.
private func rawLMDBTopNames(at url: URL, expecting expected: [String]) throws -> Double {
  var top: [String] = []
  let time = try rawLMDBWalk(at: url) { record in
    let name = decodeRawRecord(record).name
    if top.count < 10 || name.utf8.lexicographicallyPrecedes(top[top.count - 1].utf8) {
      let index = top.firstIndex { name.utf8.lexicographicallyPrecedes($0.utf8) } ?? top.count
      top.insert(name, at: index)
      if top.count > 10 { top.removeLast() }
    }
    return true
  }
  guard top == expected else { throw BenchError.lmdb("\(top.prefix(3)), expected \(expected.prefix(3))") }
  return time
}

/// How many records (each decoded) satisfy `test`.
private func rawLMDBCount(at url: URL, expecting expected: Int, _ test: (Row) -> Bool) throws -> Double {
  var counted = 0
  let time = try rawLMDBWalk(at: url) { record in
    if test(decodeRawRecord(record)) { counted += 1 }
    return true
  }
  guard counted == expected else { throw BenchError.lmdb("counted \(counted), expected \(expected)") }
  return time
}
