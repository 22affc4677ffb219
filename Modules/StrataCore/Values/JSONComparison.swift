import Foundation

/// The rules of comparisons on a Codable (``AttributeType/json``) attribute, in one place: the in-memory
/// evaluator calls them, SQLite registers them as `strata_json`, and the PostgreSQL compiler writes the
/// same rules in SQL (docs/QUERY-SEMANTICS.md, "Codable attributes").
///
/// - The stored text is read as a ``JSONText/Node``; each member of the key path (`address.city`) reads
///   that key of an object (`null` when missing or when the value is not an object), each subscript
///   (`stops[0]`, `tags[LAST]`) that element of an array (`null` past the end or when not an array).
/// - A trailing `@count` counts an array's elements or an object's keys (nil for anything else);
///   `@sum`/`@avg` fold an array's numbers (Booleans as 1/0, other elements skipped); `@min`/`@max` the
///   smallest or largest of an array's non-nil elements when they are all numbers or all strings, else nil.
/// - `ANY`/`ALL`/`NONE` range over ``JSONText/Node/elements``; an array or object element matches nothing.
/// - Without a modifier, `CONTAINS` is membership for an array (an element equal under the options),
///   substring for a string; every other operator compares a scalar by the value rules; an array or object
///   is only `!= nil`.
package enum JSONComparison {
  /// What a ``ResolvedKeyPath`` into a Codable attribute asks of the stored text.
  package struct Access: Sendable, Hashable, Codable {
    package var members: [ResolvedKeyPath.Member]
    package var fold: ResolvedKeyPath.MemberFold?

    package init(members: [ResolvedKeyPath.Member], fold: ResolvedKeyPath.MemberFold?) {
      self.members = members
      self.fold = fold
    }
  }

  /// One compiled comparison, as SQLite's `strata_json` receives it (encoded as JSON).
  package struct Test: Sendable, Hashable, Codable {
    package var access: Access
    package var modifier: ComparisonModifier
    package var op: ComparisonOperator
    package var options: StringOptions
    package var rhs: Value

    package init(access: Access, modifier: ComparisonModifier, op: ComparisonOperator, options: StringOptions, rhs: Value) {
      self.access = access
      self.modifier = modifier
      self.op = op
      self.options = options
      self.rhs = rhs
    }
  }

  /// The node `access` reaches in `stored` (`.null` or a `.string` of JSON text), before any fold.
  /// - Throws: `.corrupted` when the stored value is not text.
  package static func node(_ stored: Value, _ access: Access) throws -> JSONText.Node {
    var node: JSONText.Node
    switch stored {
    case .null: node = .scalar(.null)
    case .string(let text):
      // Text that is not JSON (edited by hand) reads as null here; fetching the object reports it.
      node = JSONText.parse(text) ?? .scalar(.null)
    default:
      throw StoreError(.corrupted, "the stored value is not JSON text but a \(stored.kindName)", value: stored)
    }
    for member in access.members { node = step(node, member) }
    return node
  }

  /// The node `member` reads from `node`: a key of an object, an element of an array (`null` when missing).
  package static func step(_ node: JSONText.Node, _ member: ResolvedKeyPath.Member) -> JSONText.Node {
    switch (member, node) {
    case (.key(let key), _): return node.member(key)
    case (.index(let n), .array(let items)): return n >= 0 && n < items.count ? items[n] : .scalar(.null)
    case (.last, .array(let items)): return items.last ?? .scalar(.null)
    default: return .scalar(.null)
    }
  }

  /// The single value a key path with a fold yields, or the scalar it reaches (nil for an array or object).
  package static func value(_ stored: Value, _ access: Access) throws -> Value {
    let node = try node(stored, access)
    guard let fold = access.fold else { return node.scalar ?? .null }
    switch fold {
    case .count:
      switch node {
      case .array(let items): return .int(Int64(items.count))
      case .object(let members): return .int(Int64(members.count))
      case .scalar: return .null
      }
    case .sum, .avg:
      guard case .array(let items) = node else { return .null }
      return fold.function.fold(items.compactMap(\.scalar).filter(\.isJSONNumber))
    case .min, .max:
      guard case .array(let items) = node else { return .null }
      let values = items.compactMap(\.scalar).filter { !$0.isNull }
      let alike = values.allSatisfy(\.isJSONNumber) || values.allSatisfy { $0.stringValue != nil }
      return alike ? fold.function.fold(values) : .null
    }
  }

  /// Whether the comparison `test` holds for the stored value.
  package static func holds(_ stored: Value, _ test: Test) throws -> Bool {
    if test.access.fold != nil {
      return try ValueComparison.holds(try value(stored, test.access), test.op, test.rhs, test.options)
    }
    let node = try node(stored, test.access)
    func matches(_ element: JSONText.Node) throws -> Bool {
      // An array or object is not nil, and compares with nothing else.
      guard let scalar = element.scalar else { return test.op == .notEqualTo && test.rhs.isNull }
      return try ValueComparison.holds(scalar, test.op, test.rhs, test.options)
    }
    switch test.modifier {
    case .any:
      for element in node.elements where try matches(element) { return true }
      return false
    case .all:
      for element in node.elements where !(try matches(element)) { return false }
      return true
    case .none:
      for element in node.elements where try matches(element) { return false }
      return true
    case .direct:
      if test.op == .contains, case .array(let items) = node {
        return items.contains { $0.scalar.map { ValueComparison.equal($0, test.rhs, test.options) } ?? false }
      }
      return try matches(node)
    }
  }
}

extension Value {
  /// Whether a JSON scalar is a number (JSON `true`/`false` count as 1/0).
  fileprivate var isJSONNumber: Bool {
    switch self {
    case .int, .double, .bool: true
    default: false
    }
  }
}
