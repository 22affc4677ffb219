import Foundation

/// A checked function expression (see ``ExpressionChecker``) prepared for evaluation in memory.
///
/// The rules, which the SQL compiler matches (docs/QUERY-SEMANTICS.md, "Expressions"):
/// - nil in, nil out: any nil argument makes the result nil;
/// - `add:to:`, `from:subtract:`, `multiply:by:` on two integers give an integer (a double when it
///   overflows, as SQLite does); with a double on either side they compute in `Double`;
/// - `divide:by:` always computes in `Double`; dividing by zero gives nil;
/// - `lowercase:` / `uppercase:` are Foundation's full Unicode mappings, `canonical:` is
///   ``StringSemantics/fold(_:_:)`` with `[.caseInsensitive, .diacriticInsensitive]`;
/// - `SUBQUERY(rel, $x, p).@count` counts the targets of `rel` matching `p` (0 when a to-one on the way is nil).
indirect enum ComputedExpression: Sendable {
  case constant(Value)
  case path(ResolvedKeyPath)
  case call(String, [ComputedExpression])
  case subqueryCount(ResolvedKeyPath, PredicateNode)

  init(_ expression: QueryExpression, entity: EntityDescription, model: ObjectModel) throws {
    switch expression {
    case .constant(let value): self = .constant(value)
    case .keyPath(let keyPath): self = .path(try ResolvedKeyPath(keyPath, entity: entity, model: model))
    case .evaluatedObject: self = .path(.evaluatedObject(of: entity))
    case .function("count:", let arguments):
      guard arguments.count == 1, case .subquery(.keyPath(let keyPath), _, let predicate) = arguments[0] else {
        throw StoreError(.unsupported, "count: is supported only on a SUBQUERY", entity: entity.name)
      }
      let path = try ResolvedKeyPath(keyPath, entity: entity, model: model)
      guard case .toMany(let rel) = path.terminal, let destination = model.entity(named: rel.destination) else {
        throw StoreError(.invalidQuery, "'\(keyPath)' is not a to-many relationship", entity: entity.name, key: keyPath)
      }
      self = .subqueryCount(path, try PredicateNode(predicate, entity: destination, model: model))
    case .function(let name, let arguments):
      self = .call(name, try arguments.map { try ComputedExpression($0, entity: entity, model: model) })
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
    case .call(let name, let arguments):
      var values: [Value] = []
      for argument in arguments {
        let value = try argument.value(snapshot, source)
        if value.isNull { return .null }
        values.append(value)
      }
      return Self.apply(name, values)
    }
  }

  /// `name` applied to non-nil arguments.
  static func apply(_ name: String, _ values: [Value]) -> Value {
    switch (name, values.count) {
    case ("lowercase:", 1), ("uppercase:", 1), ("canonical:", 1):
      guard case .string(let s) = values[0] else { return .null }
      return ExpressionFunctions.applyString(name, s).map(Value.string) ?? .null
    case ("abs:", 1):
      if let i = integer(values[0]) { return i == .min ? .double(-Double(i)) : .int(Swift.abs(i)) }
      return values[0].numericValue.map { .double(Swift.abs($0)) } ?? .null
    case ("divide:by:", 2):
      guard let a = values[0].numericValue, let b = values[1].numericValue, b != 0 else { return .null }
      return .double(a / b)
    case ("add:to:", 2), ("from:subtract:", 2), ("multiply:by:", 2):
      if let a = integer(values[0]), let b = integer(values[1]) {
        let (result, overflow) =
          switch name {
          case "add:to:": a.addingReportingOverflow(b)
          case "from:subtract:": a.subtractingReportingOverflow(b)
          default: a.multipliedReportingOverflow(by: b)
          }
        if !overflow { return .int(result) }
      }
      guard let a = values[0].numericValue, let b = values[1].numericValue else { return .null }
      switch name {
      case "add:to:": return .double(a + b)
      case "from:subtract:": return .double(a - b)
      default: return .double(a * b)
      }
    default:
      return .null
    }
  }

  private static func integer(_ value: Value) -> Int64? {
    switch value {
    case .int(let i): i
    case .bool(let b): b ? 1 : 0
    default: nil
    }
  }
}

/// `@sum`, `@avg`, `@min`, `@max` over the non-nil values of a collection.
enum Aggregation {
  /// Over no values `@sum` is 0 and the others nil. `@sum` of integers is an integer (a double when it
  /// overflows); `@avg` is the `Double` sum, in element order, divided by the count.
  static func fold(_ op: ResolvedKeyPath.AggregateOperator, _ values: [Value]) -> Value {
    switch op {
    case .sum:
      var total: Int64 = 0
      var exact = true
      for value in values {
        guard case .int(let i) = value else {
          exact = false
          break
        }
        let (sum, overflow) = total.addingReportingOverflow(i)
        if overflow {
          exact = false
          break
        }
        total = sum
      }
      if exact { return .int(total) }
      return .double(values.reduce(0.0) { $0 + ($1.numericValue ?? 0) })
    case .avg:
      guard !values.isEmpty else { return .null }
      return .double(values.reduce(0.0) { $0 + ($1.numericValue ?? 0) } / Double(values.count))
    case .min, .max:
      var best: Value?
      for value in values {
        guard let current = best else {
          best = value
          continue
        }
        guard let order = ValueComparison.compare(value, current) else { continue }
        if (op == .min && order < 0) || (op == .max && order > 0) { best = value }
      }
      return best ?? .null
    }
  }
}

/// The string functions of predicate expressions, shared by the evaluator and the SQLite store's
/// `strata_text` SQL function so both answer alike.
public enum ExpressionFunctions {
  /// `lowercase:`, `uppercase:` (Foundation's full Unicode mappings: "ß" uppercases to "SS") or
  /// `canonical:` (``StringSemantics/fold(_:_:)`` with `[.caseInsensitive, .diacriticInsensitive]`) of `s`;
  /// `nil` for any other name.
  public static func applyString(_ name: String, _ s: String) -> String? {
    switch name {
    case "lowercase:": s.lowercased()
    case "uppercase:": s.uppercased()
    case "canonical:": StringSemantics.fold(s, [.caseInsensitive, .diacriticInsensitive])
    default: nil
    }
  }
}
