import Foundation
import StrataStoreKit

/// What one SQL database spells its own way, for ``SQLQueryCompiler``: literals, how values are bound and
/// cast, how strings are folded, compared and matched, JSON access, sorting and the SQL of aggregates and
/// functions. The compiler walks a checked fetch and builds every statement's shape (joins, `EXISTS`
/// subqueries, correlated aggregates, the two-valued logic of comparisons); a dialect answers only the
/// questions whose answers differ. Each SQL backend has one (`SQLiteDialect`, `PostgresDialect`), a type
/// of static members only.
package protocol SQLDialect: Sendable {
  /// The backend's table layout and value encoding.
  associatedtype Schema: SQLSchemaDescription
  typealias Fragment = SQLFragment<Self>
  typealias Operand = SQLOperand<Self>
  typealias Kind = SQLOperandKind

  /// The most terms an `AND`/`OR` joins flat (see ``SQLFragment/joined(_:_:empty:)``); `nil` for no limit.
  static var flatJunctionLimit: Int? { get }
  /// The literal of a condition that always holds (`1`, `TRUE`).
  static var trueLiteral: String { get }
  /// The literal of a condition that never holds (`0`, `FALSE`).
  static var falseLiteral: String { get }
  /// What follows a group-by value in the `ORDER BY` of a grouped fetch without sort descriptors.
  static var groupOrder: String { get }

  /// `table` (an entity's or a join table's name) as statements name it: quoted, and qualified where the
  /// database has namespaces.
  static func tableName(_ table: String, in schema: Schema) -> String
  /// A text binding (an entity name).
  static func text(_ text: String) -> Schema.Binding
  /// An integer binding (a primary key).
  static func integer(_ value: Int64) -> Schema.Binding
  /// A constant bound for comparison with a value of `kind` (never an object ID, which the compiler binds).
  static func bind(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> Schema.Binding
  /// Whether values of `type` compare as strings (string options apply to them).
  static func comparesAsString(_ type: AttributeType) -> Bool

  /// The value of `attribute` read as `sql` (a column or an element subquery), as comparisons read it.
  static func attributeValue(_ sql: String, _ attribute: AttributeDescription) -> String
  /// The `ORDER BY` terms sorting by `attribute` read as `column`, as `sort` says.
  static func orderTerms(_ column: String, _ attribute: AttributeDescription, _ sort: QuerySort) -> [String]
  /// `rel.attr.@sum` (…) over the target rows' `column`, as the value a correlated subquery selects.
  static func aggregate(_ op: ResolvedKeyPath.AggregateOperator, of column: String, _ attribute: AttributeDescription) -> String
  /// A Codable attribute's `column` compared as `comparison` says, `rhs` its checked constant.
  static func jsonComparison(
    _ column: String, _ path: ResolvedKeyPath, _ comparison: Comparison, _ rhs: Value, entity: String
  ) throws -> Fragment

  /// `lowercase:`, `uppercase:` or `canonical:` of `argument`; `nil` for any other function name.
  static func textFunction(_ name: String) -> ((Fragment) -> Fragment)?
  /// A unary numeric function of ``ExpressionFunctions``, `modulus:by:` or `raise:toPower:`.
  static func numericFunction(_ name: String, _ arguments: [Fragment]) -> Fragment
  /// A numeric argument read from an attribute of `type`, as arithmetic needs it.
  static func numericArgument(_ argument: Fragment, _ type: AttributeType) -> Fragment
  /// The two sides of `divide:by:`: the division is in floating point, and nil for a zero divisor.
  static func division(_ left: Fragment, _ right: Fragment) -> (Fragment, Fragment)
  /// The aggregate `function` over the element rows' `element` (`isFloating`: a floating-point attribute).
  static func collectionAggregate(_ function: CollectionFunction, _ element: Fragment, isFloating: Bool) -> Fragment
  /// `function` over a literal list of values (`sum:({a, b})`).
  static func collectionOfItems(_ function: CollectionFunction, _ items: [Operand]) -> Operand
  /// A dictionary fetch's fold column: `function` over the rows' `value`, read back as `decoding`.
  static func dictionaryAggregate(
    _ function: CollectionFunction, _ value: Fragment, _ decoding: SQLColumnDecoding
  ) -> Fragment

  /// `left IN (items…)` as one SQL `IN`, when the dialect has a faster form than the `OR` of equalities;
  /// `nil` otherwise.
  static func inList(_ left: Operand, _ items: [Operand], folds: Bool) -> Fragment?
  /// `left` equal to `right`, NULL equal to NULL, never NULL itself.
  static func same(_ left: Fragment, _ right: Fragment) -> Fragment
  /// `left op right` for an ordering operator, neither side a NULL constant; never NULL.
  static func order(_ left: Operand, _ op: ComparisonOperator, _ right: Operand) -> Fragment
  /// `value` read as a double.
  static func real(_ value: Fragment) -> Fragment
  /// A string operator (or a comparison under string options), neither side a NULL constant unless `op` is
  /// `==` or `!=`; never NULL.
  static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment
}

extension SQLDialect {
  /// `left op right` as a condition that is never NULL (see ``SQLQueryCompiler``), for a dialect's own
  /// compilation (JSON members).
  package static func compare(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions, entity: String
  ) throws -> Fragment {
    try SQLQueryCompiler<Self>.compare(left, op, right, options, entity: entity)
  }
}

/// Whether an operand holds a string (string options apply) or anything else.
package enum SQLOperandKind: Equatable, Sendable {
  case string
  case other
}

/// One side of a comparison, as ``SQLQueryCompiler`` compiled it.
package struct SQLOperand<Dialect: SQLDialect> {
  package var fragment: SQLFragment<Dialect>
  /// Whether the value may be NULL (an optional attribute, or one read through a to-one).
  package var nullable: Bool
  package var isNullConstant: Bool
  package var kind: SQLOperandKind
  /// The elements of an array constant (`IN {…}`, `BETWEEN {…}`).
  package var elements: [SQLOperand]?
  /// A computed value (function, aggregate, subquery): ordered with `COALESCE(l op r, false)`, so it is
  /// written (and run) once rather than again in an `IS NOT NULL` guard.
  package var isComputed: Bool
  /// A NaN constant (a number, or a date at a NaN interval): equal to nothing and unordered, so every
  /// `==`, ordering and `BETWEEN` with it is false.
  package var isUnordered = false
  /// A floating-point constant that no `Decimal` holds (an infinity, 1e200), compared with a decimal
  /// column: both sides compare as doubles, as the evaluator does.
  package var comparesAsReal = false
  /// The constant itself, when the operand is one (a dialect may translate it: LIKE patterns, folds).
  package var constant: Value? = nil

  package init(
    fragment: SQLFragment<Dialect>, nullable: Bool = true, isNullConstant: Bool = false, kind: SQLOperandKind,
    elements: [SQLOperand]? = nil, isComputed: Bool = false, isUnordered: Bool = false, constant: Value? = nil
  ) {
    self.fragment = fragment
    self.nullable = nullable
    self.isNullConstant = isNullConstant
    self.kind = kind
    self.elements = elements
    self.isComputed = isComputed
    self.isUnordered = isUnordered
    self.constant = constant
  }
}

/// How one selected SQL value of a dictionary fetch becomes a row value.
package enum SQLColumnDecoding: Sendable {
  /// A stored attribute of this type (also the folds that keep their element's type).
  case attribute(AttributeType)
  /// A to-one target's primary key, an object ID of this entity.
  case objectID(entity: String)
  /// A computed value (converted to the declared result type like every fold and expression).
  case computed
}
