import Foundation

/// The value rules of docs/QUERY-SEMANTICS.md: equality, order and operators on two values.
package enum ValueComparison {
  /// Whether `lhs op rhs` holds. Two-valued: nil never makes it "unknown".
  package static func holds(_ lhs: Value, _ op: ComparisonOperator, _ rhs: Value, _ options: StringOptions) throws -> Bool {
    switch op {
    case .equalTo: return equal(lhs, rhs, options)
    case .notEqualTo: return !equal(lhs, rhs, options)
    case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      guard let order = compare(lhs, rhs, options) else { return false }
      switch op {
      case .lessThan: return order < 0
      case .lessThanOrEqualTo: return order <= 0
      case .greaterThan: return order > 0
      default: return order >= 0
      }
    case .contains, .beginsWith, .endsWith, .like, .matches:
      guard case .string(let a) = lhs, case .string(let b) = rhs else { return false }
      return try StringSemantics.evaluate(op, a, b, options)
    case .in:
      switch rhs {
      case .array(let items): return items.contains { equal(lhs, $0, options) }
      case .string(let b):
        guard case .string(let a) = lhs else { return false }
        return try StringSemantics.evaluate(.in, a, b, options)
      default: return false
      }
    case .between:
      guard case .array(let bounds) = rhs, bounds.count == 2,
        let low = compare(lhs, bounds[0], options), let high = compare(lhs, bounds[1], options)
      else { return false }
      return low >= 0 && high <= 0
    }
  }

  /// Equality: nil equals only nil; numbers by value; strings under `options`; object IDs by identity.
  package static func equal(_ a: Value, _ b: Value, _ options: StringOptions) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.null, _), (_, .null): return false
    case (.objectID(let x), .objectID(let y)): return x == y
    case (.objectID, _), (_, .objectID): return false
    case (.array(let x), .array(let y)):
      return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1, options) }
    default: return compare(a, b, options) == 0
    }
  }

  /// Three-way order of two non-nil values of comparable kinds, or `nil` when they have no order
  /// (a nil side, different kinds, object IDs, NaN).
  package static func compare(_ a: Value, _ b: Value, _ options: StringOptions = []) -> Int? {
    switch (a, b) {
    case (.string(let x), .string(let y)):
      if options.isEmpty { return StringSemantics.codePointCompare(x, y) }
      return StringSemantics.codePointCompare(StringSemantics.fold(x, options), StringSemantics.fold(y, options))
    case (.date(let x), .date(let y)):
      let (p, q) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
      return p.isNaN || q.isNaN ? nil : order(p, q)
    case (.data(let x), .data(let y)):
      for (p, q) in zip(x, y) where p != q { return p < q ? -1 : 1 }
      return order(x.count, y.count)
    case (.uuid(let x), .uuid(let y)):
      // Byte order, which is the order of their uppercase strings (fixed-width hex, hyphens at fixed places).
      return withUnsafeBytes(of: x.uuid) { p in
        withUnsafeBytes(of: y.uuid) { q in
          for i in 0..<16 where p[i] != q[i] { return p[i] < q[i] ? -1 : 1 }
          return 0
        }
      }
    case (.url(let x), .url(let y)):
      return StringSemantics.codePointCompare(x.absoluteString, y.absoluteString)
    default:
      return numericCompare(a, b)
    }
  }

  /// Numbers by value, whatever their type: integers exactly, decimals as decimals, otherwise as doubles.
  package static func numericCompare(_ a: Value, _ b: Value) -> Int? {
    switch (a, b) {
    case (.int(let x), .int(let y)): return order(x, y)
    case (.decimal(let x), .decimal(let y)): return order(x, y)
    case (.decimal(let x), .int(let y)): return order(x, Decimal(y))
    case (.int(let x), .decimal(let y)): return order(Decimal(x), y)
    case (.int(let x), .double(let y)): return intDoubleCompare(x, y)
    case (.double(let x), .int(let y)): return intDoubleCompare(y, x).map { -$0 }
    default:
      guard let x = a.numericValue, let y = b.numericValue, !x.isNaN, !y.isNaN else { return nil }
      return order(x, y)
    }
  }

  private static func intDoubleCompare(_ i: Int64, _ d: Double) -> Int? {
    if d.isNaN { return nil }
    if d >= 9_223_372_036_854_775_808.0 { return -1 }
    if d < -9_223_372_036_854_775_808.0 { return 1 }
    let whole = d.rounded(.down)
    let truncated = Int64(whole)
    if i != truncated { return i < truncated ? -1 : 1 }
    return whole == d ? 0 : -1
  }

  private static func order<T: Comparable>(_ x: T, _ y: T) -> Int {
    x < y ? -1 : (x > y ? 1 : 0)
  }
}
