import Foundation

/// The validator's rules for a comparison of a key path into a Codable (``AttributeType/json``) attribute
/// with a constant (docs/QUERY-SEMANTICS.md, "Codable attributes").
enum JSONComparisonRules {
  /// Checks `path op constant` and returns it normalized: the key path on the left, the constant as
  /// ``JSONText/comparable(_:)`` makes it (dates as seconds since 2001, UUIDs and URLs as strings).
  static func check(
    _ path: ResolvedKeyPath, _ op: ComparisonOperator, _ value: Value, _ modifier: ComparisonModifier,
    _ options: StringOptions, entity: EntityDescription
  ) throws -> Comparison {
    let constant = JSONText.comparable(value)
    func refuse(_ message: String) -> StoreError {
      StoreError(.invalidQuery, message, entity: entity.name, key: path.keyPath, value: value)
    }
    if path.memberFold != nil, modifier != .direct {
      throw refuse(
        "\(modifier.rawValue.uppercased()) needs a collection, but '\(path.keyPath)' of \(entity.name) is a single value")
    }
    if let fold = path.memberFold, fold == .count || fold == .sum || fold == .avg {
      let items: [Value]
      if case .array(let elements) = constant { items = elements } else { items = [constant] }
      if let bad = items.first(where: { !$0.isNull && $0.numericValue == nil }) {
        throw refuse("'\(path.keyPath)' of \(entity.name) is a number and cannot be compared with \(bad) (\(bad.kindName))")
      }
    }
    if path.isWholeJSON && modifier == .direct {
      let isNilTest = (op == .equalTo || op == .notEqualTo) && constant.isNull
      guard isNilTest || op == .contains else {
        throw refuse(
          "\(entity.name).\(path.keyPath) is a Codable attribute and cannot be compared with \(op.rawValue) as a whole; "
            + "use CONTAINS or IN for membership, ANY/ALL/NONE for its elements, @count for its size, or a member key path")
      }
    }
    switch op {
    case .contains where modifier == .direct:
      if case .array = constant { throw refuse("CONTAINS needs a single value on its right side, not \(value)") }
    case .contains, .beginsWith, .endsWith, .like, .matches:
      switch constant {
      case .null: break
      case .string(let pattern):
        if op == .matches {
          do {
            _ = try StringSemantics.matches("", pattern, options)
          } catch let error as StoreError {
            throw StoreError(error.code, error.message, entity: entity.name, key: path.keyPath, value: value)
          }
        }
      default: throw refuse("\(op.rawValue) needs a string, but it was given \(value) (\(value.kindName))")
      }
    case .in:
      switch constant {
      case .array, .string: break
      default: throw refuse("IN needs a collection such as {1, 2} on its right side (comparing \(path) with \(value))")
      }
    case .between:
      guard case .array(let items) = constant, items.count == 2 else {
        throw refuse("BETWEEN needs a collection of two values {low, high} (comparing \(path) with \(value))")
      }
    case .equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      if case .array = constant {
        throw refuse("\(op.rawValue) needs a single value on its right side, not \(value)")
      }
    }
    return Comparison(.keyPath(path.keyPath), op, .constant(constant), modifier: modifier, options: options)
  }

  /// Checks a Codable key path on the right of a constant (`'a' IN tags`, `3 < scores.@count`) and returns
  /// it with the key path on the left (`tags CONTAINS 'a'`, `scores.@count > 3`).
  static func checkSwapped(
    _ value: Value, _ op: ComparisonOperator, _ path: ResolvedKeyPath, _ modifier: ComparisonModifier,
    _ options: StringOptions, entity: EntityDescription
  ) throws -> Comparison {
    let swapped: ComparisonOperator
    switch op {
    case .in where modifier == .direct && path.memberFold == nil: swapped = .contains
    case .equalTo, .notEqualTo: swapped = op
    case .lessThan: swapped = .greaterThan
    case .lessThanOrEqualTo: swapped = .greaterThanOrEqualTo
    case .greaterThan: swapped = .lessThan
    case .greaterThanOrEqualTo: swapped = .lessThanOrEqualTo
    default:
      throw StoreError(
        .unsupported,
        "\(op.rawValue) with a constant on its left side and a key path on its right is not supported; put the key path on the left",
        entity: entity.name, key: path.keyPath)
    }
    return try check(path, swapped, value, modifier, options, entity: entity)
  }

  /// The error for a Codable key path compared with something other than a constant.
  static func notConstant(_ path: ResolvedKeyPath, entity: EntityDescription) -> StoreError {
    StoreError(
      .unsupported,
      "'\(path.keyPath)' of \(entity.name) reads a Codable attribute and can only be compared with constants",
      entity: entity.name, key: path.keyPath)
  }
}
