import Foundation
import StrataStoreKit

/// A piece of SQL with `?` placeholders and the values bound to them, in order, in `Dialect`'s bindings.
/// Statements are assembled from fragments with `+`; a dialect whose server numbers its parameters
/// (PostgreSQL's `$1`) numbers them when the statement is complete. The stores never write `?` into SQL
/// any other way (identifiers of a valid model cannot hold one, constants are always bound).
package struct SQLFragment<Dialect: SQLDialect>: Sendable, ExpressibleByStringLiteral {
  package var sql: String
  package var bindings: [Dialect.Schema.Binding]

  package init(_ sql: String, _ bindings: [Dialect.Schema.Binding] = []) {
    self.sql = sql
    self.bindings = bindings
  }

  package init(stringLiteral sql: String) { self.init(sql) }

  package static func + (a: Self, b: Self) -> Self { Self(a.sql + b.sql, a.bindings + b.bindings) }

  /// `parts` joined by `separator`, in parentheses; `empty` when there are none. Past the dialect's
  /// `flatJunctionLimit` parts, a balanced tree of parenthesized groups of that many: SQLite parses
  /// `a AND b AND c …` into a left-deep tree and refuses one deeper than 1,000 levels ("Expression tree is
  /// too large"), so with a limit of 64 a list of any length is a tree of depth 64 × log64(n).
  package static func joined(_ parts: [Self], _ separator: String, empty: String) -> Self {
    guard !parts.isEmpty else { return Self(empty) }
    if parts.count == 1 { return parts[0] }
    var level = parts
    if let limit = Dialect.flatJunctionLimit {
      while level.count > limit {
        level = stride(from: 0, to: level.count, by: limit).map { start in
          flat(Array(level[start..<min(start + limit, level.count)]), separator)
        }
      }
    }
    return flat(level, separator)
  }

  private static func flat(_ parts: [Self], _ separator: String) -> Self {
    if parts.count == 1 { return parts[0] }
    return Self("(" + parts.map(\.sql).joined(separator: " \(separator) ") + ")", parts.flatMap(\.bindings))
  }
}
