import Foundation
import StrataStoreKit

extension SQLQueryCompiler.Query {
  /// ` WHERE …` choosing the rows the query matches, for an `UPDATE` or `DELETE` of its table aliased
  /// `t0`: the condition itself, or `t0."_pk" IN (SELECT …)` when it needs joins; empty when every row
  /// matches.
  package var rowFilter: SQLFragment<Dialect> {
    if !joins.isEmpty {
      return SQLFragment(" WHERE t0.\"_pk\" IN (SELECT t0.\"_pk\" ") + fromClause + SQLFragment(")")
    }
    if let condition { return SQLFragment(" WHERE ") + condition }
    return ""
  }
}

extension SQLQueryCompiler {
  /// The `UPDATE` of a batch update a store runs in one statement: `UPDATE <table> AS t0 SET <assignments>,
  /// "_version" = t0."_version" + 1 WHERE <the request's rows>`, each property's assignment (`"name" = …`,
  /// in key order) made by `assignment` from the entity, the key and the expression. Refused (the caller
  /// then runs the kit's general path, which reports problems precisely) when a derived attribute would
  /// have to be recomputed, when the entity is in a hierarchy (its rows are of several entities), when
  /// there is nothing to set, or when `assignment` throws.
  package static func batchUpdate(
    _ entityName: String, _ predicate: QueryPredicate?, _ properties: [String: QueryExpression], schema: Schema,
    storeIdentifier: String, assignment: (EntityDescription, String, QueryExpression) throws -> Fragment
  ) throws -> Fragment {
    let model = schema.model
    guard !model.derivedAttributes.isAffected(byUpdating: properties.keys, of: entityName) else {
      throw StoreError(.unsupported, "derived attributes must be recomputed (the general path does)")
    }
    guard !model.inheritance.isInHierarchy(entityName) else {
      throw StoreError(.unsupported, "the rows of a hierarchy are of several entities (the general path names them)")
    }
    guard !properties.isEmpty else { throw StoreError(.unsupported, "nothing to set") }
    let table = try schema.table(entityName)
    let query = try compile(
      FetchDescription(entityName: entityName, predicate: predicate), schema: schema, storeIdentifier: storeIdentifier)
    var update = Fragment("UPDATE \(table.sqlName) AS t0 SET ")
    for (key, expression) in properties.sorted(by: { $0.key < $1.key }) {
      update = update + (try assignment(table.entity, key, expression)) + Fragment(", ")
    }
    return update + Fragment("\"_version\" = t0.\"_version\" + 1") + query.rowFilter
  }
}
