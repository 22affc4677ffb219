import Foundation
import StrataStoreKit

/// Compiles a checked ``FetchDescription`` (see ``QueryValidator``) into SQL for one entity's table, in
/// the spelling of `Dialect`, so the database does the filtering, sorting and folding.
///
/// Every comparison compiles to a condition that is never NULL, so `NOT` behaves like the evaluator's
/// two-valued logic (docs/QUERY-SEMANTICS.md):
/// - to-one key paths become `LEFT JOIN`s (`t1`, `t2`, … aliases), reused by every reference;
/// - `ANY`/`ALL`/`NONE` over a to-many key path become `EXISTS` / `NOT EXISTS` subqueries over the
///   destination rows (foreign-key style) or join-table rows;
/// - `rel.@count` becomes a correlated `(SELECT COUNT(*) …)`, `rel.attr.@sum` (`@avg`, `@min`, `@max`) a
///   correlated aggregate, `rel[n].attr` a subquery over the position index;
/// - `SUBQUERY(rel, $x, p).@count` becomes `(SELECT COUNT(*) FROM <targets> WHERE <correlation> AND <p>)`,
///   `p` compiled by a nested compiler whose root alias is the target rows';
/// - arithmetic uses SQL operators, functions and string operators what the dialect gives;
/// - constants are bound, never written into the SQL.
package struct SQLQueryCompiler<Dialect: SQLDialect> {
  package typealias Fragment = SQLFragment<Dialect>
  package typealias Operand = SQLOperand<Dialect>
  package typealias Schema = Dialect.Schema
  typealias Kind = SQLOperandKind

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

  private struct Scope {
    var joins: [String] = []
    var aliasByPath: [String: String] = [:]
  }

  package let schema: Schema
  package let storeIdentifier: String
  package let root: EntityDescription
  /// The alias of the root entity's rows: `t0`, or a subquery's element alias.
  private var rootAlias = "t0"
  /// The root query's joins first, then those of the subquery being compiled, if any.
  private var scopes = [Scope()]
  private var aliasCount = 0

  private init(schema: Schema, storeIdentifier: String, root: EntityDescription) {
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

  private mutating func compileQuery(_ request: FetchDescription, _ table: Schema.Table) throws -> Query {
    let predicate = try request.predicate.map { try QueryValidator.check($0, entity: root, model: schema.model) }
    try QueryValidator.check(request.sortDescriptors, entity: root, model: schema.model)
    var condition = try predicate.map { try compile($0) }
    if !request.includesSubentities && schema.model.inheritance.hasSubentities(table.name) {
      let own = Fragment("t0.\(SQLLayout.quote(SQLLayout.entityColumn)) = ?", [Dialect.text(table.name)])
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

  // MARK: Sorting

  private mutating func orderTerms(_ sort: QuerySort) throws -> [String] {
    let path = try QueryValidator.resolveSortKey(sort, entity: root, model: schema.model)
    let alias = joinToOne(path.hops[...], from: "t0", scope: 0, prefix: "")
    guard case .attribute(let attribute, _) = path.terminal else {
      throw StoreError(.invalidQuery, "cannot sort by '\(sort.keyPath)'", entity: root.name, key: sort.keyPath)
    }
    return Dialect.orderTerms("\(alias).\(SQLLayout.quote(attribute.name))", attribute, sort)
  }

  // MARK: Predicates

  private mutating func compile(_ predicate: QueryPredicate) throws -> Fragment {
    switch predicate {
    case .constant(let value): return Fragment(value ? Dialect.trueLiteral : Dialect.falseLiteral)
    case .and(let parts):
      return Fragment.joined(try parts.map { try compile($0) }, "AND", empty: Dialect.trueLiteral)
    case .or(let parts): return Fragment.joined(try parts.map { try compile($0) }, "OR", empty: Dialect.falseLiteral)
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
    if let kind {
      if case .attribute(let type) = kind { isString = Dialect.comparesAsString(type) } else { isString = false }
    } else {
      isString = value.stringValue != nil
    }
    var operand = Operand(
      fragment: Fragment("?", [encode(value, against: kind)]), nullable: false, kind: isString ? .string : .other)
    operand.isUnordered = value.isUnorderedNumber
    operand.constant = value
    if case .attribute(.decimal) = kind, case .double = value { operand.comparesAsReal = true }
    return operand
  }

  private func encode(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> Schema.Binding {
    if case .objectID(let id) = value {
      guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return Dialect.integer(0) }
      return Dialect.integer(pk)
    }
    return Dialect.bind(value, against: kind)
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
      let table = Dialect.tableName(hop.destination.name, in: schema)
      scopes[scope].joins.append(
        "LEFT JOIN \(table) AS \(next) ON \(next).\"_pk\" = \(current).\(SQLLayout.quote(hop.relationship.name))")
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
      let sql = Dialect.attributeValue("\(alias).\(SQLLayout.quote(attribute.name))", attribute)
      return Operand(
        fragment: Fragment(sql), nullable: attribute.isOptional || throughToOne,
        kind: Dialect.comparesAsString(attribute.type) ? .string : .other)
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
      let value = Dialect.aggregate(op, of: "\(source.alias).\(SQLLayout.quote(attribute.name))", attribute)
      var sql = "(SELECT \(value) FROM \(source.from) WHERE \(source.correlation))"
      if throughToOne { sql = "CASE WHEN \(alias).\"_pk\" IS NULL THEN NULL ELSE \(sql) END" }
      let isString = attribute.type == .string && (op == .min || op == .max)
      return Operand(fragment: Fragment(sql), nullable: true, kind: isString ? .string : .other, isComputed: true)
    case .element(let position, let rel, let attribute, _):
      // The element's attribute, from the targets in list order (an index scan of the position index),
      // through the to-ones after the element joined inside the subquery.
      let column = SQLLayout.quote(attribute.name)
      let sql = try elementSubquery(position, rel, hops, of: entity, alias: alias, column: column)
      return Operand(
        fragment: Fragment(Dialect.attributeValue(sql, attribute)), nullable: true,
        kind: Dialect.comparesAsString(attribute.type) ? .string : .other, isComputed: true)
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
      tableName: { Dialect.tableName($0, in: schema) })
  }

  /// Where the targets of a to-many relationship of the row `ownerAlias` are: the text after `FROM`
  /// (or after `JOIN`, with `correlation` as its `ON`), and the alias of the target rows.
  private mutating func toManySource(_ rel: RelationshipDescription, owner: String, ownerAlias: String) -> SQLToManySource {
    let schema = self.schema
    return SQLLayout.toManySource(
      schema.toManyStorage(owner, rel), ownerAlias: ownerAlias, newAlias: { newAlias() },
      tableName: { Dialect.tableName($0, in: schema) })
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

  /// A checked expression (see `ExpressionChecker` in StrataCore) as a SQL value, computed as the
  /// evaluator computes it: integers stay integers, a floating-point value on either side makes one,
  /// `divide:by:` always divides in floating point and gives NULL for a zero divisor.
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
      if arguments.count == 1, let function = Dialect.textFunction(name) {
        let argument = try self.expression(arguments[0])
        return Operand(fragment: function(argument.fragment), nullable: true, kind: .string, isComputed: true)
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

  /// A collection function over a collection key path (an aggregate over the element rows) or over a
  /// literal of expressions.
  private mutating func fold(_ function: CollectionFunction, _ argument: QueryExpression) throws -> Operand {
    switch argument {
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
      var elementKind = Kind.other
      var isFloating = false
      if case .attribute(let type) = path.valueKind { isFloating = type == .double || type == .float }
      let (from, value) = try elements(of: path) { element in
        elementKind = element.kind
        return Dialect.collectionAggregate(function, element.fragment, isFloating: isFloating)
      }
      let query = Fragment("(SELECT ") + value + Fragment(" \(from))")
      let sql = function == .sum || function == .count ? Fragment("COALESCE(") + query + Fragment(", 0)") : query
      let yieldsElement = function == .min || function == .max || function == .mode
      return Operand(fragment: sql, nullable: true, kind: yieldsElement ? elementKind : .other, isComputed: true)
    case .aggregate(let items):
      var operands: [Operand] = []
      for item in items { operands.append(try expression(item)) }
      return Dialect.collectionOfItems(function, operands)
    default:
      throw StoreError(
        .unsupported, "\(function.rawValue) needs a collection in a fetch of \(root.name)", entity: root.name)
    }
  }

  /// A numeric argument, read as the dialect's arithmetic needs it.
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

  // MARK: Comparisons

  /// `left op right` as a condition that is never NULL.
  package static func compare(
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
        ], "AND", empty: Dialect.trueLiteral)
    case .in:
      if let items = right.elements {
        if items.count > 1, let list = Dialect.inList(left, items, folds: folds) { return list }
        return Fragment.joined(items.map { equal(left, $0, options, folds: folds) }, "OR", empty: Dialect.falseLiteral)
      }
      return stringOperation(left, op, right, options)
    case .contains, .beginsWith, .endsWith, .like, .matches:
      return stringOperation(left, op, right, options)
    }
  }

  private static func equal(_ left: Operand, _ right: Operand, _ options: StringOptions, folds: Bool) -> Fragment {
    if left.isUnordered || right.isUnordered { return Fragment(Dialect.falseLiteral) }
    let left = right.comparesAsReal ? real(left) : left
    if left.isNullConstant && right.isNullConstant { return Fragment(Dialect.trueLiteral) }
    if right.isNullConstant { return Fragment("(") + left.fragment + Fragment(" IS NULL)") }
    if left.isNullConstant { return Fragment("(") + right.fragment + Fragment(" IS NULL)") }
    if folds { return stringOperation(left, .equalTo, right, options) }
    return Dialect.same(left.fragment, right.fragment)
  }

  private static func order(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions, folds: Bool
  ) -> Fragment {
    if left.isNullConstant || right.isNullConstant || left.isUnordered || right.isUnordered {
      return Fragment(Dialect.falseLiteral)
    }
    let left = right.comparesAsReal ? real(left) : left
    if folds { return stringOperation(left, op, right, options) }
    return Dialect.order(left, op, right)
  }

  /// A decimal column read as a double, for a constant beyond `Decimal`'s range.
  private static func real(_ operand: Operand) -> Operand {
    var real = operand
    real.fragment = Dialect.real(operand.fragment)
    return real
  }

  private static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment {
    if op != .equalTo && op != .notEqualTo && (left.isNullConstant || right.isNullConstant) {
      return Fragment(Dialect.falseLiteral)
    }
    return Dialect.stringOperation(left, op, right, options)
  }
}

// MARK: Dictionary results

extension DictionaryFetch {
  /// Whether the query pages the rows itself: no having predicate or distinct rows to apply first.
  package var pagesInSQL: Bool { having == nil && !isDistinct }

  /// The rows a query returned, the having predicate, distinct rows and paging (unless in SQL) applied.
  package func finish(_ rows: [[String: Value]], _ request: FetchDescription) throws -> FetchResult {
    var rows = rows
    if let having { rows = try rows.filter { try Self.matches($0, having) } }
    if isDistinct { rows = Self.distinct(rows) }
    if !pagesInSQL { rows = Self.page(rows, offset: request.fetchOffset, limit: request.effectiveLimit) }
    return .dictionaries(rows)
  }
}

extension SQLQueryCompiler {
  /// A dictionary fetch compiled to `SELECT <columns> FROM … WHERE … [GROUP BY …] ORDER BY …`.
  package struct DictionaryQuery {
    package var query: Query
    /// Each column's key, SQL, how to read it, and for a fold or expression the declared result type.
    package var columns: [(name: String, sql: Fragment, decoding: SQLColumnDecoding, resultType: AttributeType?)]
    package var groupBy: [Fragment]

    /// `SELECT <columns> FROM …` (`SELECT 1` without columns).
    package var selectFrom: Fragment {
      var select = Fragment(columns.isEmpty ? "SELECT 1" : "SELECT ")
      for (index, column) in columns.enumerated() { select = select + (index == 0 ? "" : ", ") + column.sql }
      return select + " " + query.fromClause
    }
  }

  /// Compiles a checked ``DictionaryFetch`` with the request's predicate and sort descriptors: folds become
  /// SQL aggregates, groups `GROUP BY`; a grouped fetch without sort descriptors orders by its group-by
  /// values, as ``DictionaryFetch`` does in memory.
  package static func compileDictionary(
    _ request: FetchDescription, _ plan: DictionaryFetch, schema: Schema, storeIdentifier: String
  ) throws -> DictionaryQuery {
    let table = try schema.table(request.entityName)
    var compiler = Self(schema: schema, storeIdentifier: storeIdentifier, root: table.entity)
    var base = try compiler.compileQuery(request, table)
    let sorts = request.sortDescriptors
    var columns: [(name: String, sql: Fragment, decoding: SQLColumnDecoding, resultType: AttributeType?)] = []
    for column in plan.columns {
      switch column {
      case .property(let name, let path):
        let (sql, decoding) = try compiler.single(path)
        columns.append((name, sql, decoding, nil))
      case .fold(let name, let function, let path, let resultType):
        let (x, elementDecoding) = try compiler.single(path)
        let sql = Dialect.dictionaryAggregate(function, x, elementDecoding)
        let keepsType = function == .min || function == .max || function == .mode
        columns.append((name, sql, keepsType ? elementDecoding : .computed, resultType))
      case .expression(let name, let expression, let resultType):
        let operand = try compiler.expression(expression)
        columns.append((name, operand.fragment, .computed, resultType))
      }
    }
    var groupBy: [Fragment] = []
    for path in plan.groupBy {
      let (sql, _) = try compiler.single(path)
      groupBy.append(sql)
    }
    var orderBy = Array(base.orderBy.dropLast())
    if plan.isGrouped {
      if sorts.isEmpty { orderBy = groupBy.map { $0.sql + Dialect.groupOrder } }
    } else {
      orderBy.append("t0.\"_pk\" ASC")
    }
    base.joins = compiler.scopes[0].joins
    base.orderBy = orderBy
    return DictionaryQuery(query: base, columns: columns, groupBy: groupBy)
  }

  /// The SQL of a single-valued key path and how to read it back.
  private mutating func single(_ path: ResolvedKeyPath) throws -> (Fragment, SQLColumnDecoding) {
    let alias = joinToOne(path.hops[...], from: rootAlias, scope: 0, prefix: "")
    let operand = try terminal(
      path.terminal, of: path.terminalEntity, alias: alias, throughToOne: !path.hops.isEmpty, elementHops: path.elementHops)
    switch path.valueKind {
    case .attribute(let type): return (operand.fragment, .attribute(type))
    case .objectID(let entity): return (operand.fragment, .objectID(entity: entity))
    case .count: return (operand.fragment, .computed)
    }
  }

  /// The SQL of a checked expression of `root`'s own attributes, reading the row aliased `t0`.
  ///
  /// - Throws: `.unsupported` when the expression reads another object.
  package static func compileValue(
    _ expression: QueryExpression, schema: Schema, storeIdentifier: String, root: EntityDescription
  ) throws -> Fragment {
    var compiler = Self(schema: schema, storeIdentifier: storeIdentifier, root: root)
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
