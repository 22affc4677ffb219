import Foundation

/// A subscript of a collection in a predicate, as NSPredicate writes it: `items[0]`, `SELF[FIRST]`,
/// `SELF[LAST]`, `tags[SIZE]`, and a key after an element, `items[FIRST].name`.
///
/// A subscripted expression is a function expression, as in `NSExpression`: `objectFrom:withIndex:` with
/// the collection and the index, or `FIRST`, `LAST`, `SIZE` with the collection; a key path read from the
/// element is a third (second) argument, a string constant. Build and take them apart with
/// ``QueryExpression/subscripted(_:by:keyPath:)`` and ``QueryExpression/subscriptParts``.
///
/// Semantics (docs/QUERY-SEMANTICS.md, "Subscripts"): the collection is an array value (an ordered
/// collection); `[n]` is its element at `n` counted from 0, `[FIRST]` and `[LAST]` its first and last,
/// `[SIZE]` its count. Where NSPredicate raises (an index past the end, `[FIRST]` of an empty collection)
/// the element is nil, so the comparison follows the rules of nil; a nil collection gives nil. In a
/// fetch, a subscript of a Codable attribute (or a key path into one) becomes a step of that key path
/// (`tags[0]`, ``ResolvedKeyPath/Member``); a subscript of an unordered to-many relationship, of another
/// attribute or of `SELF` is `.invalidQuery` when the request is checked.
///
/// ```swift
/// let p = try QueryPredicate(format: "{3, 1, 2}[LAST] == 2")
/// let e = QueryExpression.subscripted(.keyPath("items"), by: .first, keyPath: "name")   // items[FIRST].name
/// QuerySubscript.element(of: .array([1, 2]), at: .index(.constant(5)))                  // .null
/// ```
public enum QuerySubscript: Sendable, Hashable {
  /// `[n]`: the element at `n`, counted from 0 (an integer expression: a number, `%d`, a `$variable`).
  case index(QueryExpression)
  /// `[FIRST]`: the first element.
  case first
  /// `[LAST]`: the last element.
  case last
  /// `[SIZE]`: the number of elements.
  case size

  /// The function name of `[n]` (NSExpression's).
  public static let indexFunction = "objectFrom:withIndex:"
  /// The function names of `[FIRST]`, `[LAST]` and `[SIZE]`.
  public static let symbolicFunctions: [String: QuerySubscript] = ["FIRST": .first, "LAST": .last, "SIZE": .size]

  /// Whether `name` is the function name of a subscript.
  public static func isSubscriptFunction(_ name: String) -> Bool {
    name == indexFunction || symbolicFunctions[name] != nil
  }

  /// The keyword written between the brackets, for the symbolic subscripts.
  var keyword: String? {
    switch self {
    case .index: nil
    case .first: "FIRST"
    case .last: "LAST"
    case .size: "SIZE"
    }
  }

  /// The element of `collection` this subscript names (`index` the value of the index expression of
  /// ``index(_:)``): nil for an index that is not an integer, negative or past the end, for `FIRST` or
  /// `LAST` of an empty collection, and for a collection that is nil or not an array.
  public static func element(of collection: Value, at position: QuerySubscript, index: Value? = nil) -> Value {
    guard case .array(let items) = collection else { return .null }
    switch position {
    case .size: return .int(Int64(items.count))
    case .first: return items.first ?? .null
    case .last: return items.last ?? .null
    case .index(let expression):
      let value: Value
      if let index {
        value = index
      } else if case .constant(let constant) = expression {
        value = constant
      } else {
        return .null
      }
      guard let n = integerIndex(value), n >= 0, n < items.count else { return .null }
      return items[n]
    }
  }

  /// `value` as an index: an integer, or a floating-point number holding one exactly.
  static func integerIndex(_ value: Value) -> Int? {
    switch value {
    case .int(let i): return Int(exactly: i)
    case .double(let d): return Int(exactly: d)
    case .decimal(let d): return Int(exactly: NSDecimalNumber(decimal: d).doubleValue)
    default: return nil
    }
  }
}

extension QueryExpression {
  /// `collection[subscript]`, followed by `.keyPath` when given: `items[0].name`.
  public static func subscripted(
    _ collection: QueryExpression, by position: QuerySubscript, keyPath: String? = nil
  ) -> QueryExpression {
    let key = keyPath.map { [QueryExpression.constant(.string($0))] } ?? []
    switch position {
    case .index(let index): return .function(QuerySubscript.indexFunction, [collection, index] + key)
    case .first, .last, .size: return .function(position.keyword ?? "", [collection] + key)
    }
  }

  /// The collection, subscript and trailing key path of a subscripted expression, or `nil` for any other.
  public var subscriptParts: (collection: QueryExpression, position: QuerySubscript, keyPath: String?)? {
    guard case .function(let name, let arguments) = self, !arguments.isEmpty else { return nil }
    func key(at position: Int) -> String?? {
      guard arguments.count > position else { return .some(nil) }
      guard arguments.count == position + 1, case .constant(.string(let key)) = arguments[position] else { return nil }
      return .some(key)
    }
    if name == QuerySubscript.indexFunction, arguments.count >= 2, let keyPath = key(at: 2) {
      return (arguments[0], .index(arguments[1]), keyPath)
    }
    if let symbolic = QuerySubscript.symbolicFunctions[name], let keyPath = key(at: 1) {
      return (arguments[0], symbolic, keyPath)
    }
    return nil
  }
}
