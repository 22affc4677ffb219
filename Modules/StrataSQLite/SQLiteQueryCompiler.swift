import Foundation
import StrataSQL
import StrataStoreKit

/// A piece of SQL and the values bound to its `?` placeholders, in order.
struct Fragment: Sendable, ExpressibleByStringLiteral {
  var sql: String
  var bindings: [SQLValue]

  init(_ sql: String, _ bindings: [SQLValue] = []) {
    self.sql = sql
    self.bindings = bindings
  }

  init(stringLiteral sql: String) { self.init(sql) }

  static func + (a: Fragment, b: Fragment) -> Fragment { Fragment(a.sql + b.sql, a.bindings + b.bindings) }

  /// The most terms joined flat by one `AND`/`OR`. SQLite parses `a AND b AND c …` into a left-deep tree
  /// and refuses one deeper than 1,000 levels ("Expression tree is too large"), so longer lists are
  /// joined in groups of this size, then the groups in groups: a tree of depth 64 × log64(n).
  static let flatJunctionLimit = 64

  /// `parts` joined by `separator`, in parentheses; `empty` when there are none. Past
  /// ``flatJunctionLimit`` parts, a balanced tree of parenthesized groups.
  static func joined(_ parts: [Fragment], _ separator: String, empty: String) -> Fragment {
    guard !parts.isEmpty else { return Fragment(empty) }
    if parts.count == 1 { return parts[0] }
    var level = parts
    while level.count > flatJunctionLimit {
      level = stride(from: 0, to: level.count, by: flatJunctionLimit).map { start in
        flat(Array(level[start..<min(start + flatJunctionLimit, level.count)]), separator)
      }
    }
    return flat(level, separator)
  }

  private static func flat(_ parts: [Fragment], _ separator: String) -> Fragment {
    if parts.count == 1 { return parts[0] }
    return Fragment(
      "(" + parts.map(\.sql).joined(separator: " \(separator) ") + ")", parts.flatMap(\.bindings))
  }
}

/// Compiles a checked ``FetchDescription`` (see ``QueryValidator``) into SQL for one entity's table.
///
/// Every comparison compiles to an expression that is `0` or `1`, never NULL, so `NOT` behaves like
/// the evaluator's two-valued logic (docs/QUERY-SEMANTICS.md):
/// - to-one key paths become `LEFT JOIN`s (`t1`, `t2`, … aliases), reused by every reference;
/// - `ANY`/`ALL`/`NONE` over a to-many key path become `EXISTS` / `NOT EXISTS` subqueries over the
///   destination rows (foreign-key style) or join-table rows;
/// - `rel.@count` becomes a correlated `(SELECT COUNT(*) …)`, `rel.attr.@sum` a `(SELECT COALESCE(SUM(…), 0) …)`,
///   `@avg` `AVG(CAST(… AS REAL))`, `@min`/`@max` `MIN`/`MAX`;
/// - `SUBQUERY(rel, $x, p).@count` becomes `(SELECT COUNT(*) FROM <targets> WHERE <correlation> AND <p>)`,
///   `p` compiled by a nested compiler whose root alias is the target rows';
/// - arithmetic uses SQL operators (floating-point attributes `CAST` to `REAL`, division always in `REAL`),
///   `lowercase:`/`uppercase:`/`canonical:` call `strata_text`; comparisons of these computed values are
///   wrapped in `COALESCE(…, 0)`;
/// - string operators and `[c]`/`[d]` options call `strata_string`, which runs ``StringSemantics``;
/// - constants are bound, never written into the SQL.
struct SQLiteQueryCompiler {
  /// The compiled parts of a `SELECT … FROM <entity> AS t0`.
  struct Query {
    var table: SQLiteSchema.Table
    /// `LEFT JOIN` clauses for to-one key paths.
    var joins: [String]
    var condition: Fragment?
    /// `ORDER BY` terms, ending with `t0."_pk" ASC`.
    var orderBy: [String]

    /// `FROM … JOIN … WHERE …` (with its bindings).
    var fromClause: Fragment {
      var fragment = Fragment("FROM \(quote(table.name)) AS t0")
      if !joins.isEmpty { fragment.sql += " " + joins.joined(separator: " ") }
      if let condition { fragment = fragment + Fragment(" WHERE ") + condition }
      return fragment
    }
  }

  private struct Scope {
    var joins: [String] = []
    var aliasByPath: [String: String] = [:]
  }

  enum Kind: Equatable {
    case string
    case other
  }

  struct Operand {
    var fragment: Fragment
    var nullable: Bool
    var isNullConstant = false
    var kind: Kind
    /// The elements of an array constant (`IN {…}`, `BETWEEN {…}`).
    var elements: [Operand]? = nil
    /// A computed value (function, aggregate, subquery): ordered with `COALESCE(l op r, 0)`, so it is
    /// written (and run) once rather than again in an `IS NOT NULL` guard.
    var isComputed = false
    /// A NaN constant (a number, or a date at a NaN interval): equal to nothing and unordered, so every
    /// `==`, ordering and `BETWEEN` with it is false (SQLite would bind it as NULL).
    var isUnordered = false
    /// A floating-point constant that no `Decimal` holds (an infinity, 1e200), compared with a decimal
    /// column: both sides compare as doubles (`CAST(column AS REAL)`), as the evaluator does.
    var comparesAsReal = false
  }

  let schema: SQLiteSchema
  let storeIdentifier: String
  let root: EntityDescription
  /// The alias of the root entity's rows: `t0`, or a subquery's element alias.
  private var rootAlias = "t0"
  /// The root query's joins first, then those of the subquery being compiled, if any.
  private var scopes = [Scope()]
  private var aliasCount = 0

  private init(schema: SQLiteSchema, storeIdentifier: String, root: EntityDescription) {
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.root = root
  }

  /// Checks `request` with ``QueryValidator`` and compiles its predicate and sort descriptors.
  ///
  /// - Throws: what the validator throws (`.invalidQuery`, `.unsupported`).
  static func compile(_ request: FetchDescription, schema: SQLiteSchema, storeIdentifier: String) throws -> Query {
    let table = try schema.table(request.entityName)
    var compiler = SQLiteQueryCompiler(schema: schema, storeIdentifier: storeIdentifier, root: table.entity)
    return try compiler.compileQuery(request, table)
  }

  private mutating func compileQuery(_ request: FetchDescription, _ table: SQLiteSchema.Table) throws -> Query {
    let predicate = try request.predicate.map { try QueryValidator.check($0, entity: root, model: schema.model) }
    try QueryValidator.check(request.sortDescriptors, entity: root, model: schema.model)
    var condition = try predicate.map { try compile($0) }
    if !request.includesSubentities && schema.model.inheritance.hasSubentities(table.name) {
      let own = Fragment("t0.\(quote(SQLiteSchema.entityColumn)) = ?", [.text(table.name)])
      condition = condition.map { own + Fragment(" AND (") + $0 + Fragment(")") } ?? own
    }
    var orderBy: [String] = []
    for sort in request.sortDescriptors {
      orderBy.append(try orderTerm(sort))
    }
    orderBy.append("t0.\"_pk\" ASC")
    return Query(table: table, joins: scopes[0].joins, condition: condition, orderBy: orderBy)
  }

  private mutating func newAlias() -> String {
    aliasCount += 1
    return "t\(aliasCount)"
  }

  // MARK: Sorting

  private mutating func orderTerm(_ sort: QuerySort) throws -> String {
    let path = try QueryValidator.resolveSortKey(sort, entity: root, model: schema.model)
    let alias = joinToOne(path.hops[...], from: "t0", scope: 0, prefix: "")
    guard case .attribute(let attribute, _) = path.terminal else {
      throw StoreError(.invalidQuery, "cannot sort by '\(sort.keyPath)'", entity: root.name, key: sort.keyPath)
    }
    var expression = "\(alias).\(quote(attribute.name))"
    if attribute.type == .decimal { expression += " COLLATE \(SQLiteFunctions.decimalCollation)" }
    if attribute.type == .string, let collation = SQLiteFunctions.collation(for: sort.comparator) {
      expression += " COLLATE \(collation)"
    }
    return expression + (sort.ascending ? " ASC" : " DESC")
  }

  // MARK: Predicates

  private mutating func compile(_ predicate: QueryPredicate) throws -> Fragment {
    switch predicate {
    case .constant(let value): return Fragment(value ? "1" : "0")
    case .and(let parts): return Fragment.joined(try parts.map { try compile($0) }, "AND", empty: "1")
    case .or(let parts): return Fragment.joined(try parts.map { try compile($0) }, "OR", empty: "0")
    case .not(let inner): return Fragment("(NOT ") + (try compile(inner)) + Fragment(")")
    case .comparison(let comparison): return try compile(comparison)
    }
  }

  private mutating func compile(_ comparison: Comparison) throws -> Fragment {
    let leftPath: ResolvedKeyPath?
    switch comparison.left {
    case .keyPath(let keyPath): leftPath = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
    case .evaluatedObject: leftPath = .evaluatedObject(of: root)
    case .constant: leftPath = nil
    case .function:
      let left = try expression(comparison.left)
      let right = try operand(comparison.right, against: nil)
      return try Self.compare(left, comparison.op, right, comparison.options, entity: root.name)
    default:
      throw StoreError(.unsupported, "this expression is not supported in a fetch of \(root.name)", entity: root.name)
    }
    if let leftPath, leftPath.isJSON, case .attribute(let attribute, _) = leftPath.terminal,
      case .constant(let rhs) = comparison.right
    {
      // A Codable attribute: SQLite's JSON functions, or strata_json (JSONComparison itself) for the folds
      // they cannot compute as the evaluator does.
      let alias = joinToOne(leftPath.hops[...], from: rootAlias, scope: 0, prefix: "")
      let column = "\(alias).\(quote(attribute.name))"
      if let native = try Self.jsonComparison(column, leftPath, comparison, rhs, entity: root.name) { return native }
      let test = SQLiteFunctions.jsonTest(leftPath, comparison, rhs)
      return Fragment("\(SQLiteFunctions.jsonFunction)(\(column), ?)", [.text(test)])
    }
    let right = try operand(comparison.right, against: leftPath?.valueKind)
    let op = comparison.op
    let options = comparison.options

    guard let leftPath else {
      let left = try operand(comparison.left, against: nil)
      return try Self.compare(left, op, right, options, entity: root.name)
    }
    let entity = root.name
    if leftPath.isCollection {
      return try collection(leftPath, comparison.modifier) { element in
        try Self.compare(element, op, right, options, entity: entity)
      }
    }
    let alias = joinToOne(leftPath.hops[...], from: rootAlias, scope: 0, prefix: "")
    let left = try terminal(
      leftPath.terminal, of: leftPath.terminalEntity, alias: alias, throughToOne: !leftPath.hops.isEmpty,
      elementHops: leftPath.elementHops)
    return try Self.compare(left, op, right, options, entity: entity)
  }

  /// An operand on the right side (or a constant on the left), encoded for comparison with `kind`.
  private mutating func operand(
    _ expression: QueryExpression, against kind: ResolvedKeyPath.ValueKind?
  ) throws
    -> Operand
  {
    switch expression {
    case .constant(let value):
      return constant(value, against: kind)
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
      guard !path.isCollection else {
        throw StoreError(
          .unsupported, "a to-many key path ('\(keyPath)') on the right side of a comparison is not supported",
          entity: root.name, key: keyPath)
      }
      let alias = joinToOne(path.hops[...], from: rootAlias, scope: 0, prefix: "")
      return try terminal(
        path.terminal, of: path.terminalEntity, alias: alias, throughToOne: !path.hops.isEmpty, elementHops: path.elementHops)
    case .evaluatedObject:
      return Operand(fragment: Fragment("\(rootAlias).\"_pk\""), nullable: false, kind: .other)
    case .function:
      return try self.expression(expression)
    default:
      throw StoreError(.unsupported, "this expression is not supported in a fetch of \(root.name)", entity: root.name)
    }
  }

  private func constant(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> Operand {
    if case .array(let items) = value {
      return Operand(
        fragment: "NULL", nullable: false, kind: .other, elements: items.map { constant($0, against: kind) })
    }
    if value.isNull { return Operand(fragment: "NULL", nullable: true, isNullConstant: true, kind: .other) }
    let isString: Bool
    if let kind { isString = kind == .attribute(.string) } else { isString = value.stringValue != nil }
    var operand = Operand(
      fragment: Fragment("?", [encode(value, against: kind)]), nullable: false, kind: isString ? .string : .other)
    operand.isUnordered = value.isUnorderedNumber
    if case .attribute(.decimal) = kind, case .double = value { operand.comparesAsReal = true }
    return operand
  }

  private func encode(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> SQLValue {
    switch value {
    case .objectID(let id):
      guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return .integer(0) }
      return .integer(pk)
    case .decimal(let d):
      // Compared with a decimal column, the text meets the column's STRATA_DECIMAL collation (exact);
      // compared with anything numeric, SQLite's numeric affinity turns it into a number.
      if case .attribute(.decimal) = kind { return .text("\(d)") }
      return value.numericValue.map(SQLValue.real) ?? .null
    default:
      return SQLiteSchema.encode(value)
    }
  }

  // MARK: Key paths

  /// Joins the to-one `hops` from `alias` (reusing joins already made for the same path) and returns the
  /// alias of the entity reached.
  private mutating func joinToOne(
    _ hops: ArraySlice<ResolvedKeyPath.Hop>, from alias: String, scope: Int, prefix: String
  ) -> String {
    var current = alias
    var key = prefix
    for hop in hops {
      key += "." + hop.relationship.name
      if let existing = scopes[scope].aliasByPath[key] {
        current = existing
        continue
      }
      let next = newAlias()
      scopes[scope].joins.append(
        "LEFT JOIN \(quote(hop.destination.name)) AS \(next) ON \(next).\"_pk\" = \(current).\(quote(hop.relationship.name))")
      scopes[scope].aliasByPath[key] = next
      current = next
    }
    return current
  }

  /// The value a single-valued terminal reads from `alias`.
  private mutating func terminal(
    _ terminal: ResolvedKeyPath.Terminal, of entity: EntityDescription, alias: String, throughToOne: Bool,
    elementHops hops: [ResolvedKeyPath.Hop] = []
  ) throws -> Operand {
    switch terminal {
    case .attribute(let attribute, _):
      var sql = "\(alias).\(quote(attribute.name))"
      if attribute.type == .decimal { sql = "(\(sql) COLLATE \(SQLiteFunctions.decimalCollation))" }
      return Operand(
        fragment: Fragment(sql), nullable: attribute.isOptional || throughToOne,
        kind: attribute.type == .string ? .string : .other)
    case .toOne(let rel, _):
      return Operand(fragment: Fragment("\(alias).\(quote(rel.name))"), nullable: true, kind: .other)
    case .object:
      return Operand(fragment: Fragment("\(alias).\"_pk\""), nullable: throughToOne, kind: .other)
    case .count(let rel):
      let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
      var sql = "(SELECT COUNT(*) FROM \(source.from) WHERE \(source.correlation))"
      if throughToOne { sql = "CASE WHEN \(alias).\"_pk\" IS NULL THEN NULL ELSE \(sql) END" }
      return Operand(fragment: Fragment(sql), nullable: throughToOne, kind: .other)
    case .aggregate(let op, let rel, let attribute, _):
      let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
      let column = "\(source.alias).\(quote(attribute.name))"
      let value =
        switch op {
        case .sum: "COALESCE(SUM(\(column)), 0)"
        case .avg: "AVG(CAST(\(column) AS REAL))"
        case .min: "MIN(\(column))"
        case .max: "MAX(\(column))"
        }
      var sql = "(SELECT \(value) FROM \(source.from) WHERE \(source.correlation))"
      if throughToOne { sql = "CASE WHEN \(alias).\"_pk\" IS NULL THEN NULL ELSE \(sql) END" }
      let isString = attribute.type == .string && (op == .min || op == .max)
      return Operand(fragment: Fragment(sql), nullable: true, kind: isString ? .string : .other, isComputed: true)
    case .element(let position, let rel, let attribute, _):
      // The element's attribute, from the targets in list order (an index scan of the position index),
      // through the to-ones after the element joined inside the subquery.
      var sql = try elementSubquery(position, rel, hops, of: entity, alias: alias, column: quote(attribute.name))
      if attribute.type == .decimal { sql = "(\(sql) COLLATE \(SQLiteFunctions.decimalCollation))" }
      return Operand(
        fragment: Fragment(sql), nullable: true, kind: attribute.type == .string ? .string : .other, isComputed: true)
    case .elementObject(let position, let rel):
      let sql = try elementSubquery(position, rel, hops, of: entity, alias: alias, column: "\"_pk\"")
      return Operand(fragment: Fragment(sql), nullable: true, kind: .other, isComputed: true)
    case .toMany(let rel):
      throw StoreError(
        .invalidQuery, "\(entity.name).\(rel.name) is a to-many relationship and cannot be compared as a whole",
        entity: entity.name, key: rel.name)
    }
  }

  /// `(SELECT <column> FROM <targets> LEFT JOIN <to-one hops> WHERE <correlation> ORDER BY … LIMIT 1
  /// OFFSET n)`: `column` of the element at `position` of the ordered `rel` of the row `alias`, or of the
  /// object the to-one `hops` reach from it.
  private mutating func elementSubquery(
    _ position: ResolvedKeyPath.Member, _ rel: RelationshipDescription, _ hops: [ResolvedKeyPath.Hop],
    of entity: EntityDescription, alias: String, column: String
  ) throws -> String {
    let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
    let schema = self.schema
    return try SQLLayout.elementSubquery(
      schema.model, entity.name, rel, source, position, hops: hops, column: column, newAlias: { newAlias() },
      tableName: { quote($0) })
  }

  /// Where the targets of a to-many relationship of the row `ownerAlias` are: the text after `FROM`
  /// (or after `JOIN`, with `correlation` as its `ON`), and the alias of the target rows.
  private mutating func toManySource(_ rel: RelationshipDescription, owner: String, ownerAlias: String) -> SQLToManySource {
    let schema = self.schema
    return SQLLayout.toManySource(
      schema.toManyStorage(owner, rel), ownerAlias: ownerAlias, newAlias: { newAlias() }, tableName: { quote($0) })
  }

  /// `EXISTS` / `NOT EXISTS` over the elements of a collection key path, with `condition` applied to
  /// each element.
  private mutating func collection(
    _ path: ResolvedKeyPath, _ modifier: ComparisonModifier, _ condition: (Operand) throws -> Fragment
  ) throws -> Fragment {
    let (from, test) = try elements(of: path, condition)
    let head = "SELECT 1 \(from) AND "
    switch modifier {
    case .all: return Fragment("(NOT EXISTS (\(head)NOT ") + test + Fragment("))")
    case .none: return Fragment("(NOT EXISTS (\(head)") + test + Fragment("))")
    case .any, .direct: return Fragment("(EXISTS (\(head)") + test + Fragment("))")
    }
  }

  /// The rows of the elements of a collection key path, in a scope of their own: `FROM <targets>
  /// <joins> WHERE <correlation>`, and what `body` makes of each element's value.
  private mutating func elements(
    of path: ResolvedKeyPath, _ body: (Operand) throws -> Fragment
  ) throws
    -> (from: String, body: Fragment)
  {
    let firstToMany = path.hops.firstIndex(where: \.isToMany)
    let outerHops = path.hops[..<(firstToMany ?? path.hops.count)]
    let outerAlias = joinToOne(outerHops, from: rootAlias, scope: 0, prefix: "")
    scopes.append(Scope())
    let scope = scopes.count - 1
    defer { scopes.removeLast() }
    let start: RelationshipDescription
    let startOwner: EntityDescription
    var remaining: ArraySlice<ResolvedKeyPath.Hop> = []
    var terminalHandled = false
    if let firstToMany {
      start = path.hops[firstToMany].relationship
      startOwner = path.hops[firstToMany].source
      remaining = path.hops[(firstToMany + 1)...]
    } else if case .toMany(let rel) = path.terminal {
      start = rel
      startOwner = path.terminalEntity
      terminalHandled = true
    } else {
      throw StoreError(.invalidQuery, "'\(path.keyPath)' is not a collection", entity: root.name, key: path.keyPath)
    }
    let source = toManySource(start, owner: startOwner.name, ownerAlias: outerAlias)
    var alias = source.alias
    var entity = try schema.table(start.destination).entity
    var throughToOne = false
    for hop in remaining {
      if hop.isToMany {
        let nested = toManySource(hop.relationship, owner: entity.name, ownerAlias: alias)
        scopes[scope].joins.append(nested.joinForm)
        alias = nested.alias
      } else {
        alias = joinToOne([hop][...], from: alias, scope: scope, prefix: "\(scopes[scope].joins.count)")
        throughToOne = true
      }
      entity = hop.destination
    }
    let element: Operand
    if terminalHandled {
      element = Operand(fragment: Fragment("\(alias).\"_pk\""), nullable: false, kind: .other)
    } else if case .toMany(let rel) = path.terminal {
      let nested = toManySource(rel, owner: entity.name, ownerAlias: alias)
      scopes[scope].joins.append(nested.joinForm)
      element = Operand(fragment: Fragment("\(nested.alias).\"_pk\""), nullable: false, kind: .other)
    } else {
      element = try terminal(
        path.terminal, of: entity, alias: alias, throughToOne: throughToOne, elementHops: path.elementHops)
    }
    let result = try body(element)
    let joins = scopes[scope].joins.isEmpty ? "" : " " + scopes[scope].joins.joined(separator: " ")
    return ("FROM \(source.from)\(joins) WHERE \(source.correlation)", result)
  }

  // MARK: Expressions

  /// A checked expression (see `ExpressionChecker` in StrataCore) as a SQL value. Arithmetic uses SQL's
  /// operators, which compute as the evaluator does: integers stay integers (a real on overflow), a real on
  /// either side makes a real, `divide:by:` always divides reals and gives NULL for a zero divisor.
  private mutating func expression(_ expression: QueryExpression) throws -> Operand {
    switch expression {
    case .constant(let value):
      return constant(value, against: nil)
    case .keyPath, .evaluatedObject:
      return try operand(expression, against: nil)
    case .function("count:", let arguments) where arguments.count == 1 && arguments[0].isSubquery:
      guard case .subquery(.keyPath(let keyPath), _, let predicate) = arguments[0] else { break }
      return try subqueryCount(keyPath, predicate)
    case .function(let name, let arguments):
      if let code = SQLiteFunctions.textFunctionCode(name), arguments.count == 1 {
        let argument = try self.expression(arguments[0])
        return Operand(
          fragment: Fragment("\(SQLiteFunctions.textFunction)(\(code), ") + argument.fragment + Fragment(")"),
          nullable: true, kind: .string, isComputed: true)
      }
      if let function = CollectionFunction(rawValue: name), arguments.count == 1 {
        return try fold(function, arguments[0])
      }
      if (ExpressionFunctions.unaryNumericFunctions.contains(name) && arguments.count == 1)
        || (["modulus:by:", "raise:toPower:"].contains(name) && arguments.count == 2)
      {
        return try apply(name, arguments.map { try numeric($0) })
      }
      let symbols = ["add:to:": "+", "from:subtract:": "-", "multiply:by:": "*", "divide:by:": "/"]
      if let symbol = symbols[name], arguments.count == 2 {
        var left = try numeric(arguments[0])
        let right = try numeric(arguments[1])
        if symbol == "/" { left = Fragment("CAST(") + left + Fragment(" AS REAL)") }
        return Operand(
          fragment: Fragment("(") + left + Fragment(" \(symbol) ") + right + Fragment(")"), nullable: true, kind: .other,
          isComputed: true)
      }
    default:
      break
    }
    throw StoreError(.unsupported, "the expression \(expression) is not supported in a fetch of \(root.name)", entity: root.name)
  }

  /// `strata_apply(name, arguments…)`: the function as ``ExpressionFunctions/apply(_:_:)`` computes it.
  private func apply(_ name: String, _ arguments: [Fragment]) -> Operand {
    var fragment = Fragment("\(SQLiteFunctions.applyFunction)('\(name)'")
    for argument in arguments { fragment = fragment + Fragment(", ") + argument }
    return Operand(fragment: fragment + Fragment(")"), nullable: true, kind: .other, isComputed: true)
  }

  /// A collection function over a collection key path (`strata_fold` over the element rows) or over a
  /// literal of expressions (`strata_apply` with the items as arguments).
  private mutating func fold(_ function: CollectionFunction, _ argument: QueryExpression) throws -> Operand {
    let kind: Kind
    let fragment: Fragment
    switch argument {
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
      var elementKind = Kind.other
      let (from, value) = try elements(of: path) { element in
        elementKind = element.kind
        return Fragment("\(SQLiteFunctions.foldFunction)('\(function.rawValue)', ") + element.fragment + Fragment(")")
      }
      kind = elementKind
      let query = Fragment("(SELECT ") + value + Fragment(" \(from))")
      fragment = function == .sum || function == .count ? Fragment("COALESCE(") + query + Fragment(", 0)") : query
    case .aggregate(let items):
      var operands: [Operand] = []
      for item in items { operands.append(try expression(item)) }
      kind = operands.contains { $0.kind == .string } ? .string : .other
      fragment = apply(function.rawValue, operands.map(\.fragment)).fragment
    default:
      throw StoreError(
        .unsupported, "\(function.rawValue) needs a collection in a fetch of \(root.name)", entity: root.name)
    }
    let yieldsElement = function == .min || function == .max || function == .mode
    return Operand(fragment: fragment, nullable: true, kind: yieldsElement ? kind : .other, isComputed: true)
  }

  /// A numeric argument: floating-point attributes are read as `REAL` so SQL computes in `Double` as the
  /// evaluator does.
  private mutating func numeric(_ argument: QueryExpression) throws -> Fragment {
    let operand = try expression(argument)
    if case .keyPath(let keyPath) = argument,
      case .attribute(let type) = try ResolvedKeyPath(keyPath, entity: root, model: schema.model).valueKind,
      type == .double || type == .float
    {
      return Fragment("CAST(") + operand.fragment + Fragment(" AS REAL)")
    }
    return operand.fragment
  }

  /// `SUBQUERY(keyPath, $x, predicate).@count`: a correlated `COUNT(*)` over the targets of the to-many
  /// `keyPath`, with `predicate` (already relative to the target entity) compiled against the target rows.
  private mutating func subqueryCount(_ keyPath: String, _ predicate: QueryPredicate) throws -> Operand {
    let path = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
    guard case .toMany(let rel) = path.terminal, !path.hops.contains(where: \.isToMany) else {
      throw StoreError(.unsupported, "'\(keyPath)' is not a to-many relationship", entity: root.name, key: keyPath)
    }
    let ownerAlias = joinToOne(path.hops[...], from: rootAlias, scope: 0, prefix: "")
    let source = toManySource(rel, owner: path.terminalEntity.name, ownerAlias: ownerAlias)
    var inner = SQLiteQueryCompiler(
      schema: schema, storeIdentifier: storeIdentifier, root: try schema.table(rel.destination).entity)
    inner.rootAlias = source.alias
    inner.aliasCount = aliasCount
    let condition = try inner.compile(predicate)
    aliasCount = inner.aliasCount
    let joins = inner.scopes[0].joins.isEmpty ? "" : " " + inner.scopes[0].joins.joined(separator: " ")
    let head = "(SELECT COUNT(*) FROM \(source.from)\(joins) WHERE \(source.correlation) AND "
    return Operand(fragment: Fragment(head) + condition + Fragment(")"), nullable: false, kind: .other, isComputed: true)
  }

  // MARK: Comparisons

  /// `left op right` as an expression that is always 0 or 1.
  static func compare(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions, entity: String
  ) throws -> Fragment {
    let folds = left.kind == .string && !options.isEmpty && !options.contains(.normalized)
    switch op {
    case .equalTo:
      return equal(left, right, options, folds: folds)
    case .notEqualTo:
      return Fragment("(NOT ") + equal(left, right, options, folds: folds) + Fragment(")")
    case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      return order(left, op, right, options, folds: folds)
    case .between:
      guard let bounds = right.elements, bounds.count == 2 else {
        throw StoreError(.invalidQuery, "BETWEEN needs two bounds", entity: entity)
      }
      return Fragment.joined(
        [
          order(left, .greaterThanOrEqualTo, bounds[0], options, folds: folds),
          order(left, .lessThanOrEqualTo, bounds[1], options, folds: folds),
        ], "AND", empty: "1")
    case .in:
      if let items = right.elements {
        if items.count > 1, let list = inList(left, items, folds: folds) { return list }
        return Fragment.joined(items.map { equal(left, $0, options, folds: folds) }, "OR", empty: "0")
      }
      return stringOperation(left, op, right, options)
    case .contains, .beginsWith, .endsWith, .like, .matches:
      return stringOperation(left, op, right, options)
    }
  }

  /// `IN` a list of plain constants (none nil, NaN or compared as real) as one SQL `IN`, which SQLite
  /// answers with a lookup per row (or through an index) where the `OR` of `IS` comparisons costs one
  /// comparison per element: `COALESCE(left IN (…), 0)` is what that `OR` gives, nil included. Past 64
  /// integers (object IDs, in a prefetch), the list is one JSON text read by `json_each`, so a list of
  /// any length needs one parameter. `nil` when some element needs more than `left IS ?`.
  private static func inList(_ left: Operand, _ items: [Operand], folds: Bool) -> Fragment? {
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

  private static func equal(_ left: Operand, _ right: Operand, _ options: StringOptions, folds: Bool) -> Fragment {
    if left.isUnordered || right.isUnordered { return "0" }
    let left = right.comparesAsReal ? real(left) : left
    if left.isNullConstant && right.isNullConstant { return "1" }
    if right.isNullConstant { return Fragment("(") + left.fragment + Fragment(" IS NULL)") }
    if left.isNullConstant { return Fragment("(") + right.fragment + Fragment(" IS NULL)") }
    if folds { return stringOperation(left, .equalTo, right, options) }
    return Fragment("(") + left.fragment + Fragment(" IS ") + right.fragment + Fragment(")")
  }

  private static func order(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions, folds: Bool
  ) -> Fragment {
    if left.isNullConstant || right.isNullConstant || left.isUnordered || right.isUnordered { return "0" }
    let left = right.comparesAsReal ? real(left) : left
    if folds { return stringOperation(left, op, right, options) }
    let comparison = Fragment("(") + left.fragment + Fragment(" \(op.rawValue) ") + right.fragment + Fragment(")")
    if left.isComputed || right.isComputed { return Fragment("COALESCE(") + comparison + Fragment(", 0)") }
    var guards: [Fragment] = []
    if left.nullable { guards.append(left.fragment + Fragment(" IS NOT NULL")) }
    if right.nullable { guards.append(right.fragment + Fragment(" IS NOT NULL")) }
    guards.append(Fragment("(") + left.fragment + Fragment(" \(op.rawValue) ") + right.fragment + Fragment(")"))
    return Fragment.joined(guards, "AND", empty: "1")
  }

  /// A decimal column read as a double, for a constant beyond `Decimal`'s range.
  private static func real(_ operand: Operand) -> Operand {
    var real = operand
    real.fragment = Fragment("CAST(") + operand.fragment + Fragment(" AS REAL)")
    return real
  }

  private static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  )
    -> Fragment
  {
    if op != .equalTo && op != .notEqualTo && (left.isNullConstant || right.isNullConstant) { return "0" }
    if let native = nativeStringOperation(left, op, right, options) { return native }
    let head = "\(SQLiteFunctions.stringFunction)(\(SQLiteFunctions.operatorCode(op)), \(options.rawValue), "
    return Fragment(head) + left.fragment + Fragment(", ") + right.fragment + Fragment(")")
  }
}

// MARK: Native string operators

extension SQLiteQueryCompiler {
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
  fileprivate static func nativeStringOperation(
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

// MARK: Dictionary results

extension SQLiteQueryCompiler {
  /// How one selected SQL value becomes a row value.
  enum ColumnDecoding: Sendable {
    /// A stored attribute of this type (also the folds that keep their element's type).
    case attribute(AttributeType)
    /// A to-one target's primary key, an object ID of this entity.
    case objectID(entity: String)
    /// A computed value (converted to the declared result type like every fold and expression).
    case computed
  }

  /// A dictionary fetch compiled to `SELECT <columns> FROM … WHERE … [GROUP BY …] ORDER BY …`.
  struct DictionaryQuery {
    var query: Query
    /// Each column's key, SQL, how to read it, and for a fold or expression the declared result type.
    var columns: [(name: String, sql: Fragment, decoding: ColumnDecoding, resultType: AttributeType?)]
    var groupBy: [String]
  }

  /// Compiles a checked ``DictionaryFetch`` with the request's predicate and sort descriptors. Folds
  /// become SQL aggregates (`COALESCE(SUM(x), 0)`, `COUNT(x)`, `MIN`, `MAX`, `AVG(CAST(x AS REAL))`,
  /// `strata_fold` for `median:` `mode:` `stddev:`); a grouped fetch without sort descriptors orders by
  /// its group-by values, as ``DictionaryFetch`` does in memory.
  static func compileDictionary(
    _ request: FetchDescription, _ plan: DictionaryFetch, schema: SQLiteSchema, storeIdentifier: String
  ) throws -> DictionaryQuery {
    let table = try schema.table(request.entityName)
    var compiler = SQLiteQueryCompiler(schema: schema, storeIdentifier: storeIdentifier, root: table.entity)
    var base = try compiler.compileQuery(request, table)
    let sorts = request.sortDescriptors
    var columns: [(name: String, sql: Fragment, decoding: ColumnDecoding, resultType: AttributeType?)] = []
    for column in plan.columns {
      switch column {
      case .property(let name, let path):
        let (sql, decoding) = try compiler.single(path)
        columns.append((name, sql, decoding, nil))
      case .fold(let name, let function, let path, let resultType):
        let (x, elementDecoding) = try compiler.single(path)
        let sql: Fragment
        var decoding = ColumnDecoding.computed
        switch function {
        case .sum: sql = Fragment("COALESCE(SUM(") + x + Fragment("), 0)")
        case .count: sql = Fragment("COUNT(") + x + Fragment(")")
        case .average: sql = Fragment("AVG(CAST(") + x + Fragment(" AS REAL))")
        case .min, .max:
          sql = Fragment(function == .min ? "MIN(" : "MAX(") + x + Fragment(")")
          decoding = elementDecoding
        case .mode, .median, .stddev:
          sql = Fragment("\(SQLiteFunctions.foldFunction)('\(function.rawValue)', ") + x + Fragment(")")
          if function == .mode { decoding = elementDecoding }
        }
        columns.append((name, sql, decoding, resultType))
      case .expression(let name, let expression, let resultType):
        let operand = try compiler.expression(expression)
        columns.append((name, operand.fragment, .computed, resultType))
      }
    }
    var groupBy: [String] = []
    for path in plan.groupBy {
      let (sql, _) = try compiler.single(path)
      groupBy.append(sql.sql)
    }
    var orderBy = Array(base.orderBy.dropLast())
    if plan.isGrouped {
      if sorts.isEmpty { orderBy = groupBy.map { "\($0) ASC" } }
    } else {
      orderBy.append("t0.\"_pk\" ASC")
    }
    base.joins = compiler.scopes[0].joins
    base.orderBy = orderBy
    return DictionaryQuery(query: base, columns: columns, groupBy: groupBy)
  }

  /// The SQL of a single-valued key path and how to read it back.
  private mutating func single(_ path: ResolvedKeyPath) throws -> (Fragment, ColumnDecoding) {
    let alias = joinToOne(path.hops[...], from: rootAlias, scope: 0, prefix: "")
    let operand = try terminal(
      path.terminal, of: path.terminalEntity, alias: alias, throughToOne: !path.hops.isEmpty, elementHops: path.elementHops)
    switch path.valueKind {
    case .attribute(let type): return (operand.fragment, .attribute(type))
    case .objectID(let entity): return (operand.fragment, .objectID(entity: entity))
    case .count: return (operand.fragment, .computed)
    }
  }
}

extension SQLiteQueryCompiler {
  /// The SQL of a checked expression of `root`'s own attributes, reading the row aliased `t0`.
  static func compileValue(
    _ expression: QueryExpression, schema: SQLiteSchema, storeIdentifier: String, root: EntityDescription
  ) throws -> Fragment {
    var compiler = SQLiteQueryCompiler(schema: schema, storeIdentifier: storeIdentifier, root: root)
    let operand = try compiler.expression(expression)
    guard compiler.scopes[0].joins.isEmpty else {
      throw StoreError(.unsupported, "the expression reads another object", entity: root.name)
    }
    return operand.fragment
  }
}

extension Value {
  /// Whether the value is NaN, or a date at a NaN interval: a constant equal to nothing and unordered.
  fileprivate var isUnorderedNumber: Bool {
    switch self {
    case .double(let d): d.isNaN
    case .date(let date): date.timeIntervalSinceReferenceDate.isNaN
    default: false
    }
  }
}
