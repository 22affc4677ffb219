import Foundation

/// The limits of the query language, the same on every backend (docs/QUERY-SEMANTICS.md, Limits).
///
/// A predicate or expression past a limit is refused with ``StoreError`` `.invalidQuery` before any
/// backend works on it: the parser checks while it reads a format string, and ``QueryValidator`` checks
/// every tree (however it was built) before its first recursive pass. The checks here walk the tree with
/// an explicit stack, so a tree of any depth is measured without recursion.
///
/// ```swift
/// try QueryLimits.check(predicate)   // throws for SELF.@count.@count… past maxDepth levels
/// ```
public enum QueryLimits {
  /// The deepest nesting accepted. Each `NOT`, `AND`/`OR` group, comparison, function call (arithmetic
  /// operators, `abs:`, `count:`…), `.@` suffix applied to an expression, collection literal `{…}`,
  /// `SUBQUERY` and collection operator in a key path counts one level; so do parentheses in a format
  /// string. A flat `a AND b AND c …` is one level however many terms it has. The value keeps every
  /// recursive pass (parsing, checking, formatting, evaluating, compiling to SQL) within a 512 KB stack in
  /// an unoptimized build, and the SQL within what SQLite's parser accepts (its parser stack holds 100
  /// entries: about 19 nested two-argument function calls).
  public static let maxDepth = 16
  /// The most components a key path may have (`director.films.title` has 3): a key path through
  /// many-to-many relationships compiles to two SQL tables per hop, and SQLite allows 64 tables in one
  /// `SELECT`.
  public static let maxKeyPathComponents = 16
  /// The most constant values one predicate may hold, counting each element of an `IN` or `BETWEEN`
  /// collection. The SQLite store binds each as a parameter and SQLite allows 32,766 in one statement;
  /// this leaves room for a value an expression repeats.
  public static let maxConstants = 10_000
  /// The longest `MATCHES` pattern accepted, in UTF-16 code units (what ICU compiles): a pattern is a
  /// query, not data.
  public static let maxPatternLength = 1_000
  /// The most work one `MATCHES` evaluation (one pattern against one string) may do, in ICU matcher steps.
  /// ICU reports its progress every 10,000 steps, so the count is the same on every run, machine and
  /// backend; a million steps take about 10 ms. A pattern that backtracks catastrophically (`(a+)+$` against
  /// "aaaa…a!") passes it on a string of about 20 characters, where an ordinary pattern needs a few steps
  /// per character of the string.
  public static let maxMatchSteps = 1_000_000

  /// Checks `predicate` against ``maxDepth``, ``maxKeyPathComponents`` and ``maxConstants``.
  /// - Throws: ``StoreError`` `.invalidQuery` naming the limit passed.
  public static func check(_ predicate: QueryPredicate) throws {
    try check([(.predicate(predicate), 0)])
  }

  /// Checks `expression` against ``maxDepth`` and ``maxKeyPathComponents``.
  /// - Throws: ``StoreError`` `.invalidQuery` naming the limit passed.
  public static func check(_ expression: QueryExpression) throws {
    try check([(.expression(expression), 0)])
  }

  /// Checks that `keyPath` has at most ``maxKeyPathComponents`` components.
  /// - Throws: ``StoreError`` `.invalidQuery` naming the key path (shortened).
  public static func checkKeyPath(_ keyPath: String) throws {
    var components = 1
    for character in keyPath.utf8 where character == UInt8(ascii: ".") {
      components += 1
      if components > maxKeyPathComponents { throw keyPathTooLong(keyPath) }
    }
  }

  /// The error for a tree nesting deeper than ``maxDepth``.
  static func tooDeep() -> StoreError {
    StoreError(.invalidQuery, "the predicate nests deeper than \(maxDepth) levels; flatten it or split the fetch")
  }

  static func patternTooLong(_ pattern: String) -> StoreError {
    StoreError(
      .invalidQuery,
      "MATCHES pattern '\(shortened(pattern))' is longer than \(maxPatternLength) UTF-16 code units (the longest a "
        + "pattern may be)", value: .string(pattern))
  }

  static func matchTooLong(_ pattern: String) -> StoreError {
    StoreError(
      .invalidQuery,
      "MATCHES pattern '\(shortened(pattern))' exceeded its limit of \(maxMatchSteps) matching steps on one string "
        + "(it backtracks too much: avoid nested repetition such as (a+)+)", value: .string(pattern))
  }

  static func shortened(_ text: String) -> String {
    text.count > 80 ? String(text.prefix(80)) + "…" : text
  }

  static func keyPathTooLong(_ keyPath: String) -> StoreError {
    let shown = keyPath.count > 80 ? String(keyPath.prefix(80)) + "…" : keyPath
    return StoreError(
      .invalidQuery,
      "the key path '\(shown)' has more than \(maxKeyPathComponents) components (the longest a key path may be)",
      key: shown)
  }

  private enum Node {
    case predicate(QueryPredicate)
    case expression(QueryExpression)
    case value(Value)
  }

  static func tooManyConstants() -> StoreError {
    StoreError(
      .invalidQuery,
      "the predicate holds more than \(maxConstants) constant values; split the fetch or its IN list")
  }

  private static func check(_ start: [(Node, Int)]) throws {
    var pending = start
    var constants = 0
    while let (node, depth) = pending.popLast() {
      guard depth <= maxDepth else { throw tooDeep() }
      let next = depth + 1
      switch node {
      case .predicate(let predicate):
        switch predicate {
        case .constant: break
        case .and(let parts), .or(let parts): pending += parts.map { (.predicate($0), next) }
        case .not(let inner): pending.append((.predicate(inner), next))
        case .comparison(let comparison):
          pending.append((.expression(comparison.left), next))
          pending.append((.expression(comparison.right), next))
        }
      case .expression(let expression):
        switch expression {
        case .constant(let value): pending.append((.value(value), depth))
        case .keyPath(let keyPath):
          try checkKeyPath(keyPath)
          // Each collection operator and each subscript written into the key path (`tags[0]`) is a level.
          let operators =
            keyPath.split(separator: ".").filter { $0.hasPrefix("@") }.count
            + keyPath.utf8.filter { $0 == UInt8(ascii: "[") }.count
          guard depth + operators <= maxDepth else { throw tooDeep() }
        case .variable, .evaluatedObject: break
        case .aggregate(let items): pending += items.map { (.expression($0), next) }
        case .function(_, let arguments): pending += arguments.map { (.expression($0), next) }
        case .subquery(let collection, _, let predicate):
          pending.append((.expression(collection), next))
          pending.append((.predicate(predicate), next))
        }
      case .value(let value):
        constants += 1
        if case .array(let items) = value {
          constants += items.count - 1
          for item in items {
            if case .array = item { pending.append((.value(item), next)) }
          }
        }
        guard constants <= maxConstants else { throw tooManyConstants() }
      }
    }
  }
}
