import Foundation

/// A checked function expression (see ``ExpressionChecker``) prepared for evaluation in memory.
///
/// The rules, which the SQL compiler matches (docs/QUERY-SEMANTICS.md, "Expressions"):
/// - nil in, nil out: any nil argument makes the result nil, except inside a collection, whose nil
///   elements the collection functions skip;
/// - each function computes as ``ExpressionFunctions/apply(_:_:)`` and ``CollectionFunction/fold(_:)`` say;
/// - `SUBQUERY(rel, $x, p).@count` counts the targets of `rel` matching `p` (0 when a to-one on the way is nil).
indirect enum ComputedExpression: Sendable {
  case constant(Value)
  case path(ResolvedKeyPath)
  case call(String, [ComputedExpression])
  case subqueryCount(ResolvedKeyPath, PredicateNode)
  /// A collection function over the values of a collection key path (`median:(films.rating)`).
  case fold(CollectionFunction, ResolvedKeyPath)
  /// A literal collection of expressions (`{rating, score}`), yielding an array.
  case list([ComputedExpression])

  init(_ expression: QueryExpression, entity: EntityDescription, model: ObjectModel) throws {
    switch expression {
    case .constant(let value): self = .constant(value)
    case .keyPath(let keyPath): self = .path(try ResolvedKeyPath(keyPath, entity: entity, model: model))
    case .evaluatedObject: self = .path(.evaluatedObject(of: entity))
    case .function("count:", let arguments) where arguments.count == 1 && arguments[0].isSubquery:
      guard case .subquery(.keyPath(let keyPath), _, let predicate) = arguments[0] else {
        throw StoreError(.unsupported, "the collection of a SUBQUERY must be a key path", entity: entity.name)
      }
      let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
      guard case .toMany(let rel) = path.terminal, let destination = model.entity(named: rel.destination) else {
        throw StoreError(.invalidQuery, "'\(keyPath)' is not a to-many relationship", entity: entity.name, key: keyPath)
      }
      self = .subqueryCount(path, try PredicateNode(predicate, entity: destination, model: model))
    case .function(let name, let arguments):
      if let function = CollectionFunction(rawValue: name), arguments.count == 1, case .keyPath(let keyPath) = arguments[0] {
        let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
        if path.isCollection {
          self = .fold(function, path)
          return
        }
      }
      self = .call(name, try arguments.map { try ComputedExpression($0, entity: entity, model: model) })
    case .aggregate(let items):
      self = .list(try items.map { try ComputedExpression($0, entity: entity, model: model) })
    default:
      throw StoreError(.unsupported, "the expression \(expression) cannot be evaluated in memory", entity: entity.name)
    }
  }

  func value(_ snapshot: Snapshot, _ source: some EvaluationSource) throws -> Value {
    switch self {
    case .constant(let value):
      return value
    case .path(let path):
      return try KeyPathReader.value(of: path, from: snapshot, source)
    case .subqueryCount(let path, let predicate):
      var count: Int64 = 0
      for element in try KeyPathReader.values(of: path, from: snapshot, source) {
        guard case .objectID(let id) = element, let target = try source.snapshot(for: id) else { continue }
        if try predicate.evaluate(target, source) { count += 1 }
      }
      return .int(count)
    case .fold(let function, let path):
      return function.fold(try KeyPathReader.values(of: path, from: snapshot, source))
    case .list(let items):
      return .array(try items.map { try $0.value(snapshot, source) })
    case .call(let name, let arguments):
      var values: [Value] = []
      for argument in arguments {
        let value = try argument.value(snapshot, source)
        if value.isNull { return .null }
        values.append(value)
      }
      return ExpressionFunctions.apply(name, values)
    }
  }
}
