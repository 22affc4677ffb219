import Foundation

/// What an SQL backend's query language does its own way; ``SQLQueryCompiler`` does the rest. Every
/// requirement is a point where SQLite and PostgreSQL write the same meaning differently
/// (docs/ARCHITECTURE.md, "Query compilation"): boolean literals, bound value types, comparisons of
/// possibly-NULL values, string operators and options, numeric casts and functions, folds, sorting, and
/// Codable attributes. Each returns SQL whose answer follows docs/QUERY-SEMANTICS.md.
///
/// ```swift
/// enum SQLiteDialect: SQLDialect { static let trueLiteral = "1"; … }
/// let query = try SQLQueryCompiler<SQLiteDialect>.compile(request, schema: schema, storeIdentifier: id)
/// ```
package protocol SQLDialect {
  associatedtype Schema: SQLSchemaDescription
  typealias Binding = Schema.Binding
  typealias Fragment = SQLFragment<Schema.Binding>
  typealias Operand = SQLOperand<Schema.Binding>

  /// A condition that always holds (`1`, `TRUE`), and one that never does.
  static var trueLiteral: String { get }
  static var falseLiteral: String { get }
  /// How many terms one `AND`/`OR` joins flat; longer lists are grouped (``SQLFragment/joined(_:_:empty:groupingPast:)``).
  static var junctionLimit: Int { get }

  // MARK: Values

  /// An object's primary key, bound.
  static func integer(_ value: Int64) -> Binding
  /// A text (an entity name), bound.
  static func text(_ value: String) -> Binding
  /// A constant other than an object ID, bound for comparison with a value of `kind` (`nil`: unknown).
  static func binding(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> Binding
  /// Whether values of `type` compare as strings (string options apply to them).
  static func isText(_ type: AttributeType) -> Bool
  /// A column (or element subquery) of `type` as compared: e.g. a decimal under its collation.
  static func attributeValue(_ sql: String, _ type: AttributeType) -> String
  /// `sql` read as a double.
  static func real(_ sql: Fragment) -> Fragment

  // MARK: Sorting

  /// The `ORDER BY` terms sorting by `column` (an attribute of `type`) as `sort` says, nil first ascending.
  static func orderTerms(_ column: String, _ type: AttributeType, _ sort: QuerySort) -> [String]
  /// The `ORDER BY` term of a group-by value of a grouped dictionary fetch without sort descriptors.
  static func groupOrderTerm(_ sql: String) -> String

  // MARK: Folds

  /// `@sum`, `@avg`, `@min`, `@max` of `column` over a to-many relationship's rows (after `SELECT`).
  static func aggregate(_ op: ResolvedKeyPath.AggregateOperator, _ column: String, isFloating: Bool) -> String
  /// A collection function over the values `x` of a collection key path's elements (after `SELECT`).
  static func elementFold(_ function: CollectionFunction, _ x: Fragment, isFloating: Bool) -> Fragment
  /// A collection function over a literal of expressions (`sum:({1, rating})`).
  static func literalFold(_ function: CollectionFunction, _ items: [Operand]) -> Operand
  /// A collection function over the rows of a group of a dictionary fetch, as that fetch's column.
  static func groupFold(_ function: CollectionFunction, _ x: Fragment, isFloating: Bool) -> Fragment

  // MARK: Expressions

  /// `lowercase:`, `uppercase:` or `canonical:` of `argument`.
  static func textFunction(_ name: String, _ argument: Fragment) -> Fragment
  /// A unary numeric function, `modulus:by:` or `raise:toPower:` of `arguments`.
  static func numericFunction(_ name: String, _ arguments: [Fragment]) -> Fragment
  /// A key path's value of `type` as an argument of arithmetic.
  static func numericArgument(_ sql: Fragment, _ type: AttributeType) -> Fragment
  /// The operands of `left / right`, which divides doubles and gives nil for a zero divisor.
  static func division(_ left: Fragment, _ right: Fragment) -> (Fragment, Fragment)

  // MARK: Comparisons

  /// `left` and `right` are the same value, nil equal to nil (never NULL).
  static func isSame(_ left: Fragment, _ right: Fragment) -> Fragment
  /// `left op right` (an ordering of two values neither of which is a nil, NaN or folded constant),
  /// never NULL.
  static func ordered(_ left: Operand, _ op: ComparisonOperator, _ right: Operand) -> Fragment
  /// `left IN` the constants `items` as one SQL `IN`, when the dialect has a faster form than the `OR`
  /// of equalities; `nil` otherwise.
  static func inList(_ left: Operand, _ items: [Operand], folds: Bool) -> Fragment?
  /// A string operator (or a comparison under string options) as ``StringSemantics`` answers it, never
  /// NULL; neither side is a nil constant unless `op` is `==` or `!=`.
  static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment
  /// `column` (a Codable attribute's JSON text) compared as `comparison` says, `rhs` its checked constant
  /// (the rules of `JSONComparison`).
  static func jsonComparison(
    _ column: String, _ path: ResolvedKeyPath, _ comparison: Comparison, _ rhs: Value, entity: String
  ) throws -> Fragment
}
