import CLMDB
import CSQLite
import Foundation
import Strata
import StrataLMDB
import StrataMemory
import StrataPostgres
import StrataSQLite

final class BenchItem: ManagedObject {
  @Attribute var name: String
  @Attribute var category: String
  @Attribute var count: Int64
  @Attribute var amount: Double
  @Attribute var flag: Bool
  @Attribute var created: Date
  @Attribute var code: Int32
  @Attribute var score: Float
  @Attribute var note: String?
}

/// BenchItem with a unique name: the batch-insert scenario upserts on it.
final class BenchUnique: ManagedObject {
  @Attribute(.unique) var name: String
  @Attribute var category: String
  @Attribute var count: Int64
  @Attribute var amount: Double
  @Attribute var flag: Bool
  @Attribute var created: Date
  @Attribute var code: Int32
  @Attribute var score: Float
  @Attribute var note: String?
}

struct Row {
  var name: String
  var category: String
  var count: Int64
  var amount: Double
  var flag: Bool
  var created: Date
  var code: Int32
  var score: Float
  var note: String?

  static func make(_ i: Int) -> Row {
    Row(
      name: "Item \(i)", category: "category-\(i % 17)", count: Int64(i), amount: Double(i) * 1.25, flag: i % 2 == 0,
      created: Date(timeIntervalSinceReferenceDate: Double(i) * 60), code: Int32(i % 1000), score: Float(i % 100) / 10,
      note: i % 3 == 0 ? nil : "note \(i)")
  }
}

enum BenchError: Error, CustomStringConvertible {
  case sqlite(String)
  case lmdb(String)
  /// A Strata scenario that went wrong, whichever the store.
  case store(String)
  var description: String {
    switch self {
    case .sqlite(let message): "sqlite: \(message)"
    case .lmdb(let message): "lmdb: \(message)"
    case .store(let message): "strata: \(message)"
    }
  }
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
  let start = DispatchTime.now().uptimeNanoseconds
  try body()
  return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
}

func freshDirectory() throws -> URL {
  let url = FileManager.default.temporaryDirectory.appending(path: "strata-bench-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}

func benchContainer(_ store: StoreDescription) throws -> PersistentContainer {
  let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory(), MemoryStoreFactory(), PostgresStoreFactory()])
  let container = PersistentContainer(
    name: "Bench", model: try ObjectModel(types: [BenchItem.self, BenchUnique.self]),
    types: [BenchItem.self, BenchUnique.self], registry: registry)
  container.storeDescriptions = [store]
  try container.loadPersistentStores()
  return container
}

func strataInsert(_ rows: [Row], store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var creation = 0.0
    let total = try milliseconds {
      creation = milliseconds {
        for row in rows {
          let item = BenchItem(context: context)
          item.name = row.name
          item.category = row.category
          item.count = row.count
          item.amount = row.amount
          item.flag = row.flag
          item.created = row.created
          item.code = row.code
          item.score = row.score
          item.note = row.note
        }
      }
      try context.save()
    }
    if ProcessInfo.processInfo.environment["STRATA_BENCH_PHASES"] != nil {
      FileHandle.standardError.write(
        Data(String(format: "  phases: create+set %.1f ms, save %.1f ms\n", creation, total - creation).utf8))
    }
    return total
  }
}

func rawSQLiteInsert(_ rows: [Row], at url: URL) throws -> Double {
  try rawSQLiteRowLoop(
    rows, at: url,
    schema: """
      CREATE TABLE BenchItem (_pk INTEGER PRIMARY KEY, _version INTEGER NOT NULL DEFAULT 1, name TEXT NOT NULL,
        category TEXT NOT NULL, count INTEGER NOT NULL, amount REAL NOT NULL, flag INTEGER NOT NULL,
        created REAL NOT NULL, code INTEGER NOT NULL, score REAL NOT NULL, note TEXT)
      """,
    statement:
      "INSERT INTO BenchItem (name, category, count, amount, flag, created, code, score, note) VALUES (?,?,?,?,?,?,?,?,?)")
}

/// Creates `schema` in a new file at `url`, then times `statement` run once per row (the nine fields bound
/// in order) in one transaction: the raw loops Strata is compared with.
func rawSQLiteRowLoop(_ rows: [Row], at url: URL, schema: String, statement sql: String) throws -> Double {
  var db: OpaquePointer?
  guard sqlite3_open(url.path, &db) == SQLITE_OK, let db else { throw BenchError.sqlite("cannot open \(url.path)") }
  defer { sqlite3_close(db) }
  func exec(_ sql: String) throws {
    guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError.sqlite(String(cString: sqlite3_errmsg(db))) }
  }
  try exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
  try exec(schema)
  return try milliseconds {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw BenchError.sqlite(String(cString: sqlite3_errmsg(db)))
    }
    defer { sqlite3_finalize(statement) }
    try exec("BEGIN IMMEDIATE")
    for row in rows {
      sqlite3_bind_text(statement, 1, row.name, -1, strata_sqlite_transient())
      sqlite3_bind_text(statement, 2, row.category, -1, strata_sqlite_transient())
      sqlite3_bind_int64(statement, 3, row.count)
      sqlite3_bind_double(statement, 4, row.amount)
      sqlite3_bind_int(statement, 5, row.flag ? 1 : 0)
      sqlite3_bind_double(statement, 6, row.created.timeIntervalSinceReferenceDate)
      sqlite3_bind_int(statement, 7, row.code)
      sqlite3_bind_double(statement, 8, Double(row.score))
      if let note = row.note {
        sqlite3_bind_text(statement, 9, note, -1, strata_sqlite_transient())
      } else {
        sqlite3_bind_null(statement, 9)
      }
      guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError.sqlite(String(cString: sqlite3_errmsg(db))) }
      sqlite3_reset(statement)
    }
    try exec("COMMIT")
  }
}

/// Reads every row of the raw file's BenchItem table into rows with one prepared SELECT (the baseline of
/// a fetch: every field decoded into a struct); returns the time.
func rawSQLiteScan(expecting count: Int, at url: URL) throws -> Double {
  var db: OpaquePointer?
  guard sqlite3_open(url.path, &db) == SQLITE_OK, let db else { throw BenchError.sqlite("cannot open \(url.path)") }
  defer { sqlite3_close(db) }
  func text(_ statement: OpaquePointer, _ column: Int32) -> String {
    guard let bytes = sqlite3_column_text(statement, column) else { return "" }
    return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
  }
  var rows: [Row] = []
  let time = try milliseconds {
    var statement: OpaquePointer?
    let sql = "SELECT name, category, count, amount, flag, created, code, score, note FROM BenchItem ORDER BY _pk"
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw BenchError.sqlite(String(cString: sqlite3_errmsg(db)))
    }
    defer { sqlite3_finalize(statement) }
    while sqlite3_step(statement) == SQLITE_ROW {
      rows.append(
        Row(
          name: text(statement, 0), category: text(statement, 1), count: sqlite3_column_int64(statement, 2),
          amount: sqlite3_column_double(statement, 3), flag: sqlite3_column_int(statement, 4) != 0,
          created: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, 5)),
          code: sqlite3_column_int(statement, 6), score: Float(sqlite3_column_double(statement, 7)),
          note: sqlite3_column_type(statement, 8) == SQLITE_NULL ? nil : text(statement, 8)))
    }
  }
  guard rows.count == count else { throw BenchError.sqlite("scanned \(rows.count) rows, expected \(count)") }
  return time
}

/// The rows as batch-insert dictionaries (built before timing, as the raw loops get theirs ready-made).
func dictionaries(_ rows: [Row]) -> [[String: Strata.Value]] {
  rows.map { row in
    [
      "name": .string(row.name), "category": .string(row.category), "count": .int(row.count), "amount": .double(row.amount),
      "flag": .bool(row.flag), "created": .date(row.created), "code": .int(Int64(row.code)), "score": .double(Double(row.score)),
      "note": row.note.map { .string($0) } ?? .null,
    ]
  }
}

/// A batch insert (upserting on the unique name) of every row through a context, result type status only.
func strataBatchInsert(_ rows: [[String: Strata.Value]], store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var result = BatchResult(count: 0)
    let time = try milliseconds {
      result = try context.execute(BatchInsertRequest<BenchUnique>(objects: rows, resultType: .count))
    }
    guard result.count == rows.count else { throw BenchError.sqlite("batch insert wrote \(result.count) rows") }
    return time
  }
}

/// The raw baseline of a batch upsert: one prepared `INSERT … ON CONFLICT(name) DO UPDATE`, one transaction.
func rawSQLiteUpsert(_ rows: [Row], at url: URL) throws -> Double {
  try rawSQLiteRowLoop(
    rows, at: url,
    schema: """
      CREATE TABLE BenchUnique (_pk INTEGER PRIMARY KEY AUTOINCREMENT, _version INTEGER NOT NULL DEFAULT 1, name TEXT NOT NULL,
        category TEXT NOT NULL, count INTEGER NOT NULL, amount REAL NOT NULL, flag INTEGER NOT NULL,
        created REAL NOT NULL, code INTEGER NOT NULL, score REAL NOT NULL, note TEXT);
      CREATE UNIQUE INDEX BenchUnique_name ON BenchUnique (name)
      """,
    statement: """
      INSERT INTO BenchUnique (name, category, count, amount, flag, created, code, score, note) VALUES (?,?,?,?,?,?,?,?,?)
      ON CONFLICT(name) DO UPDATE SET name = excluded.name, category = excluded.category, count = excluded.count,
      amount = excluded.amount, flag = excluded.flag, created = excluded.created, code = excluded.code,
      score = excluded.score, note = excluded.note, _version = _version + 1
      """)
}

/// The raw baseline of the LMDB migration, on a copy of the store's environment (the same records): in
/// one write transaction, a cursor reads every BenchItem record, re-encodes it field by
/// field in the store's record format (``RawRecordWriter``) with the added `rating` (3) at the end, and
/// puts it back in place (`MDB_CURRENT`). With `reencodes` false, the floor: each record is copied whole
/// with the two bytes of the added value after it.
func rawLMDBMigrate(expecting count: Int, at copy: URL, reencodes: Bool = true) throws -> Double {
  let raw = try RawLMDB(path: copy)
  // An empty write first, as the store runs one while it opens: the environment's first write sets up
  // liblmdb's write buffers.
  try raw.transaction(readOnly: false) { _ in }
  var rewritten = 0
  let time = try milliseconds {
    try raw.transaction(readOnly: false) { txn in
      var cursor: OpaquePointer?
      try RawLMDB.check(mdb_cursor_open(txn, raw.dbi, &cursor), "mdb_cursor_open")
      defer { mdb_cursor_close(cursor) }
      var key = MDB_val()
      var value = MDB_val()
      var op = MDB_FIRST
      var writer = RawRecordWriter()
      while mdb_cursor_get(cursor, &key, &value, op) == MDB_SUCCESS {
        op = MDB_NEXT
        let record = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
        if reencodes { try writer.reencode(record, adding: 3) } else { try writer.copy(record, adding: 3) }
        let bytes = writer.bytes
        var vv = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
        try RawLMDB.check(mdb_cursor_put(cursor, &key, &vv, UInt32(MDB_CURRENT)), "mdb_cursor_put")
        rewritten += 1
      }
    }
  }
  guard rewritten == count else { throw BenchError.lmdb("rewrote \(rewritten) records, expected \(count)") }
  return time
}

/// Migrates the LMDB store at `url`: BenchItem gains `rating` (default 3) and `note` becomes `memo`.
func strataMigrate(expecting count: Int, at url: URL) throws -> Double {
  let store = try LMDBStore(url: url, model: nil)
  let entities = store.model.entities.map { entity -> EntityDescription in
    guard entity.name == "BenchItem" else { return entity }
    let attributes = entity.attributes.map { attribute in
      attribute.name == "note"
        ? AttributeDescription(name: "memo", type: attribute.type, isOptional: true, renamingIdentifier: "note") : attribute
    }
    return EntityDescription(
      name: entity.name, attributes: attributes + [AttributeDescription(name: "rating", type: .int16, defaultValue: 3)],
      relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
  }
  let migration = try ModelMigration(from: store.model, to: try ObjectModel(entities: entities))
  var migrated: LMDBStore?
  let phases = ProcessInfo.processInfo.environment["STRATA_BENCH_PHASES"] != nil
  if phases { resetPeakMemory() }
  let start = residentMemory()
  let time = try milliseconds { migrated = try store.migrated(by: migration) as? LMDBStore }
  defer { migrated?.close() }
  if phases, let start, let end = residentMemory() {
    FileHandle.standardError.write(
      Data(
        String(
          format: "  migration: peak resident memory %.1f MiB (%.1f MiB above its start)\n", end.peak, end.peak - start.current
        ).utf8))
  }
  let rated = try migrated?.count(FetchDescription(entityName: "BenchItem", predicate: try QueryPredicate(format: "rating == 3")))
  guard rated == count else { throw BenchError.store("migrated \(rated ?? 0) rows, expected \(count)") }
  return time
}

/// The resident memory of this process and its peak since the last ``resetPeakMemory()``, in MiB
/// (`VmRSS` and `VmHWM` of /proc/self/status); `nil` where there is no such file.
func residentMemory() -> (current: Double, peak: Double)? {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
  func kibibytes(_ field: String) -> Double? {
    status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
      .flatMap { Double($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
  }
  guard let current = kibibytes("VmRSS"), let peak = kibibytes("VmHWM") else { return nil }
  return (current / 1024, peak / 1024)
}

/// Hands the allocator's free memory back to the system (so that what an earlier scenario freed does not
/// hide what the next one allocates), then resets the peak `residentMemory()` reports to the current size
/// (Linux: 5 into /proc/self/clear_refs).
func resetPeakMemory() {
  // glibc's malloc_trim, looked up at run time (the Glibc module does not declare it).
  if let trim = dlsym(nil, "malloc_trim") {
    _ = unsafeBitCast(trim, to: (@convention(c) (Int) -> Int32).self)(0)
  }
  try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return 0 }
  let mid = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

struct Options {
  var rows = 100_000
  var runs = 3
  var only: String?

  init(_ arguments: [String]) throws {
    var iterator = arguments.dropFirst().makeIterator()
    while let argument = iterator.next() {
      switch argument {
      case "--rows": rows = Int(iterator.next() ?? "") ?? rows
      case "--runs": runs = max(1, Int(iterator.next() ?? "") ?? runs)
      case "--only": only = iterator.next()
      case "--postgres-uri": _ = iterator.next()  // read by postgresBenchURI (PostgresBench.swift)
      case "--help", "-h":
        print(
          """
          strata-bench: measures Strata against raw SQLite and LMDB loops in one run (use a release build).
          usage: strata-bench [--rows N] [--runs N] [--only sqlite|lmdb|history|migration|lmdb-migration]
                 strata-bench --only postgres|postgres-concurrent [--postgres-uri URI] (or STRATA_POSTGRES_URI)
            --rows N   rows per scenario (default 100000)
            --runs N   runs per scenario; medians are printed (default 3)
            --only B   run only the scenarios of one backend, the history comparison, the SQLite migration
                       (also part of a full run) or lmdb-migration (run only when named)
          Prints one line per scenario: SCENARIO BACKEND strata_ms=X raw_ms=Y ratio=R, and for persistent
          history: batch_insert_history_N BACKEND history_on_ms=X history_off_ms=Y overhead=R. lmdb-migration
          also prints raw_copy_ms, the floor of a raw loop that copies each record whole instead of
          re-encoding it. STRATA_BENCH_PHASES=1 adds phases (and the LMDB migration's peak memory, whose
          measurement slows the migration down) on standard error.
          """)
        exit(0)
      default:
        FileHandle.standardError.write(Data("strata-bench: error: unknown argument '\(argument)' (try --help)\n".utf8))
        exit(2)
      }
    }
  }
}

func report(_ scenario: String, _ backend: String, strata: [Double], raw: [Double]) {
  let s = median(strata)
  let r = median(raw)
  print(String(format: "%@ %@ strata_ms=%.1f raw_ms=%.1f ratio=%.2f", scenario, backend, s, r, r > 0 ? s / r : 0))
}

/// Fetches every BenchItem of the store through a fresh container and context and reads every field of
/// every object, as the raw scan decodes every field into a struct; returns the time.
func strataFetch(expecting count: Int, store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var fetched = 0
    var checksum = 0
    var fetching = 0.0
    // Kept past the timing, as the raw scan keeps its rows: neither side is timed freeing its results.
    var items: [BenchItem] = []
    let time = try milliseconds {
      fetching = try milliseconds { items = try context.fetch(FetchRequest<BenchItem>()) }
      for item in items {
        checksum &+= item.name.utf8.count &+ item.category.utf8.count &+ Int(item.count) &+ Int(item.amount)
        checksum &+= (item.flag ? 1 : 0) &+ Int(item.created.timeIntervalSinceReferenceDate) &+ Int(item.code)
        checksum &+= Int(item.score) &+ (item.note?.utf8.count ?? 0)
      }
      fetched = items.count
    }
    guard checksum != 0 else { throw BenchError.store("read nothing") }
    guard fetched == count else { throw BenchError.store("fetched \(fetched) objects, expected \(count)") }
    if ProcessInfo.processInfo.environment["STRATA_BENCH_PHASES"] != nil {
      FileHandle.standardError.write(
        Data(String(format: "  phases: fetch %.1f ms, read %.1f ms\n", fetching, time - fetching).utf8))
    }
    return time
  }
}

/// Runs `sql` on the raw file and returns the time; the first column of the first row must be `expected`.
func rawSQLite(_ sql: String, at url: URL, expecting expected: Double?) throws -> Double {
  var db: OpaquePointer?
  guard sqlite3_open(url.path, &db) == SQLITE_OK, let db else { throw BenchError.sqlite("cannot open \(url.path)") }
  defer { sqlite3_close(db) }
  // As the Strata store's writer: `synchronous` is per connection, and the default (FULL) would sync the
  // WAL at every commit, work the Strata side does not do.
  guard sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nil, nil, nil) == SQLITE_OK else { throw BenchError.sqlite("pragma") }
  return try milliseconds {
    guard sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { throw BenchError.sqlite("begin") }
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw BenchError.sqlite(String(cString: sqlite3_errmsg(db)))
    }
    defer { sqlite3_finalize(statement) }
    let rc = sqlite3_step(statement)
    if let expected {
      guard rc == SQLITE_ROW, sqlite3_column_double(statement, 0) == expected else {
        throw BenchError.sqlite("\(sql) did not give \(expected)")
      }
    }
    guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw BenchError.sqlite("commit") }
  }
}

/// Times the issue-4 operations on a Strata store holding `rows`, checking each answer.
func strataQueries(_ rows: [Row], store: StoreDescription) throws -> (count: Double, sum: Double, update: Double) {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    let expectedCount = rows.filter { $0.category == "category-3" && $0.amount > 1000 }.count
    var counted = 0
    let count = try milliseconds {
      counted = try context.count(for: FetchRequest<BenchItem>(format: "category == 'category-3' AND amount > 1000"))
    }
    guard counted == expectedCount else { throw BenchError.sqlite("counted \(counted), expected \(expectedCount)") }
    var request = FetchRequest<BenchItem>()
    request.propertiesToFetch = [try .expression("total", format: "sum:(amount)", resultType: .double)]
    var total: Double?
    let sum = try milliseconds { total = try context.fetchDictionaries(request).first?["total"]?.numericValue }
    guard total == rows.reduce(0, { $0 + $1.amount }) else { throw BenchError.sqlite("sum \(String(describing: total))") }
    var updated = 0
    let update = try milliseconds {
      updated = try context.execute(
        .update(entityName: "BenchItem", predicate: nil, propertiesToUpdate: ["count": try QueryExpression(format: "count + 1")])
      ).count
    }
    guard updated == rows.count else { throw BenchError.sqlite("updated \(updated)") }
    return (count, sum, update)
  }
}

/// Migrates a SQLite store of `rows` BenchItems to a model that renames `count` to `total` and adds
/// `rating` with a default; returns the time of `migrated(by:)` (the migration and the reopening).
func strataMigration(_ rows: [Row], store: StoreDescription) throws -> Double {
  _ = try strataInsert(rows, store: store)
  guard let url = store.url else { throw BenchError.store("no location") }
  let sqlite = try SQLiteStore(url: url, model: nil)
  let entities = sqlite.model.entities.map { entity -> EntityDescription in
    guard entity.name == "BenchItem" else { return entity }
    let attributes = entity.attributes.map { attribute in
      attribute.name == "count"
        ? AttributeDescription(name: "total", type: attribute.type, renamingIdentifier: "count") : attribute
    }
    return EntityDescription(
      name: entity.name, attributes: attributes + [AttributeDescription(name: "rating", type: .int16, defaultValue: 3)],
      relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
  }
  let migration = try ModelMigration(from: sqlite.model, to: try ObjectModel(entities: entities))
  var closeMigrated: () -> Void = {}
  let time = try milliseconds { closeMigrated = try sqlite.migrated(by: migration).close }
  closeMigrated()
  return time
}

/// The same change on the raw file: `ALTER TABLE … ADD COLUMN` and `RENAME COLUMN` in one transaction.
func rawSQLiteMigration(_ rows: [Row], at url: URL) throws -> Double {
  _ = try rawSQLiteInsert(rows, at: url)
  var db: OpaquePointer?
  guard sqlite3_open(url.path, &db) == SQLITE_OK, let db else { throw BenchError.sqlite("cannot open \(url.path)") }
  defer { sqlite3_close(db) }
  return try milliseconds {
    let sql =
      "BEGIN IMMEDIATE; ALTER TABLE BenchItem ADD COLUMN rating INTEGER NOT NULL DEFAULT 3; "
      + "ALTER TABLE BenchItem RENAME COLUMN count TO total; COMMIT"
    guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError.sqlite(String(cString: sqlite3_errmsg(db))) }
  }
}

do {
  let options = try Options(CommandLine.arguments)
  let rows = (0..<options.rows).map(Row.make)
  var strata: [Double] = []
  var raw: [Double] = []
  let rowDictionaries = dictionaries(rows)
  var batchInsert = (strata: [Double](), raw: [Double]())
  var lmdbBatchInsert = (strata: [Double](), raw: [Double]())
  var queries = (
    count: [Double](), rawCount: [Double](), sum: [Double](), rawSum: [Double](), update: [Double](), rawUpdate: [Double]()
  )
  var sqliteFetch = (strata: [Double](), raw: [Double]())
  for _ in 0..<(options.only == nil || options.only == "sqlite" ? options.runs : 0) {
    let directory = try freshDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let rawURL = directory.appending(path: "raw.sqlite")
    let store = StoreDescription(type: .sqlite, url: directory.appending(path: "strata.sqlite"))
    raw.append(try rawSQLiteInsert(rows, at: rawURL))
    strata.append(try strataInsert(rows, store: store))
    sqliteFetch.raw.append(try rawSQLiteScan(expecting: rows.count, at: rawURL))
    sqliteFetch.strata.append(try strataFetch(expecting: rows.count, store: store))
    let expectedCount = Double(rows.filter { $0.category == "category-3" && $0.amount > 1000 }.count)
    queries.rawCount.append(
      try rawSQLite(
        "SELECT COUNT(*) FROM BenchItem WHERE category = 'category-3' AND amount > 1000", at: rawURL, expecting: expectedCount))
    queries.rawSum.append(
      try rawSQLite("SELECT SUM(amount) FROM BenchItem", at: rawURL, expecting: rows.reduce(0) { $0 + $1.amount }))
    queries.rawUpdate.append(try rawSQLite("UPDATE BenchItem SET count = count + 1", at: rawURL, expecting: nil))
    let timed = try strataQueries(rows, store: store)
    queries.count.append(timed.count)
    queries.sum.append(timed.sum)
    queries.update.append(timed.update)
    batchInsert.raw.append(try rawSQLiteUpsert(rows, at: directory.appending(path: "raw-upsert.sqlite")))
    batchInsert.strata.append(
      try strataBatchInsert(
        rowDictionaries, store: StoreDescription(type: .sqlite, url: directory.appending(path: "upsert.sqlite"))))
  }
  if !strata.isEmpty {
    report("insert_\(options.rows)", "sqlite", strata: strata, raw: raw)
    report("fetch_\(options.rows)", "sqlite", strata: sqliteFetch.strata, raw: sqliteFetch.raw)
    report("count_where_\(options.rows)", "sqlite", strata: queries.count, raw: queries.rawCount)
    report("sum_\(options.rows)", "sqlite", strata: queries.sum, raw: queries.rawSum)
    report("batch_update_\(options.rows)", "sqlite", strata: queries.update, raw: queries.rawUpdate)
    report("batch_insert_\(options.rows)", "sqlite", strata: batchInsert.strata, raw: batchInsert.raw)
  }

  var lmdb = (insert: [Double](), rawInsert: [Double](), fetch: [Double](), rawFetch: [Double]())
  for _ in 0..<(options.only == nil || options.only == "lmdb" ? options.runs : 0) {
    let directory = try freshDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let rawPath = directory.appending(path: "raw.lmdb")
    let store = StoreDescription(type: .lmdb, url: directory.appending(path: "strata.lmdb"))
    lmdb.rawInsert.append(try rawLMDBInsert(rows, at: rawPath))
    lmdb.insert.append(try strataInsert(rows, store: store))
    lmdb.rawFetch.append(try rawLMDBScan(expecting: rows.count, at: rawPath))
    lmdb.fetch.append(try strataFetch(expecting: rows.count, store: store))
    lmdbBatchInsert.raw.append(try rawLMDBUpsert(rows, at: directory.appending(path: "raw-upsert.lmdb")))
    lmdbBatchInsert.strata.append(
      try strataBatchInsert(rowDictionaries, store: StoreDescription(type: .lmdb, url: directory.appending(path: "upsert.lmdb"))))
  }
  if !lmdb.insert.isEmpty {
    report("insert_\(options.rows)", "lmdb", strata: lmdb.insert, raw: lmdb.rawInsert)
    report("fetch_\(options.rows)", "lmdb", strata: lmdb.fetch, raw: lmdb.rawFetch)
    report("batch_insert_\(options.rows)", "lmdb", strata: lmdbBatchInsert.strata, raw: lmdbBatchInsert.raw)
  }

  // Migrating the LMDB store (one attribute added with a default, one renamed) against a raw loop that
  // reads every record of a copy of the same environment, re-encodes it with the added value and puts it back.
  var lmdbMigration = (strata: [Double](), raw: [Double](), copy: [Double]())
  for run in 0..<(options.only == "lmdb-migration" ? options.runs : 0) {
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
    if run % 2 == 1 { lmdbMigration.strata.append(try strataMigrate(expecting: rows.count, at: url)) }
    lmdbMigration.raw.append(try rawLMDBMigrate(expecting: rows.count, at: copies[0]))
    lmdbMigration.copy.append(try rawLMDBMigrate(expecting: rows.count, at: copies[1], reencodes: false))
    if run % 2 == 0 { lmdbMigration.strata.append(try strataMigrate(expecting: rows.count, at: url)) }
  }
  if !lmdbMigration.strata.isEmpty {
    report("migrate_\(options.rows)", "lmdb", strata: lmdbMigration.strata, raw: lmdbMigration.raw)
    print(
      String(
        format: "migrate_%d lmdb raw_copy_ms=%.1f (records copied whole, no re-encoding)", options.rows,
        median(lmdbMigration.copy)))
  }

  // The same batch insert with persistent history on and off (alternating which goes first).
  for backend in ["sqlite", "lmdb"] where options.only == nil || options.only == "history" {
    var timings = (on: [Double](), off: [Double]())
    for run in 0..<options.runs {
      let directory = try freshDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      for tracksHistory in run % 2 == 0 ? [false, true] : [true, false] {
        let store = StoreDescription(
          type: StoreType(backend), url: directory.appending(path: "history-\(tracksHistory).\(backend)"),
          options: StoreOptions(tracksHistory: tracksHistory))
        let time = try strataBatchInsert(rowDictionaries, store: store)
        if tracksHistory { timings.on.append(time) } else { timings.off.append(time) }
      }
    }
    let (on, off) = (median(timings.on), median(timings.off))
    print(
      String(
        format: "batch_insert_history_%d %@ history_on_ms=%.1f history_off_ms=%.1f overhead=%.2f", options.rows, backend, on,
        off, off > 0 ? on / off : 0))
  }

  // Migrating a SQLite store (a column added with a default, one renamed) against raw ALTER TABLEs.
  var migration = (strata: [Double](), raw: [Double]())
  for _ in 0..<(options.only == nil || options.only == "migration" ? options.runs : 0) {
    let directory = try freshDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    migration.raw.append(try rawSQLiteMigration(rows, at: directory.appending(path: "raw-migration.sqlite")))
    migration.strata.append(
      try strataMigration(rows, store: StoreDescription(type: .sqlite, url: directory.appending(path: "migration.sqlite"))))
  }
  if !migration.strata.isEmpty {
    report("migrate_add_rename_\(options.rows)", "sqlite", strata: migration.strata, raw: migration.raw)
  }
  switch options.only {
  case "postgres": try runPostgresBench(rows, rowDictionaries, runs: options.runs, uri: postgresBenchURI(CommandLine.arguments))
  case "postgres-concurrent": try runPostgresConcurrent(uri: postgresBenchURI(CommandLine.arguments))
  case "postgres-saver": try runPostgresSaver(uri: postgresBenchURI(CommandLine.arguments))
  default: break
  }
} catch {
  FileHandle.standardError.write(Data("strata-bench: error: \(error)\n".utf8))
  exit(1)
}
