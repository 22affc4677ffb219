import Foundation

/// Where the in-memory evaluator reads objects a key path reaches beyond the evaluated snapshot.
///
/// The memory and LMDB stores implement it over their state; the object graph can implement it over a
/// context to evaluate predicates against pending changes.
///
/// ```swift
/// final class DictionarySource: EvaluationSource {
///   var objects: [ObjectID: Snapshot] = [:]
///   var links: [ObjectID: [String: [ObjectID]]] = [:]
///   func snapshot(for id: ObjectID) throws -> Snapshot? { objects[id] }
///   func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
///     links[id]?[relationship.name] ?? []
///   }
/// }
/// ```
public protocol EvaluationSource {
  /// The snapshot of the object `id`, or `nil` when it does not exist.
  func snapshot(for id: ObjectID) throws -> Snapshot?
  /// The targets of the to-many `relationship` of the object `id` (an entity of `id.entityName`).
  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID]
}

/// Evaluates a predicate against snapshots, following docs/QUERY-SEMANTICS.md exactly: nil rules,
/// two-valued logic, numbers compared by value across types, strings through ``StringSemantics``,
/// `IN`, `BETWEEN`, `ANY`/`ALL`/`NONE`, `@count`, `@sum`/`@avg`/`@min`/`@max`, to-one key paths of any
/// depth, object-ID equality, function expressions and `SUBQUERY(…).@count` (see ``ComputedExpression``).
///
/// The predicate is checked and normalized with ``QueryValidator`` and its key paths resolved once, when
/// the evaluator is made; evaluating then does no name lookups.
///
/// ```swift
/// let evaluator = try PredicateEvaluator(predicate, entity: movie, model: model)
/// let matching = try evaluator.filter(allMovies, source: source)
/// ```
public struct PredicateEvaluator: Sendable {
  /// The predicate as checked and normalized by ``QueryValidator``.
  public let predicate: QueryPredicate
  /// The entity of the snapshots the evaluator accepts.
  public let entity: EntityDescription
  private let root: PredicateNode

  /// Checks `predicate` against `entity` and prepares it for evaluation.
  /// - Throws: what ``QueryValidator/check(_:entity:model:)-(QueryPredicate,_,_)`` throws.
  public init(_ predicate: QueryPredicate, entity: EntityDescription, model: ObjectModel) throws {
    let checked = try QueryValidator.check(predicate, entity: entity, model: model)
    self.predicate = checked
    self.entity = entity
    self.root = try PredicateNode(checked, entity: entity, model: model)
  }

  /// Whether `snapshot` (an object of ``entity``) matches the predicate.
  /// - Throws: what `source` throws; `.invalidQuery` for a `MATCHES` pattern that is not a regular expression.
  public func evaluate(_ snapshot: Snapshot, source: some EvaluationSource) throws -> Bool {
    try root.evaluate(snapshot, source)
  }

  /// The snapshots that match, in their given order.
  public func filter(_ snapshots: [Snapshot], source: some EvaluationSource) throws -> [Snapshot] {
    var result: [Snapshot] = []
    for snapshot in snapshots where try root.evaluate(snapshot, source) { result.append(snapshot) }
    return result
  }
}

/// A predicate prepared for evaluation: key paths resolved, expressions compiled.
indirect enum PredicateNode: Sendable {
  case constant(Bool)
  case and([PredicateNode])
  case or([PredicateNode])
  case not(PredicateNode)
  case comparison(CompiledComparison)

  init(_ predicate: QueryPredicate, entity: EntityDescription, model: ObjectModel) throws {
    switch predicate {
    case .constant(let value): self = .constant(value)
    case .and(let parts): self = .and(try parts.map { try PredicateNode($0, entity: entity, model: model) })
    case .or(let parts): self = .or(try parts.map { try PredicateNode($0, entity: entity, model: model) })
    case .not(let inner): self = .not(try PredicateNode(inner, entity: entity, model: model))
    case .comparison(let c):
      self = .comparison(
        CompiledComparison(
          left: try EvaluationOperand(c.left, entity: entity, model: model), op: c.op,
          right: try EvaluationOperand(c.right, entity: entity, model: model), modifier: c.modifier, options: c.options))
    }
  }

  func evaluate(_ snapshot: Snapshot, _ source: some EvaluationSource) throws -> Bool {
    switch self {
    case .constant(let value): return value
    case .and(let parts):
      for part in parts where !(try part.evaluate(snapshot, source)) { return false }
      return true
    case .or(let parts):
      for part in parts where try part.evaluate(snapshot, source) { return true }
      return false
    case .not(let inner): return !(try inner.evaluate(snapshot, source))
    case .comparison(let comparison): return try comparison.evaluate(snapshot, source)
    }
  }
}

enum EvaluationOperand: Sendable {
  case constant(Value)
  case path(ResolvedKeyPath)
  case computed(ComputedExpression)

  init(_ expression: QueryExpression, entity: EntityDescription, model: ObjectModel) throws {
    switch expression {
    case .constant(let value): self = .constant(value)
    case .keyPath(let keyPath): self = .path(try ResolvedKeyPath(keyPath, entity: entity, model: model))
    case .evaluatedObject: self = .path(.evaluatedObject(of: entity))
    case .function: self = .computed(try ComputedExpression(expression, entity: entity, model: model))
    default:
      // QueryValidator has already rejected every other expression.
      throw StoreError(.unsupported, "the expression \(expression) cannot be evaluated in memory", entity: entity.name)
    }
  }
}

struct CompiledComparison: Sendable {
  let left: EvaluationOperand
  let op: ComparisonOperator
  let right: EvaluationOperand
  let modifier: ComparisonModifier
  let options: StringOptions

  func evaluate(_ snapshot: Snapshot, _ source: some EvaluationSource) throws -> Bool {
    let rhs: Value
    switch right {
    case .constant(let value): rhs = value
    case .path(let path): rhs = try KeyPathReader.value(of: path, from: snapshot, source)
    case .computed(let expression): rhs = try expression.value(snapshot, source)
    }
    switch left {
    case .constant(let lhs):
      return try ValueComparison.holds(lhs, op, rhs, options)
    case .computed(let expression):
      return try ValueComparison.holds(try expression.value(snapshot, source), op, rhs, options)
    case .path(let path) where !path.isCollection:
      return try ValueComparison.holds(try KeyPathReader.value(of: path, from: snapshot, source), op, rhs, options)
    case .path(let path):
      let elements = try KeyPathReader.values(of: path, from: snapshot, source)
      switch modifier {
      case .all:
        for element in elements where !(try ValueComparison.holds(element, op, rhs, options)) { return false }
        return true
      case .none:
        for element in elements where try ValueComparison.holds(element, op, rhs, options) { return false }
        return true
      case .any, .direct:
        for element in elements where try ValueComparison.holds(element, op, rhs, options) { return true }
        return false
      }
    }
  }
}

/// Reads what a resolved key path yields from a snapshot.
enum KeyPathReader {
  /// The single value of a key path that is not a collection (nil when a to-one on the way is nil).
  static func value(of path: ResolvedKeyPath, from snapshot: Snapshot, _ source: some EvaluationSource) throws -> Value {
    try values(of: path, from: snapshot, source).first ?? .null
  }

  /// Every value the key path yields: one for a single-valued path, one per element for a collection.
  static func values(of path: ResolvedKeyPath, from snapshot: Snapshot, _ source: some EvaluationSource) throws
    -> [Value]
  {
    var branches: [Snapshot?] = [snapshot]
    for hop in path.hops {
      var next: [Snapshot?] = []
      next.reserveCapacity(branches.count)
      for branch in branches {
        guard let branch else {
          if !hop.isToMany { next.append(nil) }
          continue
        }
        if hop.isToMany {
          for id in try source.relatedObjectIDs(of: branch.objectID, relationship: hop.relationship) {
            if let target = try source.snapshot(for: id) { next.append(target) }
          }
        } else {
          let target = hop.toOneIndex.flatMap { branch.toOne.indices.contains($0) ? branch.toOne[$0] : nil }
          next.append(try target.flatMap { try source.snapshot(for: $0) })
        }
      }
      branches = next
    }
    var result: [Value] = []
    result.reserveCapacity(branches.count)
    for branch in branches {
      switch path.terminal {
      case .attribute(_, let index):
        let value = branch.flatMap { $0.attributes.indices.contains(index) ? $0.attributes[index] : nil }
        result.append(value ?? .null)
      case .toOne(_, let index):
        let target = branch.flatMap { $0.toOne.indices.contains(index) ? $0.toOne[index] : nil }
        result.append(target.map(Value.objectID) ?? .null)
      case .object:
        result.append(branch.map { .objectID($0.objectID) } ?? .null)
      case .toMany(let rel):
        guard let branch else { continue }
        result += try source.relatedObjectIDs(of: branch.objectID, relationship: rel).map(Value.objectID)
      case .count(let rel):
        guard let branch else {
          result.append(.null)
          continue
        }
        result.append(.int(Int64(try source.relatedObjectIDs(of: branch.objectID, relationship: rel).count)))
      case .aggregate(let op, let rel, _, let index):
        guard let branch else {
          result.append(.null)
          continue
        }
        var elements: [Value] = []
        for id in try source.relatedObjectIDs(of: branch.objectID, relationship: rel) {
          guard let target = try source.snapshot(for: id), target.attributes.indices.contains(index) else { continue }
          let value = target.attributes[index]
          if !value.isNull { elements.append(value) }
        }
        result.append(op.function.fold(elements))
      }
    }
    return result
  }
}

/// The value rules of docs/QUERY-SEMANTICS.md: equality, order and operators on two values.
enum ValueComparison {
  /// Whether `lhs op rhs` holds. Two-valued: nil never makes it "unknown".
  static func holds(_ lhs: Value, _ op: ComparisonOperator, _ rhs: Value, _ options: StringOptions) throws -> Bool {
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
  static func equal(_ a: Value, _ b: Value, _ options: StringOptions) -> Bool {
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
  static func compare(_ a: Value, _ b: Value, _ options: StringOptions = []) -> Int? {
    switch (a, b) {
    case (.string(let x), .string(let y)):
      if options.isEmpty { return StringSemantics.codePointCompare(x, y) }
      return StringSemantics.codePointCompare(StringSemantics.fold(x, options), StringSemantics.fold(y, options))
    case (.date(let x), .date(let y)):
      return order(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
    case (.data(let x), .data(let y)):
      for (p, q) in zip(x, y) where p != q { return p < q ? -1 : 1 }
      return order(x.count, y.count)
    case (.uuid(let x), .uuid(let y)):
      return StringSemantics.codePointCompare(x.uuidString.uppercased(), y.uuidString.uppercased())
    case (.url(let x), .url(let y)):
      return StringSemantics.codePointCompare(x.absoluteString, y.absoluteString)
    default:
      return numericCompare(a, b)
    }
  }

  /// Numbers by value, whatever their type: integers exactly, decimals as decimals, otherwise as doubles.
  static func numericCompare(_ a: Value, _ b: Value) -> Int? {
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

extension ResolvedKeyPath {
  /// The value this key path reads from `snapshot`, following to-one relationships through `source`
  /// (`nil` along the way gives `.null`).
  ///
  /// ```swift
  /// let key = try QueryValidator.resolveSortKey(QuerySort("director.name"), entity: movie, model: model)
  /// let name = try key.value(in: snapshot, source: source)
  /// ```
  public func value(in snapshot: Snapshot, source: some EvaluationSource) throws -> Value {
    try KeyPathReader.value(of: self, from: snapshot, source)
  }
}
