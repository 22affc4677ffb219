import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteStore {
  /// A dictionary fetch as one SQL query: columns, folds and groups are computed by SQLite; only a
  /// having predicate and distinct rows are applied to the (few, small) result rows afterwards, with
  /// limit and offset after them.
  ///
  /// ```swift
  /// var request = FetchDescription(entityName: "Venue", resultType: .dictionaries)
  /// request.propertiesToFetch = [.expression(name: "deals", expression: try QueryExpression(format: "sum:(specialCount)"), resultType: .int64)]
  /// let rows = try store.fetch(request, generation: nil)   // .dictionaries([["deals": 12]])
  /// ```
  func fetchDictionaries(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let plan = try DictionaryFetch(request, model: model)
    let compiled = try SQLiteQueryCompiler.compileDictionary(request, plan, schema: schema, storeIdentifier: identifier)
    var sql = compiled.selectFrom
    if !compiled.groupBy.isEmpty { sql.sql += " GROUP BY " + compiled.groupBy.map(\.sql).joined(separator: ", ") }
    if !compiled.query.orderBy.isEmpty { sql.sql += " ORDER BY " + compiled.query.orderBy.joined(separator: ", ") }
    if plan.pagesInSQL, request.effectiveLimit != nil || request.fetchOffset > 0 {
      sql =
        sql
        + Fragment(
          " LIMIT ? OFFSET ?", [.integer(Int64(request.effectiveLimit ?? -1)), .integer(Int64(max(request.fetchOffset, 0)))])
    }
    let identifier = self.identifier
    let entityName = plan.entity.name
    let columns = compiled.columns
    let rows = try read(generation: generation) { connection -> [[String: Value]] in
      try connection.query(sql.sql, sql.bindings) { statement in
        var row: [String: Value] = [:]
        for (index, column) in columns.enumerated() {
          let stored = statement.value(at: Int32(index))
          let value: Value
          switch column.decoding {
          case .attribute(let type):
            value = try SQLiteSchema.decode(stored, as: type, entity: entityName, key: column.name)
          case .objectID(let entity):
            guard case .integer(let pk) = stored else {
              value = .null
              break
            }
            value = .objectID(ObjectID(entityName: entity, storeIdentifier: identifier, primaryKey: pk))
          case .computed:
            value = Self.value(stored)
          }
          let converted = column.resultType.map { DictionaryFetch.converted(value, to: $0) } ?? value
          if !converted.isNull { row[column.name] = converted }
        }
        return row
      }
    }
    return try plan.finish(rows, request)
  }

  private static func value(_ stored: SQLValue) -> Value {
    switch stored {
    case .null: .null
    case .integer(let i): .int(i)
    case .real(let d): .double(d)
    case .text(let s): .string(s)
    case .blob(let d): .data(d)
    }
  }
}
