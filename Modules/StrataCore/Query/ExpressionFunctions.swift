import Foundation

/// The functions of predicate expressions, defined once for every backend: the in-memory evaluator calls
/// them directly and the SQLite store registers them as SQL functions, so both answer alike.
///
/// ```swift
/// ExpressionFunctions.applyString("uppercase:", "straße")            // "STRASSE"
/// ExpressionFunctions.apply("sqrt:", [.int(16)])                      // .double(4)
/// ExpressionFunctions.apply("modulus:by:", [.int(7), .int(3)])        // .int(1)
/// ```
public enum ExpressionFunctions {
  /// The string functions, by name.
  public static let stringFunctions: Set<String> = ["lowercase:", "uppercase:", "canonical:"]
  /// The arithmetic functions of two numbers, by name.
  public static let binaryNumericFunctions: Set<String> = [
    "add:to:", "from:subtract:", "multiply:by:", "divide:by:", "modulus:by:", "raise:toPower:",
  ]
  /// The functions of one number, by name. `abs:` keeps integers integral; the others compute in `Double`.
  public static let unaryNumericFunctions: Set<String> = [
    "abs:", "sqrt:", "log:", "ln:", "exp:", "floor:", "ceiling:", "trunc:",
  ]

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

  /// The function `name` applied to non-nil `values` (callers return nil for a nil argument first).
  ///
  /// - `add:to:`, `from:subtract:`, `multiply:by:` on two integers give an integer (a double when it
  ///   overflows, as SQLite does); with a double on either side they compute in `Double`;
  /// - `divide:by:` always computes in `Double`; `modulus:by:` keeps two integers integral
  ///   (`fmod` otherwise); a zero divisor gives nil;
  /// - `raise:toPower:`, `sqrt:`, `log:` (base 10), `ln:`, `exp:`, `floor:`, `ceiling:`, `trunc:` compute
  ///   in `Double`; a result that is not a number (`sqrt:` of -1) is nil;
  /// - the string functions as ``applyString(_:_:)``; a collection function on `.array` as
  ///   ``CollectionFunction/fold(_:)``; a subscript (`objectFrom:withIndex:`, `FIRST`, `LAST`, `SIZE`) as
  ///   ``QuerySubscript/element(of:at:index:)``; anything else is nil.
  public static func apply(_ name: String, _ values: [Value]) -> Value {
    if values.count == 1, case .array(let items) = values[0], let function = CollectionFunction(rawValue: name) {
      return function.fold(items)
    }
    if name == QuerySubscript.indexFunction, values.count == 2 {
      return QuerySubscript.element(of: values[0], at: .index(.constant(values[1])), index: values[1])
    }
    if values.count == 1, let symbolic = QuerySubscript.symbolicFunctions[name] {
      return QuerySubscript.element(of: values[0], at: symbolic)
    }
    switch (name, values.count) {
    case (_, 1) where stringFunctions.contains(name):
      guard case .string(let s) = values[0] else { return .null }
      return applyString(name, s).map(Value.string) ?? .null
    case ("abs:", 1):
      if let i = integer(values[0]) { return i == .min ? .double(-Double(i)) : .int(Swift.abs(i)) }
      return finite(values[0].numericValue.map { Swift.abs($0) })
    case (_, 1) where unaryNumericFunctions.contains(name):
      guard let x = values[0].numericValue else { return .null }
      switch name {
      case "sqrt:": return finite(x.squareRoot())
      case "log:": return finite(log10(x))
      case "ln:": return finite(Foundation.log(x))
      case "exp:": return finite(Foundation.exp(x))
      case "floor:": return finite(x.rounded(.down))
      case "ceiling:": return finite(x.rounded(.up))
      default: return finite(x.rounded(.towardZero))
      }
    case ("divide:by:", 2):
      guard let a = values[0].numericValue, let b = values[1].numericValue, b != 0 else { return .null }
      return finite(a / b)
    case ("modulus:by:", 2):
      if let a = integer(values[0]), let b = integer(values[1]) {
        guard b != 0 else { return .null }
        return b == -1 ? .int(0) : .int(a % b)
      }
      guard let a = values[0].numericValue, let b = values[1].numericValue, b != 0 else { return .null }
      return finite(fmod(a, b))
    case ("raise:toPower:", 2):
      guard let a = values[0].numericValue, let b = values[1].numericValue else { return .null }
      return finite(pow(a, b))
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

  static func integer(_ value: Value) -> Int64? {
    switch value {
    case .int(let i): i
    case .bool(let b): b ? 1 : 0
    default: nil
    }
  }

  private static func finite(_ x: Double?) -> Value {
    guard let x, x.isFinite else { return .null }
    return .double(x)
  }
}

/// A function that folds a collection into one value: `sum:`, `count:`, `min:`, `max:`, `average:`,
/// `median:`, `mode:` and `stddev:` — over a to-many key path (`median:(films.rating)`), a literal
/// collection (`max:({rating, score})`) or constants. The key-path collection operators `@sum`, `@avg`,
/// `@min`, `@max` are the same folds.
///
/// nil elements are skipped. Over no elements `sum:` and `count:` are 0 and the others nil.
///
/// ```swift
/// CollectionFunction.median.fold([.int(1), .int(9), .int(3)])       // .double(3)
/// CollectionFunction.stddev.fold([.int(2), .int(4)])                // .double(1)
/// ```
public enum CollectionFunction: String, Sendable, Hashable, CaseIterable {
  /// `sum:`: the total of the numbers (0 over no elements).
  case sum = "sum:"
  /// `count:`: how many elements are not nil.
  case count = "count:"
  /// `min:`: the smallest element.
  case min = "min:"
  /// `max:`: the largest element.
  case max = "max:"
  /// `average:`: the arithmetic mean.
  case average = "average:"
  /// `median:`: the middle element once sorted (the mean of the two middle ones for an even count).
  case median = "median:"
  /// `mode:`: the most frequent element.
  case mode = "mode:"
  /// `stddev:`: the population standard deviation.
  case stddev = "stddev:"

  /// Whether the function only takes numbers (`min:`, `max:`, `mode:` and `count:` also take strings and dates).
  public var needsNumbers: Bool {
    switch self {
    case .sum, .average, .median, .stddev: true
    case .count, .min, .max, .mode: false
    }
  }

  /// The fold of `values`:
  /// - `sum:` of integers is an integer (a double when it overflows), otherwise the `Double` sum in
  ///   element order; `average:` is that `Double` sum divided by the count;
  /// - `min:`/`max:` order values as comparisons do;
  /// - `median:` is the middle value of the sorted numbers, or the mean of the two middle ones, as a `Double`;
  /// - `mode:` is the most frequent value; among equally frequent values, the smallest (Core Data returns
  ///   all of them as an array, which no comparison can use);
  /// - `stddev:` is the population standard deviation (`sqrt(Σ(x - mean)² / n)`), as NSExpression computes it.
  public func fold(_ values: [Value]) -> Value {
    let values = values.filter { !$0.isNull }
    switch self {
    case .count:
      return .int(Int64(values.count))
    case .sum:
      var total: Int64 = 0
      for value in values {
        guard let i = ExpressionFunctions.integer(value) else { return .double(Self.doubleSum(values)) }
        let (sum, overflow) = total.addingReportingOverflow(i)
        if overflow { return .double(Self.doubleSum(values)) }
        total = sum
      }
      return .int(total)
    case .average:
      guard !values.isEmpty else { return .null }
      return .double(Self.doubleSum(values) / Double(values.count))
    case .min, .max:
      var best: Value?
      for value in values {
        guard let current = best else {
          best = value
          continue
        }
        guard let order = ValueComparison.compare(value, current) else { continue }
        if (self == .min && order < 0) || (self == .max && order > 0) { best = value }
      }
      return best ?? .null
    case .median:
      let numbers = values.compactMap(\.numericValue).filter { !$0.isNaN }.sorted()
      guard !numbers.isEmpty else { return .null }
      let middle = numbers.count / 2
      return .double(numbers.count % 2 == 1 ? numbers[middle] : (numbers[middle - 1] + numbers[middle]) / 2)
    case .mode:
      let sorted = values.sorted { (ValueComparison.compare($0, $1) ?? 0) < 0 }
      var best: Value = .null
      var bestCount = 0
      var index = 0
      while index < sorted.count {
        var end = index + 1
        while end < sorted.count, ValueComparison.compare(sorted[index], sorted[end]) == 0 { end += 1 }
        if end - index > bestCount {
          best = sorted[index]
          bestCount = end - index
        }
        index = end
      }
      return best
    case .stddev:
      let numbers = values.compactMap(\.numericValue)
      guard !numbers.isEmpty else { return .null }
      let mean = numbers.reduce(0, +) / Double(numbers.count)
      let variance = numbers.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(numbers.count)
      return .double(variance.squareRoot())
    }
  }

  /// The kind of value the fold yields for elements of `element` kind.
  func resultKind(_ element: ResolvedKeyPath.ValueKind?) -> ResolvedKeyPath.ValueKind? {
    switch self {
    case .count: return .count
    case .average, .median, .stddev: return .attribute(.double)
    case .min, .max, .mode: return element
    case .sum:
      guard case .attribute(let type)? = element, type == .double || type == .float else { return .attribute(.int64) }
      return .attribute(.double)
    }
  }

  private static func doubleSum(_ values: [Value]) -> Double {
    values.reduce(0.0) { $0 + ($1.numericValue ?? 0) }
  }
}
