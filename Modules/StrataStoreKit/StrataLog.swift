import Foundation
package import Logging

/// Strata's diagnostic logging, switched on as Core Data's `-com.apple.CoreData.SQLDebug` is: the
/// environment variable `STRATA_SQL_DEBUG` (1 to 3) makes each store log every statement or plan it runs
/// and each context its fetches and fired faults, through `swift-log` (so an app's own log handler
/// receives them; without one they go to standard error).
///
/// - 1: each statement (SQLite: its SQL; LMDB: the index or scan a fetch chose) and each context fetch
///   with its object count;
/// - 2: also bound values and durations, and every fault a context fires;
/// - 3: also the rows each statement returned.
///
/// ```sh
/// STRATA_SQL_DEBUG=2 fave-flicks list
/// ```
///
/// When the variable is unset every check is one comparison of a constant: nothing is formatted.
package enum StrataLog {
  /// The level from `STRATA_SQL_DEBUG`: 0 (off) to 3.
  package static let level: Int = {
    guard let text = ProcessInfo.processInfo.environment["STRATA_SQL_DEBUG"], let value = Int(text) else { return 0 }
    return min(max(value, 0), 3)
  }()

  /// A logger named `label` that shows Strata's debug messages when ``level`` is above 0.
  package static func logger(_ label: String) -> Logger {
    var logger = Logger(label: label)
    if level > 0 { logger.logLevel = .debug }
    return logger
  }

  /// Milliseconds since `start`, with two decimals, for durations in messages.
  package static func milliseconds(since start: ContinuousClock.Instant) -> String {
    let elapsed = ContinuousClock.now - start
    let (seconds, attoseconds) = elapsed.components
    return String(format: "%.2f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
  }
}

/// What a fetch compiles to and how the backend would run it, found without running it (`strata fetch
/// --explain`): the query as the engine receives it, and the engine's plan, one step per line.
///
/// ```swift
/// let plan = try store.explain(FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "year > 1990")))
/// print(plan.query); plan.steps.forEach { print($0) }
/// ```
public struct QueryPlan: Sendable, Hashable, Codable {
  /// The query the fetch compiles to (SQL with its bound values listed, or the backend's own form).
  public var query: String
  /// The engine's plan: `EXPLAIN QUERY PLAN`'s lines on SQLite, the index or scan on LMDB.
  public var steps: [String]

  /// A plan of `query` carried out in `steps`.
  public init(query: String, steps: [String]) {
    self.query = query
    self.steps = steps
  }
}
