import Foundation

/// Checks the function expressions and `SUBQUERY`s of a predicate (see docs/QUERY-SEMANTICS.md,
/// "Expressions") and returns them normalized, with the kind of value each yields.
///
/// After checking, an expression holds only:
/// - `.constant` values (`now()` is replaced by the current date), single-valued `.keyPath`s (including
///   `rel.attr.@sum` and friends) and `.evaluatedObject`;
/// - `.function` calls of ``ExpressionFunctions``: the string functions on strings, the numeric ones on
///   numbers;
/// - `.function(f, [.keyPath(k)])` for a ``CollectionFunction`` `f` over the collection key path `k` that no
///   collection operator expresses (`median:(films.rating)`, `sum:(films.actors.rating)`), and
///   `.function(f, [.aggregate(items)])` over a literal of single-valued expressions; constant
///   collections are folded;
/// - `.function("count:", [.subquery(collection: .keyPath(k), variable: v, predicate: p)])` where `k` is a
///   to-many relationship reached through to-one hops and `p` is a predicate checked against the
///   relationship's destination entity: `$v.year` has become `year` and `$v` `SELF`.
struct ExpressionChecker {
  let entity: EntityDescription
  let model: ObjectModel

  /// The checked expression and the kind of value it yields (`nil` for the constant nil).
  func check(_ expression: QueryExpression) throws -> (QueryExpression, ResolvedKeyPath.ValueKind?) {
    switch expression {
    case .constant(let value):
      return (expression, Self.kind(of: value))
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
      guard path.members.isEmpty && path.memberFold == nil else {
        throw StoreError(
          .unsupported, "'\(path.keyPath)' reads inside a Codable attribute and cannot be used inside an expression",
          entity: entity.name, key: path.keyPath)
      }
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

  private func function(
    _ name: String, _ arguments: [QueryExpression]
  ) throws
    -> (QueryExpression, ResolvedKeyPath.ValueKind?)
  {
    if name == "now", arguments.isEmpty { return (.constant(.date(Date())), .attribute(.date)) }
    if let parts = QueryExpression.function(name, arguments).subscriptParts {
      return try subscripted(parts.collection, parts.position, parts.keyPath)
    }
    if name == "count:", arguments.count == 1, case .subquery(let collection, let variable, let predicate) = arguments[0] {
      return (try subquery(collection, variable, predicate), .count)
    }
    if let function = CollectionFunction(rawValue: name), arguments.count == 1 {
      return try fold(function, arguments[0])
    }
    if ExpressionFunctions.stringFunctions.contains(name), arguments.count == 1 {
      let (argument, kind) = try check(arguments[0])
      if let kind, kind != .attribute(.string) {
        throw typeError(name, "a string", arguments[0], kind)
      }
      return (.function(name, [argument]), .attribute(.string))
    }
    if ExpressionFunctions.unaryNumericFunctions.contains(name), arguments.count == 1 {
      let (argument, kind) = try check(arguments[0])
      let integer = try numeric(name, arguments[0], kind)
      return (.function(name, [argument]), .attribute(integer && name == "abs:" ? .int64 : .double))
    }
    if ExpressionFunctions.binaryNumericFunctions.contains(name), arguments.count == 2 {
      let (a, aKind) = try check(arguments[0])
      let (b, bKind) = try check(arguments[1])
      let integer = try numeric(name, arguments[0], aKind) && numeric(name, arguments[1], bKind)
      let integral: Set = ["add:to:", "from:subtract:", "multiply:by:", "modulus:by:"]
      return (.function(name, [a, b]), .attribute(integer && integral.contains(name) ? .int64 : .double))
    }
    throw StoreError(
      .unsupported, "the function \(name) is not supported in fetches (with \(arguments.count) argument(s))",
      entity: entity.name)
  }

  /// A subscript (see ``QuerySubscript``) inside an expression: of a constant collection, folded now; of
  /// a Codable key path, `.unsupported` (a comparison reads it through ``jsonSubscriptKeyPath(_:)``); of a
  /// to-many relationship, another attribute or `SELF`, `.invalidQuery` (a relationship's targets are a set: only an ordered collection
  /// has a first element); an index that is not an integer constant, `.invalidQuery`.
  private func subscripted(
    _ collection: QueryExpression, _ position: QuerySubscript, _ keyPath: String?
  ) throws -> (QueryExpression, ResolvedKeyPath.ValueKind?) {
    var index: Value?
    if case .index(let expression) = position { index = .int(Int64(try subscriptIndex(expression))) }
    let elementKey = keyPath
    switch collection {
    case .constant(let value):
      guard case .array = value else {
        throw StoreError(
          .invalidQuery, "\(value.formatLiteral) is not a collection and cannot be subscripted", entity: entity.name)
      }
      let element = QuerySubscript.element(of: value, at: position, index: index)
      if let keyPath {
        throw StoreError(
          .invalidQuery, "the elements of \(value.formatLiteral) are values: the key '\(keyPath)' cannot follow the subscript",
          entity: entity.name, key: keyPath)
      }
      return (.constant(element), Self.kind(of: element))
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
      if path.isJSON {
        throw StoreError(
          .unsupported,
          "'\(path.keyPath)' reads inside a Codable attribute, so its subscript can only be compared with a constant, not used inside an expression",
          entity: entity.name, key: path.keyPath)
      }
      if case .toMany(let rel) = path.terminal, rel.isOrdered {
        // `tracks[FIRST].title`, `tracks[SIZE]` inside an expression: the key path they stand for.
        return try check(.keyPath(try orderedSubscriptKeyPath(path, rel, position, elementKey)))
      }
      let what = path.isCollection ? "a to-many relationship, whose targets are a set (not ordered)" : "not a collection"
      throw StoreError(
        .invalidQuery, "\(keyPath) is \(what), so it cannot be subscripted with [\(Self.text(of: position))]",
        entity: entity.name, key: keyPath)
    case .evaluatedObject:
      throw StoreError(
        .invalidQuery, "SELF is a \(entity.name) object, not a collection, so it cannot be subscripted", entity: entity.name)
    default:
      throw StoreError(
        .unsupported, "only a constant collection can be subscripted in a fetch of \(entity.name), not \(collection)",
        entity: entity.name)
    }
  }

  /// The index of `[n]`: an integer constant, not negative.
  private func subscriptIndex(_ expression: QueryExpression) throws -> Int {
    let (checked, _) = try check(expression)
    guard case .constant(let value) = checked, let n = QuerySubscript.integerIndex(value) else {
      throw StoreError(
        .invalidQuery, "the index of a subscript must be an integer constant, not \(expression)", entity: entity.name)
    }
    guard n >= 0 else {
      throw StoreError(.invalidQuery, "the index of a subscript cannot be negative (\(n))", entity: entity.name)
    }
    return n
  }

  /// The key path a subscript of a key path into a Codable attribute reads, with the subscript as a member:
  /// `tags[FIRST]` → `tags[0]`, `stops[0].city`, `tags[LAST]`, and `tags[SIZE]` → `tags.@count` (the same
  /// count, nil for a scalar); `nil` when `expression` is not such a subscript.
  /// - Throws: `.invalidQuery` for an index that is not an integer constant or is negative, a subscript of
  ///   a fold (`tags.@count[0]`), or a key after `[SIZE]`.
  func jsonSubscriptKeyPath(_ expression: QueryExpression) throws -> String? {
    guard let parts = expression.subscriptParts else { return nil }
    let base: String
    switch parts.collection {
    case .keyPath(let keyPath): base = keyPath
    case .function:
      guard let inner = try jsonSubscriptKeyPath(parts.collection) else { return nil }
      base = inner
    default: return nil
    }
    let path = try ResolvedKeyPath(base, entity: entity, model: model)
    if case .toMany(let rel) = path.terminal, rel.isOrdered {
      return try orderedSubscriptKeyPath(path, rel, parts.position, parts.keyPath)
    }
    guard path.isJSON else { return nil }
    if let fold = path.memberFold {
      throw StoreError(
        .invalidQuery, "'\(path.keyPath)' is a single value (\(fold.rawValue)), not a collection, so it cannot be subscripted",
        entity: entity.name, key: path.keyPath)
    }
    let suffix: String
    switch parts.position {
    case .index(let expression): suffix = "[\(try subscriptIndex(expression))]"
    case .first: suffix = "[0]"
    case .last: suffix = "[LAST]"
    case .size:
      if let key = parts.keyPath {
        throw StoreError(
          .invalidQuery, "a key cannot follow [SIZE], which is a number ('\(key)' after '\(path.keyPath)')",
          entity: entity.name, key: key)
      }
      return path.keyPath + ".@count"
    }
    return path.keyPath + suffix + (parts.keyPath.map { "." + $0 } ?? "")
  }

  /// A subscript of an ordered to-many relationship: `[SIZE]` is its count (`tracks.@count`, the same on
  /// every backend); `[FIRST]`, `[LAST]` and `[n]`, with or without a key path after them, the key path
  /// `tracks[0]` or `tracks[0].key` (an ``ResolvedKeyPath/Terminal/elementObject(_:_:)`` or
  /// ``ResolvedKeyPath/Terminal/element(_:_:_:index:)``, docs/QUERY-SEMANTICS.md).
  private func orderedSubscriptKeyPath(
    _ path: ResolvedKeyPath, _ rel: RelationshipDescription, _ position: QuerySubscript, _ key: String?
  ) throws -> String {
    var element: String?
    switch position {
    case .index(let expression): element = "[\(try subscriptIndex(expression))]"
    case .first: element = "[0]"
    case .last: element = "[LAST]"
    case .size: element = nil
    }
    if let element {
      // The element itself (`tracks[FIRST]`, an object) or a key path from it (`tracks[0].album.name`).
      let written = path.keyPath + element + (key.map { "." + $0 } ?? "")
      _ = try ResolvedKeyPath(written, entity: entity, model: model)
      return written
    }
    if let key {
      throw StoreError(
        .invalidQuery, "a key cannot follow [SIZE], which is a number ('\(key)' after '\(path.keyPath)')",
        entity: entity.name, key: key)
    }
    return path.keyPath + ".@count"
  }

  private static func text(of position: QuerySubscript) -> String {
    switch position {
    case .index(let expression): expression.description
    case .first: "FIRST"
    case .last: "LAST"
    case .size: "SIZE"
    }
  }

  /// A collection function over constants (folded now), a to-many key path (`sum:(films.rating)` becomes
  /// `films.rating.@sum` where a collection operator says the same), or a literal of expressions.
  private func fold(
    _ function: CollectionFunction, _ argument: QueryExpression
  ) throws
    -> (QueryExpression, ResolvedKeyPath.ValueKind?)
  {
    let name = function.rawValue
    switch argument {
    case .constant(.array(let values)):
      for value in values {
        if let kind = Self.kind(of: value) { try requireElement(function, kind, argument) }
      }
      let result = function.fold(values)
      return (.constant(result), Self.kind(of: result) ?? function.resultKind(nil))
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
      guard path.isCollection else { return try fold(function, .aggregate([argument])) }
      if let shorthand = try collectionOperator(function, path) { return try check(.keyPath(shorthand)) }
      let kind = path.valueKind
      if case .objectID = kind, function != .count {
        throw StoreError(
          .invalidQuery, "\(name) needs the values of an attribute, but \(path) yields objects; use count:",
          entity: entity.name, key: keyPath)
      }
      try requireElement(function, kind, argument)
      return (.function(name, [.keyPath(path.keyPath)]), function.resultKind(kind))
    case .aggregate(let items):
      var checked: [QueryExpression] = []
      var elementKind: ResolvedKeyPath.ValueKind?
      for item in items {
        let (expression, kind) = try check(item)
        if let kind {
          try requireElement(function, kind, item)
          if kind == .attribute(.double) || kind == .attribute(.float) || elementKind == nil { elementKind = kind }
        }
        checked.append(expression)
      }
      return (.function(name, [.aggregate(checked)]), function.resultKind(elementKind))
    default:
      return try fold(function, .aggregate([argument]))
    }
  }

  /// `rel.@count`, or `rel.attr.@sum` (`@avg`, `@min`, `@max`) when `function` over `path` means the
  /// same; `nil` when no collection operator does.
  private func collectionOperator(_ function: CollectionFunction, _ path: ResolvedKeyPath) throws -> String? {
    if path.hops.contains(where: \.isToMany) {
      guard case .attribute = path.terminal, let last = path.hops.last, last.isToMany,
        !path.hops.dropLast().contains(where: \.isToMany)
      else { return nil }
      let op: ResolvedKeyPath.AggregateOperator? =
        switch function {
        case .sum: .sum
        case .average: .avg
        case .min: .min
        case .max: .max
        default: nil
        }
      return op.map { path.keyPath + "." + $0.rawValue }
    }
    if function == .count, case .toMany = path.terminal { return path.keyPath + ".@count" }
    return nil
  }

  /// Checks that an element of `kind` suits `function`: numbers for `sum:` `average:` `median:` `stddev:`,
  /// also strings and dates for `min:` `max:` `mode:`; decimals are not supported in folds yet.
  private func requireElement(
    _ function: CollectionFunction, _ kind: ResolvedKeyPath.ValueKind, _ argument: QueryExpression
  )
    throws
  {
    if function == .count { return }
    switch kind {
    case .count: return
    case .attribute(let type) where type.isNumeric && type != .decimal: return
    case .attribute(.bool): return
    case .attribute(.decimal):
      throw StoreError(
        .unsupported, "\(function.rawValue) on decimal values is not supported in fetches",
        entity: entity.name, key: argument.keyPaths.first)
    case .attribute(.string), .attribute(.date):
      if !function.needsNumbers { return }
    default:
      break
    }
    throw typeError(function.rawValue, function.needsNumbers ? "numbers" : "numbers, strings or dates", argument, kind)
  }

  /// Whether an arithmetic argument is an integer (true) or a floating-point number (false).
  private func numeric(
    _ function: String, _ argument: QueryExpression, _ kind: ResolvedKeyPath.ValueKind?
  ) throws
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

  private func typeError(
    _ function: String, _ needed: String, _ argument: QueryExpression, _ kind: ResolvedKeyPath.ValueKind
  )
    -> StoreError
  {
    let key = argument.keyPaths.first
    let what = key.map { "\(entity.name).\($0)" } ?? "its argument"
    return StoreError(
      .invalidQuery, "\(function) needs \(needed), but \(what) is a \(kind.name)", entity: entity.name, key: key)
  }

  private func subquery(
    _ collection: QueryExpression, _ variable: String, _ predicate: QueryPredicate
  ) throws
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
    case .subquery(let collection, let inner, let predicate):
      // A nested SUBQUERY over `$variable.rel` reads the element's relationship; its own predicate is
      // checked against that relationship's destination, so it may not reach back to `$variable`.
      if predicate.mentions(variable: variable) {
        throw StoreError(
          .unsupported,
          "a nested SUBQUERY may only read its own variable $\(inner), not the outer $\(variable) (in a fetch of \(entity.name))",
          entity: entity.name, key: variable)
      }
      return .subquery(collection: try rebase(collection, variable), variable: inner, predicate: predicate)
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

extension QueryValidator {
  /// Checks an expression standing alone (a batch update's value, a fetched expression) against
  /// `entity` and returns it normalized, with the kind of value it yields (`nil` for the constant nil).
  ///
  /// ```swift
  /// let item = try model.requireEntity("TodoItem")
  /// let (checked, kind) = try QueryValidator.checkExpression(try QueryExpression(format: "count + 1"), entity: item, model: model)
  /// // kind == .attribute(.int64)
  /// ```
  /// - Throws: `.invalidQuery` / `.unsupported` as for an expression inside a predicate.
  public static func checkExpression(
    _ expression: QueryExpression, entity: EntityDescription, model: ObjectModel
  ) throws
    -> (QueryExpression, ResolvedKeyPath.ValueKind?)
  {
    try QueryLimits.check(expression)
    return try ExpressionChecker(entity: entity, model: model).check(expression)
  }
}

extension QueryPredicate {
  /// Whether the predicate reads the variable `$name` (directly or as `$name.key`).
  func mentions(variable name: String) -> Bool {
    switch self {
    case .constant: false
    case .and(let parts), .or(let parts): parts.contains { $0.mentions(variable: name) }
    case .not(let inner): inner.mentions(variable: name)
    case .comparison(let c): c.left.mentions(variable: name) || c.right.mentions(variable: name)
    }
  }
}

extension QueryExpression {
  /// Whether the expression reads the variable `$name` (directly or as `$name.key`).
  func mentions(variable name: String) -> Bool {
    switch self {
    case .constant, .evaluatedObject: false
    case .variable(let v): v == name
    case .keyPath(let k): k == "$" + name || k.hasPrefix("$" + name + ".")
    case .aggregate(let items), .function(_, let items): items.contains { $0.mentions(variable: name) }
    case .subquery(let collection, _, let predicate):
      collection.mentions(variable: name) || predicate.mentions(variable: name)
    }
  }

  /// Whether the expression is a `.subquery` (`count:` of one is `SUBQUERY(…).@count`, of anything
  /// else the number of non-nil elements).
  public var isSubquery: Bool {
    if case .subquery = self { return true }
    return false
  }

  /// Whether the expression is a `.constant`.
  var isConstant: Bool {
    if case .constant = self { return true }
    return false
  }
}
