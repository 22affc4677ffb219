import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

/// The SQL functions and collations every connection registers. They call ``StringSemantics`` so that
/// SQL answers exactly what the in-memory evaluator answers; no string rule is written here.
///
/// - `strata_string(op, options, a, b)`: `1` or `0` for the string comparison `a op b` under
///   `options` (`op` is the position of the operator in `ComparisonOperator.allCases`, `options` the
///   raw value of `StringOptions`). nil rules: `==` is true when both sides are nil, `!=` is its
///   negation, every other operator is false when either side is nil. Never returns NULL.
/// - `strata_text(code, s)`: the string function `code` (``textFunctionCode(_:)``: 0 `lowercase:`,
///   1 `uppercase:`, 2 `canonical:`) applied to `s` exactly as the evaluator applies it (Foundation's full
///   Unicode mappings and ``StringSemantics/fold(_:_:)``, never SQLite's ASCII-only `lower()`); NULL for NULL.
/// - `strata_apply(name, a, …)`: ``ExpressionFunctions/apply(_:_:)`` of the arguments (NULL when one is
///   NULL), or, for a ``CollectionFunction`` name, its fold over the arguments (NULLs skipped).
/// - `strata_fold(name, x)`: the aggregate that folds the rows' `x` with the ``CollectionFunction`` `name`.
/// - `strata_refuse(x)`: NULL when `x` is NULL; otherwise fails the statement with
///   `SQLITE_CONSTRAINT_CHECK`. A native batch update calls it for a value its attribute cannot hold
///   (`CASE WHEN v BETWEEN lo AND hi THEN v ELSE strata_refuse(v) END`), so the UPDATE itself fails.
/// - `strata_float(x)`: NULL when `x` is NULL; otherwise the nearest `Float` to `x` as a REAL (what a
///   `float` attribute stores), or, when that `Float` is infinite and `x` is not, the failure of
///   `strata_refuse`. A native batch update writes a `float` attribute through it.
/// - Collations `STRATA_CASE`, `STRATA_LOCALIZED`, `STRATA_STANDARD` for the sort comparators
///   `caseInsensitive`, `localized` and `localizedStandard`.
/// - Collation `STRATA_DECIMAL` for decimal columns (stored as exact text): compares the texts as
///   `Decimal` values, as the evaluator compares decimals (exactly, not through `Double`).
enum SQLiteFunctions {
  static let stringFunction = "strata_string"
  static let decimalCollation = "STRATA_DECIMAL"
  static let textFunction = "strata_text"
  static let applyFunction = "strata_apply"
  static let foldFunction = "strata_fold"
  static let refuseFunction = "strata_refuse"
  static let floatFunction = "strata_float"
  /// The string functions `strata_text` implements, in code order.
  static let textFunctions = ["lowercase:", "uppercase:", "canonical:"]

  /// The `strata_text` code of a string function name, or `nil` when it is not one.
  static func textFunctionCode(_ name: String) -> Int? { textFunctions.firstIndex(of: name) }

  /// The collation implementing a sort comparator, or `nil` for code-point order (SQLite's `BINARY`).
  static func collation(for comparator: StringComparator) -> String? {
    switch comparator {
    case .default: nil
    case .caseInsensitive: "STRATA_CASE"
    case .localized: "STRATA_LOCALIZED"
    case .localizedStandard: "STRATA_STANDARD"
    }
  }

  /// The SQL code of an operator, as `strata_string` expects it.
  static func operatorCode(_ op: ComparisonOperator) -> Int {
    ComparisonOperator.allCases.firstIndex(of: op) ?? 0
  }

  static func register(on db: OpaquePointer) throws {
    let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
    var rc = sqlite3_create_function_v2(db, stringFunction, 4, flags, nil, stringOperation, nil, nil, nil)
    guard rc == SQLITE_OK else { throw registrationError(db, rc, stringFunction) }
    rc = sqlite3_create_function_v2(db, textFunction, 2, flags, nil, textOperation, nil, nil, nil)
    guard rc == SQLITE_OK else { throw registrationError(db, rc, textFunction) }
    rc = sqlite3_create_function_v2(db, applyFunction, -1, flags, nil, applyOperation, nil, nil, nil)
    guard rc == SQLITE_OK else { throw registrationError(db, rc, applyFunction) }
    rc = sqlite3_create_function_v2(db, foldFunction, 2, flags, nil, nil, foldStep, foldFinal, nil)
    guard rc == SQLITE_OK else { throw registrationError(db, rc, foldFunction) }
    // Not deterministic: SQLite must not evaluate it ahead of the row it refuses.
    rc = sqlite3_create_function_v2(db, refuseFunction, 1, SQLITE_UTF8, nil, refuseOperation, nil, nil, nil)
    guard rc == SQLITE_OK else { throw registrationError(db, rc, refuseFunction) }
    rc = sqlite3_create_function_v2(db, floatFunction, 1, SQLITE_UTF8, nil, floatOperation, nil, nil, nil)
    guard rc == SQLITE_OK else { throw registrationError(db, rc, floatFunction) }
    rc = sqlite3_create_function_v2(db, jsonFunction, 2, flags, nil, jsonOperation, nil, nil, nil)
    guard rc == SQLITE_OK else { throw registrationError(db, rc, jsonFunction) }
    let collations:
      [(String, @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32)] = [
        ("STRATA_CASE", compareCaseInsensitive),
        ("STRATA_LOCALIZED", compareLocalized),
        ("STRATA_STANDARD", compareLocalizedStandard),
        (decimalCollation, compareDecimals),
      ]
    for (name, function) in collations {
      rc = sqlite3_create_collation_v2(db, name, SQLITE_UTF8, nil, function, nil)
      guard rc == SQLITE_OK else { throw registrationError(db, rc, name) }
    }
  }

  private static func registrationError(_ db: OpaquePointer, _ rc: Int32, _ name: String) -> SQLiteError {
    SQLiteError(
      code: rc & 0xff, extendedCode: rc, message: "cannot register \(name): \(String(cString: sqlite3_errmsg(db)))",
      sql: nil)
  }

  static func string(_ value: OpaquePointer?) -> String? {
    guard let value, sqlite3_value_type(value) != SQLITE_NULL else { return nil }
    guard let bytes = sqlite3_value_text(value) else { return "" }
    let count = Int(sqlite3_value_bytes(value))
    return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
  }

  /// An SQL value as a ``Value``: INTEGER → `.int`, REAL → `.double`, TEXT → `.string`, BLOB → `.data`.
  static func value(_ value: OpaquePointer?) -> Value {
    guard let value else { return .null }
    switch sqlite3_value_type(value) {
    case SQLITE_INTEGER: return .int(sqlite3_value_int64(value))
    case SQLITE_FLOAT: return .double(sqlite3_value_double(value))
    case SQLITE_TEXT: return string(value).map(Value.string) ?? .null
    case SQLITE_BLOB:
      let count = Int(sqlite3_value_bytes(value))
      guard let bytes = sqlite3_value_blob(value), count > 0 else { return .data(Data()) }
      return .data(Data(bytes: bytes, count: count))
    default: return .null
    }
  }

  /// Sets `value` as the result of the SQL function call `context` (NULL for what SQL cannot hold).
  static func setResult(_ context: OpaquePointer?, _ value: Value) {
    switch value {
    case .int(let i): sqlite3_result_int64(context, i)
    case .bool(let b): sqlite3_result_int64(context, b ? 1 : 0)
    case .double(let d): sqlite3_result_double(context, d)
    case .string(let s):
      let length = Int32(clamping: s.utf8.count)
      s.withCString { sqlite3_result_text(context, $0, length, strata_sqlite_transient()) }
    default: sqlite3_result_null(context)
    }
  }

  static func string(_ bytes: UnsafeRawPointer?, _ count: Int32) -> String {
    guard let bytes, count > 0 else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: bytes, count: Int(count)), as: UTF8.self)
  }
}

private let refuseOperation: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count == 1, let arguments, sqlite3_value_type(arguments[0]) == SQLITE_NULL else {
    refuse(context)
    return
  }
  sqlite3_result_null(context)
}

private func refuse(_ context: OpaquePointer?) {
  sqlite3_result_error(context, "strata_refuse: the value does not fit its attribute", -1)
  sqlite3_result_error_code(context, SQLiteError.constraintCheck)
}

private let floatOperation: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count == 1, let arguments else { return refuse(context) }
  guard sqlite3_value_type(arguments[0]) != SQLITE_NULL else { return sqlite3_result_null(context) }
  let real = sqlite3_value_double(arguments[0])
  guard AttributeType.floatCanHold(real) else { return refuse(context) }
  sqlite3_result_double(context, Double(Float(real)))
}

/// The prepared right side of one `strata_string` call site, kept as SQLite auxiliary data of the
/// argument while it stays the same (a bound constant: the whole statement), so the needle is folded,
/// the pattern parsed or the regular expression compiled once, not once per row.
private final class PreparedOperand {
  let matcher: StringMatcher
  /// The right side's UTF-8, to check that the argument is still the one prepared.
  let bytes: [UInt8]

  init(_ matcher: StringMatcher, _ bytes: [UInt8]) {
    self.matcher = matcher
    self.bytes = bytes
  }

  func isPrepared(for op: ComparisonOperator, _ options: StringOptions, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
    guard matcher.op == op, matcher.givenOptions == options, bytes.count == rhs.count else { return false }
    return bytes.withUnsafeBufferPointer { StringMatcher.compare($0, rhs) == 0 }
  }
}

private let releasePreparedOperand: @convention(c) (UnsafeMutableRawPointer?) -> Void = { pointer in
  guard let pointer else { return }
  RetainedPointer<PreparedOperand>.release(pointer)
}

/// The UTF-8 of a non-NULL SQL value as text (SQLite converts a number or blob to text first).
private func textBytes(_ value: OpaquePointer?) -> UnsafeBufferPointer<UInt8> {
  guard let bytes = sqlite3_value_text(value) else { return UnsafeBufferPointer(start: nil, count: 0) }
  return UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value)))
}

private let stringOperation: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count == 4, let arguments else {
    sqlite3_result_error(context, "strata_string expects 4 arguments", -1)
    return
  }
  let code = Int(sqlite3_value_int64(arguments[0]))
  let operators = ComparisonOperator.allCases
  guard operators.indices.contains(code) else {
    sqlite3_result_error(context, "strata_string: unknown operator code \(code)", -1)
    return
  }
  let op = operators[code]
  let options = StringOptions(rawValue: UInt8(truncatingIfNeeded: sqlite3_value_int64(arguments[1])))
  let lhsIsNull = sqlite3_value_type(arguments[2]) == SQLITE_NULL
  let rhsIsNull = sqlite3_value_type(arguments[3]) == SQLITE_NULL
  guard !lhsIsNull, !rhsIsNull else {
    let result: Bool
    switch op {
    case .equalTo: result = lhsIsNull && rhsIsNull
    case .notEqualTo: result = !(lhsIsNull && rhsIsNull)
    default: result = false
    }
    sqlite3_result_int(context, result ? 1 : 0)
    return
  }
  do {
    let rhs = textBytes(arguments[3])
    // The matcher is used where it lies: a copy of it retained and released each of its arrays per row.
    let prepared: PreparedOperand
    if let pointer = sqlite3_get_auxdata(context, 3),
      case let kept = RetainedPointer<PreparedOperand>.object(at: pointer),
      kept.isPrepared(for: op, options, rhs)
    {
      prepared = kept
    } else {
      prepared = PreparedOperand(try StringMatcher(op, String(decoding: rhs, as: UTF8.self), options), Array(rhs))
      // SQLite may call the destructor at once (when the argument is not a constant); `prepared` is ours.
      sqlite3_set_auxdata(context, 3, RetainedPointer.make(prepared), releasePreparedOperand)
    }
    sqlite3_result_int(context, try prepared.matcher.matches(utf8: textBytes(arguments[2])) ? 1 : 0)
  } catch let error as StoreError {
    sqlite3_result_error(context, error.message, -1)
  } catch {
    sqlite3_result_error(context, "\(error)", -1)
  }
}

private let textOperation: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count == 2, let arguments else {
    sqlite3_result_error(context, "strata_text expects 2 arguments", -1)
    return
  }
  guard let text = SQLiteFunctions.string(arguments[1]) else {
    sqlite3_result_null(context)
    return
  }
  let code = Int(sqlite3_value_int64(arguments[0]))
  guard SQLiteFunctions.textFunctions.indices.contains(code) else {
    sqlite3_result_error(context, "strata_text: unknown function code \(code)", -1)
    return
  }
  guard let result = ExpressionFunctions.applyString(SQLiteFunctions.textFunctions[code], text) else {
    sqlite3_result_null(context)
    return
  }
  let length = Int32(clamping: result.utf8.count)
  result.withCString { sqlite3_result_text(context, $0, length, strata_sqlite_transient()) }
}

private let applyOperation: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count >= 1, let arguments, let name = SQLiteFunctions.string(arguments[0]) else {
    sqlite3_result_error(context, "strata_apply expects a function name", -1)
    return
  }
  var values: [Value] = []
  for index in 1..<Int(count) { values.append(SQLiteFunctions.value(arguments[index])) }
  if let function = CollectionFunction(rawValue: name) {
    SQLiteFunctions.setResult(context, function.fold(values))
  } else if values.contains(where: \.isNull) {
    sqlite3_result_null(context)
  } else {
    SQLiteFunctions.setResult(context, ExpressionFunctions.apply(name, values))
  }
}

/// The values an aggregate `strata_fold` has collected for one group.
private final class FoldState {
  var function: CollectionFunction?
  var values: [Value] = []
}

/// The `FoldState` of the group `context` folds, made on first use and kept in SQLite's aggregate
/// context (a retained pointer, released by `foldFinal`); `nil` when no row was folded.
private func foldState(_ context: OpaquePointer?, create: Bool) -> FoldState? {
  let size = Int32(MemoryLayout<UnsafeMutableRawPointer?>.size)
  guard let slot = sqlite3_aggregate_context(context, create ? size : 0) else { return nil }
  let pointer = slot.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
  if let existing = pointer.pointee { return RetainedPointer<FoldState>.object(at: existing) }
  guard create else { return nil }
  let state = FoldState()
  pointer.pointee = RetainedPointer.make(state)
  return state
}

private let foldStep: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count == 2, let arguments, let state = foldState(context, create: true) else {
    sqlite3_result_error_nomem(context)
    return
  }
  if state.function == nil {
    guard let name = SQLiteFunctions.string(arguments[0]), let function = CollectionFunction(rawValue: name) else {
      sqlite3_result_error(context, "strata_fold: unknown function", -1)
      return
    }
    state.function = function
  }
  state.values.append(SQLiteFunctions.value(arguments[1]))
}

private let foldFinal: @convention(c) (OpaquePointer?) -> Void = { context in
  guard let slot = sqlite3_aggregate_context(context, 0),
    let opaque = slot.assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee
  else {
    // No rows, so no name: NULL, the fold of nothing for all but sum: and count:, which the compiler
    // wraps in COALESCE(…, 0).
    sqlite3_result_null(context)
    return
  }
  let state = RetainedPointer<FoldState>.object(at: opaque)
  RetainedPointer<FoldState>.release(opaque)
  slot.assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee = nil
  SQLiteFunctions.setResult(context, state.function?.fold(state.values) ?? .null)
}

private let compareCaseInsensitive:
  @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32 = {
    _, countA, a, countB, b in
    Int32(
      StringSemantics.compare(SQLiteFunctions.string(a, countA), SQLiteFunctions.string(b, countB), .caseInsensitive).signum())
  }

private let compareLocalized:
  @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32 = {
    _, countA, a, countB, b in
    Int32(StringSemantics.compare(SQLiteFunctions.string(a, countA), SQLiteFunctions.string(b, countB), .localized).signum())
  }

private let compareLocalizedStandard:
  @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32 = {
    _, countA, a, countB, b in
    Int32(
      StringSemantics.compare(SQLiteFunctions.string(a, countA), SQLiteFunctions.string(b, countB), .localizedStandard)
        .signum())
  }

private let compareDecimals:
  @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32 = {
    _, countA, a, countB, b in
    let x = SQLiteFunctions.string(a, countA)
    let y = SQLiteFunctions.string(b, countB)
    guard let dx = Decimal(string: x), let dy = Decimal(string: y), !dx.isNaN, !dy.isNaN else {
      return Int32(StringSemantics.codePointCompare(x, y).signum())
    }
    return dx < dy ? -1 : (dx > dy ? 1 : 0)
  }

// MARK: - Migration

/// The attribute mappings one migration converts values with, as the context of `strata_migrate`.
final class MigrationConversions: Sendable {
  let mappings: [AttributeMapping]

  init(_ mappings: [AttributeMapping]) { self.mappings = mappings }
}

extension SQLiteFunctions {
  /// `strata_migrate(i, x)`: the stored value `x` of the `i`th mapping's source attribute (decoded as its
  /// old type), converted by ``AttributeMapping/convert(_:)`` and encoded as the new type stores it — the
  /// one conversion every backend applies, so a migrated SQLite store holds exactly the memory store's
  /// values. Registered on the writer for the duration of one migration only.
  static let migrateFunction = "strata_migrate"

  static func registerConversions(_ mappings: [AttributeMapping], on db: OpaquePointer) throws {
    let context = RetainedPointer.make(MigrationConversions(mappings))
    // On failure SQLite calls the destructor itself, which releases the context.
    let rc = sqlite3_create_function_v2(
      db, migrateFunction, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, context, migrateOperation, nil, nil,
      releaseConversions)
    guard rc == SQLITE_OK else {
      throw SQLiteError(
        code: rc & 0xff, extendedCode: rc,
        message: "cannot register \(migrateFunction): \(String(cString: sqlite3_errmsg(db)))", sql: nil)
    }
  }

  static func removeConversions(on db: OpaquePointer) {
    sqlite3_create_function_v2(db, migrateFunction, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, nil, nil, nil, nil)
  }

  /// An SQL value as the store reads it from a row.
  static func sqlValue(_ value: OpaquePointer?) -> SQLValue {
    guard let value else { return .null }
    switch sqlite3_value_type(value) {
    case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
    case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
    case SQLITE_TEXT: return string(value).map(SQLValue.text) ?? .null
    case SQLITE_BLOB:
      let count = Int(sqlite3_value_bytes(value))
      guard let bytes = sqlite3_value_blob(value), count > 0 else { return .blob(Data()) }
      return .blob(Data(bytes: bytes, count: count))
    default: return .null
    }
  }

  static func setResult(_ context: OpaquePointer?, _ value: SQLValue) {
    switch value {
    case .null: sqlite3_result_null(context)
    case .integer(let i): sqlite3_result_int64(context, i)
    case .real(let d): sqlite3_result_double(context, d)
    case .text(let s):
      let length = Int32(clamping: s.utf8.count)
      s.withCString { sqlite3_result_text(context, $0, length, strata_sqlite_transient()) }
    case .blob(let data):
      if data.isEmpty {
        sqlite3_result_zeroblob(context, 0)
      } else {
        data.withUnsafeBytes {
          sqlite3_result_blob(context, $0.baseAddress, Int32(clamping: $0.count), strata_sqlite_transient())
        }
      }
    }
  }
}

private let releaseConversions: @convention(c) (UnsafeMutableRawPointer?) -> Void = { pointer in
  guard let pointer else { return }
  RetainedPointer<MigrationConversions>.release(pointer)
}

private let migrateOperation: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
  context, count, arguments in
  guard count == 2, let arguments, let pointer = sqlite3_user_data(context) else {
    sqlite3_result_error(context, "strata_migrate expects 2 arguments", -1)
    return
  }
  let mappings = RetainedPointer<MigrationConversions>.object(at: pointer).mappings
  let index = Int(sqlite3_value_int64(arguments[0]))
  guard mappings.indices.contains(index) else {
    sqlite3_result_error(context, "strata_migrate: unknown mapping \(index)", -1)
    return
  }
  let mapping = mappings[index]
  var old = Value.null
  if let sourceType = mapping.sourceType {
    do {
      old = try SQLiteSchema.decode(
        SQLiteFunctions.sqlValue(arguments[1]), as: sourceType, entity: "", key: mapping.source ?? mapping.attribute.name)
    } catch let error as StoreError {
      sqlite3_result_error(context, "strata_migrate: \(error.message)", -1)
      return
    } catch {
      sqlite3_result_error(context, "strata_migrate: \(error)", -1)
      return
    }
  }
  SQLiteFunctions.setResult(context, SQLiteSchema.encode(mapping.convert(old)))
}
