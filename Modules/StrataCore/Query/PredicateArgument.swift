import Foundation

/// A Swift value that can stand for a `%@` (or `%d`, `%f`, `%K`) argument of a predicate format string.
///
/// The standard value types conform: strings, integers, floating-point numbers, `Decimal`, `Bool`,
/// `Date`, `UUID`, `Data`, `URL`, ``ObjectID``, ``Value``, optionals of those (`nil` becomes `nil`),
/// and arrays, sets and closed ranges of those (which become collections, for `IN %@` and `BETWEEN %@`).
/// Conform your own types by returning the value they stand for:
///
/// ```swift
/// extension Genre: PredicateArgument {
///   var predicateValue: Value { .string(rawValue) }
/// }
/// let p = try QueryPredicate(format: "genre == %@ AND year IN %@", Genre.drama, [1994, 1995])
/// ```
public protocol PredicateArgument {
  /// The value this argument stands for in a predicate.
  var predicateValue: Value { get }
}

extension Value: PredicateArgument {
  public var predicateValue: Value { self }
}

extension String: PredicateArgument {
  public var predicateValue: Value { .string(self) }
}

extension Substring: PredicateArgument {
  public var predicateValue: Value { .string(String(self)) }
}

extension Int: PredicateArgument {
  public var predicateValue: Value { .int(Int64(self)) }
}

extension Int8: PredicateArgument {
  public var predicateValue: Value { .int(Int64(self)) }
}

extension Int16: PredicateArgument {
  public var predicateValue: Value { .int(Int64(self)) }
}

extension Int32: PredicateArgument {
  public var predicateValue: Value { .int(Int64(self)) }
}

extension Int64: PredicateArgument {
  public var predicateValue: Value { .int(self) }
}

extension UInt8: PredicateArgument {
  public var predicateValue: Value { .int(Int64(self)) }
}

extension UInt16: PredicateArgument {
  public var predicateValue: Value { .int(Int64(self)) }
}

extension UInt32: PredicateArgument {
  public var predicateValue: Value { .int(Int64(self)) }
}

extension Double: PredicateArgument {
  public var predicateValue: Value { .double(self) }
}

extension Float: PredicateArgument {
  public var predicateValue: Value { .double(Double(self)) }
}

extension Decimal: PredicateArgument {
  public var predicateValue: Value { .decimal(self) }
}

extension Bool: PredicateArgument {
  public var predicateValue: Value { .bool(self) }
}

extension Date: PredicateArgument {
  public var predicateValue: Value { .date(self) }
}

extension UUID: PredicateArgument {
  public var predicateValue: Value { .uuid(self) }
}

extension Data: PredicateArgument {
  public var predicateValue: Value { .data(self) }
}

extension URL: PredicateArgument {
  public var predicateValue: Value { .url(self) }
}

extension ObjectID: PredicateArgument {
  public var predicateValue: Value { .objectID(self) }
}

extension Optional: PredicateArgument where Wrapped: PredicateArgument {
  /// The wrapped value's value, or `.null` for `nil`.
  public var predicateValue: Value { self?.predicateValue ?? .null }
}

extension Array: PredicateArgument where Element: PredicateArgument {
  /// A collection of the elements' values, in order.
  public var predicateValue: Value { .array(map(\.predicateValue)) }
}

extension Set: PredicateArgument where Element: PredicateArgument {
  /// A collection of the elements' values, sorted by their format-string form so that the same set
  /// always gives the same predicate.
  public var predicateValue: Value {
    .array(map(\.predicateValue).map { ($0.formatLiteral, $0) }.sorted { $0.0 < $1.0 }.map(\.1))
  }
}

extension ClosedRange: PredicateArgument where Bound: PredicateArgument {
  /// The two bounds `{lower, upper}`, as `BETWEEN %@` expects.
  public var predicateValue: Value { .array([lowerBound.predicateValue, upperBound.predicateValue]) }
}
