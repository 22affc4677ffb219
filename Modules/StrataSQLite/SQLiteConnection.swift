import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

/// A value as SQLite stores it: what the store binds to statements and reads from rows.
enum SQLValue: Sendable, Hashable {
  case null
  case integer(Int64)
  case real(Double)
  case text(String)
  case blob(Data)
}

/// Where the connections log their statements (``StrataLog``).
let sqlLog = StrataLog.logger("strata.sqlite")

extension SQLValue {
  /// The value as a statement log shows it: text quoted and cut at 80 characters, blobs by size.
  var logDescription: String {
    switch self {
    case .null: "NULL"
    case .integer(let value): "\(value)"
    case .real(let value): "\(value)"
    case .text(let value): "'\(value.count > 80 ? String(value.prefix(80)) + "…" : value)'"
    case .blob(let data): "<\(data.count) bytes>"
    }
  }
}

/// A failed SQLite call: the (extended) result code, SQLite's message and the statement involved.
struct SQLiteError: Error, Sendable, CustomStringConvertible {
  var code: Int32
  var extendedCode: Int32
  var message: String
  var sql: String?
  /// The operating system's error number behind an I/O failure (`ENOSPC` for a full disk), 0 when none.
  var systemErrno: Int32 = 0

  /// The primary result code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, …).
  var primaryCode: Int32 { code & 0xff }

  var description: String {
    if let sql { return "\(message) (SQLite code \(extendedCode), in: \(sql))" }
    return "\(message) (SQLite code \(extendedCode))"
  }
}

/// One SQLite database connection: prepared-statement cache, binding, stepping and transactions.
///
/// A connection is not thread-safe (it is opened with `SQLITE_OPEN_NOMUTEX`). It is `@unchecked Sendable`
/// only so that it can live inside a ``ConnectionSlot``'s mutex: the store touches a connection solely
/// while holding that slot's lock, which is what makes the use single-threaded. The one connection in
/// two slots is the writer lent to a migration's custom stage (``ConnectionSlot/init(borrowing:)``): the
/// migrating thread holds the writer's slot but leaves the connection alone from the moment it hands the
/// borrowing slot to the stage until it has closed that slot, which waits for a call in progress.
final class SQLiteConnection: @unchecked Sendable {
  private var handle: OpaquePointer?
  let path: String
  let isReadOnly: Bool
  /// A cached prepared statement, `inUse` while a call runs it (a nested call of the same SQL prepares
  /// its own): one hash of the SQL per call, where a set of the texts in use cost three more.
  private final class CachedStatement {
    let pointer: OpaquePointer
    var inUse = false
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
  }
  private var cache: [String: CachedStatement] = [:]
  /// The statement found last, under its SQL (kept, so that the address of its UTF-8 stays its own) and that
  /// address: a call with the very same string (a table's `SELECT … WHERE _pk = ?` for every fault) finds it
  /// by comparing the address and length, without hashing the text.
  private var last: (sql: String, address: UnsafeRawPointer, count: Int, entry: CachedStatement)?
  /// How many savepoints ``transaction(immediate:_:)`` holds open inside the connection's transaction.
  private var savepointDepth = 0
  private static let cacheLimit = 128

  /// Opens `path` with the given `sqlite3_open_v2` flags and sets the per-connection pragmas.
  init(path: String, flags: Int32, busyTimeout: Duration = .seconds(5)) throws {
    self.path = path
    self.isReadOnly = flags & SQLITE_OPEN_READONLY != 0
    var db: OpaquePointer?
    // Where this process cannot write (read-only media, a directory it may not write to), SQLite could not
    // create the WAL index it would otherwise need: without a `-wal` file (all of it in the database file)
    // read the file as immutable. With one, SQLite reads it read-only through the existing `-shm` (immutable
    // would skip the commits still in the WAL).
    var name = path
    var openFlags = flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    if flags & SQLITE_OPEN_READONLY != 0 && ReadOnlyMedia.cannotWrite(path)
      && !FileManager.default.fileExists(atPath: path + "-wal")
    {
      let encoded = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path
      name = "file:\(encoded)?immutable=1"
      openFlags |= SQLITE_OPEN_URI
    }
    let rc = sqlite3_open_v2(name, &db, openFlags, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
      let systemErrno = db.map { sqlite3_system_errno($0) } ?? 0
      sqlite3_close_v2(db)
      throw SQLiteError(code: rc & 0xff, extendedCode: rc, message: message, sql: nil, systemErrno: systemErrno)
    }
    handle = db
    sqlite3_extended_result_codes(db, 1)
    let (seconds, attoseconds) = busyTimeout.components
    let milliseconds = max(0, seconds) * 1000 + attoseconds / 1_000_000_000_000_000
    sqlite3_busy_timeout(db, Int32(clamping: milliseconds))
    try SQLiteFunctions.register(on: db)
  }

  deinit { close() }

  var isOpen: Bool { handle != nil }

  /// Finalizes cached statements and closes the database.
  func close() {
    for statement in cache.values { sqlite3_finalize(statement.pointer) }
    cache.removeAll()
    last = nil
    if let handle { sqlite3_close_v2(handle) }
    handle = nil
  }

  private func requireHandle() throws -> OpaquePointer {
    guard let handle else {
      throw SQLiteError(code: SQLITE_MISUSE, extendedCode: SQLITE_MISUSE, message: "the connection is closed", sql: nil)
    }
    return handle
  }

  /// Runs `body` with the database handle (to register or remove a function for one task).
  func withHandle<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
    try body(try requireHandle())
  }

  func error(_ rc: Int32, sql: String?) -> SQLiteError {
    let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
    let extended = handle.map { sqlite3_extended_errcode($0) } ?? rc
    return SQLiteError(
      code: rc & 0xff, extendedCode: extended == 0 ? rc : extended, message: message, sql: sql,
      systemErrno: handle.map { sqlite3_system_errno($0) } ?? 0)
  }

  /// Runs one or more SQL statements without parameters or results (DDL, pragmas, transactions).
  func execute(_ sql: String) throws {
    let db = try requireHandle()
    if StrataLog.level > 0 { sqlLog.debug("\(sql)") }
    var errorMessage: UnsafeMutablePointer<CChar>?
    let rc = sqlite3_exec(db, sql, nil, nil, &errorMessage)
    if rc != SQLITE_OK {
      let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
      sqlite3_free(errorMessage)
      throw SQLiteError(
        code: rc & 0xff, extendedCode: sqlite3_extended_errcode(db), message: message, sql: sql,
        systemErrno: sqlite3_system_errno(db))
    }
  }

  /// Runs `body` with the cached prepared statement for `sql`, bound to `bindings`; resets it afterwards.
  ///
  /// With `textStorage` (at least as many bytes as the bindings' text holds), text is copied there and
  /// bound without SQLite taking a copy of its own; the caller keeps the storage until this returns (the
  /// bindings are cleared before).
  func withStatement<R>(
    _ sql: String, _ bindings: [SQLValue] = [], textStorage: UnsafeMutableRawBufferPointer? = nil,
    _ body: (Statement) throws -> R
  ) throws -> R {
    let db = try requireHandle()
    let pointer: OpaquePointer
    let entry: CachedStatement?
    let existing = cachedStatement(sql)
    if let existing, !existing.inUse {
      pointer = existing.pointer
      entry = existing
    } else {
      var stmt: OpaquePointer?
      let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
      guard rc == SQLITE_OK, let stmt else { throw error(rc, sql: sql) }
      pointer = stmt
      if existing == nil {
        if cache.count >= Self.cacheLimit, let victim = cache.first(where: { !$0.value.inUse }) {
          sqlite3_finalize(victim.value.pointer)
          cache.removeValue(forKey: victim.key)
          if last?.entry === victim.value { last = nil }
        }
        let added = CachedStatement(stmt)
        cache[sql] = added
        entry = added
      } else {
        entry = nil
      }
    }
    entry?.inUse = true
    defer {
      sqlite3_reset(pointer)
      sqlite3_clear_bindings(pointer)
      if let entry { entry.inUse = false } else { sqlite3_finalize(pointer) }
    }
    let statement = Statement(pointer: pointer, connection: self, sql: sql)
    try statement.bind(bindings, textStorage: textStorage)
    guard StrataLog.level > 0 else { return try body(statement) }
    let started = ContinuousClock.now
    do {
      let result = try body(statement)
      logStatement(sql, bindings, started: started, outcome: nil)
      return result
    } catch {
      logStatement(sql, bindings, started: started, outcome: "failed: \(error)")
      throw error
    }
  }

  /// The cached statement of `sql`, if any: ``last`` when `sql` is the same string, else by the text's hash.
  @inline(__always)
  private func cachedStatement(_ sql: String) -> CachedStatement? {
    let address = Self.storageAddress(sql)
    if let last, let address, address == last.address, sql.utf8.count == last.count { return last.entry }
    let found = cache[sql]
    if let found, let address { last = (sql, address, sql.utf8.count, found) }
    return found
  }

  /// Where a native string longer than a small string keeps its UTF-8 (the same for every copy of it, and
  /// no other string's while one is kept); `nil` for a small string, whose bytes are copied to the stack.
  @inline(__always)
  private static func storageAddress(_ sql: String) -> UnsafeRawPointer? {
    guard sql.utf8.count > 15 else { return nil }
    return sql.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
  }

  /// Logs a statement run (``StrataLog``): its SQL, and from level 2 its bound values and duration.
  private func logStatement(_ sql: String, _ bindings: [SQLValue], started: ContinuousClock.Instant, outcome: String?) {
    guard StrataLog.level >= 2 else {
      sqlLog.debug("\(sql)\(outcome.map { " — \($0)" } ?? "")")
      return
    }
    let values = bindings.isEmpty ? "" : " [\(bindings.map(\.logDescription).joined(separator: ", "))]"
    sqlLog.debug("\(sql)\(values) — \(StrataLog.milliseconds(since: started))\(outcome.map { ", \($0)" } ?? "")")
  }

  /// Runs a statement that returns no rows; returns the number of rows it changed.
  @discardableResult
  func run(_ sql: String, _ bindings: [SQLValue] = []) throws -> Int {
    try withStatement(sql, bindings) { statement in
      while try statement.step() {}
      return Int(sqlite3_changes(statement.database))
    }
  }

  /// ``run(_:_:)`` for a statement of many bindings (several rows of an insert): their text is copied
  /// once into one buffer held for the run, instead of SQLite allocating, copying and freeing each string
  /// under its allocator's mutex.
  @discardableResult
  func runCopyingTextOnce(_ sql: String, _ bindings: [SQLValue]) throws -> Int {
    var bytes = 0
    for case .text(let text) in bindings { bytes += text.utf8.count }
    let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes, 1), alignment: 1)
    defer { storage.deallocate() }
    return try withStatement(sql, bindings, textStorage: storage) { statement in
      while try statement.step() {}
      return Int(sqlite3_changes(statement.database))
    }
  }

  /// Runs a query and maps each row.
  func query<R>(_ sql: String, _ bindings: [SQLValue] = [], _ row: (Statement) throws -> R) throws -> [R] {
    try withStatement(sql, bindings) { statement in
      var rows: [R] = []
      while try statement.step() { rows.append(try row(statement)) }
      if StrataLog.level >= 3 { sqlLog.debug("→ \(rows.count) rows") }
      return rows
    }
  }

  /// Runs `body` and returns the rowid of every row it updated, in the order SQLite updated them: one
  /// `sqlite3_update_hook` call per row, which costs less than `RETURNING` or a second query. The hook
  /// sees rowid tables only (every entity table is one), and rows a failed statement touched before it
  /// failed are reported too: a caller that rolls back discards the answer.
  func updatedRowIDs(_ body: () throws -> Void) throws -> [Int64] {
    let db = try requireHandle()
    return try HookCollector<Int64>.collect { rowIDs in
      sqlite3_update_hook(
        db,
        { context, operation, _, _, rowID in
          guard let context, operation == SQLITE_UPDATE else { return }
          HookCollector<Int64>.append(rowID, at: context)
        }, rowIDs)
      defer { sqlite3_update_hook(db, nil, nil) }
      try body()
    }
  }

  /// Runs `body` and returns the rowid of every row it inserted or updated, in order, each with whether it
  /// was an insert (`sqlite3_update_hook`, as ``updatedRowIDs(_:)``): an upsert names its row either way.
  func writtenRowIDs(_ body: () throws -> Void) throws -> [(rowID: Int64, isInsert: Bool)] {
    let db = try requireHandle()
    return try HookCollector<(rowID: Int64, isInsert: Bool)>.collect { written in
      sqlite3_update_hook(
        db,
        { context, operation, _, _, rowID in
          guard let context, operation == SQLITE_UPDATE || operation == SQLITE_INSERT else { return }
          HookCollector<(rowID: Int64, isInsert: Bool)>.append((rowID, operation == SQLITE_INSERT), at: context)
        }, written)
      defer { sqlite3_update_hook(db, nil, nil) }
      try body()
    }
  }

  /// Prepares `sql` outside the statement cache, for a caller that holds several statements at once and
  /// finalizes them itself (`sqlite3_finalize`).
  func prepare(_ sql: String) throws -> Statement {
    let db = try requireHandle()
    var stmt: OpaquePointer?
    let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
    guard rc == SQLITE_OK, let stmt else { throw error(rc, sql: sql) }
    return Statement(pointer: stmt, connection: self, sql: sql)
  }

  /// The first column of the first row, or `nil` when there is no row.
  func scalar(_ sql: String, _ bindings: [SQLValue] = []) throws -> SQLValue? {
    try withStatement(sql, bindings) { statement in
      try statement.step() ? statement.value(at: 0) : nil
    }
  }

  /// Whether SQLite opened the main database read-only (for example because the file is not writable).
  var isDatabaseReadOnly: Bool { handle.map { sqlite3_db_readonly($0, "main") == 1 } ?? true }

  var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

  /// Whether the connection is inside an open transaction.
  var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

  /// Runs `body` inside a transaction (`BEGIN IMMEDIATE` for writers); commits on success and rolls
  /// back on any error.
  ///
  /// Inside a transaction already open on the connection (a store bound to a migration's transaction
  /// saving), `body` runs in a savepoint instead: released on success, rolled back to on error, so a
  /// failing write undoes only itself and the enclosing transaction goes on.
  func transaction<R>(immediate: Bool = true, _ body: () throws -> R) throws -> R {
    if isInTransaction { return try savepoint(body) }
    try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      rollback()
      throw error
    }
  }

  /// Runs `body` in a savepoint of the open transaction (see ``transaction(immediate:_:)``).
  private func savepoint<R>(_ body: () throws -> R) throws -> R {
    savepointDepth += 1
    defer { savepointDepth -= 1 }
    let name = "strata_savepoint_\(savepointDepth)"
    try execute("SAVEPOINT \(name)")
    do {
      let result = try body()
      try execute("RELEASE \(name)")
      return result
    } catch {
      // An error SQLite answers by rolling back the whole transaction (a full disk) leaves no savepoint.
      if isInTransaction { try? execute("ROLLBACK TO \(name); RELEASE \(name)") }
      throw error
    }
  }

  /// Rolls back the open transaction, if any.
  func rollback() {
    if isInTransaction { try? execute("ROLLBACK") }
  }
}

/// A prepared statement borrowed from a connection's cache for the duration of one call.
struct Statement: SQLRow {
  let pointer: OpaquePointer
  unowned let connection: SQLiteConnection
  let sql: String

  var database: OpaquePointer? { sqlite3_db_handle(pointer) }

  /// Binds `values` to the parameters in order. With `textStorage`, text is copied into it (from its
  /// start, back to back) and bound as SQLite's static text: the storage must hold every string's UTF-8
  /// and outlive the bindings (``SQLiteConnection/withStatement(_:_:textStorage:_:)`` clears them).
  func bind(_ values: [SQLValue], textStorage: UnsafeMutableRawBufferPointer? = nil) throws {
    var stored = 0
    for (offset, value) in values.enumerated() {
      let index = Int32(offset + 1)
      let rc: Int32
      switch value {
      case .null: rc = sqlite3_bind_null(pointer, index)
      case .integer(let i): rc = sqlite3_bind_int64(pointer, index, i)
      case .real(let d): rc = sqlite3_bind_double(pointer, index, d)
      case .text(let s):
        rc = s.withUTF8Contents { buffer in
          // An empty buffer may have no address, which SQLite would bind as NULL.
          guard let base = buffer.baseAddress else { return sqlite3_bind_text(pointer, index, "", 0, nil) }
          guard let storage = textStorage?.baseAddress, stored + buffer.count <= textStorage?.count ?? 0 else {
            return sqlite3_bind_text(pointer, index, base, Int32(buffer.count), strata_sqlite_transient())
          }
          let target = storage + stored
          target.copyMemory(from: base, byteCount: buffer.count)
          stored += buffer.count
          return sqlite3_bind_text(pointer, index, target.assumingMemoryBound(to: CChar.self), Int32(buffer.count), nil)
        }
      case .blob(let data):
        if data.isEmpty {
          rc = sqlite3_bind_zeroblob(pointer, index, 0)
        } else {
          rc = data.withUnsafeBytes { bytes in
            sqlite3_bind_blob(pointer, index, bytes.baseAddress, Int32(bytes.count), strata_sqlite_transient())
          }
        }
      }
      if rc != SQLITE_OK { throw connection.error(rc, sql: sql) }
    }
  }

  /// Rewinds the statement so it can run again with new bindings.
  func reset() { sqlite3_reset(pointer) }

  /// Advances to the next row: `true` when a row is available, `false` when the statement is done.
  func step() throws -> Bool {
    let rc = sqlite3_step(pointer)
    switch rc {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default: throw connection.error(rc, sql: sql)
    }
  }

  func isNull(_ column: Int32) -> Bool { sqlite3_column_type(pointer, column) == SQLITE_NULL }
  func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(pointer, column) }
  func double(_ column: Int32) -> Double { sqlite3_column_double(pointer, column) }

  func text(_ column: Int32) -> String {
    guard let bytes = sqlite3_column_text(pointer, column) else { return "" }
    let count = Int(sqlite3_column_bytes(pointer, column))
    return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
  }

  func blob(_ column: Int32) -> Data {
    guard let bytes = sqlite3_column_blob(pointer, column) else { return Data() }
    return Data(bytes: bytes, count: Int(sqlite3_column_bytes(pointer, column)))
  }

  /// The column as a ``SQLValue`` of its stored type.
  func value(at column: Int32) -> SQLValue {
    switch sqlite3_column_type(pointer, column) {
    case SQLITE_NULL: .null
    case SQLITE_INTEGER: .integer(int64(column))
    case SQLITE_FLOAT: .real(double(column))
    case SQLITE_BLOB: .blob(blob(column))
    default: .text(text(column))
    }
  }
}
