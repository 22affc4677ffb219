import Foundation
internal import StrataStoreKit

/// Predicates over plain values: the role `NSPredicate.evaluate(with:)` plays in Foundation.
///
/// The value is read as JSON (an `Encodable` value as `JSONEncoder` writes it, dates as seconds since 2001)
/// and `SELF` is bound to it; key paths read dictionary keys and Codable properties (a missing key is nil);
/// the comparison rules are the store evaluator's for Codable attributes (docs/QUERY-SEMANTICS.md, "Plain
/// values"): string options, `LIKE`, `MATCHES`, `BETWEEN`, `IN`, `ANY`/`ALL`/`NONE`, `@count`, `@sum`,
/// `@avg`, `@min`, `@max`, subscripts (`SELF[FIRST]`, `SELF[SIZE]`, `list[0]`, `stops[LAST].city`).
///
/// ```swift
/// try QueryPredicate(format: "SELF == 'Do'").evaluate(with: "Do")                     // true
/// try QueryPredicate(format: "SELF BETWEEN {1, 3}").evaluate(with: 2)                  // true
/// try QueryPredicate(format: "'a' IN list").evaluate(with: ["list": ["a", "b"]])      // true
/// try ["aaa1", "b", "aaa2"].filter(QueryPredicate(format: "SELF BEGINSWITH 'aaa'"))   // ["aaa1", "aaa2"]
/// ```
extension QueryPredicate {
  /// Whether `value` matches, with `SELF` bound to it.
  ///
  /// - Throws: `.invalidQuery` for a predicate the rules refuse (a string operator with a number); `.unsupported`
  ///   for what plain values cannot evaluate: a comparison of two key paths, function expressions,
  ///   `SUBQUERY`; `.invalidModel` when `value` does not encode as JSON.
  public func evaluate(with value: some Encodable) throws -> Bool {
    try PlainValueEvaluator(self).evaluate(try PlainValueEvaluator.node(encoding: value))
  }

  /// Whether `value` matches, with `SELF` bound to it (arrays as arrays, dates as seconds since 2001).
  public func evaluate(with value: Value) throws -> Bool {
    try PlainValueEvaluator(self).evaluate(JSONText.node(from: value))
  }

  /// Whether the dictionary `values` matches: key paths read its keys (a missing key is nil).
  ///
  /// ```swift
  /// try QueryPredicate(format: "name ==[c] 'heat' AND year > 1990").evaluate(with: ["name": "Heat", "year": 1995])
  /// ```
  public func evaluate(with values: [String: Value]) throws -> Bool {
    try PlainValueEvaluator(self).evaluate(.object(values.mapValues(JSONText.node(from:))))
  }
}

extension Sequence where Element: Encodable {
  /// The elements that match `predicate`, with `SELF` bound to each, in order (see
  /// `QueryPredicate.evaluate(with:)`).
  ///
  /// ```swift
  /// struct Film: Codable { var title: String; var tags: [String] }
  /// let films = [Film(title: "Heat", tags: ["Crime", "Drama"]), Film(title: "Amélie", tags: ["Comedy"])]
  /// let crime = try films.filter(QueryPredicate(format: "ANY tags ==[c] %@", "crime"))
  /// ```
  public func filter(_ predicate: QueryPredicate) throws -> [Element] {
    let evaluator = try PlainValueEvaluator(predicate)
    var result: [Element] = []
    for element in self where try evaluator.evaluate(try PlainValueEvaluator.node(encoding: element)) {
      result.append(element)
    }
    return result
  }
}

extension Sequence where Element == Value {
  /// The values that match `predicate`, with `SELF` bound to each, in order (arrays as arrays, dates as
  /// seconds since 2001).
  ///
  /// ```swift
  /// let small = try ([1, 2, 5] as [Value]).filter(QueryPredicate(format: "SELF BETWEEN {1, 3}"))   // [1, 2]
  /// ```
  public func filter(_ predicate: QueryPredicate) throws -> [Value] {
    let evaluator = try PlainValueEvaluator(predicate)
    var result: [Value] = []
    for element in self where try evaluator.evaluate(JSONText.node(from: element)) { result.append(element) }
    return result
  }
}

/// A predicate prepared for plain values: the store evaluator over an entity with one Codable attribute
/// holding `{"v": value}`, every key path of the predicate read inside `v`.
struct PlainValueEvaluator {
  private static let attribute = "value"
  private static let member = "v"
  private static let entity = EntityDescription(
    name: "Value", attributes: [AttributeDescription(name: attribute, type: .json, isOptional: true)])
  private static let model = Result { try ObjectModel(entities: [entity]) }
  private static let objectID = ObjectID(entityName: "Value", storeIdentifier: "plain", primaryKey: 1)

  private let evaluator: PredicateEvaluator

  init(_ predicate: QueryPredicate) throws {
    do {
      evaluator = try PredicateEvaluator(Self.rooted(predicate), entity: Self.entity, model: try Self.model.get())
    } catch let error as StoreError {
      throw StoreError(
        error.code, Self.plain(error.message), key: error.key.map(Self.plain), value: error.value,
        conflicts: error.conflicts)
    }
  }

  func evaluate(_ node: JSONText.Node) throws -> Bool {
    let text = JSONText.text(of: .object([Self.member: node]))
    let snapshot = Snapshot(
      objectID: Self.objectID, version: 1, attributes: AttributeValues([.string(text)], layout: Self.entity.valueLayout),
      toOne: [])
    return try evaluator.evaluate(snapshot, source: NoObjects())
  }

  static func node(encoding value: some Encodable) throws -> JSONText.Node {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    do {
      let data = try encoder.encode(value)
      if let node = JSONText.parse(String(decoding: data, as: UTF8.self)) { return node }
    } catch {
      throw StoreError(.invalidModel, "\(type(of: value)) does not encode as JSON: \(error)")
    }
    throw StoreError(.invalidModel, "\(type(of: value)) does not encode as JSON")
  }

  /// `predicate` with every key path read inside the value: `name` → `value.v.name`, `SELF` → `value.v`.
  private static func rooted(_ predicate: QueryPredicate) -> QueryPredicate {
    switch predicate {
    case .constant: predicate
    case .and(let parts): .and(parts.map(rooted))
    case .or(let parts): .or(parts.map(rooted))
    case .not(let inner): .not(rooted(inner))
    case .comparison(let c):
      .comparison(Comparison(rooted(c.left), c.op, rooted(c.right), modifier: c.modifier, options: c.options))
    }
  }

  private static func rooted(_ expression: QueryExpression) -> QueryExpression {
    let root = "\(attribute).\(member)"
    switch expression {
    case .evaluatedObject: return .keyPath(root)
    case .keyPath(let keyPath):
      var components = keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
      if components.first?.uppercased() == "SELF" { components.removeFirst() }
      return .keyPath(([root] + components).joined(separator: "."))
    case .aggregate(let items): return .aggregate(items.map(rooted))
    case .function(let name, let arguments):
      // `SELF.@sum` parses as `sum:(SELF)`: over a plain value it is the Codable fold `value.v.@sum`.
      let folds = ["count:": "@count", "sum:": "@sum", "average:": "@avg", "min:": "@min", "max:": "@max"]
      if let fold = folds[name], arguments.count == 1, case .keyPath(let path) = rooted(arguments[0]) {
        return .keyPath(path + "." + fold)
      }
      return .function(name, arguments.map(rooted))
    default: return expression
    }
  }

  /// An error message about the rooted predicate, in the terms of the one written.
  private static func plain(_ text: String) -> String {
    text.replacingOccurrences(of: "Value.\(attribute).\(member).", with: "")
      .replacingOccurrences(of: "\(attribute).\(member).", with: "")
      .replacingOccurrences(of: "Value.\(attribute).\(member)", with: "SELF")
      .replacingOccurrences(of: "\(attribute).\(member)", with: "SELF")
      .replacingOccurrences(of: " of Value", with: "")
  }

  private struct NoObjects: EvaluationSource {
    func snapshot(for id: ObjectID) throws -> Snapshot? { nil }
    func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] { [] }
  }
}
