import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// A dictionary fetch as one SQL query: columns, folds and groups are computed by the server; only a
  /// having predicate and distinct rows are applied to the (few, small) result rows afterwards.
  ///
  /// ```swift
  /// var request = FetchDescription(entityName: "Venue", resultType: .dictionaries)
  /// request.propertiesToFetch = [.expression(name: "deals", expression: try QueryExpression(format: "sum:(specialCount)"), resultType: .int64)]
  /// let rows = try store.fetch(request, generation: nil)
  /// ```
  func fetchDictionaries(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let plan = try DictionaryFetch(request, model: model)
    let compiled = try PostgresQueryCompiler.compileDictionary(request, plan, schema: schema, storeIdentifier: identifier)
    var sql = compiled.selectFrom
    if !compiled.groupBy.isEmpty {
      sql =
        sql + Fragment(" GROUP BY " + compiled.groupBy.map(\.sql).joined(separator: ", "), compiled.groupBy.flatMap(\.bindings))
    }
    if !compiled.query.orderBy.isEmpty {
      sql.sql += " ORDER BY " + compiled.query.orderBy.joined(separator: ", ")
      // Grouped order terms repeat the group-by SQL and its bindings.
      if !compiled.groupBy.isEmpty && request.sortDescriptors.isEmpty {
        sql.bindings += compiled.groupBy.flatMap(\.bindings)
      }
    }
    if plan.pagesInSQL {
      if let limit = request.effectiveLimit { sql = sql + Fragment(" LIMIT ?", [.int(Int64(limit))]) }
      if request.fetchOffset > 0 { sql = sql + Fragment(" OFFSET ?", [.int(Int64(request.fetchOffset))]) }
    }
    let identifier = self.identifier
    let entityName = plan.entity.name
    let columns = compiled.columns
    let rows = try read(generation: generation) { connection -> [[String: Value]] in
      let result = try connection.query(sql.numbered(), sql.bindings)
      var rows: [[String: Value]] = []
      for r in 0..<result.count {
        var row: [String: Value] = [:]
        for (index, column) in columns.enumerated() {
          let c = Int32(index)
          let value: Value
          switch column.decoding {
          case .attribute(let type):
            value = try result.value(r, c, as: type, entity: entityName, key: column.name)
          case .objectID(let entity):
            value =
              result.isNull(r, c)
              ? .null : .objectID(ObjectID(entityName: entity, storeIdentifier: identifier, primaryKey: result.int64(r, c)))
          case .computed:
            value = result.anyValue(r, c)
          }
          let converted = column.resultType.map { DictionaryFetch.converted(value, to: $0) } ?? value
          if !converted.isNull { row[column.name] = converted }
        }
        rows.append(row)
      }
      return rows
    }
    return try plan.finish(rows, request)
  }
}
