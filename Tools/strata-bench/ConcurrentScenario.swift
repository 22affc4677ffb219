import CLMDB
import CSQLite
import Foundation
import Strata

/// What one worker process of the concurrent-saves scenario does: which side, which backend, where, when
/// to start (seconds since 1970, so that every worker starts together) and for how long.
struct ConcurrentWorker {
  var side: String
  var backend: String
  var path: String
  var start: Double
  var seconds: Double

  var arguments: [String] { ["--concurrent-worker", side, backend, path, String(start), String(seconds)] }

  init(side: String, backend: String, path: String, start: Double, seconds: Double) {
    (self.side, self.backend, self.path, self.start, self.seconds) = (side, backend, path, start, seconds)
  }

  init(_ arguments: [String]) throws {
    guard arguments.count == 5, let start = Double(arguments[3]), let seconds = Double(arguments[4]) else {
      throw BenchError.store("--concurrent-worker takes SIDE BACKEND PATH START SECONDS")
    }
    self.init(side: arguments[0], backend: arguments[1], path: arguments[2], start: start, seconds: seconds)
  }

  private func waitForStart() {
    let delay = start - Date().timeIntervalSince1970
    if delay > 0 { Thread.sleep(forTimeInterval: delay) }
  }

  private var end: Double { start + seconds }

  /// Saves one new row per transaction until the time is up; returns how many saves committed.
  func run() throws -> Int {
    var saves = 0
    var row = 0
    let pid = Int(getpid())
    func nextRow() -> Row {
      row += 1
      return Row.make(pid * 1_000_000 + row)
    }
    switch (side, backend) {
    case ("strata", _):
      let container = try benchContainer(StoreDescription(type: StoreType(backend), url: URL(fileURLWithPath: path)))
      defer { container.close() }
      let context = container.newBackgroundContext()
      try context.performAndWait {
        waitForStart()
        while Date().timeIntervalSince1970 < end {
          let values = nextRow()
          let item = BenchItem(context: context)
          item.name = values.name
          item.category = values.category
          item.count = values.count
          item.amount = values.amount
          item.flag = values.flag
          item.created = values.created
          item.code = values.code
          item.score = values.score
          item.note = values.note
          try context.save()
          saves += 1
        }
      }
    case ("raw", "sqlite"):
      let raw = try RawSQLite(URL(fileURLWithPath: path))
      sqlite3_busy_timeout(raw.db, 30_000)
      try raw.exec("PRAGMA synchronous=NORMAL")
      try raw.withStatement(
        "INSERT INTO BenchItem (name, category, count, amount, flag, created, code, score, note) VALUES (?,?,?,?,?,?,?,?,?)"
      ) { statement in
        waitForStart()
        while Date().timeIntervalSince1970 < end {
          try raw.exec("BEGIN IMMEDIATE")
          bindRow(nextRow(), to: statement)
          guard sqlite3_step(statement) == SQLITE_DONE else { throw raw.error() }
          sqlite3_reset(statement)
          try raw.exec("COMMIT")
          saves += 1
        }
      }
    case ("raw", "lmdb"):
      let raw = try RawLMDB(path: URL(fileURLWithPath: path))
      waitForStart()
      var buffer: [UInt8] = []
      while Date().timeIntervalSince1970 < end {
        try raw.transaction(readOnly: false) { txn in
          var cursor: OpaquePointer?
          try RawLMDB.check(mdb_cursor_open(txn, raw.dbi, &cursor), "mdb_cursor_open")
          defer { mdb_cursor_close(cursor) }
          var last = MDB_val()
          var ignored = MDB_val()
          var next: UInt64 = 1
          if mdb_cursor_get(cursor, &last, &ignored, MDB_LAST) == MDB_SUCCESS {
            next = UInt64(bigEndian: last.mv_data.loadUnaligned(as: UInt64.self)) + 1
          }
          encodeRawRecord(nextRow(), into: &buffer)
          var key = next.bigEndian
          try withUnsafeMutableBytes(of: &key) { k in
            try buffer.withUnsafeMutableBytes { v in
              var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
              var vv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
              try RawLMDB.check(mdb_put(txn, raw.dbi, &kv, &vv, UInt32(MDB_APPEND)), "mdb_put")
            }
          }
        }
        saves += 1
      }
    default:
      throw BenchError.store("no concurrent worker for \(side) \(backend)")
    }
    return saves
  }
}

/// Binds a row's nine fields to an INSERT's nine parameters.
func bindRow(_ row: Row, to statement: OpaquePointer) {
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
}

/// Runs `processes` workers of one side against one store for `seconds`, then counts the rows: returns
/// the saves the workers reported, which must all be in the store.
func runConcurrently(side: String, backend: String, processes: Int, seconds: Double) throws -> Int {
  let directory = try freshDirectory()
  defer { try? FileManager.default.removeItem(at: directory) }
  let url = directory.appending(path: "concurrent.\(backend)")
  // The store and its table exist before the workers start.
  switch (side, backend) {
  case ("strata", _): try benchContainer(StoreDescription(type: StoreType(backend), url: url)).close()
  case ("raw", "sqlite"): _ = try rawSQLiteInsert([], at: url)
  default: _ = try rawLMDBInsert([], at: url)
  }
  let start = Date().timeIntervalSince1970 + 2
  var workers: [(Process, Pipe)] = []
  for _ in 0..<processes {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    process.arguments =
      ConcurrentWorker(side: side, backend: backend, path: url.path, start: start, seconds: seconds).arguments
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    workers.append((process, out))
  }
  var saves = 0
  for (process, out) in workers {
    let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0, let count = Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
      throw BenchError.store("a \(side) \(backend) worker failed (status \(process.terminationStatus)): \(output)")
    }
    saves += count
  }
  let stored: Int
  switch (side, backend) {
  case ("strata", _):
    let container = try benchContainer(StoreDescription(type: StoreType(backend), url: url))
    defer { container.close() }
    let context = container.newBackgroundContext()
    stored = try context.performAndWait { try context.count(for: FetchRequest<BenchItem>()) }
  case ("raw", "sqlite"):
    let raw = try RawSQLite(url)
    stored = try raw.withStatement("SELECT COUNT(*) FROM BenchItem") { statement in
      guard sqlite3_step(statement) == SQLITE_ROW else { throw raw.error() }
      return Int(sqlite3_column_int64(statement, 0))
    }
  default:
    let raw = try RawLMDB(path: url)
    var entries = 0
    try raw.transaction(readOnly: false) { txn in
      var stat = MDB_stat()
      try RawLMDB.check(mdb_stat(txn, raw.dbi, &stat), "mdb_stat")
      entries = Int(stat.ms_entries)
    }
    stored = entries
  }
  guard stored == saves else {
    throw BenchError.store("\(side) \(backend): workers saved \(saves) rows, the store holds \(stored)")
  }
  return saves
}
