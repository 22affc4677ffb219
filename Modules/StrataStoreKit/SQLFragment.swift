import Foundation

/// A piece of SQL with `?` placeholders and the values bound to them, in order: what the SQL backends'
/// query compiler builds statements of. `Binding` is the backend's bound value type.
///
/// ```swift
/// let title = SQLFragment<String>("t0.\"title\" = ?", ["Heat"])
/// let both = title + SQLFragment(" AND t0.\"year\" > ?", ["1990"])   // two bindings, in order
/// ```
package struct SQLFragment<Binding>: ExpressibleByStringLiteral {
  package var sql: String
  package var bindings: [Binding]

  package init(_ sql: String, _ bindings: [Binding] = []) {
    self.sql = sql
    self.bindings = bindings
  }

  package init(stringLiteral sql: String) { self.init(sql) }

  package static func + (a: SQLFragment, b: SQLFragment) -> SQLFragment {
    SQLFragment(a.sql + b.sql, a.bindings + b.bindings)
  }

  /// `parts` joined by `separator`, in parentheses; `empty` when there are none. Past `limit` parts, a
  /// balanced tree of parenthesized groups of `limit` (for a parser that refuses deep left-deep trees).
  package static func joined(
    _ parts: [SQLFragment], _ separator: String, empty: String, groupingPast limit: Int = .max
  ) -> SQLFragment {
    guard !parts.isEmpty else { return SQLFragment(empty) }
    if parts.count == 1 { return parts[0] }
    var level = parts
    while level.count > limit {
      level = stride(from: 0, to: level.count, by: limit).map { start in
        flat(Array(level[start..<min(start + limit, level.count)]), separator)
      }
    }
    return flat(level, separator)
  }

  private static func flat(_ parts: [SQLFragment], _ separator: String) -> SQLFragment {
    if parts.count == 1 { return parts[0] }
    return SQLFragment(
      "(" + parts.map(\.sql).joined(separator: " \(separator) ") + ")", parts.flatMap(\.bindings))
  }
}

extension SQLFragment: Sendable where Binding: Sendable {}

/// One side of a comparison as the SQL query compiler sees it: its SQL, and what the comparison must
/// know of it (nil-ness, string-ness, a constant's oddities).
package struct SQLOperand<Binding> {
  /// Whether the value compares as a string (string options apply) or as anything else.
  package enum Kind: Equatable {
    case string
    case other
  }

  package var fragment: SQLFragment<Binding>
  /// Whether the value may be NULL (a dialect may guard orderings of it with `IS NOT NULL`).
  package var nullable = true
  package var isNullConstant = false
  package var kind: Kind
  /// The elements of an array constant (`IN {…}`, `BETWEEN {…}`).
  package var elements: [SQLOperand]? = nil
  /// A computed value (function, aggregate, subquery): a dialect may order it with `COALESCE(l op r, …)`,
  /// so it is written (and run) once rather than again in an `IS NOT NULL` guard.
  package var isComputed = false
  /// A NaN constant (a number, or a date at a NaN interval): equal to nothing and unordered, so every
  /// `==`, ordering and `BETWEEN` with it is false.
  package var isUnordered = false
  /// A floating-point constant that no `Decimal` holds (an infinity, 1e200), compared with a decimal
  /// column: both sides compare as doubles, as the evaluator does.
  package var comparesAsReal = false
  /// The constant itself, when the operand is one (a dialect may translate patterns from it).
  package var constant: Value? = nil

  /// An operand; only its SQL and kind are required (it may be NULL unless said otherwise).
  package init(
    fragment: SQLFragment<Binding>, nullable: Bool = true, isNullConstant: Bool = false, kind: Kind,
    elements: [SQLOperand]? = nil, isComputed: Bool = false, isUnordered: Bool = false, comparesAsReal: Bool = false,
    constant: Value? = nil
  ) {
    (self.fragment, self.kind, self.elements, self.constant) = (fragment, kind, elements, constant)
    (self.nullable, self.isNullConstant, self.isComputed) = (nullable, isNullConstant, isComputed)
    (self.isUnordered, self.comparesAsReal) = (isUnordered, comparesAsReal)
  }
}

extension Value {
  /// Whether the value is NaN, or a date at a NaN interval: a constant equal to nothing and unordered.
  package var isUnorderedNumber: Bool {
    switch self {
    case .double(let d): d.isNaN
    case .date(let date): date.timeIntervalSinceReferenceDate.isNaN
    default: false
    }
  }
}
