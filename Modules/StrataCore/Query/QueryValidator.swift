import Foundation

/// Checks a fetch against the model before a backend runs it, and normalizes it so every backend
/// receives the same, simple shape (see docs/QUERY-SEMANTICS.md).
///
/// After ``check(_:entity:model:)-(QueryPredicate,_,_)`` a predicate holds only:
/// - `.constant`, `.and`, `.or`, `.not`;
/// - comparisons whose left side is a `.keyPath` (or `.evaluatedObject`), a checked `.function`
///   expression (see ``checkExpression(_:entity:model:)``: string functions, arithmetic, `abs:`,
///   `count:` of a `SUBQUERY`) — a constant compared with a constant is folded to `.constant`;
/// - right sides that are `.constant` values already converted to the left side's type (an `IN` or
///   `BETWEEN` collection as `.constant(.array)`, `BETWEEN` always with two elements), or a single-valued
///   `.keyPath` / `.evaluatedObject` / `.function` of a compatible type;
/// - `now()` replaced by the current date; key paths ending in `@sum`, `@avg`, `@min`, `@max` resolved
///   as single values (``ResolvedKeyPath/Terminal/aggregate(_:_:_:index:)``);
/// - modifier `.any`, `.all` or `.none` exactly when the left key path is a collection
///   (``ResolvedKeyPath/isCollection``); an implicit `ANY` is made explicit.
///
/// Rewrites: `5 < rating` becomes `rating > 5` (and `300 < 2 * runtime` becomes `2 * runtime > 300`); `"Heat" IN movies.title` and `movies CONTAINS %@`
/// become `ANY movies.title == "Heat"` and `ANY movies == %@`; `"x" IN title` becomes `title CONTAINS "x"`.
///
/// ```swift
/// let entity = try model.requireEntity("Movie")
/// let checked = try QueryValidator.check(
///   .comparison(.init(.keyPath("rating"), .greaterThan, .constant(3))), entity: entity, model: model)
/// // rating is a Double attribute: the constant became .double(3)
/// ```
public enum QueryValidator {
  /// Checks `request` against `model`: the entity, the predicate and the sort descriptors.
  ///
  /// - Returns: the request with its predicate normalized (see ``check(_:entity:model:)-(QueryPredicate,_,_)``).
  /// - Throws: ``StoreError`` `.invalidQuery` or `.unsupported`, naming the entity and key at fault.
  public static func check(_ request: FetchDescription, model: ObjectModel) throws -> FetchDescription {
    let entity = try model.requireEntity(request.entityName)
    var checked = request
    checked.predicate = try request.predicate.map { try check($0, entity: entity, model: model) }
    try check(request.sortDescriptors, entity: entity, model: model)
    return checked
  }

  /// Checks every key path and constant of `predicate` against `entity` and returns it normalized,
  /// constants converted to the types of the attributes they are compared with.
  ///
  /// ```swift
  /// // title == 5 on a string attribute:
  /// // StoreError(.invalidQuery, "Movie.title is a string and cannot be compared with 5 (an integer)")
  /// ```
  ///
  /// - Throws: ``StoreError`` `.invalidQuery` for a predicate past ``QueryLimits`` (too deep, too long a
  ///   key path), an unknown key, a transient attribute, a constant that
  ///   cannot be converted, a `$VARIABLE` left unsubstituted, `ANY`/`ALL`/`NONE` without a to-many key path,
  ///   a to-many relationship compared as a whole, an operator that does not apply to the type, arithmetic
  ///   on a non-number or a string function on a non-string (naming the key);
  ///   `.unsupported` for functions other than those of ``checkExpression(_:entity:model:)``, decimal arithmetic, a
  ///   `SUBQUERY` not counted with `@count`, nested or reading key paths other than its variable's, the
  ///   union collection operators, and a to-many key path on the right side of a comparison.
  public static func check(
    _ predicate: QueryPredicate, entity: EntityDescription, model: ObjectModel
  ) throws
    -> QueryPredicate
  {
    try QueryLimits.check(predicate)
    return try checked(predicate, entity: entity, model: model)
  }

  /// ``check(_:entity:model:)-(QueryPredicate,_,_)`` after ``QueryLimits`` has bounded the recursion.
  private static func checked(
    _ predicate: QueryPredicate, entity: EntityDescription, model: ObjectModel
  ) throws
    -> QueryPredicate
  {
    switch predicate {
    case .constant: return predicate
    case .and(let parts): return .and(try parts.map { try checked($0, entity: entity, model: model) })
    case .or(let parts): return .or(try parts.map { try checked($0, entity: entity, model: model) })
    case .not(let inner): return .not(try checked(inner, entity: entity, model: model))
    case .comparison(let comparison):
      let checker = ComparisonChecker(entity: entity, model: model)
      let checked = try checker.check(comparison)
      // A constant compared with a constant has one answer for every object: fold it here, by the value
      // rules, so no backend answers it its own way (`{1} == {2}` is false everywhere).
      if case .constant(let left) = checked.left, case .constant(let right) = checked.right {
        return .constant(try ValueComparison.holds(left, checked.op, right, checked.options))
      }
      return .comparison(checked)
    }
  }

  /// Checks that every sort key is a stored attribute reached through to-one relationships only.
  ///
  /// - Throws: ``StoreError`` `.invalidQuery` for an unknown or transient key, a key path crossing a
  ///   to-many relationship, `@count`, or a relationship (sort by one of its target's attributes instead).
  public static func check(_ sorts: [QuerySort], entity: EntityDescription, model: ObjectModel) throws {
    for sort in sorts { _ = try resolveSortKey(sort, entity: entity, model: model) }
  }

  /// Resolves the key path of one sort descriptor and checks it as ``check(_:entity:model:)-([QuerySort],_,_)`` does.
  ///
  /// ```swift
  /// let key = try QueryValidator.resolveSortKey(QuerySort("director.name"), entity: movie, model: model)
  /// key.hops.count   // 1: one LEFT JOIN for a SQL backend
  /// ```
  public static func resolveSortKey(
    _ sort: QuerySort, entity: EntityDescription, model: ObjectModel
  ) throws
    -> ResolvedKeyPath
  {
    let path = try ResolvedKeyPath(sort.keyPath, entity: entity, model: model)
    if let toMany = path.hops.first(where: \.isToMany) {
      throw StoreError(
        .invalidQuery,
        "cannot sort \(entity.name) by '\(path.keyPath)': it crosses the to-many relationship \(toMany.source.name).\(toMany.relationship.name)",
        entity: entity.name, key: sort.keyPath)
    }
    if path.isJSON {
      throw StoreError(
        .invalidQuery,
        "cannot sort \(entity.name) by '\(path.keyPath)': it reads a Codable attribute, which has no order (sort by a scalar attribute)",
        entity: entity.name, key: sort.keyPath)
    }
    switch path.terminal {
    case .attribute: return path
    case .toMany(let rel):
      throw StoreError(
        .invalidQuery, "cannot sort \(entity.name) by the to-many relationship '\(path.keyPath)'",
        entity: path.terminalEntity.name, key: rel.name)
    case .count, .aggregate, .element:
      throw StoreError(
        .invalidQuery, "cannot sort \(entity.name) by '\(path.keyPath)': sorting by a collection operator is not supported",
        entity: entity.name, key: sort.keyPath)
    case .toOne, .object, .elementObject:
      throw StoreError(
        .invalidQuery,
        "cannot sort \(entity.name) by '\(path.keyPath)': sort by an attribute (for a relationship, one of its target's attributes)",
        entity: entity.name, key: sort.keyPath)
    }
  }
}

/// One side of a comparison while it is being checked.
private enum Operand {
  case constant(Value)
  case path(ResolvedKeyPath, QueryExpression)
  /// A checked function expression (see ``ExpressionChecker``) and the kind of value it yields.
  case computed(QueryExpression, ResolvedKeyPath.ValueKind)

  var expression: QueryExpression {
    switch self {
    case .constant(let value): .constant(value)
    case .path(_, let expression), .computed(let expression, _): expression
    }
  }

  /// The single value compared, when it is not a constant.
  var subject: Subject? {
    switch self {
    case .constant: nil
    case .path(let path, _): Subject(path)
    case .computed(let expression, let kind): Subject(expression, kind)
    }
  }
}

/// What a comparison reads on one side: a key path or a computed expression, for messages and conversions.
private struct Subject: CustomStringConvertible {
  var valueKind: ResolvedKeyPath.ValueKind
  var keyPath: String
  var description: String

  init(_ path: ResolvedKeyPath) {
    valueKind = path.valueKind
    keyPath = path.keyPath
    description = path.description
  }

  init(_ expression: QueryExpression, _ kind: ResolvedKeyPath.ValueKind) {
    valueKind = kind
    keyPath = expression.keyPaths.first ?? ""
    description = "the expression \(expression)"
  }
}

private struct ComparisonChecker {
  let entity: EntityDescription
  let model: ObjectModel

  init(entity: EntityDescription, model: ObjectModel) {
    self.entity = entity
    self.model = model
  }

  func check(_ comparison: Comparison) throws -> Comparison {
    var left = try operand(comparison.left)
    var right = try operand(comparison.right)
    var op = comparison.op
    var modifier = comparison.modifier

    // A Codable attribute compares by rules of its own (QueryValidator+JSON.swift).
    if case .path(let path, _) = left, path.isJSON {
      guard case .constant(let value) = right else { throw JSONComparisonRules.notConstant(path, entity: entity) }
      return try JSONComparisonRules.check(path, op, value, modifier, comparison.options, entity: entity)
    }
    if case .path(let path, _) = right, path.isJSON {
      guard case .constant(let value) = left else { throw JSONComparisonRules.notConstant(path, entity: entity) }
      return try JSONComparisonRules.checkSwapped(value, op, path, modifier, comparison.options, entity: entity)
    }

    // Put a computed expression on the left.
    if case .constant = left, case .computed = right {
      switch op {
      case .equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
        swap(&left, &right)
        op = op.flipped
      default:
        throw StoreError(
          .unsupported,
          "\(op.rawValue) with a constant on its left side and an expression on its right is not supported; put the expression on the left",
          entity: entity.name)
      }
    }
    // Put the key path on the left.
    if case .constant = left, case .path(let rightPath, _) = right {
      switch op {
      case .equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
        swap(&left, &right)
        op = op.flipped
      case .in where rightPath.isCollection && modifier == .direct:
        swap(&left, &right)
        op = .equalTo
        modifier = .any
      case .in where rightPath.valueKind == .attribute(.string) && !rightPath.isCollection:
        swap(&left, &right)
        op = .contains
      case .in:
        throw StoreError(
          .invalidQuery, "IN needs a collection or a string on its right side, but \(rightPath) is a \(rightPath.valueKind.name)",
          entity: entity.name, key: rightPath.keyPath)
      default:
        throw StoreError(
          .unsupported,
          "\(op.rawValue) with a constant on its left side and a key path on its right is not supported; put the key path on the left",
          entity: entity.name, key: rightPath.keyPath)
      }
    }

    if case .path(let leftPath, _) = left {
      if case .toMany = leftPath.terminal, modifier == .direct, op == .contains, case .constant = right {
        // `movies CONTAINS %@`: membership of an object.
        op = .equalTo
        modifier = .any
      }
      if leftPath.isCollection {
        if modifier == .direct {
          if case .toMany(let rel) = leftPath.terminal {
            throw StoreError(
              .invalidQuery,
              "\(leftPath.terminalEntity.name).\(rel.name) is a to-many relationship and cannot be compared as a whole; use ANY, ALL, NONE or @count (in '\(leftPath.keyPath)' of \(entity.name))",
              entity: leftPath.terminalEntity.name, key: rel.name)
          }
          modifier = .any
        }
      } else if modifier != .direct {
        throw StoreError(
          .invalidQuery,
          "\(modifier.rawValue.uppercased()) needs a key path through a to-many relationship, but '\(leftPath.keyPath)' of \(entity.name) is a single value",
          entity: entity.name, key: leftPath.keyPath)
      }
    } else if modifier != .direct {
      throw StoreError(
        .invalidQuery, "\(modifier.rawValue.uppercased()) needs a key path through a to-many relationship on its left side",
        entity: entity.name)
    }

    if case .path(let rightPath, _) = right, rightPath.isCollection {
      throw StoreError(
        .unsupported,
        "a to-many key path ('\(rightPath.keyPath)' of \(entity.name)) on the right side of a comparison is not supported; put it on the left with ANY, ALL or NONE",
        entity: entity.name, key: rightPath.keyPath)
    }

    switch (left.subject, right) {
    case (let leftSubject?, .constant(let value)):
      right = .constant(try convert(value, for: op, against: leftSubject, options: comparison.options))
    case (let leftSubject?, _):
      if let rightSubject = right.subject { try checkCompatible(leftSubject, rightSubject, op) }
    case (nil, _):
      break
    }
    return Comparison(left.expression, op, right.expression, modifier: modifier, options: comparison.options)
  }

  private func operand(_ expression: QueryExpression) throws -> Operand {
    switch expression {
    case .constant(let value):
      return .constant(value)
    case .keyPath(let keyPath):
      let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
      if path.hops.isEmpty, case .object = path.terminal { return .path(path, .evaluatedObject) }
      return .path(path, .keyPath(path.keyPath))
    case .evaluatedObject:
      return .path(.evaluatedObject(of: entity), .evaluatedObject)
    case .variable(let name):
      throw StoreError(
        .invalidQuery, "the predicate still holds the variable $\(name); substitute a value for it before fetching",
        entity: entity.name, key: name)
    case .aggregate(let items):
      var values: [Value] = []
      for item in items {
        guard case .constant(let value) = try operand(item) else {
          throw StoreError(
            .unsupported, "a collection literal {…} may only hold constants in a fetch of \(entity.name)",
            entity: entity.name)
        }
        values.append(value)
      }
      return .constant(.array(values))
    case .function, .subquery:
      let checker = ExpressionChecker(entity: entity, model: model)
      // A subscript of a Codable key path is a key path into it (`tags[0]`, `stops[LAST].city`).
      if let keyPath = try checker.jsonSubscriptKeyPath(expression) { return try operand(.keyPath(keyPath)) }
      let (checked, kind) = try checker.check(expression)
      guard let kind, !checked.isConstant else {
        if case .constant(let value) = checked { return .constant(value) }
        return .constant(.null)
      }
      return .computed(checked, kind)
    }
  }

  private func convert(
    _ value: Value, for op: ComparisonOperator, against path: Subject, options: StringOptions
  )
    throws -> Value
  {
    let kind = path.valueKind
    switch op {
    case .equalTo, .notEqualTo:
      return try scalar(value, path)
    case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      try requireOrdered(path, op)
      return try scalar(value, path)
    case .contains, .beginsWith, .endsWith, .like, .matches:
      guard kind == .attribute(.string) else {
        throw StoreError(
          .invalidQuery, "\(op.rawValue) needs a string, but \(path) is a \(kind.name)",
          entity: entity.name, key: path.keyPath)
      }
      switch value {
      case .null: return value
      case .string(let pattern):
        if op == .matches {
          do {
            _ = try StringSemantics.matches("", pattern, options)
          } catch let error as StoreError {
            throw StoreError(error.code, error.message, entity: entity.name, key: path.keyPath, value: value)
          }
        }
        return value
      default:
        throw mismatch(path, value)
      }
    case .in:
      switch value {
      case .array(let items):
        return .array(try items.map { try scalar($0, path) })
      case .string where kind == .attribute(.string):
        return value
      default:
        throw StoreError(
          .invalidQuery, "IN needs a collection such as {1, 2} on its right side (comparing \(path) with \(value))",
          entity: entity.name, key: path.keyPath, value: value)
      }
    case .between:
      guard case .array(let items) = value, items.count == 2 else {
        throw StoreError(
          .invalidQuery, "BETWEEN needs a collection of two values {low, high} (comparing \(path) with \(value))",
          entity: entity.name, key: path.keyPath, value: value)
      }
      try requireOrdered(path, op)
      return .array(try items.map { try scalar($0, path) })
    }
  }

  /// Converts one constant to the kind `path` yields, or throws a mismatch naming both.
  private func scalar(_ value: Value, _ path: Subject) throws -> Value {
    if value.isNull { return value }
    switch path.valueKind {
    case .attribute(let type):
      if let converted = type.coerce(value) { return converted }
      // Numbers compare by value whatever their type: 2.5 against an Int16, 1e9 against an Int16.
      if type.isNumeric || type == .bool, value.isNumber { return value }
    case .count:
      if let converted = AttributeType.int64.coerce(value) { return converted }
      if value.isNumber { return value }
    case .objectID(let entityName):
      var id: ObjectID?
      if case .objectID(let given) = value { id = given }
      if case .string(let uri) = value { id = ObjectID(uriRepresentation: uri) }
      if let id {
        guard id.entityName == entityName else {
          throw StoreError(
            .invalidQuery,
            "\(path) holds an object ID of \(entityName), so it cannot be compared with an object of \(id.entityName)",
            entity: entity.name, key: path.keyPath, value: value)
        }
        return .objectID(id)
      }
    }
    throw mismatch(path, value)
  }

  private func mismatch(_ path: Subject, _ value: Value) -> StoreError {
    StoreError(
      .invalidQuery, "\(path) is a \(path.valueKind.name) and cannot be compared with \(value) (\(value.kindName))",
      entity: entity.name, key: path.keyPath, value: value)
  }

  private func requireOrdered(_ path: Subject, _ op: ComparisonOperator) throws {
    if case .objectID = path.valueKind {
      throw StoreError(
        .invalidQuery, "\(path) is an object reference; object IDs compare for equality only, not with \(op.rawValue)",
        entity: entity.name, key: path.keyPath)
    }
  }

  private func checkCompatible(_ left: Subject, _ right: Subject, _ op: ComparisonOperator) throws {
    let compatible = left.valueKind.comparisonClass == right.valueKind.comparisonClass
    guard compatible else {
      throw StoreError(
        .invalidQuery, "\(left) (\(left.valueKind.name)) cannot be compared with \(right) (\(right.valueKind.name))",
        entity: entity.name, key: left.keyPath)
    }
    switch op {
    case .in, .between:
      throw StoreError(
        .unsupported, "\(op.rawValue) with a key path on its right side is not supported; use a collection of constants",
        entity: entity.name, key: right.keyPath)
    case .contains, .beginsWith, .endsWith, .like, .matches:
      guard left.valueKind == .attribute(.string) else {
        throw StoreError(
          .invalidQuery, "\(op.rawValue) needs a string, but \(left) is a \(left.valueKind.name)",
          entity: entity.name, key: left.keyPath)
      }
    case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      try requireOrdered(left, op)
    case .equalTo, .notEqualTo:
      break
    }
  }
}

extension ResolvedKeyPath.ValueKind {
  /// Kinds that compare with each other: every number (and booleans as 0/1), strings, dates, …
  fileprivate var comparisonClass: String {
    switch self {
    case .count: return "number"
    case .objectID(let entity): return "object:\(entity)"
    case .attribute(let type):
      if type.isNumeric || type == .bool { return "number" }
      return type.rawValue
    }
  }
}

extension ComparisonOperator {
  /// The operator that gives the same answer with its operands swapped (`<` ↔ `>`).
  fileprivate var flipped: ComparisonOperator {
    switch self {
    case .lessThan: .greaterThan
    case .lessThanOrEqualTo: .greaterThanOrEqualTo
    case .greaterThan: .lessThan
    case .greaterThanOrEqualTo: .lessThanOrEqualTo
    default: self
    }
  }
}

extension Value {
  /// Whether the value is a number (integers, floating point, decimals and booleans).
  fileprivate var isNumber: Bool {
    switch self {
    case .int, .double, .decimal, .bool: true
    default: false
    }
  }
}
