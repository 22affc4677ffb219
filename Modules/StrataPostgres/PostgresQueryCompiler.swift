import Foundation
import StrataSQL
import StrataStoreKit

/// A piece of SQL with `?` placeholders and the values bound to them, in order; numbered `$1`, `$2`, …
/// when the statement is complete (``numbered``). The store never writes `?` into SQL any other way
/// (identifiers of a valid model cannot hold one, constants are always bound).
struct Fragment: Sendable, ExpressibleByStringLiteral {
  var sql: String
  var bindings: [PGParameter]

  init(_ sql: String, _ bindings: [PGParameter] = []) {
    self.sql = sql
    self.bindings = bindings
  }

  init(stringLiteral sql: String) { self.init(sql) }

  static func + (a: Fragment, b: Fragment) -> Fragment { Fragment(a.sql + b.sql, a.bindings + b.bindings) }

  /// The SQL with its `?` placeholders numbered `$start`, `$start+1`, ….
  func numbered(from start: Int = 1) -> String {
    var result = ""
    result.reserveCapacity(sql.utf8.count + bindings.count * 2)
    var n = start
    for character in sql {
      if character == "?" {
        result += "$\(n)"
        n += 1
      } else {
        result.append(character)
      }
    }
    return result
  }

  /// `parts` joined by `separator` in parentheses; `empty` when there are none.
  static func joined(_ parts: [Fragment], _ separator: String, empty: String) -> Fragment {
    guard !parts.isEmpty else { return Fragment(empty) }
    if parts.count == 1 { return parts[0] }
    return Fragment("(" + parts.map(\.sql).joined(separator: " \(separator) ") + ")", parts.flatMap(\.bindings))
  }
}

/// Compiles a checked ``FetchDescription`` into PostgreSQL for one entity's table, so the server does
/// the filtering, sorting and folding.
///
/// Every comparison is a boolean that is never NULL (`COALESCE(…, FALSE)`, `IS NOT DISTINCT FROM`), so
/// `NOT` follows the evaluator's two-valued logic (docs/QUERY-SEMANTICS.md):
/// - to-one key paths become `LEFT JOIN`s; `ANY`/`ALL`/`NONE` over to-many paths `EXISTS` subqueries;
/// - `@count`, `@sum`, … correlated subqueries; `SUBQUERY(…).@count` a `COUNT(*)` with the inner predicate;
/// - `[c]` folds with `lower`, `[d]` decomposes (NFD) and strips combining marks; a constant `LIKE`
///   pattern becomes an anchored regular expression (`?` is one visible character, as in the evaluator),
///   a pattern from a column SQL `LIKE`; `MATCHES` the anchored regular expression `~` (`~*` with `[c]`);
/// - strings are `COLLATE "C"` (code-point order); `localizedStandard` sorts by the folded text with
///   zero-padded digit runs, ties broken by code point;
/// - constants are bound, never written into the SQL.
struct PostgresQueryCompiler {
  /// The compiled parts of a `SELECT … FROM <entity> AS t0`.
  struct Query {
    var table: PostgresSchema.Table
    var joins: [String]
    var condition: Fragment?
    /// `ORDER BY` terms, ending with `t0."_pk" ASC`.
    var orderBy: [String]

    var fromClause: Fragment {
      var fragment = Fragment("FROM \(table.qualified) AS t0")
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
    var isNullConstant = false
    var kind: Kind
    var elements: [Operand]? = nil
    /// A NaN constant: equal to nothing and unordered.
    var isUnordered = false
    /// A constant no `Decimal` holds, compared with a decimal column: both compared as doubles.
    var comparesAsReal = false
    /// The constant itself, when the operand is one (LIKE patterns are translated from it).
    var constant: Value? = nil
  }

  let schema: PostgresSchema
  let storeIdentifier: String
  let root: EntityDescription
  private var rootAlias = "t0"
  private var scopes = [Scope()]
  private var aliasCount = 0

  private init(schema: PostgresSchema, storeIdentifier: String, root: EntityDescription) {
    self.schema = schema
    self.storeIdentifier = storeIdentifier
    self.root = root
  }

  /// Checks `request` with ``QueryValidator`` and compiles its predicate and sort descriptors.
  static func compile(_ request: FetchDescription, schema: PostgresSchema, storeIdentifier: String) throws -> Query {
    let table = try schema.table(request.entityName)
    var compiler = PostgresQueryCompiler(schema: schema, storeIdentifier: storeIdentifier, root: table.entity)
    return try compiler.compileQuery(request, table)
  }

  private mutating func compileQuery(_ request: FetchDescription, _ table: PostgresSchema.Table) throws -> Query {
    let predicate = try request.predicate.map { try QueryValidator.check($0, entity: root, model: schema.model) }
    try QueryValidator.check(request.sortDescriptors, entity: root, model: schema.model)
    var condition = try predicate.map { try compile($0) }
    if !request.includesSubentities && schema.model.inheritance.hasSubentities(table.name) {
      let own = Fragment("t0.\(quoteIdentifier(PostgresSchema.entityColumn)) = ?", [.text(table.name)])
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

  /// The `ORDER BY` terms of one sort descriptor. NULLs sort first ascending, as in every backend.
  private mutating func orderTerms(_ sort: QuerySort) throws -> [String] {
    let path = try QueryValidator.resolveSortKey(sort, entity: root, model: schema.model)
    let alias = joinToOne(path.hops[...], from: "t0", scope: 0, prefix: "")
    guard case .attribute(let attribute, _) = path.terminal else {
      throw StoreError(.invalidQuery, "cannot sort by '\(sort.keyPath)'", entity: root.name, key: sort.keyPath)
    }
    let column = "\(alias).\(quoteIdentifier(attribute.name))"
    let direction = sort.ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST"
    guard attribute.type == .string else { return [column + direction] }
    switch sort.comparator {
    case .default: return [column + direction]
    case .caseInsensitive: return [Self.fold(column, .caseInsensitive) + direction, column + direction]
    case .localized:
      return [Self.fold(column, [.caseInsensitive, .diacriticInsensitive]) + direction, column + direction]
    case .localizedStandard:
      // Folded, with every digit run zero-padded to 40 digits so that runs compare by value, as
      // StringSemantics.localizedStandardCompare does; ties broken by code point.
      let folded = Self.fold(column, [.caseInsensitive, .diacriticInsensitive])
      let key =
        "COALESCE((SELECT string_agg(CASE WHEN part[1] ~ '^[0-9]' THEN lpad(ltrim(part[1], '0'), 40, '0') "
        + "ELSE part[1] END, '' ORDER BY n) FROM regexp_matches(\(folded), '[0-9]+|[^0-9]+', 'g') "
        + "WITH ORDINALITY AS parts(part, n)), '') COLLATE \"C\""
      return [key + direction, column + direction]
    }
  }

  // MARK: Predicates

  private mutating func compile(_ predicate: QueryPredicate) throws -> Fragment {
    switch predicate {
    case .constant(let value): return Fragment(value ? "TRUE" : "FALSE")
    case .and(let parts): return Fragment.joined(try parts.map { try compile($0) }, "AND", empty: "TRUE")
    case .or(let parts): return Fragment.joined(try parts.map { try compile($0) }, "OR", empty: "FALSE")
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
      return try Self.jsonComparison("\(alias).\(quoteIdentifier(attribute.name))", leftPath, comparison, rhs, entity: root.name)
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
      return Operand(fragment: Fragment("\(rootAlias).\"_pk\""), kind: .other)
    case .function:
      return try self.expression(expression)
    default:
      throw StoreError(.unsupported, "this expression is not supported in a fetch of \(root.name)", entity: root.name)
    }
  }

  private func constant(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> Operand {
    if case .array(let items) = value {
      return Operand(fragment: "NULL", kind: .other, elements: items.map { constant($0, against: kind) })
    }
    if value.isNull { return Operand(fragment: "NULL", isNullConstant: true, kind: .other) }
    let isString: Bool
    if let kind {
      isString = kind == .attribute(.string) || kind == .attribute(.url)
    } else {
      isString = value.stringValue != nil
    }
    var operand = Operand(fragment: Fragment("?", [encode(value, against: kind)]), kind: isString ? .string : .other)
    operand.isUnordered = value.isUnorderedNumber
    operand.constant = value
    if case .attribute(.decimal) = kind, case .double = value { operand.comparesAsReal = true }
    return operand
  }

  private func encode(_ value: Value, against kind: ResolvedKeyPath.ValueKind?) -> PGParameter {
    switch value {
    case .objectID(let id):
      guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return .int(0) }
      return .int(pk)
    case .decimal(let d):
      if case .attribute(.decimal) = kind { return .text("\(d)", oid: PGType.numeric) }
      return value.numericValue.map(PGParameter.double) ?? .null
    case .url(let url):
      return .string(url.absoluteString)
    default:
      return PostgresSchema.encode(value)
    }
  }

  // MARK: Key paths

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
        "LEFT JOIN \(schema.qualify(hop.destination.name)) AS \(next) ON \(next).\"_pk\" = \(current).\(quoteIdentifier(hop.relationship.name))"
      )
      scopes[scope].aliasByPath[key] = next
      current = next
    }
    return current
  }

  private mutating func terminal(
    _ terminal: ResolvedKeyPath.Terminal, of entity: EntityDescription, alias: String, throughToOne: Bool,
    elementHops hops: [ResolvedKeyPath.Hop] = []
  ) throws -> Operand {
    switch terminal {
    case .attribute(let attribute, _):
      let sql = "\(alias).\(quoteIdentifier(attribute.name))"
      let isString = attribute.type == .string || attribute.type == .url
      return Operand(fragment: Fragment(sql), kind: isString ? .string : .other)
    case .toOne(let rel, _):
      return Operand(fragment: Fragment("\(alias).\(quoteIdentifier(rel.name))"), kind: .other)
    case .object:
      return Operand(fragment: Fragment("\(alias).\"_pk\""), kind: .other)
    case .count(let rel):
      let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
      var sql = "(SELECT COUNT(*) FROM \(source.from) WHERE \(source.correlation))"
      if throughToOne { sql = "CASE WHEN \(alias).\"_pk\" IS NULL THEN NULL ELSE \(sql) END" }
      return Operand(fragment: Fragment(sql), kind: .other)
    case .aggregate(let op, let rel, let attribute, _):
      let source = toManySource(rel, owner: entity.name, ownerAlias: alias)
      let column = "\(source.alias).\(quoteIdentifier(attribute.name))"
      let isFloating = attribute.type == .double || attribute.type == .float
      let value =
        switch op {
        case .sum: isFloating ? "COALESCE(SUM(\(column)), 0)" : "COALESCE(SUM(\(column)), 0)::bigint"
        case .avg: "AVG(\(column)::double precision)"
        case .min: "MIN(\(column))"
        case .max: "MAX(\(column))"
        }
      var sql = "(SELECT \(value) FROM \(source.from) WHERE \(source.correlation))"
      if throughToOne { sql = "CASE WHEN \(alias).\"_pk\" IS NULL THEN NULL ELSE \(sql) END" }
      let isString = attribute.type == .string && (op == .min || op == .max)
      return Operand(fragment: Fragment(sql), kind: isString ? .string : .other)
    case .element(let position, let rel, let attribute, _):
      // The element's attribute, from the targets in list order (an index scan of the position index),
      // through the to-ones after the element joined inside the subquery.
      let sql = try elementSubquery(position, rel, hops, of: entity, alias: alias, column: quoteIdentifier(attribute.name))
      let isString = attribute.type == .string || attribute.type == .url
      return Operand(fragment: Fragment(sql), kind: isString ? .string : .other)
    case .elementObject(let position, let rel):
      let sql = try elementSubquery(position, rel, hops, of: entity, alias: alias, column: "\"_pk\"")
      return Operand(fragment: Fragment(sql), kind: .other)
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
      tableName: { schema.qualify($0) })
  }

  private mutating func toManySource(_ rel: RelationshipDescription, owner: String, ownerAlias: String) -> SQLToManySource {
    let schema = self.schema
    return SQLLayout.toManySource(
      schema.toManyStorage(owner, rel), ownerAlias: ownerAlias, newAlias: { newAlias() }, tableName: { schema.qualify($0) })
  }

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
      element = Operand(fragment: Fragment("\(alias).\"_pk\""), kind: .other)
    } else if case .toMany(let rel) = path.terminal {
      let nested = toManySource(rel, owner: entity.name, ownerAlias: alias)
      scopes[scope].joins.append(nested.joinForm)
      element = Operand(fragment: Fragment("\(nested.alias).\"_pk\""), kind: .other)
    } else {
      element = try terminal(
        path.terminal, of: entity, alias: alias, throughToOne: throughToOne, elementHops: path.elementHops)
    }
    let result = try body(element)
    let joins = scopes[scope].joins.isEmpty ? "" : " " + scopes[scope].joins.joined(separator: " ")
    return ("FROM \(source.from)\(joins) WHERE \(source.correlation)", result)
  }

  // MARK: Expressions

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
      if ["lowercase:", "uppercase:", "canonical:"].contains(name), arguments.count == 1 {
        let argument = try self.expression(arguments[0]).fragment
        let sql: Fragment =
          switch name {
          case "lowercase:": Fragment("(lower((") + argument + Fragment(") COLLATE \"und-x-icu\") COLLATE \"C\")")
          case "uppercase:": Fragment("(upper((") + argument + Fragment(") COLLATE \"und-x-icu\") COLLATE \"C\")")
          default: Fragment(Self.fold("(" + argument.sql + ")", [.caseInsensitive, .diacriticInsensitive]), argument.bindings)
          }
        return Operand(fragment: sql, kind: .string)
      }
      if let function = CollectionFunction(rawValue: name), arguments.count == 1 {
        return try fold(function, arguments[0])
      }
      if ExpressionFunctions.unaryNumericFunctions.contains(name), arguments.count == 1 {
        let x = try numeric(arguments[0])
        return Operand(fragment: Self.unary(name, x), kind: .other)
      }
      if name == "modulus:by:" || name == "raise:toPower:", arguments.count == 2 {
        let a = try numeric(arguments[0])
        let b = try numeric(arguments[1])
        let sql =
          name == "raise:toPower:"
          ? Fragment("power((") + a + Fragment(")::double precision, (") + b + Fragment(")::double precision)")
          : Fragment("CASE WHEN (") + b + Fragment(") = 0 THEN NULL ELSE mod(") + a + Fragment(", ") + b + Fragment(") END")
        return Operand(fragment: sql, kind: .other)
      }
      let symbols = ["add:to:": "+", "from:subtract:": "-", "multiply:by:": "*", "divide:by:": "/"]
      if let symbol = symbols[name], arguments.count == 2 {
        var left = try numeric(arguments[0])
        var right = try numeric(arguments[1])
        if symbol == "/" {
          left = Fragment("(") + left + Fragment(")::double precision")
          right = Fragment("NULLIF((") + right + Fragment(")::double precision, 0)")
        }
        return Operand(fragment: Fragment("(") + left + Fragment(" \(symbol) ") + right + Fragment(")"), kind: .other)
      }
    default:
      break
    }
    throw StoreError(.unsupported, "the expression \(expression) is not supported in a fetch of \(root.name)", entity: root.name)
  }

  private static func unary(_ name: String, _ x: Fragment) -> Fragment {
    let d = Fragment("(") + x + Fragment(")::double precision")
    switch name {
    case "abs:":
      return Fragment("CASE WHEN (") + x
        + Fragment(")::double precision = -9223372036854775808 THEN 9223372036854775808::double precision ELSE abs(")
        + x + Fragment(") END")
    case "sqrt:": return Fragment("CASE WHEN ") + d + Fragment(" >= 0 THEN sqrt(") + d + Fragment(") END")
    case "log:": return Fragment("CASE WHEN ") + d + Fragment(" > 0 THEN log(") + d + Fragment(") END")
    case "ln:": return Fragment("CASE WHEN ") + d + Fragment(" > 0 THEN ln(") + d + Fragment(") END")
    case "exp:": return Fragment("CASE WHEN ") + d + Fragment(" < 709 THEN exp(") + d + Fragment(") END")
    case "floor:": return Fragment("floor(") + d + Fragment(")")
    case "ceiling:": return Fragment("ceil(") + d + Fragment(")")
    default: return Fragment("trunc(") + d + Fragment(")")
    }
  }

  private mutating func fold(_ function: CollectionFunction, _ argument: QueryExpression) throws -> Operand {
    switch argument {
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
      var elementKind = Kind.other
      var isFloating = false
      if case .attribute(let type) = path.valueKind { isFloating = type == .double || type == .float }
      let (from, value) = try elements(of: path) { element in
        elementKind = element.kind
        return Self.aggregate(function, element.fragment, isFloating: isFloating)
      }
      let query = Fragment("(SELECT ") + value + Fragment(" \(from))")
      let sql = function == .sum || function == .count ? Fragment("COALESCE(") + query + Fragment(", 0)") : query
      let yieldsElement = function == .min || function == .max || function == .mode
      return Operand(fragment: sql, kind: yieldsElement ? elementKind : .other)
    case .aggregate(let items):
      var operands: [Operand] = []
      for item in items { operands.append(try expression(item)) }
      // VALUES needs one type per column: text when an item is a string, else double precision.
      let cast = operands.contains { $0.kind == .string } ? "::text" : "::double precision"
      let values = Fragment.joined(
        operands.map { Fragment("((") + $0.fragment + Fragment(")\(cast))") }, "), (", empty: "NULL")
      let rows = Fragment("(SELECT ") + Self.aggregate(function, Fragment("v"), isFloating: true)
      let list = values.sql.hasPrefix("(") ? values : Fragment("(") + values + Fragment(")")
      let sql = rows + Fragment(" FROM (VALUES ") + list + Fragment(") AS items(v))")
      let kind: Kind = operands.contains { $0.kind == .string } ? .string : .other
      let wrapped = function == .sum || function == .count ? Fragment("COALESCE(") + sql + Fragment(", 0)") : sql
      return Operand(fragment: wrapped, kind: kind)
    default:
      throw StoreError(.unsupported, "\(function.rawValue) needs a collection in a fetch of \(root.name)", entity: root.name)
    }
  }

  /// The SQL aggregate of a collection function over `x`.
  static func aggregate(_ function: CollectionFunction, _ x: Fragment, isFloating: Bool) -> Fragment {
    switch function {
    case .sum: return Fragment("SUM(") + x + Fragment(isFloating ? ")" : ")::bigint")
    case .count: return Fragment("COUNT(") + x + Fragment(")")
    case .min: return Fragment("MIN(") + x + Fragment(")")
    case .max: return Fragment("MAX(") + x + Fragment(")")
    case .average: return Fragment("AVG((") + x + Fragment(")::double precision)")
    case .median:
      return Fragment("percentile_cont(0.5) WITHIN GROUP (ORDER BY (") + x + Fragment(")::double precision)")
    case .mode: return Fragment("mode() WITHIN GROUP (ORDER BY ") + x + Fragment(")")
    case .stddev: return Fragment("stddev_pop((") + x + Fragment(")::double precision)")
    }
  }

  /// A numeric argument; booleans count as 0/1.
  private mutating func numeric(_ argument: QueryExpression) throws -> Fragment {
    let operand = try expression(argument)
    if case .keyPath(let keyPath) = argument,
      case .attribute(let type) = try ResolvedKeyPath(keyPath, entity: root, model: schema.model).valueKind
    {
      if type == .bool { return Fragment("(") + operand.fragment + Fragment(")::int") }
      if type == .int16 || type == .int32 { return Fragment("(") + operand.fragment + Fragment(")::bigint") }
    }
    return operand.fragment
  }

  private mutating func subqueryCount(_ keyPath: String, _ predicate: QueryPredicate) throws -> Operand {
    let path = try ResolvedKeyPath(keyPath, entity: root, model: schema.model)
    guard case .toMany(let rel) = path.terminal, !path.hops.contains(where: \.isToMany) else {
      throw StoreError(.unsupported, "'\(keyPath)' is not a to-many relationship", entity: root.name, key: keyPath)
    }
    let ownerAlias = joinToOne(path.hops[...], from: rootAlias, scope: 0, prefix: "")
    let source = toManySource(rel, owner: path.terminalEntity.name, ownerAlias: ownerAlias)
    var inner = PostgresQueryCompiler(
      schema: schema, storeIdentifier: storeIdentifier, root: try schema.table(rel.destination).entity)
    inner.rootAlias = source.alias
    inner.aliasCount = aliasCount
    let condition = try inner.compile(predicate)
    aliasCount = inner.aliasCount
    let joins = inner.scopes[0].joins.isEmpty ? "" : " " + inner.scopes[0].joins.joined(separator: " ")
    let head = "(SELECT COUNT(*) FROM \(source.from)\(joins) WHERE \(source.correlation) AND "
    return Operand(fragment: Fragment(head) + condition + Fragment(")"), kind: .other)
  }

  // MARK: Comparisons

  /// `sql` folded for a comparison under `options`, as ``StringSemantics/fold(_:_:)`` folds: `[d]`
  /// decomposes (NFD) and drops the combining diacritical marks, `[c]` lowercases with ICU's full mappings
  /// and folds what lowercasing leaves apart (ß → ss, ς → σ), then the result is recomposed (NFC). The
  /// result is `COLLATE "C"`, compared by code point.
  static func fold(_ sql: String, _ options: StringOptions) -> String {
    if options.contains(.normalized) || (!options.contains(.caseInsensitive) && !options.contains(.diacriticInsensitive)) {
      return sql
    }
    var result = "(\(sql))::text"
    if options.contains(.diacriticInsensitive) {
      result = "regexp_replace(normalize(\(result), NFD), '[\\u0300-\\u036f]', '', 'g')"
    }
    if options.contains(.caseInsensitive) {
      result = "replace(replace(lower((\(result)) COLLATE \"und-x-icu\"), 'ß', 'ss'), 'ς', 'σ')"
    }
    return "(normalize(\(result), NFC) COLLATE \"C\")"
  }

  /// An operand folded under `options`: a string constant folded here, exactly as the evaluator folds it.
  private static func foldedOperand(_ operand: Operand, _ options: StringOptions) -> Fragment {
    if case .string(let text)? = operand.constant {
      return Fragment("(?::text)", [.string(StringSemantics.fold(text, options))])
    }
    return folded(operand, options)
  }

  /// An operand folded under `options` in SQL. One without bound values (a column) is folded by ``fold(_:_:)``
  /// only when it holds non-ASCII text: ASCII text (as many bytes as characters) folds to itself lowercased
  /// under `[c]` and to itself under `[d]` alone, as ``StringSemantics/fold(_:_:)`` folds it, without ICU's
  /// lowercasing and the two normalizations per row. (Counting characters apart from bytes needs a UTF-8
  /// database, which `normalize()` in the full fold needs already.)
  private static func folded(_ operand: Operand, _ options: StringOptions) -> Fragment {
    let sql = operand.fragment.sql
    let full = fold(sql, options)
    guard operand.fragment.bindings.isEmpty, full != sql else { return Fragment(full, operand.fragment.bindings) }
    let text = "(\(sql))::text"
    let ascii = options.contains(.caseInsensitive) ? "lower(\(text) COLLATE \"C\")" : text
    return Fragment(
      "(CASE WHEN octet_length(\(text)) = char_length(\(text)) THEN (\(ascii) COLLATE \"C\") ELSE \(full) END)")
  }

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
        ], "AND", empty: "TRUE")
    case .in:
      if let items = right.elements {
        return Fragment.joined(items.map { equal(left, $0, options, folds: folds) }, "OR", empty: "FALSE")
      }
      return stringOperation(left, op, right, options)
    case .contains, .beginsWith, .endsWith, .like, .matches:
      return stringOperation(left, op, right, options)
    }
  }

  private static func equal(_ left: Operand, _ right: Operand, _ options: StringOptions, folds: Bool) -> Fragment {
    if left.isUnordered || right.isUnordered { return "FALSE" }
    let left = right.comparesAsReal ? real(left) : left
    if left.isNullConstant && right.isNullConstant { return "TRUE" }
    if right.isNullConstant { return Fragment("(") + left.fragment + Fragment(" IS NULL)") }
    if left.isNullConstant { return Fragment("(") + right.fragment + Fragment(" IS NULL)") }
    if folds { return stringOperation(left, .equalTo, right, options) }
    return Fragment("((") + left.fragment + Fragment(") IS NOT DISTINCT FROM (") + right.fragment + Fragment("))")
  }

  private static func order(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions, folds: Bool
  ) -> Fragment {
    if left.isNullConstant || right.isNullConstant || left.isUnordered || right.isUnordered { return "FALSE" }
    let left = right.comparesAsReal ? real(left) : left
    if folds { return stringOperation(left, op, right, options) }
    let comparison = Fragment("((") + left.fragment + Fragment(") \(op.rawValue) (") + right.fragment + Fragment("))")
    return Fragment("COALESCE(") + comparison + Fragment(", FALSE)")
  }

  private static func real(_ operand: Operand) -> Operand {
    var real = operand
    real.fragment = Fragment("(") + operand.fragment + Fragment(")::double precision")
    return real
  }

  /// A string operator under `options`, as a boolean that is never NULL.
  private static func stringOperation(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions
  ) -> Fragment {
    if op != .equalTo && op != .notEqualTo && (left.isNullConstant || right.isNullConstant) { return "FALSE" }
    let options: StringOptions = options.contains(.normalized) ? [] : options
    let l = Fragment("(") + foldedOperand(left, options) + Fragment(")::text")
    let r = Fragment("(") + foldedOperand(right, options) + Fragment(")::text")
    let test: Fragment
    switch op {
    case .equalTo: test = l + Fragment(" = ") + r
    case .notEqualTo: test = Fragment("NOT (") + l + Fragment(" = ") + r + Fragment(")")
    case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      test = l + Fragment(" COLLATE \"C\" \(op.rawValue) ") + r + Fragment(" COLLATE \"C\"")
    case .contains: test = Fragment("(") + r + Fragment(" <> '' AND strpos(") + l + Fragment(", ") + r + Fragment(") > 0)")
    case .beginsWith: test = Fragment("(") + r + Fragment(" <> '' AND starts_with(") + l + Fragment(", ") + r + Fragment("))")
    case .endsWith:
      test =
        Fragment("(") + r + Fragment(" <> '' AND right(") + l + Fragment(", length(") + r + Fragment(")) = ") + r
        + Fragment(")")
    case .in: test = Fragment("(") + l + Fragment(" <> '' AND strpos(") + r + Fragment(", ") + l + Fragment(") > 0)")
    case .like:
      guard case .string(let pattern)? = right.constant else {
        test = l + Fragment(" LIKE ") + likePattern(right, options) + Fragment(" ESCAPE '\\'")
        break
      }
      test =
        l + Fragment(" COLLATE \"C\" ~ ?", [.string("^" + likeRegex(StringSemantics.fold(pattern, options)) + "$")])
    case .matches:
      let dropsDiacritics: StringOptions = options.contains(.diacriticInsensitive) ? .diacriticInsensitive : []
      let subject = Fragment(fold("(" + left.fragment.sql + ")::text", dropsDiacritics), left.fragment.bindings)
      let pattern: Fragment
      if case .string(let text)? = right.constant {
        pattern = Fragment("?", [.string("^(" + regex(StringSemantics.fold(text, dropsDiacritics)) + ")$")])
      } else {
        pattern =
          Fragment("('^(' || ") + Fragment(fold("(" + right.fragment.sql + ")::text", dropsDiacritics), right.fragment.bindings)
          + Fragment(" || ')$')")
      }
      let op = options.contains(.caseInsensitive) ? "~*" : "~"
      test = Fragment("((") + subject + Fragment(") COLLATE \"und-x-icu\" \(op) ") + pattern + Fragment(")")
    case .between: test = "FALSE"
    }
    return Fragment("COALESCE(") + test + Fragment(", FALSE)")
  }

  /// One user-perceived character as a PostgreSQL regular expression: a code point, then any combining
  /// marks, variation selectors, skin-tone modifiers and zero-width-joined code points (`LIKE`'s `?`).
  static let characterRegex =
    "(?:.(?:[\\u0300-\\u036f\\u1ab0-\\u1aff\\u1dc0-\\u1dff\\u20d0-\\u20ff\\ufe00-\\ufe0f\\ufe20-\\ufe2f]"
    + "|[\\U0001f3fb-\\U0001f3ff]|\\u200d.)*)"

  /// A folded Strata `LIKE` pattern (`*` any run, `?` one character, `\x` a literal `x`) as a regular
  /// expression body.
  static func likeRegex(_ pattern: String) -> String {
    var result = ""
    var escaped = false
    for character in pattern {
      if escaped {
        result += literal(character)
        escaped = false
        continue
      }
      switch character {
      case "\\": escaped = true
      case "*": result += ".*"
      case "?": result += characterRegex
      default: result += literal(character)
      }
    }
    if escaped { result += literal("\\") }
    return result
  }

  /// `character` matched literally in a regular expression (ASCII punctuation escaped).
  private static func literal(_ character: Character) -> String {
    guard character.isASCII, !character.isLetter, !character.isNumber, character != " " else { return String(character) }
    return "\\" + String(character)
  }

  /// An ICU pattern as PostgreSQL's: the Unicode properties PostgreSQL lacks spelled as ranges or classes.
  static func regex(_ pattern: String) -> String {
    let properties: [(String, String)] = [
      (
        "\\p{Han}",
        "[\\u2e80-\\u2fdf\\u3005\\u3007\\u3021-\\u3029\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff\\U00020000-\\U0003134f]"
      ),
      ("\\p{Hangul}", "[\\u1100-\\u11ff\\u3130-\\u318f\\ua960-\\ua97f\\uac00-\\ud7af\\ud7b0-\\ud7ff]"),
      ("\\p{L}", "[[:alpha:]]"), ("\\p{Lu}", "[[:upper:]]"), ("\\p{Ll}", "[[:lower:]]"), ("\\p{N}", "[[:digit:]]"),
      ("\\p{Nd}", "[[:digit:]]"),
    ]
    var result = pattern
    for (property, replacement) in properties { result = result.replacingOccurrences(of: property, with: replacement) }
    return result
  }

  /// A Strata `LIKE` pattern (`*` any run, `?` one character, `\x` a literal `x`) as SQL's: a constant is
  /// translated here, anything else in SQL.
  private static func likePattern(_ pattern: Operand, _ options: StringOptions) -> Fragment {
    if case .string(let text)? = pattern.constant {
      var sql = ""
      var escaped = false
      for character in text {
        if escaped {
          if "%_\\".contains(character) { sql.append("\\") }
          sql.append(character)
          escaped = false
          continue
        }
        switch character {
        case "\\": escaped = true
        case "*": sql.append("%")
        case "?": sql.append("_")
        case "%", "_": sql += "\\" + String(character)
        default: sql.append(character)
        }
      }
      if escaped { sql += "\\\\" }
      return Fragment(fold("(?::text)", options), [.string(sql)])
    }
    let translated =
      "replace(replace(replace(replace(\(fold("(" + pattern.fragment.sql + ")::text", options)), '%', '\\%'), '_', '\\_'), '*', '%'), chr(63), '_')"
    return Fragment(translated, pattern.fragment.bindings)
  }
}

// MARK: Dictionary results

extension PostgresQueryCompiler {
  enum ColumnDecoding: Sendable {
    case attribute(AttributeType)
    case objectID(entity: String)
    case computed
  }

  struct DictionaryQuery {
    var query: Query
    var columns: [(name: String, sql: Fragment, decoding: ColumnDecoding, resultType: AttributeType?)]
    var groupBy: [Fragment]
  }

  /// Compiles a checked ``DictionaryFetch``: folds become SQL aggregates, groups `GROUP BY`.
  static func compileDictionary(
    _ request: FetchDescription, _ plan: DictionaryFetch, schema: PostgresSchema, storeIdentifier: String
  ) throws -> DictionaryQuery {
    let table = try schema.table(request.entityName)
    var compiler = PostgresQueryCompiler(schema: schema, storeIdentifier: storeIdentifier, root: table.entity)
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
        var isFloating = false
        if case .attribute(let type) = elementDecoding { isFloating = type == .double || type == .float }
        var sql = aggregate(function, x, isFloating: isFloating)
        if function == .sum { sql = Fragment("COALESCE(") + sql + Fragment(", 0)") }
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
      if sorts.isEmpty { orderBy = groupBy.map { "\($0.sql) ASC NULLS FIRST" } }
    } else {
      orderBy.append("t0.\"_pk\" ASC")
    }
    base.joins = compiler.scopes[0].joins
    base.orderBy = orderBy
    return DictionaryQuery(query: base, columns: columns, groupBy: groupBy)
  }

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

extension Value {
  fileprivate var isUnorderedNumber: Bool {
    switch self {
    case .double(let d): d.isNaN
    case .date(let date): date.timeIntervalSinceReferenceDate.isNaN
    default: false
    }
  }
}
