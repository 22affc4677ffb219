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
/// two-valued logic, numbers compared by value across types, strings through `StringSemantics`,
/// `IN`, `BETWEEN`, `ANY`/`ALL`/`NONE`, `@count`, `@sum`/`@avg`/`@min`/`@max`, to-one key paths of any
/// depth, object-ID equality, function expressions and `SUBQUERY(…).@count` (see `ComputedExpression`).
///
/// The predicate is checked and normalized with `QueryValidator` and its key paths resolved once, when
/// the evaluator is made; evaluating then does no name lookups.
///
/// ```swift
/// let evaluator = try PredicateEvaluator(predicate, entity: movie, model: model)
/// let matching = try evaluator.filter(allMovies, source: source)
/// ```
public struct PredicateEvaluator: Sendable {
  /// The predicate as checked and normalized by `QueryValidator`.
  public var predicate: QueryPredicate { parts.predicate }
  /// The entity of the snapshots the evaluator accepts.
  public var entity: EntityDescription { parts.entity }
  private var root: PredicateNode { parts.root }
  /// Behind one reference: an evaluator is captured by the closures a scan calls for every record,
  /// and copying the predicate and the entity's description there retained each of their parts.
  private let parts: Parts

  private final class Parts: Sendable {
    let predicate: QueryPredicate
    let entity: EntityDescription
    let root: PredicateNode

    init(predicate: QueryPredicate, entity: EntityDescription, root: PredicateNode) {
      self.predicate = predicate
      self.entity = entity
      self.root = root
    }
  }

  /// Checks `predicate` against `entity` and prepares it for evaluation.
  /// - Throws: what `QueryValidator.check(_:entity:model:)-(QueryPredicate,_,_)` throws.
  public init(_ predicate: QueryPredicate, entity: EntityDescription, model: ObjectModel) throws {
    let checked = try QueryValidator.check(predicate, entity: entity, model: model)
    parts = Parts(predicate: checked, entity: entity, root: try PredicateNode(checked, entity: entity, model: model))
  }

  /// Whether `snapshot` (an object of ``entity``) matches the predicate.
  /// - Throws: what `source` throws; `.invalidQuery` for a `MATCHES` pattern that is not a regular expression.
  public func evaluate(_ snapshot: Snapshot, source: some EvaluationSource) throws -> Bool {
    try root.evaluate(snapshot, source)
  }

  /// When the predicate is one comparison, or an `AND` of comparisons, each of an attribute of the object
  /// itself against a constant: those comparisons, whose conjunction is the predicate. A store that reads
  /// records in an encoding of its own can decide such a predicate from the attributes' stored values
  /// (``AttributeTest/holds(_:)``, and ``AttributeTest/holds(utf8:)`` for a string without making one)
  /// before decoding a record; `nil` for any other predicate.
  package var attributeTests: [AttributeTest]? {
    func test(_ node: PredicateNode) -> AttributeTest? {
      guard case .comparison(let comparison) = node, let direct = comparison.direct,
        case .attribute(let index) = direct.left
      else { return nil }
      return AttributeTest(index: index, comparison: comparison, plainString: Self.plainString(comparison))
    }
    switch root {
    case .comparison: return test(root).map { [$0] }
    case .and(let parts):
      var tests: [AttributeTest] = []
      for part in parts {
        guard let one = test(part) else { return nil }
        tests.append(one)
      }
      return tests.isEmpty ? nil : tests
    default: return nil
    }
  }

  /// The constant's UTF-8 when `comparison` orders or equates strings by code point (`==`, `<`, … without
  /// options): such a comparison of a string with it is a comparison of their UTF-8 bytes.
  private static func plainString(_ comparison: CompiledComparison) -> [UInt8]? {
    guard comparison.options.isEmpty, comparison.modifier == .direct, comparison.idMembership == nil,
      case .string(let text) = comparison.direct?.right
    else { return nil }
    switch comparison.op {
    case .equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      return Array(text.utf8)
    default: return nil
    }
  }

  /// One comparison of an attribute of the object itself against a constant (``attributeTests``).
  package struct AttributeTest: Sendable {
    /// The attribute's position in the entity's attributes.
    package let index: Int
    fileprivate let comparison: CompiledComparison
    /// The constant string's UTF-8 when the comparison is a code-point one (``plainString(_:)``).
    fileprivate let plainString: [UInt8]?

    /// Whether the comparison holds for the attribute value `value`, exactly as ``evaluate(_:source:)``
    /// decides it for a snapshot holding that value.
    package func holds(_ value: Value) throws -> Bool {
      try comparison.holds(value, comparison.direct?.right ?? .null)
    }

    /// ``holds(_:)`` of the string whose UTF-8 is `utf8`, without making the string when the comparison
    /// has a ``StringMatcher``.
    package func holds(utf8: UnsafeBufferPointer<UInt8>) throws -> Bool {
      if let plainString { return Self.holds(comparison.op, Self.order(utf8, plainString)) }
      if let matcher = comparison.matcher, comparison.op != .matches { return try matcher.matches(utf8: utf8) }
      return try holds(.string(String(decoding: utf8, as: UTF8.self)))
    }

    /// `StringSemantics.codePointCompare` of UTF-8 bytes: negative, zero or positive.
    private static func order(_ utf8: UnsafeBufferPointer<UInt8>, _ constant: [UInt8]) -> Int {
      constant.withUnsafeBufferPointer { StringMatcher.compare(utf8, $0) }
    }

    /// Whether `order` (of the attribute's value against the constant) satisfies `op`.
    private static func holds(_ op: ComparisonOperator, _ order: Int) -> Bool {
      switch op {
      case .equalTo: order == 0
      case .notEqualTo: order != 0
      case .lessThan: order < 0
      case .lessThanOrEqualTo: order <= 0
      case .greaterThan: order > 0
      default: order >= 0
      }
    }
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
      let right = try EvaluationOperand(c.right, entity: entity, model: model)
      self = .comparison(
        CompiledComparison(
          left: try EvaluationOperand(c.left, entity: entity, model: model), op: c.op, right: right, modifier: c.modifier,
          options: c.options, idMembership: c.op == .in ? CompiledComparison.idMembership(right) : nil))
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

/// A class, so that evaluating one (for every snapshot a fetch reads) copies a reference, not its operands.
final class CompiledComparison: Sendable {
  let left: EvaluationOperand
  let op: ComparisonOperator
  let right: EvaluationOperand
  let modifier: ComparisonModifier
  let options: StringOptions
  /// For `IN` a constant list of object IDs only: the IDs hashed, so that a prefetch's `inverse IN {…}`
  /// over n objects costs one lookup per object instead of n comparisons. Only an equal ID is in such a
  /// list (`ValueComparison.equal` matches an ID with nothing else), so the answer is the same.
  let idMembership: Set<ObjectID>?
  /// The commonest comparison — an attribute or to-one of the object itself against a constant — read
  /// without copying either operand out of its enum.
  let direct: (left: DirectRead, right: Value)?
  /// For a string operator (or a folded comparison) against a constant string: the constant prepared
  /// once (folded needle, parsed `LIKE` pattern, compiled `MATCHES` expression), applied to each string on
  /// the left. `nil` when the constant is not a string, or when preparing it throws (an invalid
  /// `MATCHES` pattern then throws from every evaluation, as ``ValueComparison`` does).
  let matcher: StringMatcher?

  init(
    left: EvaluationOperand, op: ComparisonOperator, right: EvaluationOperand, modifier: ComparisonModifier,
    options: StringOptions, idMembership: Set<ObjectID>?
  ) {
    self.left = left
    self.op = op
    self.right = right
    self.modifier = modifier
    self.options = options
    self.idMembership = idMembership
    if case .path(let path) = left, !path.isJSON, let read = DirectRead(path), case .constant(let value) = right {
      direct = (read, value)
    } else {
      direct = nil
    }
    matcher = Self.matcher(op, right, options)
  }

  private static func matcher(
    _ op: ComparisonOperator, _ right: EvaluationOperand, _ options: StringOptions
  )
    -> StringMatcher?
  {
    guard case .constant(.string(let text)) = right else { return nil }
    switch op {
    case .contains, .beginsWith, .endsWith, .like, .matches, .in:
      return try? StringMatcher(op, text, options)
    case .equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
      let folds = !options.contains(.normalized) && !options.isDisjoint(with: [.caseInsensitive, .diacriticInsensitive])
      return folds ? try? StringMatcher(op, text, options) : nil
    case .between:
      return nil
    }
  }

  /// The IDs of `right` when it is a constant list of at least 8 object IDs and nothing else.
  static func idMembership(_ right: EvaluationOperand) -> Set<ObjectID>? {
    guard case .constant(.array(let items)) = right, items.count >= 8 else { return nil }
    var ids = Set<ObjectID>(minimumCapacity: items.count)
    for item in items {
      guard case .objectID(let id) = item else { return nil }
      ids.insert(id)
    }
    return ids
  }

  /// `lhs op rhs`, through ``idMembership`` when there is one.
  fileprivate func holds(_ lhs: Value, _ rhs: Value) throws -> Bool {
    // `matcher` is set only when `rhs` is its constant string.
    if let matcher, case .string(let text) = lhs { return try matcher.matches(text) }
    if let idMembership {
      guard case .objectID(let id) = lhs else { return false }
      return idMembership.contains(id)
    }
    return try ValueComparison.holds(lhs, op, rhs, options)
  }

  func evaluate(_ snapshot: Snapshot, _ source: some EvaluationSource) throws -> Bool {
    if let direct { return try holds(direct.left.value(of: snapshot), direct.right) }
    let rhs: Value
    switch right {
    case .constant(let value): rhs = value
    case .path(let path): rhs = try KeyPathReader.value(of: path, from: snapshot, source)
    case .computed(let expression): rhs = try expression.value(snapshot, source)
    }
    if case .path(let path) = left, path.isJSON {
      return try JSONComparison.evaluate(path, op, rhs, modifier, options, snapshot, source)
    }
    switch left {
    case .constant(let lhs):
      return try holds(lhs, rhs)
    case .computed(let expression):
      return try holds(try expression.value(snapshot, source), rhs)
    case .path(let path) where !path.isCollection:
      return try holds(try KeyPathReader.value(of: path, from: snapshot, source), rhs)
    case .path(let path):
      // ANY, ALL and NONE only ask whether some element matches, so each object reached counts once:
      // a chain of to-many hops then walks each object at most once per hop instead of every path to it.
      let elements = try KeyPathReader.values(of: path, from: snapshot, source, distinct: true)
      switch modifier {
      case .all:
        for element in elements where !(try holds(element, rhs)) { return false }
        return true
      case .none:
        for element in elements where try holds(element, rhs) { return false }
        return true
      case .any, .direct:
        for element in elements where try holds(element, rhs) { return true }
        return false
      }
    }
  }
}

/// An attribute or to-one of the evaluated object itself, read by its position: what
/// ``KeyPathReader/value(of:from:_:)`` reads for a key path without hops, without the resolved key path
/// (copying one out of an array or an enum retains every description it holds, ~1,500 instructions).
/// Sorters and comparisons keep one beside the key path and read through it for every snapshot.
enum DirectRead: Sendable {
  case attribute(Int)
  case toOne(Int)

  /// How `path` is read directly; `nil` when it walks relationships or ends on anything else.
  init?(_ path: ResolvedKeyPath) {
    guard path.hops.isEmpty else { return nil }
    switch path.terminal {
    case .attribute(_, let index): self = .attribute(index)
    case .toOne(_, let index): self = .toOne(index)
    default: return nil
    }
  }

  /// The value in `snapshot` (nil past the end of its arrays, as ``KeyPathReader`` reads it).
  @inline(__always)
  func value(of snapshot: Snapshot) -> Value {
    switch self {
    case .attribute(let index):
      return snapshot.attributes.indices.contains(index) ? snapshot.attributes[index] : .null
    case .toOne(let index):
      return snapshot.toOne.indices.contains(index) ? snapshot.toOne[index].map(Value.objectID) ?? .null : .null
    }
  }
}

/// Reads what a resolved key path yields from a snapshot.
enum KeyPathReader {
  /// The single value of a key path that is not a collection (nil when a to-one on the way is nil).
  static func value(of path: ResolvedKeyPath, from snapshot: Snapshot, _ source: some EvaluationSource) throws -> Value {
    // An attribute or to-one of the object itself — what sorting and most comparisons read — without the
    // arrays of branches and results a path through relationships needs (~1,500 instructions a value).
    if let direct = DirectRead(path) { return direct.value(of: snapshot) }
    return try values(of: path, from: snapshot, source).first ?? .null
  }

  /// Every value the key path yields: one for a single-valued path, one per element for a collection.
  /// With `distinct`, an object reached along several paths is an element once (and so is nil): enough
  /// for `ANY`/`ALL`/`NONE`, and linear in the objects reached rather than in the paths to them.
  static func values(
    of path: ResolvedKeyPath, from snapshot: Snapshot, _ source: some EvaluationSource, distinct: Bool = false
  ) throws -> [Value] {
    var branches: [Snapshot?] = [snapshot]
    for hop in path.hops {
      var next: [Snapshot?] = []
      next.reserveCapacity(branches.count)
      var seen: Set<ObjectID> = []
      var sawNil = false
      for branch in branches {
        guard let branch else {
          if !hop.isToMany { next.append(nil) }
          continue
        }
        if hop.isToMany {
          for id in try source.relatedObjectIDs(of: branch.objectID, relationship: hop.relationship)
          where !distinct || seen.insert(id).inserted {
            if let target = try source.snapshot(for: id) { next.append(target) }
          }
        } else {
          let target = hop.toOneIndex.flatMap { branch.toOne.indices.contains($0) ? branch.toOne[$0] : nil }
          if distinct {
            if let target {
              guard seen.insert(target).inserted else { continue }
            } else {
              guard !sawNil else { continue }
              sawNil = true
            }
          }
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
      case .element(let position, let rel, _, let index):
        let target = try element(position, rel, of: branch, path.elementHops, source).flatMap { try source.snapshot(for: $0) }
        guard let target, target.attributes.indices.contains(index) else {
          result.append(.null)
          continue
        }
        result.append(target.attributes[index])
      case .elementObject(let position, let rel):
        result.append(try element(position, rel, of: branch, path.elementHops, source).map(Value.objectID) ?? .null)
      }
    }
    return result
  }

  /// The object at `position` of the ordered list `rel` of `owner`, then through the to-ones `hops`; nil
  /// past the end of the list or at a nil to-one.
  private static func element(
    _ position: ResolvedKeyPath.Member, _ rel: RelationshipDescription, of owner: Snapshot?,
    _ hops: [ResolvedKeyPath.Hop], _ source: some EvaluationSource
  ) throws -> ObjectID? {
    guard let owner else { return nil }
    let targets = try source.relatedObjectIDs(of: owner.objectID, relationship: rel)
    var chosen: ObjectID?
    switch position {
    case .index(let n): chosen = n >= 0 && n < targets.count ? targets[n] : nil
    case .last: chosen = targets.last
    case .key: chosen = nil
    }
    for hop in hops {
      guard let id = chosen, let index = hop.toOneIndex, let snapshot = try source.snapshot(for: id),
        snapshot.toOne.indices.contains(index)
      else { return nil }
      chosen = snapshot.toOne[index]
    }
    return chosen
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
