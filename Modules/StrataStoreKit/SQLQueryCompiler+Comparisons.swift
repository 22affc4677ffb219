import Foundation

// MARK: Comparisons

extension SQLQueryCompiler {
  /// `left op right` as a condition that is never NULL.
  ///
  /// - Throws: `.invalidQuery` for a `BETWEEN` without two bounds.
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
      return junction(
        [
          order(left, .greaterThanOrEqualTo, bounds[0], options, folds: folds),
          order(left, .lessThanOrEqualTo, bounds[1], options, folds: folds),
        ], "AND", empty: Dialect.trueLiteral)
    case .in:
      if let items = right.elements {
        if items.count > 1, let list = Dialect.inList(left, items, folds: folds) { return list }
        return junction(items.map { equal(left, $0, options, folds: folds) }, "OR", empty: Dialect.falseLiteral)
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
    return Dialect.isSame(left.fragment, right.fragment)
  }

  private static func order(
    _ left: Operand, _ op: ComparisonOperator, _ right: Operand, _ options: StringOptions, folds: Bool
  ) -> Fragment {
    if left.isNullConstant || right.isNullConstant || left.isUnordered || right.isUnordered {
      return Fragment(Dialect.falseLiteral)
    }
    let left = right.comparesAsReal ? real(left) : left
    if folds { return stringOperation(left, op, right, options) }
    return Dialect.ordered(left, op, right)
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
