import CLibPQ
import Foundation
import StrataSQL
import StrataStoreKit

/// A value bound to a `$n` parameter: SQL NULL, text in PostgreSQL's input syntax (the server infers
/// the type, or `oid` names it), or bytes in the binary format of the type `oid`.
enum PGParameter: Sendable, Hashable {
  case null
  case text(String, oid: UInt32 = 0)
  case binary([UInt8], oid: UInt32)

  static func int(_ value: Int64) -> PGParameter {
    .binary(withUnsafeBytes(of: value.bigEndian, Array.init), oid: PGType.int8)
  }
  static func double(_ value: Double) -> PGParameter {
    .binary(withUnsafeBytes(of: value.bitPattern.bigEndian, Array.init), oid: PGType.float8)
  }
  static func bool(_ value: Bool) -> PGParameter { .binary([value ? 1 : 0], oid: PGType.bool) }
  static func string(_ value: String) -> PGParameter { .text(value, oid: PGType.text) }
}

/// The type OIDs the store binds and reads (`pg_type`).
enum PGType {
  static let bool: UInt32 = 16
  static let bytea: UInt32 = 17
  static let int8: UInt32 = 20
  static let int2: UInt32 = 21
  static let int4: UInt32 = 23
  static let text: UInt32 = 25
  static let float4: UInt32 = 700
  static let float8: UInt32 = 701
  static let varchar: UInt32 = 1043
  static let timestamptz: UInt32 = 1184
  static let numeric: UInt32 = 1700
  static let uuid: UInt32 = 2950
}

/// A failed libpq call: the server's SQLSTATE (when the server answered), its message and the statement.
struct PostgresError: Error, Sendable, CustomStringConvertible {
  /// The five-character SQLSTATE, or `nil` when the failure happened in the client or the connection.
  var sqlState: String?
  var message: String
  var sql: String?
  /// Whether the connection is gone (the server closed it, the network failed).
  var connectionLost = false

  var description: String { message + (sqlState.map { " (SQLSTATE \($0))" } ?? "") }

  /// A failure; `message` is kept on one line (libpq's connection messages span several, indented by tabs).
  init(sqlState: String? = nil, message: String, sql: String? = nil, connectionLost: Bool = false) {
    self.sqlState = sqlState
    self.message = Self.oneLine(message)
    self.sql = sql
    self.connectionLost = connectionLost
  }

  /// `text` with every run of whitespace that holds a line break or a tab made one space, trimmed.
  ///
  /// ```swift
  /// PostgresError.oneLine("server closed the connection unexpectedly\n\tThis probably means …")
  /// // "server closed the connection unexpectedly This probably means …"
  /// ```
  static func oneLine(_ text: String) -> String {
    guard text.contains(where: { $0.isNewline || $0 == "\t" }) else {
      return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    return text.split(whereSeparator: { $0.isNewline || $0 == "\t" })
      .map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty }
      .joined(separator: " ")
  }

  var isUniqueViolation: Bool { sqlState == "23505" }
  var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
}

/// The rows of one query, in libpq's binary result format; freed when it goes away.
/// One row of a result.
struct PGRow: SQLRow {
  let rows: PGRows
  let row: Int32

  func isNull(_ column: Int32) -> Bool { rows.isNull(row, column) }
  func int64(_ column: Int32) -> Int64 { rows.int64(row, column) }
  func double(_ column: Int32) -> Double { rows.double(row, column) }
  func text(_ column: Int32) -> String { rows.text(row, column) }
}

final class PGRows {
  let result: OpaquePointer
  let count: Int32
  let columns: Int32

  init(_ result: OpaquePointer) {
    self.result = result
    count = PQntuples(result)
    columns = PQnfields(result)
  }

  deinit { PQclear(result) }

  /// Each row, for the shared row decoders.
  var rows: [PGRow] { (0..<count).map { PGRow(rows: self, row: $0) } }

  func isNull(_ row: Int32, _ column: Int32) -> Bool { PQgetisnull(result, row, column) != 0 }

  func type(_ column: Int32) -> UInt32 { PQftype(result, column) }

  /// The raw bytes of a value (binary format).
  func bytes(_ row: Int32, _ column: Int32) -> UnsafeRawBufferPointer {
    let length = Int(PQgetlength(result, row, column))
    guard let pointer = PQgetvalue(result, row, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: length)
  }

  /// A big-endian integer of 2, 4 or 8 bytes.
  func int64(_ row: Int32, _ column: Int32) -> Int64 {
    let raw = bytes(row, column)
    var value: Int64 = 0
    for byte in raw { value = value << 8 | Int64(byte) }
    switch raw.count {
    case 2: return Int64(Int16(truncatingIfNeeded: value))
    case 4: return Int64(Int32(truncatingIfNeeded: value))
    default: return value
    }
  }

  func double(_ row: Int32, _ column: Int32) -> Double {
    let raw = bytes(row, column)
    var bits: UInt64 = 0
    for byte in raw { bits = bits << 8 | UInt64(byte) }
    if raw.count == 4 { return Double(Float(bitPattern: UInt32(truncatingIfNeeded: bits))) }
    return Double(bitPattern: bits)
  }

  func text(_ row: Int32, _ column: Int32) -> String {
    String(decoding: bytes(row, column), as: UTF8.self)
  }

  func data(_ row: Int32, _ column: Int32) -> Data { Data(bytes(row, column)) }
}

/// Where the connections log their statements and the server's notices (``StrataLog``).
let postgresLog = StrataLog.logger("strata.postgres")

/// libpq's notice processor for every connection: a notice or warning from the server goes to the log
/// (with `STRATA_SQL_DEBUG` set), never raw to standard error.
private func strataPostgresNotice(_: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
  guard StrataLog.level > 0, let message else { return }
  postgresLog.debug("server: \(PostgresError.oneLine(String(cString: message)))")
}

/// One libpq connection: statements with parameters, binary results, transactions.
///
/// Not thread-safe; it is `@unchecked Sendable` only to live inside a ``PostgresPool``'s slots, whose
/// mutex makes every use single-threaded.
final class PostgresConnection: @unchecked Sendable {
  private var handle: OpaquePointer?
  /// The URI it was opened with, without a password (for messages).
  let location: String
  private var transactionDepth = 0

  /// Connects and sets the session up: UTC, ISO dates, the store's schema first on the search path.
  init(conninfo: String, location: String, schema: String?, settings: [String: String] = [:]) throws {
    self.location = location
    guard let connection = PQconnectdb(conninfo) else {
      throw PostgresError(message: "libpq could not allocate a connection", connectionLost: true)
    }
    guard PQstatus(connection) == CONNECTION_OK else {
      let message = Self.message(PQerrorMessage(connection))
      PQfinish(connection)
      throw PostgresError(message: message, connectionLost: true)
    }
    handle = connection
    // The server's notices and warnings (`NOTICE: schema … already exists, skipping`, a `FATAL` sent as
    // the server ends the session) go to Strata's log, not raw to standard error; errors reach the
    // caller through the failing call.
    PQsetNoticeProcessor(connection, strataPostgresNotice, nil)
    var setup = ["SET TimeZone = 'UTC'", "SET DateStyle = 'ISO'", "SET extra_float_digits = 3"]
    if let schema { setup.append("SET search_path = \(quoteIdentifier(schema)), public") }
    for (name, value) in settings.sorted(by: { $0.key < $1.key }) {
      setup.append("SET \(name) = \(quoteLiteral(value))")
    }
    // One round trip: the simple-query protocol runs the statements in order and stops at the first error.
    try execute(setup.joined(separator: "; "))
  }

  deinit { close() }

  func close() {
    if let handle { PQfinish(handle) }
    handle = nil
  }

  /// The libpq handle, for calls this type does not wrap (notifications).
  var rawHandle: OpaquePointer? { handle }

  var isOpen: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

  var isInTransaction: Bool {
    guard let handle else { return false }
    return PQtransactionStatus(handle) != PQTRANS_IDLE
  }

  /// Whether the open transaction failed (a statement errored outside a savepoint): it can only roll back.
  var isTransactionFailed: Bool {
    guard let handle else { return true }
    return PQtransactionStatus(handle) == PQTRANS_INERROR
  }

  /// Logs a statement (``StrataLog``, `STRATA_SQL_DEBUG`): its SQL; from level 2 its parameters and,
  /// when `started` is given, its duration.
  static func log(_ sql: String, _ parameters: [PGParameter], started: ContinuousClock.Instant?) {
    guard StrataLog.level >= 2 else {
      postgresLog.debug("\(sql)")
      return
    }
    let values =
      parameters.isEmpty
      ? ""
      : " ["
        + parameters.map { parameter in
          switch parameter {
          case .null: "NULL"
          case .text(let text, _): "'" + text.prefix(200) + (text.count > 200 ? "…" : "") + "'"
          case .binary(let bytes, _): "<\(bytes.count) bytes>"
          }
        }.joined(separator: ", ") + "]"
    postgresLog.debug("\(sql)\(values)\(started.map { " — " + StrataLog.milliseconds(since: $0) } ?? "")")
  }

  static func message(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "unknown error" }
    return String(cString: pointer).trimmingCharacters(in: .whitespacesAndNewlines)
      .replacingOccurrences(of: "\n", with: "; ")
  }

  private func requireHandle() throws -> OpaquePointer {
    guard let handle else { throw PostgresError(message: "the connection is closed", connectionLost: true) }
    return handle
  }

  /// The statements prepared on this connection, by their SQL: the name each was prepared under.
  private var prepared: [String: String] = [:]

  /// Runs `sql` as ``query(_:_:)`` does, through a statement prepared on this connection the first time
  /// (parsed and planned once: for the statements a store runs very often, such as a fault's select by
  /// key). A prepared statement whose result no longer fits the table (SQLSTATE 0A000, after a
  /// migration) is dropped and the statement run unprepared.
  @discardableResult
  func queryPrepared(_ sql: String, _ parameters: [PGParameter]) throws -> PGRows {
    let handle = try requireHandle()
    let name: String
    if let known = prepared[sql] {
      name = known
    } else {
      name = "strata_\(prepared.count + 1)"
      let types = parameters.map { parameter -> UInt32 in
        switch parameter {
        case .null: 0
        case .text(_, let oid), .binary(_, let oid): oid
        }
      }
      guard let result = PQprepare(handle, name, sql, Int32(types.count), types) else {
        throw PostgresError(message: Self.message(PQerrorMessage(handle)), sql: sql, connectionLost: !isOpen)
      }
      defer { PQclear(result) }
      guard PQresultStatus(result) == PGRES_COMMAND_OK else {
        throw Self.failure(result, sql: sql, connectionLost: !isOpen)
      }
      prepared[sql] = name
    }
    do {
      return try query(sql, parameters, preparedAs: name)
    } catch let error as PostgresError where error.sqlState == "0A000" && !isTransactionFailed {
      prepared[sql] = nil
      try? execute("DEALLOCATE \(name)")
      return try query(sql, parameters)
    }
  }

  /// Runs `sql` with `parameters` (`$1`, `$2`, …) and returns its rows in binary format; through the
  /// prepared statement `preparedAs` when given.
  @discardableResult
  func query(_ sql: String, _ parameters: [PGParameter] = [], preparedAs: String? = nil) throws -> PGRows {
    let handle = try requireHandle()
    let started = StrataLog.level >= 2 ? ContinuousClock.now : nil
    defer { if StrataLog.level > 0 { Self.log(sql, parameters, started: started) } }
    let count = parameters.count
    var types = [UInt32](repeating: 0, count: count)
    var formats = [Int32](repeating: 0, count: count)
    var lengths = [Int32](repeating: 0, count: count)
    var buffers: [UnsafeMutablePointer<CChar>?] = []
    buffers.reserveCapacity(count)
    defer { for buffer in buffers { buffer?.deallocate() } }
    for (index, parameter) in parameters.enumerated() {
      switch parameter {
      case .null:
        buffers.append(nil)
      case .text(let string, let oid):
        types[index] = oid
        let utf8 = Array(string.utf8CString)
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
        buffer.initialize(from: utf8, count: utf8.count)
        buffers.append(buffer)
      case .binary(let bytes, let oid):
        types[index] = oid
        formats[index] = 1
        lengths[index] = Int32(bytes.count)
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
        bytes.withUnsafeBufferPointer { source in
          source.withMemoryRebound(to: CChar.self) { chars in
            if let base = chars.baseAddress { buffer.initialize(from: base, count: bytes.count) }
          }
        }
        buffers.append(buffer)
      }
    }
    let result = buffers.withUnsafeBufferPointer { values in
      values.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
        if let preparedAs {
          PQexecPrepared(handle, preparedAs, Int32(count), values.baseAddress, lengths, formats, 1)
        } else {
          PQexecParams(handle, sql, Int32(count), types, values.baseAddress, lengths, formats, 1)
        }
      }
    }
    guard let result else {
      throw PostgresError(message: Self.message(PQerrorMessage(handle)), sql: sql, connectionLost: !isOpen)
    }
    switch PQresultStatus(result) {
    case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
      return PGRows(result)
    default:
      let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
      let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
      let message = primary ?? Self.message(PQresultErrorMessage(result))
      PQclear(result)
      throw PostgresError(sqlState: state, message: message, sql: sql, connectionLost: !isOpen)
    }
  }

  /// The number of rows a command changed.
  @discardableResult
  func run(_ sql: String, _ parameters: [PGParameter] = []) throws -> Int {
    let rows = try query(sql, parameters)
    return Int(String(cString: PQcmdTuples(rows.result))) ?? 0
  }

  /// Runs one or more statements without parameters (simple query protocol).
  func execute(_ sql: String) throws {
    let handle = try requireHandle()
    if StrataLog.level > 0 { Self.log(sql, [], started: nil) }
    guard let result = PQexec(handle, sql) else {
      throw PostgresError(message: Self.message(PQerrorMessage(handle)), sql: sql, connectionLost: !isOpen)
    }
    defer { PQclear(result) }
    switch PQresultStatus(result) {
    case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: return
    default:
      let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
      let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
      throw PostgresError(
        sqlState: state, message: primary ?? Self.message(PQresultErrorMessage(result)), sql: sql, connectionLost: !isOpen)
    }
  }

  /// Runs one or more statements without parameters (simple query protocol) and returns the first
  /// value of the last one's result as text (`""` when it returned no rows).
  func textQuery(_ sql: String) throws -> String {
    let handle = try requireHandle()
    if StrataLog.level > 0 { Self.log(sql, [], started: nil) }
    guard let result = PQexec(handle, sql) else {
      throw PostgresError(message: Self.message(PQerrorMessage(handle)), sql: sql, connectionLost: !isOpen)
    }
    defer { PQclear(result) }
    guard PQresultStatus(result) == PGRES_TUPLES_OK else {
      throw Self.failure(result, sql: sql, connectionLost: !isOpen)
    }
    guard PQntuples(result) > 0, let value = PQgetvalue(result, 0, 0) else { return "" }
    return String(cString: value)
  }

  /// Runs `COPY … FROM STDIN` (`sql`) and sends `data`, in PostgreSQL's text COPY format, in chunks of
  /// a megabyte through `PQputCopyData`. Returns the number of rows copied.
  @discardableResult
  func copyIn(_ sql: String, _ data: [UInt8]) throws -> Int {
    let handle = try requireHandle()
    if StrataLog.level > 0 { Self.log(sql + " (\(data.count) bytes)", [], started: nil) }
    guard let start = PQexec(handle, sql) else {
      throw PostgresError(message: Self.message(PQerrorMessage(handle)), sql: sql, connectionLost: !isOpen)
    }
    guard PQresultStatus(start) == PGRES_COPY_IN else {
      defer { PQclear(start) }
      throw Self.failure(start, sql: sql, connectionLost: !isOpen)
    }
    PQclear(start)
    let chunk = 1 << 20
    var sent = true
    data.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { chars in
        var offset = 0
        while sent, offset < chars.count, let base = chars.baseAddress {
          let length = min(chunk, chars.count - offset)
          sent = PQputCopyData(handle, base + offset, Int32(length)) == 1
          offset += length
        }
      }
    }
    let ended = PQputCopyEnd(handle, sent ? nil : "the client failed to send the rows") == 1
    var failure: PostgresError?
    var copied = 0
    while let result = PQgetResult(handle) {
      if PQresultStatus(result) == PGRES_COMMAND_OK {
        copied = Int(String(cString: PQcmdTuples(result))) ?? 0
      } else if failure == nil {
        failure = Self.failure(result, sql: sql, connectionLost: !isOpen)
      }
      PQclear(result)
    }
    if let failure { throw failure }
    guard sent, ended else {
      throw PostgresError(message: Self.message(PQerrorMessage(handle)), sql: sql, connectionLost: !isOpen)
    }
    return copied
  }

  /// The error a failed result reports.
  private static func failure(_ result: OpaquePointer, sql: String, connectionLost: Bool) -> PostgresError {
    let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
    let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
    return PostgresError(
      sqlState: state, message: primary ?? message(PQresultErrorMessage(result)), sql: sql, connectionLost: connectionLost)
  }

  /// Runs `body` in a transaction (`BEGIN` … `COMMIT`), or in a savepoint inside one already open;
  /// rolls back when it throws.
  func transaction<R>(_ begin: String = "BEGIN", _ body: () throws -> R) throws -> R {
    let nested = transactionDepth > 0
    let savepoint = "strata_\(transactionDepth)"
    try execute(nested ? "SAVEPOINT \(savepoint)" : begin)
    transactionDepth += 1
    defer { transactionDepth -= 1 }
    do {
      let result = try body()
      try execute(nested ? "RELEASE SAVEPOINT \(savepoint)" : "COMMIT")
      return result
    } catch {
      if isOpen { try? execute(nested ? "ROLLBACK TO SAVEPOINT \(savepoint)" : "ROLLBACK") }
      throw error
    }
  }

  /// Runs `statement` in a savepoint, in one round trip with it; rolled back (and the error rethrown) when it
  /// fails, as ``savepoint(_:)``.
  func savepoint(_ statement: String) throws {
    do {
      try execute("SAVEPOINT strata_try; \(statement); RELEASE SAVEPOINT strata_try")
    } catch {
      if isOpen { try? execute("ROLLBACK TO SAVEPOINT strata_try; RELEASE SAVEPOINT strata_try") }
      throw error
    }
  }

  /// Runs `body` in a savepoint, rolled back (and the error rethrown) when it throws; the open
  /// transaction stays usable after a failed statement inside it.
  func savepoint<R>(_ body: () throws -> R) throws -> R {
    try execute("SAVEPOINT strata_try")
    do {
      let result = try body()
      try execute("RELEASE SAVEPOINT strata_try")
      return result
    } catch {
      if isOpen { try? execute("ROLLBACK TO SAVEPOINT strata_try; RELEASE SAVEPOINT strata_try") }
      throw error
    }
  }
}

/// `"name"`: an SQL identifier, quoted.
func quoteIdentifier(_ identifier: String) -> String { SQLLayout.quote(identifier) }

/// `'text'`: an SQL string literal.
func quoteLiteral(_ text: String) -> String {
  "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
}
