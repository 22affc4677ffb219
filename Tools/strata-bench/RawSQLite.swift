import CSQLite
import Foundation
import Strata

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

func sqliteText(_ statement: OpaquePointer, _ column: Int32) -> String {
  guard let bytes = sqlite3_column_text(statement, column) else { return "" }
  return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
}

/// The nine BenchItem columns from `first` on, decoded into a row.
func sqliteRow(_ statement: OpaquePointer, from first: Int32 = 0) -> Row {
  Row(
    name: sqliteText(statement, first), category: sqliteText(statement, first + 1),
    count: sqlite3_column_int64(statement, first + 2), amount: sqlite3_column_double(statement, first + 3),
    flag: sqlite3_column_int(statement, first + 4) != 0,
    created: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, first + 5)),
    code: sqlite3_column_int(statement, first + 6), score: Float(sqlite3_column_double(statement, first + 7)),
    note: sqlite3_column_type(statement, first + 8) == SQLITE_NULL ? nil : sqliteText(statement, first + 8))
}

let sqliteItemColumns = "name, category, count, amount, flag, created, code, score, note"

/// An open raw connection, closed when dropped.
final class RawSQLite {
  let db: OpaquePointer

  init(_ url: URL) throws {
    var db: OpaquePointer?
    guard sqlite3_open(url.path, &db) == SQLITE_OK, let db else { throw BenchError.sqlite("cannot open \(url.path)") }
    self.db = db
  }

  deinit { sqlite3_close(db) }

  func exec(_ sql: String) throws {
    guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError.sqlite(String(cString: sqlite3_errmsg(db))) }
  }

  /// Prepares `sql`, runs `body` with the statement and finalizes it.
  func withStatement<R>(_ sql: String, _ body: (OpaquePointer) throws -> R) throws -> R {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
      throw BenchError.sqlite(String(cString: sqlite3_errmsg(db)))
    }
    defer { sqlite3_finalize(statement) }
    return try body(statement)
  }

  func error() -> BenchError { .sqlite(String(cString: sqlite3_errmsg(db))) }
}

/// Reads every row of the raw file's BenchItem table into rows with one prepared SELECT (the baseline of
/// a fetch: every field decoded into a struct); keeps them past the timing with `keeps`, else only sums
/// them (the baseline of a batched walk); returns the time.
func rawSQLiteScan(expecting count: Int, at url: URL, keeps: Bool = true) throws -> Double {
  let raw = try RawSQLite(url)
  var rows: [Row] = []
  var scanned = 0
  var checksum = 0
  let time = try milliseconds {
    try raw.withStatement("SELECT \(sqliteItemColumns) FROM BenchItem ORDER BY _pk") { statement in
      while sqlite3_step(statement) == SQLITE_ROW {
        let row = sqliteRow(statement)
        if keeps { rows.append(row) } else { checksum &+= row.checksum }
        scanned += 1
      }
    }
  }
  guard scanned == count else { throw BenchError.sqlite("scanned \(scanned) rows, expected \(count)") }
  guard keeps || checksum != 0 else { throw BenchError.sqlite("read nothing") }
  return time
}

/// Reads the rows with primary keys `keys` one prepared `SELECT … WHERE _pk = ?` each, decoding every
/// field and keeping the rows.
func rawSQLiteGets(_ keys: [Int], at url: URL) throws -> Double {
  let raw = try RawSQLite(url)
  var rows: [Row] = []
  rows.reserveCapacity(keys.count)
  let time = try milliseconds {
    try raw.withStatement("SELECT \(sqliteItemColumns) FROM BenchItem WHERE _pk = ?") { statement in
      for key in keys {
        sqlite3_bind_int64(statement, 1, Int64(key))
        guard sqlite3_step(statement) == SQLITE_ROW else { throw raw.error() }
        rows.append(sqliteRow(statement))
        sqlite3_reset(statement)
      }
    }
  }
  guard rows.count == keys.count else { throw BenchError.sqlite("read \(rows.count) rows, expected \(keys.count)") }
  return time
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

/// The raw SQLite engine of one run: its files in the run's directory (`raw.sqlite` for the items,
/// `raw-upsert.sqlite`, `raw-traversal.sqlite`, `raw-migration.sqlite`), Strata's stores beside them.
final class SQLiteBaseline: SQLBaseline, FileBaseline {
  let backend = Backend.sqlite
  let directory: URL
  let itemTable = "BenchItem"
  let sortedName = "name"
  let likeIgnoringCase = "LIKE"

  init(directory: URL) { self.directory = directory }

  private var items: URL { file("raw") }

  func insert(_ rows: [Row]) throws -> Double { try rawSQLiteInsert(rows, at: items) }

  func scan(expecting count: Int, keeps: Bool) throws -> Double { try rawSQLiteScan(expecting: count, at: items, keeps: keeps) }

  func gets(keys: [Int]) throws -> Double { try rawSQLiteGets(keys, at: items) }

  func countWhere(expecting count: Int) throws -> Double {
    try statement("SELECT COUNT(*) FROM BenchItem WHERE category = 'category-3' AND amount > 1000", expecting: Double(count))
  }

  func upsert(_ rows: [Row]) throws -> Double { try rawSQLiteUpsert(rows, at: file("raw-upsert")) }

  func fetchedResults(expecting count: Int, changes: Int) throws -> (initial: Double, diffs: Double) {
    try rawSQLiteFetchedResults(expecting: count, changes: changes, at: items)
  }

  private var traversal: URL { file("raw-traversal") }

  func insertDirectors(movies: Int) throws { try rawSQLiteInsertDirectors(movies: movies, at: traversal) }

  func traverse(movies: Int, joining: Bool) throws -> Double {
    try rawSQLiteTraversal(movies: movies, joining: joining, at: traversal)
  }

  /// Runs one statement on the items in a write transaction; its first value must be `expected` when given.
  func statement(_ sql: String, expecting expected: Double?) throws -> Double {
    try rawSQLite(sql, at: items, expecting: expected)
  }

  /// A column added with a default and one renamed, on a table of `rows` of its own (`migrate_add_rename`).
  func migration(_ rows: [Row]) throws -> Double {
    try rawSQLiteMigration(rows, at: file("raw-migration"))
  }

  func texts(_ sql: String, expecting expected: [String]) throws -> Double {
    let url = items
    return try timedTexts(sql, expecting: expected) {
      var found: [String] = []
      let raw = try RawSQLite(url)
      try raw.withStatement(sql) { statement in
        while sqlite3_step(statement) == SQLITE_ROW { found.append(sqliteText(statement, 0)) }
      }
      return found
    }
  }

  var workerLocation: String { items.path }

  func storedRows() throws -> Int {
    let raw = try RawSQLite(items)
    return try raw.withStatement("SELECT COUNT(*) FROM BenchItem") { statement in
      guard sqlite3_step(statement) == SQLITE_ROW else { throw raw.error() }
      return Int(sqlite3_column_int64(statement, 0))
    }
  }

  /// `BEGIN IMMEDIATE`, one prepared `INSERT`, `COMMIT`, waiting up to 30 s for the other writers.
  static func saveConcurrently(at location: String, rows: () -> Row, waitForStart: () -> Void, end: Double) throws -> Int {
    var saves = 0
    let raw = try RawSQLite(URL(fileURLWithPath: location))
    sqlite3_busy_timeout(raw.db, 30_000)
    try raw.exec("PRAGMA synchronous=NORMAL")
    try raw.withStatement(
      "INSERT INTO BenchItem (name, category, count, amount, flag, created, code, score, note) VALUES (?,?,?,?,?,?,?,?,?)"
    ) { statement in
      waitForStart()
      while Date().timeIntervalSince1970 < end {
        try raw.exec("BEGIN IMMEDIATE")
        bindRow(rows(), to: statement)
        guard sqlite3_step(statement) == SQLITE_DONE else { throw raw.error() }
        sqlite3_reset(statement)
        try raw.exec("COMMIT")
        saves += 1
      }
    }
    return saves
  }
}
