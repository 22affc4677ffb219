import Foundation

/// Checks the function expressions and `SUBQUERY`s of a predicate (see docs/QUERY-SEMANTICS.md,
/// "Expressions") and returns them normalized, with the kind of value each yields.
///
/// After checking, an expression holds only:
/// - `.constant` values (`now()` is replaced by the current date), single-valued `.keyPath`s (including
///   `rel.attr.@sum` and friends) and `.evaluatedObject`;
/// - `.function` calls of `lowercase:`, `uppercase:`, `canonical:` (on strings), `abs:`, `add:to:`,
///   `from:subtract:`, `multiply:by:`, `divide:by:` (on numbers);
/// - `.function("count:", [.subquery(collection: .keyPath(k), variable: v, predicate: p)])` where `k` is a
///   to-many relationship reached through to-one hops and `p` is a predicate checked against the
///   relationship's destination entity: `$v.year` has become `year` and `$v` `SELF`.
struct ExpressionChecker {
  let entity: EntityDescription
  let model: ObjectModel

  static let stringFunctions: Set<String> = ["lowercase:", "uppercase:", "canonical:"]
  static let arithmeticFunctions: Set<String> = ["add:to:", "from:subtract:", "multiply:by:", "divide:by:"]

  /// The checked expression and the kind of value it yields (`nil` for the constant nil).
  func check(_ expression: QueryExpression) throws -> (QueryExpression, ResolvedKeyPath.ValueKind?) {
    switch expression {
    case .constant(let value):
      return (expression, Self.kind(of: value))
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
      guard !path.isCollection else {
        throw StoreError(
          .invalidQuery,
          "\(path) is a collection and cannot be used inside an expression; use a collection operator such as @count or @sum",
          entity: entity.name, key: path.keyPath)
      }
      if path.hops.isEmpty, case .object = path.terminal { return (.evaluatedObject, path.valueKind) }
      return (.keyPath(path.keyPath), path.valueKind)
    case .evaluatedObject:
      return (expression, .objectID(entity: entity.name))
    case .variable(let name):
      throw StoreError(
        .invalidQuery, "the predicate still holds the variable $\(name); substitute a value for it before fetching",
        entity: entity.name, key: name)
    case .aggregate:
      throw StoreError(
        .unsupported, "a collection literal {…} cannot be used inside an expression in a fetch of \(entity.name)",
        entity: entity.name)
    case .subquery:
      throw StoreError(
        .unsupported, "SUBQUERY(…) is supported only with @count, as in SUBQUERY(…).@count > 0", entity: entity.name)
    case .function(let name, let arguments):
      return try function(name, arguments)
    }
  }

  private func function(_ name: String, _ arguments: [QueryExpression]) throws
    -> (QueryExpression, ResolvedKeyPath.ValueKind?)
  {
    if name == "now", arguments.isEmpty { return (.constant(.date(Date())), .attribute(.date)) }
    if name == "count:", arguments.count == 1, case .subquery(let collection, let variable, let predicate) = arguments[0] {
      return (try subquery(collection, variable, predicate), .count)
    }
    if Self.stringFunctions.contains(name), arguments.count == 1 {
      let (argument, kind) = try check(arguments[0])
      if let kind, kind != .attribute(.string) {
        throw typeError(name, "a string", arguments[0], kind)
      }
      return (.function(name, [argument]), .attribute(.string))
    }
    if name == "abs:", arguments.count == 1 {
      let (argument, kind) = try check(arguments[0])
      let integer = try numeric(name, arguments[0], kind)
      return (.function(name, [argument]), .attribute(integer ? .int64 : .double))
    }
    if Self.arithmeticFunctions.contains(name), arguments.count == 2 {
      let (a, aKind) = try check(arguments[0])
      let (b, bKind) = try check(arguments[1])
      let integer = try numeric(name, arguments[0], aKind) && numeric(name, arguments[1], bKind)
      let result: AttributeType = integer && name != "divide:by:" ? .int64 : .double
      return (.function(name, [a, b]), .attribute(result))
    }
    throw StoreError(
      .unsupported, "the function \(name) is not supported in fetches (with \(arguments.count) argument(s))",
      entity: entity.name)
  }

  /// Whether an arithmetic argument is an integer (true) or a floating-point number (false).
  private func numeric(_ function: String, _ argument: QueryExpression, _ kind: ResolvedKeyPath.ValueKind?) throws
    -> Bool
  {
    switch kind {
    case nil, .count?: return true
    case .attribute(let type)? where type.isInteger || type == .bool: return true
    case .attribute(let type)? where type == .double || type == .float: return false
    case .attribute(.decimal)?:
      throw StoreError(
        .unsupported, "\(function) on decimal values is not supported in fetches",
        entity: entity.name, key: argument.keyPaths.first)
    case let kind?:
      throw typeError(function, "a number", argument, kind)
    }
  }

  private func typeError(_ function: String, _ needed: String, _ argument: QueryExpression, _ kind: ResolvedKeyPath.ValueKind)
    -> StoreError
  {
    let key = argument.keyPaths.first
    let what = key.map { "\(entity.name).\($0)" } ?? "its argument"
    return StoreError(
      .invalidQuery, "\(function) needs \(needed), but \(what) is a \(kind.name)", entity: entity.name, key: key)
  }

  private func subquery(_ collection: QueryExpression, _ variable: String, _ predicate: QueryPredicate) throws
    -> QueryExpression
  {
    guard case .keyPath(let keyPath) = collection else {
      throw StoreError(
        .unsupported, "the collection of a SUBQUERY must be a to-many key path of \(entity.name)", entity: entity.name)
    }
    let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
    guard case .toMany(let rel) = path.terminal, !path.hops.contains(where: \.isToMany) else {
      throw StoreError(
        .unsupported,
        "the collection of a SUBQUERY must be a to-many relationship reached through to-one relationships ('\(keyPath)' of \(entity.name))",
        entity: entity.name, key: keyPath)
    }
    guard let destination = model.entity(named: rel.destination) else {
      throw StoreError(.invalidQuery, "unknown entity '\(rel.destination)'", entity: entity.name, key: keyPath)
    }
    let inner = try rebase(predicate, variable)
    let checked = try QueryValidator.check(inner, entity: destination, model: model)
    return .function("count:", [.subquery(collection: .keyPath(path.keyPath), variable: variable, predicate: checked)])
  }

  /// The subquery predicate relative to its element: `$v.key` → `key`, `$v` → `SELF`.
  private func rebase(_ predicate: QueryPredicate, _ variable: String) throws -> QueryPredicate {
    switch predicate {
    case .constant: return predicate
    case .and(let parts): return .and(try parts.map { try rebase($0, variable) })
    case .or(let parts): return .or(try parts.map { try rebase($0, variable) })
    case .not(let inner): return .not(try rebase(inner, variable))
    case .comparison(var c):
      c.left = try rebase(c.left, variable)
      c.right = try rebase(c.right, variable)
      return .comparison(c)
    }
  }

  private func rebase(_ expression: QueryExpression, _ variable: String) throws -> QueryExpression {
    switch expression {
    case .constant: return expression
    case .variable(let name) where name == variable: return .evaluatedObject
    case .variable(let name):
      throw StoreError(
        .invalidQuery, "the SUBQUERY predicate uses $\(name), but its variable is $\(variable)", entity: entity.name,
        key: name)
    case .keyPath(let keyPath):
      let prefix = "$" + variable + "."
      if keyPath.hasPrefix(prefix) { return .keyPath(String(keyPath.dropFirst(prefix.count))) }
      throw StoreError(
        .unsupported,
        "a SUBQUERY predicate may only read key paths of its variable $\(variable) (found '\(keyPath)' in a fetch of \(entity.name))",
        entity: entity.name, key: keyPath)
    case .evaluatedObject:
      throw StoreError(
        .unsupported, "SELF inside a SUBQUERY predicate is not supported; use $\(variable)", entity: entity.name)
    case .aggregate(let items): return .aggregate(try items.map { try rebase($0, variable) })
    case .function(let name, let arguments): return .function(name, try arguments.map { try rebase($0, variable) })
    case .subquery:
      throw StoreError(.unsupported, "nested SUBQUERY expressions are not supported", entity: entity.name)
    }
  }

  /// The kind of a constant inside an expression.
  static func kind(of value: Value) -> ResolvedKeyPath.ValueKind? {
    switch value {
    case .null: nil
    case .int, .bool: .attribute(.int64)
    case .double: .attribute(.double)
    case .decimal: .attribute(.decimal)
    case .string: .attribute(.string)
    case .date: .attribute(.date)
    case .data: .attribute(.data)
    case .uuid: .attribute(.uuid)
    case .url: .attribute(.url)
    case .objectID(let id): .objectID(entity: id.entityName)
    case .array: .attribute(.data)
    }
  }
}

extension QueryExpression {
  /// Whether the expression is a `.constant`.
  var isConstant: Bool {
    if case .constant = self { return true }
    return false
  }
}
