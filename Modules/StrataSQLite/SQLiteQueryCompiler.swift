import Foundation
import StrataStoreKit

/// A piece of SQL and the values bound to its `?` placeholders, in order.
typealias Fragment = SQLFragment<SQLValue>

/// Compiles a checked ``FetchDescription`` into SQLite's SQL: the shared ``SQLQueryCompiler`` in
/// ``SQLiteDialect``.
typealias SQLiteQueryCompiler = SQLQueryCompiler<SQLiteDialect>

/// SQLite's side of the query compiler. Conditions are `0` or `1`; what SQLite has no function for runs
/// in Swift as application-defined functions (``SQLiteFunctions``), so it answers exactly as the evaluator:
/// - string operators and `[c]`/`[d]` options call `strata_string` (``StringSemantics``), sorts by a
///   comparator use its collation, decimal columns the exact `STRATA_DECIMAL` collation;
/// - `lowercase:`/`uppercase:`/`canonical:` call `strata_text`, numeric functions and folds over a
///   literal `strata_apply`, folds over elements and `median:`/`mode:`/`stddev:` `strata_fold`;
/// - floating-point attributes are read `CAST(… AS REAL)` in arithmetic, division always in `REAL`;
/// - orderings guard nullable sides with `IS NOT NULL` (computed ones with `COALESCE(…, 0)`);
/// - `IN` a list of constants is one SQL `IN` (past 64 integers, one `json_each` parameter);
/// - an `AND`/`OR` of more than 64 terms is grouped: SQLite refuses a left-deep tree deeper than 1,000
///   levels ("Expression tree is too large").
enum SQLiteDialect: SQLDialect {
  typealias Schema = SQLiteSchema
  typealias Kind = SQLOperand<SQLValue>.Kind

  static let trueLiteral = "1"
  static let falseLiteral = "0"
  static let junctionLimit = 64

  static func integer(_ value: Int64) -> SQLValue { .integer(value) }
  static func text(_ value: String) -> SQLValue { .text(value) }

  static func binding(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> SQLValue {
    if case .decimal(let d) = value {
      // Compared with a decimal column, the text meets the column's STRATA_DECIMAL collation (exact);
      // compared with anything numeric, SQLite's numeric affinity turns it into a number.
      if case .attribute(.decimal) = kind { return .text("\(d)") }
      return value.numericValue.map(SQLValue.real) ?? .null
    }
    return SQLiteSchema.encode(value)
  }

  static func isText(_ type: AttributeType) -> Bool { type == .string }

  static func attributeValue(_ sql: String, _ type: AttributeType) -> String {
    type == .decimal ? "(\(sql) COLLATE \(SQLiteFunctions.decimalCollation))" : sql
  }

  static func real(_ sql: Fragment) -> Fragment { Fragment("CAST(") + sql + Fragment(" AS REAL)") }

  static func orderTerms(_ column: String, _ type: AttributeType, _ sort: QuerySort) -> [String] {
    var expression = column
    if type == .decimal { expression += " COLLATE \(SQLiteFunctions.decimalCollation)" }
    if type == .string, let collation = SQLiteFunctions.collation(for: sort.comparator) {
      expression += " COLLATE \(collation)"
    }
    return [expression + (sort.ascending ? " ASC" : " DESC")]
  }

  static func groupOrderTerm(_ sql: String) -> String { "\(sql) ASC" }

  static func aggregate(_ op: ResolvedKeyPath.AggregateOperator, _ column: String, isFloating: Bool) -> String {
    switch op {
    case .sum: "COALESCE(SUM(\(column)), 0)"
    case .avg: "AVG(CAST(\(column) AS REAL))"
    case .min: "MIN(\(column))"
    case .max: "MAX(\(column))"
    }
  }

  static func elementFold(_ function: CollectionFunction, _ x: Fragment, isFloating: Bool) -> Fragment {
    Fragment("\(SQLiteFunctions.foldFunction)('\(function.rawValue)', ") + x + Fragment(")")
  }

  static func literalFold(_ function: CollectionFunction, _ items: [Operand]) -> Operand {
    let kind: Kind = items.contains { $0.kind == .string } ? .string : .other
    let yieldsElement = function == .min || function == .max || function == .mode
    return Operand(
      fragment: apply(function.rawValue, items.map(\.fragment)), nullable: true, kind: yieldsElement ? kind : .other,
      isComputed: true)
  }

  static func groupFold(_ function: CollectionFunction, _ x: Fragment, isFloating: Bool) -> Fragment {
    switch function {
    case .sum: Fragment("COALESCE(SUM(") + x + Fragment("), 0)")
    case .count: Fragment("COUNT(") + x + Fragment(")")
    case .average: Fragment("AVG(CAST(") + x + Fragment(" AS REAL))")
    case .min: Fragment("MIN(") + x + Fragment(")")
    case .max: Fragment("MAX(") + x + Fragment(")")
    case .mode, .median, .stddev: elementFold(function, x, isFloating: isFloating)
    }
  }

  static func textFunction(_ name: String, _ argument: Fragment) -> Fragment {
    let code = SQLiteFunctions.textFunctionCode(name) ?? 0
    return Fragment("\(SQLiteFunctions.textFunction)(\(code), ") + argument + Fragment(")")
  }

  static func numericFunction(_ name: String, _ arguments: [Fragment]) -> Fragment { apply(name, arguments) }

  /// `strata_apply(name, arguments…)`: the function as ``ExpressionFunctions/apply(_:_:)`` computes it.
  private static func apply(_ name: String, _ arguments: [Fragment]) -> Fragment {
    var fragment = Fragment("\(SQLiteFunctions.applyFunction)('\(name)'")
    for argument in arguments { fragment = fragment + Fragment(", ") + argument }
    return fragment + Fragment(")")
  }

  /// Floating-point attributes are read as `REAL`, so SQL computes in `Double` as the evaluator does.
  static func numericArgument(_ sql: Fragment, _ type: AttributeType) -> Fragment {
    type == .double || type == .float ? real(sql) : sql
  }

  static func division(_ left: Fragment, _ right: Fragment) -> (Fragment, Fragment) { (real(left), right) }

  static func isSame(_ left: Fragment, _ right: Fragment) -> Fragment {
    Fragment("(") + left + Fragment(" IS ") + right + Fragment(")")
  }

  static func ordered(_ left: Operand, _ op: ComparisonOperator, _ right: Operand) -> Fragment {
    let comparison = Fragment("(") + left.fragment + Fragment(" \(op.rawValue) ") + right.fragment + Fragment(")")
    if left.isComputed || right.isComputed { return Fragment("COALESCE(") + comparison + Fragment(", 0)") }
    var guards: [Fragment] = []
    if left.nullable { guards.append(left.fragment + Fragment(" IS NOT NULL")) }
    if right.nullable { guards.append(right.fragment + Fragment(" IS NOT NULL")) }
    guards.append(comparison)
    return SQLiteQueryCompiler.junction(guards, "AND", empty: trueLiteral)
  }

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

  static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment {
    let head = "\(SQLiteFunctions.stringFunction)(\(SQLiteFunctions.operatorCode(op)), \(options.rawValue), "
    return Fragment(head) + left.fragment + Fragment(", ") + right.fragment + Fragment(")")
  }
}
