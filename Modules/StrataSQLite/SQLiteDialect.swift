import Foundation
import StrataSQL
import StrataStoreKit

typealias Fragment = SQLFragment<SQLiteDialect>
typealias Operand = SQLOperand<SQLiteDialect>
typealias SQLiteQueryCompiler = SQLQueryCompiler<SQLiteDialect>

/// SQLite's spelling of the shared query compiler's questions (see `SQLQueryCompiler`). Conditions are `0`
/// or `1`; string operators and `[c]`/`[d]` options call `strata_string`, which runs ``StringSemantics``;
/// `lowercase:`/`uppercase:`/`canonical:` call `strata_text`, functions `strata_apply`, folds `strata_fold`
/// (all from `SQLiteFunctions`); floating-point attributes are read `CAST(… AS REAL)` for arithmetic;
/// decimals compare through the `STRATA_DECIMAL` collation; the string sorts use three collations.
enum SQLiteDialect: SQLDialect {
  typealias Schema = SQLiteSchema

  static let flatJunctionLimit: Int? = 64
  static let trueLiteral = "1"
  static let falseLiteral = "0"
  static let groupOrder = " ASC"

  static func tableName(_ table: String, in schema: SQLiteSchema) -> String { quote(table) }
  static func text(_ text: String) -> SQLValue { .text(text) }
  static func integer(_ value: Int64) -> SQLValue { .integer(value) }

  static func bind(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> SQLValue {
    switch value {
    case .decimal(let d):
      // Compared with a decimal column, the text meets the column's STRATA_DECIMAL collation (exact);
      // compared with anything numeric, SQLite's numeric affinity turns it into a number.
      if case .attribute(.decimal) = kind { return .text("\(d)") }
      return value.numericValue.map(SQLValue.real) ?? .null
    default:
      return SQLiteSchema.encode(value)
    }
  }

  static func comparesAsString(_ type: AttributeType) -> Bool { type == .string }

  static func attributeValue(_ sql: String, _ attribute: AttributeDescription) -> String {
    attribute.type == .decimal ? "(\(sql) COLLATE \(SQLiteFunctions.decimalCollation))" : sql
  }

  static func orderTerms(_ column: String, _ attribute: AttributeDescription, _ sort: QuerySort) -> [String] {
    var expression = column
    if attribute.type == .decimal { expression += " COLLATE \(SQLiteFunctions.decimalCollation)" }
    if attribute.type == .string, let collation = SQLiteFunctions.collation(for: sort.comparator) {
      expression += " COLLATE \(collation)"
    }
    return [expression + (sort.ascending ? " ASC" : " DESC")]
  }

  static func aggregate(
    _ op: ResolvedKeyPath.AggregateOperator, of column: String, _ attribute: AttributeDescription
  ) -> String {
    switch op {
    case .sum: "COALESCE(SUM(\(column)), 0)"
    case .avg: "AVG(CAST(\(column) AS REAL))"
    case .min: "MIN(\(column))"
    case .max: "MAX(\(column))"
    }
  }

  // MARK: Functions

  static func textFunction(_ name: String) -> ((Fragment) -> Fragment)? {
    guard let code = SQLiteFunctions.textFunctionCode(name) else { return nil }
    return { Fragment("\(SQLiteFunctions.textFunction)(\(code), ") + $0 + Fragment(")") }
  }

  /// `strata_apply(name, arguments…)`: the function as ``ExpressionFunctions/apply(_:_:)`` computes it.
  static func numericFunction(_ name: String, _ arguments: [Fragment]) -> Fragment {
    var fragment = Fragment("\(SQLiteFunctions.applyFunction)('\(name)'")
    for argument in arguments { fragment = fragment + Fragment(", ") + argument }
    return fragment + Fragment(")")
  }

  /// Floating-point attributes are read as `REAL`, so SQL computes in `Double` as the evaluator does.
  static func numericArgument(_ argument: Fragment, _ type: AttributeType) -> Fragment {
    type == .double || type == .float ? Fragment("CAST(") + argument + Fragment(" AS REAL)") : argument
  }

  /// SQLite's division by zero is NULL already.
  static func division(_ left: Fragment, _ right: Fragment) -> (Fragment, Fragment) {
    (Fragment("CAST(") + left + Fragment(" AS REAL)"), right)
  }

  static func collectionAggregate(_ function: CollectionFunction, _ element: Fragment, isFloating: Bool) -> Fragment {
    Fragment("\(SQLiteFunctions.foldFunction)('\(function.rawValue)', ") + element + Fragment(")")
  }

  /// `strata_apply` with the items as arguments.
  static func collectionOfItems(_ function: CollectionFunction, _ items: [Operand]) -> Operand {
    let kind: SQLOperandKind = items.contains { $0.kind == .string } ? .string : .other
    let yieldsElement = function == .min || function == .max || function == .mode
    return Operand(
      fragment: numericFunction(function.rawValue, items.map(\.fragment)), nullable: true,
      kind: yieldsElement ? kind : .other, isComputed: true)
  }

  /// `COALESCE(SUM(x), 0)`, `COUNT(x)`, `MIN`, `MAX`, `AVG(CAST(x AS REAL))`, `strata_fold` for `median:`
  /// `mode:` `stddev:`.
  static func dictionaryAggregate(_ function: CollectionFunction, _ x: Fragment, _ decoding: SQLColumnDecoding) -> Fragment {
    switch function {
    case .sum: Fragment("COALESCE(SUM(") + x + Fragment("), 0)")
    case .count: Fragment("COUNT(") + x + Fragment(")")
    case .average: Fragment("AVG(CAST(") + x + Fragment(" AS REAL))")
    case .min, .max: Fragment(function == .min ? "MIN(" : "MAX(") + x + Fragment(")")
    case .mode, .median, .stddev:
      Fragment("\(SQLiteFunctions.foldFunction)('\(function.rawValue)', ") + x + Fragment(")")
    }
  }

  // MARK: Comparisons

  /// `IN` a list of plain constants (none nil, NaN or compared as real) as one SQL `IN`, which SQLite
  /// answers with a lookup per row (or through an index) where the `OR` of `IS` comparisons costs one
  /// comparison per element: `COALESCE(left IN (…), 0)` is what that `OR` gives, nil included. Past 64
  /// integers (object IDs, in a prefetch), the list is one JSON text read by `json_each`, so a list of
  /// any length needs one parameter. `nil` when some element needs more than `left IS ?`.
  static func inList(_ left: Operand, _ items: [Operand], folds: Bool) -> Fragment? {
    guard !folds, !left.isUnordered, !left.isNullConstant else { return nil }
    var values: [SQLValue] = []
    values.reserveCapacity(items.count)
    var integers: [Int64] = []
    for item in items {
      guard item.fragment.sql == "?", item.fragment.bindings.count == 1, !item.isNullConstant, !item.isUnordered,
        !item.comparesAsReal
      else { return nil }
      let value = item.fragment.bindings[0]
      if case .integer(let n) = value { integers.append(n) }
      values.append(value)
    }
    let head = Fragment("COALESCE(") + left.fragment
    if integers.count == values.count, integers.count > 64, left.kind == .other {
      let json = "[" + integers.map(String.init).joined(separator: ",") + "]"
      return head + Fragment(" IN (SELECT value FROM json_each(?)), 0)", [.text(json)])
    }
    let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
    return head + Fragment(" IN (\(placeholders)), 0)", values)
  }

  static func same(_ left: Fragment, _ right: Fragment) -> Fragment {
    Fragment("(") + left + Fragment(" IS ") + right + Fragment(")")
  }

  /// A computed side is compared in `COALESCE(…, 0)`; a column that may be NULL is guarded with
  /// `IS NOT NULL`.
  static func order(_ left: Operand, _ op: ComparisonOperator, _ right: Operand) -> Fragment {
    let comparison = Fragment("(") + left.fragment + Fragment(" \(op.rawValue) ") + right.fragment + Fragment(")")
    if left.isComputed || right.isComputed { return Fragment("COALESCE(") + comparison + Fragment(", 0)") }
    var guards: [Fragment] = []
    if left.nullable { guards.append(left.fragment + Fragment(" IS NOT NULL")) }
    if right.nullable { guards.append(right.fragment + Fragment(" IS NOT NULL")) }
    guards.append(comparison)
    return Fragment.joined(guards, "AND", empty: "1")
  }

  static func real(_ value: Fragment) -> Fragment { Fragment("CAST(") + value + Fragment(" AS REAL)") }

  static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment {
    if let native = nativeStringOperation(left, op, right, options) { return native }
    let head = "\(SQLiteFunctions.stringFunction)(\(SQLiteFunctions.operatorCode(op)), \(options.rawValue), "
    return Fragment(head) + left.fragment + Fragment(", ") + right.fragment + Fragment(")")
  }

  /// A literal (`[n]` or no option) `CONTAINS`, `BEGINSWITH` or `ENDSWITH` of a string against a string
  /// constant in SQLite's own operators, which compare the same UTF-8 bytes ``StringSemantics`` compares;
  /// `nil` for anything else (it goes through `strata_string`). An empty constant matches nothing.
  /// - `CONTAINS`: `instr(x, ?) > 0` (a byte search that starts only at character boundaries, where every
  ///   occurrence of a whole needle starts);
  /// - `BEGINSWITH`: `x >= p AND x < p′`, where `p′` is `p` with its last code point incremented: in code
  ///   point (byte) order exactly the strings that start with `p` lie in that range, and an index on `x`
  ///   can serve it; a left side that is computed, or a needle ending in U+10FFFF, compares
  ///   `substr(CAST(x AS BLOB), 1, n) = p` on bytes instead;
  /// - `ENDSWITH`: `substr(CAST(x AS BLOB), -n) = p` on bytes (a shorter `x` comes back whole, and differs).
  private static func nativeStringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment? {
    guard left.kind == .string, options.isEmpty || options.contains(.normalized),
      op == .contains || op == .beginsWith || op == .endsWith,
      right.fragment.sql == "?", right.fragment.bindings.count == 1,
      case .text(let needle) = right.fragment.bindings[0]
    else { return nil }
    if needle.isEmpty { return "0" }
    let bytes = Data(needle.utf8)
    switch op {
    case .contains:
      return Fragment("COALESCE(instr(") + left.fragment + Fragment(", ?) > 0, 0)", [.text(needle)])
    case .beginsWith:
      if !left.isComputed, let upper = successor(of: needle) {
        var guards: [Fragment] = []
        if left.nullable { guards.append(left.fragment + Fragment(" IS NOT NULL")) }
        guards.append(left.fragment + Fragment(" >= ?", [.text(needle)]))
        guards.append(left.fragment + Fragment(" < ?", [.text(upper)]))
        return Fragment.joined(guards, "AND", empty: "1")
      }
      return Fragment("COALESCE(substr(CAST(") + left.fragment
        + Fragment(" AS BLOB), 1, ?) = ?, 0)", [.integer(Int64(bytes.count)), .blob(bytes)])
    default:
      return Fragment("COALESCE(substr(CAST(") + left.fragment
        + Fragment(" AS BLOB), ?) = ?, 0)", [.integer(-Int64(bytes.count)), .blob(bytes)])
    }
  }

  /// `s` with its last code point replaced by the next one (skipping the surrogates): the least string
  /// greater than every string that starts with `s`. `nil` when that code point is U+10FFFF.
  static func successor(of s: String) -> String? {
    var scalars = Array(s.unicodeScalars)
    guard let last = scalars.last else { return nil }
    var next = last.value + 1
    if next == 0xD800 { next = 0xE000 }
    guard let scalar = Unicode.Scalar(next) else { return nil }
    scalars[scalars.count - 1] = scalar
    var result = ""
    result.unicodeScalars.append(contentsOf: scalars)
    return result
  }
}
