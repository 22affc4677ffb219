import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// What a fetch sends the server and how PostgreSQL would run it: the SQL ``fetch(_:generation:)``
  /// runs for `request` (its `ORDER BY`, `LIMIT` and `OFFSET` included), with its bound values listed,
  /// and the lines of the server's own `EXPLAIN` of it. Nothing is fetched.
  ///
  /// ```swift
  /// var request = FetchDescription(entityName: "Fireball", predicate: try QueryPredicate(format: "impactEnergy > 1"))
  /// request.sortDescriptors = [QuerySort("dateTimeStamp", ascending: false)]
  /// request.fetchLimit = 2
  /// let plan = try store.explain(request)
  /// print(plan.query)                    // SELECT … WHERE … ORDER BY … LIMIT $2
  /// plan.steps.forEach { print($0) }     // Limit (cost=…) / -> Sort … / -> Seq Scan on "Fireball" t0 …
  /// ```
  public func explain(_ request: FetchDescription) throws -> QueryPlan {
    let query = try PostgresQueryCompiler.compile(request, schema: schema, storeIdentifier: identifier)
    var paging = Fragment("")
    if let limit = request.effectiveLimit { paging = paging + Fragment(" LIMIT ?", [.int(Int64(limit))]) }
    if request.fetchOffset > 0 { paging = paging + Fragment(" OFFSET ?", [.int(Int64(request.fetchOffset))]) }
    let from = query.fromClause
    let order = Fragment(" ORDER BY " + query.orderBy.joined(separator: ", "))
    let sql: Fragment
    switch request.resultType {
    case .count:
      sql =
        paging.sql.isEmpty
        ? Fragment("SELECT COUNT(*) ") + from
        : Fragment("SELECT COUNT(*) FROM (SELECT t0.\"_pk\" ") + from + paging + Fragment(") AS page")
    case .objectIDs:
      sql = Fragment("SELECT t0.\"_pk\" ") + from + order + paging
    case .snapshots, .dictionaries:
      sql = Fragment("SELECT \(query.table.selectList(alias: "t0")) ") + from + order + paging
    }
    let text = sql.numbered()
    let lines = try read(generation: nil) { connection -> [String] in
      let rows = try connection.query("EXPLAIN " + text, sql.bindings)
      return (0..<rows.count).map { rows.text($0, 0) }
    }
    let values =
      sql.bindings.isEmpty
      ? ""
      : "\n  bound: "
        + sql.bindings.enumerated().map { index, parameter in
          "$\(index + 1) = " + Self.describe(parameter)
        }.joined(separator: ", ")
    return QueryPlan(query: text + values, steps: lines)
  }

  /// A bound value as `explain` lists it.
  private static func describe(_ parameter: PGParameter) -> String {
    switch parameter {
    case .null: "NULL"
    case .text(let text, _): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    case .binary(let bytes, let oid):
      switch (oid, bytes.count) {
      case (PGType.int8, 8): String(bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) })
      case (PGType.float8, 8): "\(Double(bitPattern: bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }))"
      case (PGType.bool, 1): bytes[0] == 0 ? "false" : "true"
      default: "<\(bytes.count) bytes>"
      }
    }
  }
}
