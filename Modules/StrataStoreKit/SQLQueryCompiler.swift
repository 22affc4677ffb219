import Foundation

/// Compiles a checked ``FetchDescription`` (see ``QueryValidator``) into SQL for one entity's table, in
/// the language of `Dialect`, so the database does the filtering, sorting and folding.
///
/// Every comparison compiles to a condition that is true or false, never NULL, so `NOT` behaves like the
/// evaluator's two-valued logic (docs/QUERY-SEMANTICS.md):
/// - to-one key paths become `LEFT JOIN`s (`t1`, `t2`, … aliases), reused by every reference;
/// - `ANY`/`ALL`/`NONE` over a to-many key path become `EXISTS` / `NOT EXISTS` subqueries over the
///   destination rows (foreign-key style) or join-table rows;
/// - `rel.@count` becomes a correlated `(SELECT COUNT(*) …)`, `rel.attr.@sum` … the dialect's aggregate;
/// - `SUBQUERY(rel, $x, p).@count` becomes `(SELECT COUNT(*) FROM <targets> WHERE <correlation> AND <p>)`,
///   `p` compiled by a nested compiler whose root alias is the target rows';
/// - `rel[n].attr` an ordered-element subquery (``SQLLayout/elementSubquery(_:_:_:_:_:hops:column:newAlias:tableName:)``);
/// - functions, arithmetic, string operators and options, and Codable attributes as the dialect writes them;
/// - constants are bound, never written into the SQL.
///
/// ```swift
/// let query = try SQLQueryCompiler<SQLiteDialect>.compile(request, schema: schema, storeIdentifier: id)
/// let sql = SQLFragment("SELECT t0.\"_pk\" ") + query.fromClause   // … ORDER BY query.orderBy
/// ```
package struct SQLQueryCompiler<Dialect: SQLDialect> {
  package typealias Schema = Dialect.Schema
  package typealias Fragment = Dialect.Fragment
  package typealias Operand = Dialect.Operand
  package typealias Kind = Operand.Kind

  /// The compiled parts of a `SELECT … FROM <entity> AS t0`.
  package struct Query {
    package var table: Schema.Table
    /// `LEFT JOIN` clauses for to-one key paths.
    package var joins: [String]
    package var condition: Fragment?
    /// `ORDER BY` terms, ending with `t0."_pk" ASC`.
    package var orderBy: [String]

    /// `FROM … JOIN … WHERE …` (with its bindings).
    package var fromClause: Fragment {
      var fragment = Fragment("FROM \(table.sqlName) AS t0")
      if !joins.isEmpty { fragment.sql += " " + joins.joined(separator: " ") }
      if let condition { fragment = fragment + Fragment(" WHERE ") + condition }
      return fragment
    }
  }

  struct Scope {
    var joins: [String] = []
    var aliasByPath: [String: String] = [:]
  }

  package let schema: Schema
  package let storeIdentifier: String
  package let root: EntityDescription
  /// The alias of the root entity's rows: `t0`, or a subquery's element alias.
  var rootAlias = "t0"
  /// The root query's joins first, then those of the subquery being compiled, if any.
  var scopes = [Scope()]
  private var aliasCount = 0

  init(schema: Schema, storeIdentifier: String, root: EntityDescription) {
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.root = root
  }

  /// Checks `request` with ``QueryValidator`` and compiles its predicate and sort descriptors.
  ///
  /// - Throws: what the validator throws (`.invalidQuery`, `.unsupported`).
  package static func compile(_ request: FetchDescription, schema: Schema, storeIdentifier: String) throws -> Query {
    let table = try schema.table(request.entityName)
    var compiler = Self(schema: schema, storeIdentifier: storeIdentifier, root: table.entity)
    return try compiler.compileQuery(request, table)
  }

  mutating func compileQuery(_ request: FetchDescription, _ table: Schema.Table) throws -> Query {
    let predicate = try request.predicate.map { try QueryValidator.check($0, entity: root, model: schema.model) }
    try QueryValidator.check(request.sortDescriptors, entity: root, model: schema.model)
    var condition = try predicate.map { try compile($0) }
    if !request.includesSubentities && schema.model.inheritance.hasSubentities(table.name) {
      let own = Fragment("t0.\(SQLLayout.quote(Schema.entityColumn)) = ?", [Dialect.text(table.name)])
      condition = condition.map { own + Fragment(" AND (") + $0 + Fragment(")") } ?? own
    }
    var orderBy: [String] = []
    for sort in request.sortDescriptors { orderBy += try orderTerms(sort) }
    orderBy.append("t0.\"_pk\" ASC")
    return Query(table: table, joins: scopes[0].joins, condition: condition, orderBy: orderBy)
  }

  private mutating func newAlias() -> String {
    aliasCount += 1
    return "t\(aliasCount)"
  }

  /// `parts` joined by `separator` (``SQLFragment/joined(_:_:empty:groupingPast:)`` at the dialect's limit).
  package static func junction(_ parts: [Fragment], _ separator: String, empty: String) -> Fragment {
    Fragment.joined(parts, separator, empty: empty, groupingPast: Dialect.junctionLimit)
  }

  // MARK: Sorting

  private mutating func orderTerms(_ sort: QuerySort) throws -> [String] {
    let path = try QueryValidator.resolveSortKey(sort, entity: root, model: schema.model)
    let alias = joinToOne(path.hops[...], from: "t0", scope: 0, prefix: "")
    guard case .attribute(let attribute, _) = path.terminal else {
      throw StoreError(.invalidQuery, "cannot sort by '\(sort.keyPath)'", entity: root.name, key: sort.keyPath)
    }
    return Dialect.orderTerms("\(alias).\(SQLLayout.quote(attribute.name))", attribute.type, sort)
  }

  // MARK: Predicates

  private mutating func compile(_ predicate: QueryPredicate) throws -> Fragment {
    switch predicate {
    case .constant(let value): return Fragment(value ? Dialect.trueLiteral : Dialect.falseLiteral)
    case .and(let parts): return Self.junction(try parts.map { try compile($0) }, "AND", empty: Dialect.trueLiteral)
    case .or(let parts): return Self.junction(try parts.map { try compile($0) }, "OR", empty: Dialect.falseLiteral)
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
      let alias = joinToOne(leftPath.hops[...], from: rootAlias, scope: 0, prefix: "")
      let column = "\(alias).\(SQLLayout.quote(attribute.name))"
      return try Dialect.jsonComparison(column, leftPath, comparison, rhs, entity: root.name)
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
  private mutating func operand(_ expression: QueryExpression, against kind: ResolvedKeyPath.ValueKind?) throws -> Operand {
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
    if case .attribute(let type)? = kind {
      isString = Dialect.isText(type)
    } else if kind != nil {
      isString = false
    } else {
      isString = value.stringValue != nil
    }
    let binding: Dialect.Binding
    if case .objectID(let id) = value {
      binding = Dialect.integer(id.storeIdentifier == storeIdentifier ? id.primaryKey ?? 0 : 0)
    } else {
      binding = Dialect.binding(value, against: kind)
    }
    var operand = Operand(fragment: Fragment("?", [binding]), nullable: false, kind: isString ? .string : .other)
    operand.isUnordered = value.isUnorderedNumber
    operand.constant = value
    if case .attribute(.decimal) = kind, case .double = value { operand.comparesAsReal = true }
    return operand
  }

  // MARK: Key paths

  /// Joins the to-one `hops` from `alias` (reusing joins already made for the same path) and returns the
  /// alias of the entity reached.
  mutating func joinToOne(
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
        "LEFT JOIN \(schema.sqlName(ofTable: hop.destination.name)) AS \(next) ON \(next).\"_pk\" = \(current).\(SQLLayout.quote(hop.relationship.name))"
      )
      scopes[scope].aliasByPath[key] = next
      current = next
    }
    return current
  }

  /// The value a single-valued terminal reads from `alias`.
  mutating func terminal(
    _ terminal: ResolvedKeyPath.Terminal, of entity: EntityDescription, alias: String, throughToOne: Bool,
    elementHops hops: [ResolvedKeyPath.Hop] = []
  ) throws -> Operand {
    switch terminal {
    case .attribute(let attribute, _):
      let sql = Dialect.attributeValue("\(alias).\(SQLLayout.quote(attribute.name))", attribute.type)
      return Operand(
        fragment: Fragment(sql), nullable: attribute.isOptional || throughToOne,
        kind: Dialect.isText(attribute.type) ? .string : .other)
    case .toOne(let rel, _):
      return Operand(fragment: Fragment("\(alias).\(SQLLayout.quote(rel.name))"), nullable: true, kind: .other)
    case .object:
      return Operand(fragment: Fragment("\(alias).\"_pk\""), nullable: throughToOne, kind: .other)
    case .count(let rel):
      let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
      var sql = "(SELECT COUNT(*) FROM \(source.from) WHERE \(source.correlation))"
      if throughToOne { sql = "CASE WHEN \(alias).\"_pk\" IS NULL THEN NULL ELSE \(sql) END" }
      return Operand(fragment: Fragment(sql), nullable: throughToOne, kind: .other)
    case .aggregate(let op, let rel, let attribute, _):
      let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
      let column = "\(source.alias).\(SQLLayout.quote(attribute.name))"
      let isFloating = attribute.type == .double || attribute.type == .float
      var sql =
        "(SELECT \(Dialect.aggregate(op, column, isFloating: isFloating)) FROM \(source.from) WHERE \(source.correlation))"
      if throughToOne { sql = "CASE WHEN \(alias).\"_pk\" IS NULL THEN NULL ELSE \(sql) END" }
      let isString = attribute.type == .string && (op == .min || op == .max)
      return Operand(fragment: Fragment(sql), nullable: true, kind: isString ? .string : .other, isComputed: true)
    case .element(let position, let rel, let attribute, _):
      // The element's attribute, from the targets in list order (an index scan of the position index),
      // through the to-ones after the element joined inside the subquery.
      let sql = try elementSubquery(position, rel, hops, of: entity, alias: alias, column: SQLLayout.quote(attribute.name))
      return Operand(
        fragment: Fragment(Dialect.attributeValue(sql, attribute.type)), nullable: true,
        kind: Dialect.isText(attribute.type) ? .string : .other, isComputed: true)
    case .elementObject(let position, let rel):
      let sql = try elementSubquery(position, rel, hops, of: entity, alias: alias, column: "\"_pk\"")
      return Operand(fragment: Fragment(sql), nullable: true, kind: .other, isComputed: true)
    case .toMany(let rel):
      throw StoreError(
        .invalidQuery, "\(entity.name).\(rel.name) is a to-many relationship and cannot be compared as a whole",
        entity: entity.name, key: rel.name)
    }
  }

  /// `column` of the element at `position` of the ordered `rel` of the row `alias`, or of the object the
  /// to-one `hops` reach from it (``SQLLayout/elementSubquery(_:_:_:_:_:hops:column:newAlias:tableName:)``).
  private mutating func elementSubquery(
    _ position: ResolvedKeyPath.Member, _ rel: RelationshipDescription, _ hops: [ResolvedKeyPath.Hop],
    of entity: EntityDescription, alias: String, column: String
  ) throws -> String {
    let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
    let schema = self.schema
    return try SQLLayout.elementSubquery(
      schema.model, entity.name, rel, source, position, hops: hops, column: column, newAlias: { newAlias() },
      tableName: { schema.sqlName(ofTable: $0) })
  }

  /// Where the targets of a to-many relationship of the row `ownerAlias` are.
  private mutating func toManySource(_ rel: RelationshipDescription, owner: String, ownerAlias: String) -> SQLToManySource {
    let schema = self.schema
    return SQLLayout.toManySource(
      schema.toManyStorage(owner, rel), ownerAlias: ownerAlias, newAlias: { newAlias() },
      tableName: { schema.sqlName(ofTable: $0) })
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
  ) throws -> (from: String, body: Fragment) {
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

  /// A checked expression (see `ExpressionChecker` in StrataCore) as an SQL value: arithmetic with SQL's
  /// operators (``SQLDialect/numericArgument(_:_:)`` and ``SQLDialect/division(_:_:)`` make it compute as
  /// the evaluator does), functions and folds as the dialect writes them.
  mutating func expression(_ expression: QueryExpression) throws -> Operand {
    switch expression {
    case .constant(let value):
      return constant(value, against: nil)
    case .keyPath, .evaluatedObject:
      return try operand(expression, against: nil)
    case .function("count:", let arguments) where arguments.count == 1 && arguments[0].isSubquery:
      guard case .subquery(.keyPath(let keyPath), _, let predicate) = arguments[0] else { break }
      return try subqueryCount(keyPath, predicate)
    case .function(let name, let arguments):
      if ["lowercase:", "uppercase:", "canonical:"].contains(name), arguments.count == 1 {
        let argument = try self.expression(arguments[0])
        return Operand(
          fragment: Dialect.textFunction(name, argument.fragment), nullable: true, kind: .string, isComputed: true)
      }
      if let function = CollectionFunction(rawValue: name), arguments.count == 1 {
        return try fold(function, arguments[0])
      }
      if (ExpressionFunctions.unaryNumericFunctions.contains(name) && arguments.count == 1)
        || (["modulus:by:", "raise:toPower:"].contains(name) && arguments.count == 2)
      {
        let sql = Dialect.numericFunction(name, try arguments.map { try numeric($0) })
        return Operand(fragment: sql, nullable: true, kind: .other, isComputed: true)
      }
      let symbols = ["add:to:": "+", "from:subtract:": "-", "multiply:by:": "*", "divide:by:": "/"]
      if let symbol = symbols[name], arguments.count == 2 {
        var left = try numeric(arguments[0])
        var right = try numeric(arguments[1])
        if symbol == "/" { (left, right) = Dialect.division(left, right) }
        return Operand(
          fragment: Fragment("(") + left + Fragment(" \(symbol) ") + right + Fragment(")"), nullable: true, kind: .other,
          isComputed: true)
      }
    default:
      break
    }
    throw StoreError(.unsupported, "the expression \(expression) is not supported in a fetch of \(root.name)", entity: root.name)
  }

  /// A collection function over a collection key path (the dialect's fold over the element rows) or over
  /// a literal of expressions.
  private mutating func fold(_ function: CollectionFunction, _ argument: QueryExpression) throws -> Operand {
    switch argument {
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
      var elementKind = Kind.other
      var isFloating = false
      if case .attribute(let type) = path.valueKind { isFloating = type == .double || type == .float }
      let (from, value) = try elements(of: path) { element in
        elementKind = element.kind
        return Dialect.elementFold(function, element.fragment, isFloating: isFloating)
      }
      let query = Fragment("(SELECT ") + value + Fragment(" \(from))")
      let fragment = function == .sum || function == .count ? Fragment("COALESCE(") + query + Fragment(", 0)") : query
      let yieldsElement = function == .min || function == .max || function == .mode
      return Operand(fragment: fragment, nullable: true, kind: yieldsElement ? elementKind : .other, isComputed: true)
    case .aggregate(let items):
      var operands: [Operand] = []
      for item in items { operands.append(try expression(item)) }
      return Dialect.literalFold(function, operands)
    default:
      throw StoreError(
        .unsupported, "\(function.rawValue) needs a collection in a fetch of \(root.name)", entity: root.name)
    }
  }

  /// A numeric argument, as ``SQLDialect/numericArgument(_:_:)`` reads a key path's attribute.
  private mutating func numeric(_ argument: QueryExpression) throws -> Fragment {
    let operand = try expression(argument)
    if case .keyPath(let keyPath) = argument,
      case .attribute(let type) = try ResolvedKeyPath(keyPath, entity: root, model: schema.model).valueKind
    {
      return Dialect.numericArgument(operand.fragment, type)
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
    var inner = Self(schema: schema, storeIdentifier: storeIdentifier, root: try schema.table(rel.destination).entity)
    inner.rootAlias = source.alias
    inner.aliasCount = aliasCount
    let condition = try inner.compile(predicate)
    aliasCount = inner.aliasCount
    let joins = inner.scopes[0].joins.isEmpty ? "" : " " + inner.scopes[0].joins.joined(separator: " ")
    let head = "(SELECT COUNT(*) FROM \(source.from)\(joins) WHERE \(source.correlation) AND "
    return Operand(fragment: Fragment(head) + condition + Fragment(")"), nullable: false, kind: .other, isComputed: true)
  }
}
