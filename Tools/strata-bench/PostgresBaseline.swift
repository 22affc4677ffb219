import CLibPQ
import Foundation
import Strata

/// The raw libpq engine of one run: a fresh schema on the server (`raw_insert` for the items, `raw_upsert`),
/// Strata's stores in schemas named after it (`<schema>_strata`, …); all dropped when the run closes.
final class PostgresBaseline: SQLBaseline {
  let backend = Backend.postgres
  let uri: String
  let schema: String
  let connection: RawPG
  private var strataSchemas: [String] = []
  let likeIgnoringCase = "ILIKE"
  /// As Strata's text columns are: code-point order, ASCII-only folding.
  let sortedName = "name COLLATE \"C\""

  init(uri: String) throws {
    self.uri = uri
    schema = "bench_" + UUID().uuidString.lowercased().filter(\.isHexDigit).prefix(12)
    connection = try RawPG(uri)
    try connection.exec("CREATE SCHEMA \(schema)")
  }

  var itemTable: String { "\(schema).raw_insert" }

  func strataStore(_ name: String, options: StoreOptions) throws -> StoreDescription {
    let storeSchema = "\(schema)_\(name)"
    strataSchemas.append(storeSchema)
    return StoreDescription(type: .postgres, url: try postgresLocation(uri, schema: storeSchema), options: options)
  }

  func close() {
    for name in [schema] + strataSchemas { try? connection.exec("DROP SCHEMA IF EXISTS \(name) CASCADE") }
  }

  /// A pipelined `INSERT` per row in one transaction.
  func insert(_ rows: [Row]) throws -> Double { try rawPostgresInsert(rows, connection, schema: schema) }

  /// One binary `SELECT` of every column, each value decoded; the rows are kept.
  func scan(expecting count: Int, keeps: Bool) throws -> Double {
    try rawPostgresFetch(expecting: count, connection, table: itemTable)
  }

  /// A prepared primary-key `SELECT` per key, binary results.
  func gets(keys: [Int]) throws -> Double { try rawPostgresFaults(keys.map(Int64.init), connection, table: itemTable) }

  func countWhere(expecting count: Int) throws -> Double {
    try rawPostgresCount(connection, table: itemTable, expecting: count)
  }

  /// `COPY` into a temporary table, then one `INSERT … SELECT … ON CONFLICT (name) DO UPDATE`.
  func upsert(_ rows: [Row]) throws -> Double { try rawPostgresUpsert(rows, connection, schema: schema) }

  /// Both item tables as a server holds them after a while: visibility hints set, statistics gathered.
  func settle() throws {
    try connection.exec("VACUUM ANALYZE \(itemTable)")
    for storeSchema in strataSchemas { try connection.exec("VACUUM ANALYZE \(storeSchema).\"BenchItem\"") }
  }

  /// Connects to the server and runs `sql`: a connection and one query, as Strata's side opens its container.
  func texts(_ sql: String, expecting expected: [String]) throws -> Double {
    let uri = uri
    return try timedTexts(sql, expecting: expected) { try RawPG(uri).texts(sql) }
  }

  var workerLocation: String { (try? postgresLocation(uri, schema: schema).absoluteString) ?? uri }

  func storedRows() throws -> Int {
    guard let stored = Int(try connection.scalar("SELECT count(*) FROM \(itemTable)")) else {
      throw BenchError.store("no count of \(itemTable)")
    }
    return stored
  }

  /// `BEGIN`, one prepared `INSERT`, `COMMIT` per row, on a connection of the worker's own.
  static func saveConcurrently(at location: String, rows: () -> Row, waitForStart: () -> Void, end: Double) throws -> Int {
    guard var components = URLComponents(string: location) else { throw BenchError.store("malformed URI \(location)") }
    let segments = components.path.split(separator: "/").map(String.init)
    guard segments.count == 2 else { throw BenchError.store("\(location) names no schema") }
    components.path = "/" + segments[0]
    guard let base = components.string else { throw BenchError.store("malformed URI \(location)") }
    let connection = try RawPG(base)
    let handle = connection.handle
    let sql =
      "INSERT INTO \(segments[1]).raw_insert (name, category, count, amount, flag, created, code, score, note) "
      + "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    guard let prepared = PQprepare(handle, "save", sql, 9, nil) else { throw BenchError.store("prepare") }
    guard PQresultStatus(prepared) == PGRES_COMMAND_OK else {
      PQclear(prepared)
      throw BenchError.store("prepare: \(String(cString: PQerrorMessage(handle)))")
    }
    PQclear(prepared)
    var saves = 0
    waitForStart()
    while Date().timeIntervalSince1970 < end {
      try connection.exec("BEGIN")
      let result = withCStrings(rawPGTexts(rows())) { values in PQexecPrepared(handle, "save", 9, values, nil, nil, 0) }
      let status = result.map(PQresultStatus)
      PQclear(result)
      guard status == PGRES_COMMAND_OK else { throw BenchError.store("insert: \(String(cString: PQerrorMessage(handle)))") }
      try connection.exec("COMMIT")
      saves += 1
    }
    return saves
  }
}
