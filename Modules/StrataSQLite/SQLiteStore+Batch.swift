import Foundation
import StrataCore

extension SQLiteStore {
  /// Runs a batch request. A batch update whose values are constants or expressions of the object's own
  /// attributes runs as one SQL statement — `UPDATE … SET col = CAST(expr AS …), _version = _version + 1
  /// WHERE _pk IN (SELECT … WHERE <predicate>) RETURNING …` — and the returned values are checked
  /// (ranges, non-optional attributes) before the transaction commits. Everything else, and an update
  /// that clashes with a uniqueness constraint (rolled back, then reported in full), runs through
  /// ``BatchExecution``, with the same answers.
  ///
  /// ```swift
  /// let result = try store.execute(.update(
  ///   entityName: "Venue", predicate: nil, propertiesToUpdate: ["specialCount": try QueryExpression(format: "specialCount + 1")]))
  /// ```
  public func execute(_ request: BatchRequest) throws -> BatchResult {
    guard case .update(let entityName, let predicate, let properties) = request,
      let update = try? nativeUpdate(entityName, predicate, properties)
    else { return try BatchExecution(store: self).execute(request) }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    let identifier = self.identifier
    let broadcaster = self.broadcaster
    let outcome: BatchResult? = try write { connection -> BatchResult? in
      try connection.execute("BEGIN IMMEDIATE")
      do {
        // The values are read first and checked once the statement is done: a statement still running
        // would keep ROLLBACK from undoing it.
        let rows = try connection.query(update.sql.sql, update.sql.bindings) { statement -> (Int64, [SQLValue]) in
          (statement.int64(0), update.attributes.indices.map { statement.value(at: Int32($0 + 1)) })
        }
        var ids: [ObjectID] = []
        ids.reserveCapacity(rows.count)
        for (pk, stored) in rows {
          let id = ObjectID(entityName: entityName, storeIdentifier: identifier, primaryKey: pk)
          for (attribute, storedValue) in zip(update.attributes, stored) {
            let value = try SQLiteSchema.decode(storedValue, as: attribute.type, entity: entityName, key: attribute.name)
            _ = try BatchExecution<SQLiteStore>.assignable(value, to: attribute, of: entityName, object: id)
          }
          ids.append(id)
        }
        try connection.execute("COMMIT")
        broadcaster.yield(StoreChange(storeIdentifier: identifier, inserted: [], updated: ids, deleted: []))
        return BatchResult(count: ids.count, objectIDs: ids)
      } catch let error as SQLiteError where error.code == 19 {
        connection.rollback()
        return nil
      } catch {
        connection.rollback()
        throw error
      }
    }
    return try outcome ?? BatchExecution(store: self).execute(request)
  }

  /// The SQL of an update the store can run as one statement, or an error when it cannot (the caller
  /// then runs the general path, which reports problems precisely).
  private func nativeUpdate(_ entityName: String, _ predicate: QueryPredicate?, _ properties: [String: QueryExpression])
    throws -> (sql: Fragment, attributes: [AttributeDescription])
  {
    guard !model.derivedAttributes.isAffected(byUpdating: properties.keys, of: entityName) else {
      throw StoreError(.unsupported, "derived attributes must be recomputed (the general path does)")
    }
    let table = try schema.table(entityName)
    let entity = table.entity
    let query = try SQLiteQueryCompiler.compile(
      FetchDescription(entityName: entityName, predicate: predicate), schema: schema, storeIdentifier: identifier)
    var assignments: [Fragment] = []
    var attributes: [AttributeDescription] = []
    for (key, expression) in properties.sorted(by: { $0.key < $1.key }) {
      guard let attribute = entity.attributes.first(where: { $0.name == key }), !attribute.isTransient else {
        throw StoreError(.unsupported, "not an attribute")
      }
      let (checked, kind) = try QueryValidator.checkExpression(expression, entity: entity, model: model)
      guard !checked.keyPaths.contains(where: { $0.contains(".") }) else {
        throw StoreError(.unsupported, "reads another object")
      }
      let value: Fragment
      if case .constant(let constant) = checked {
        value = Fragment("?", [try SQLiteSchema.encode(constant, as: attribute.type, entity: entityName, key: key)])
      } else {
        let sql = try SQLiteQueryCompiler.compileValue(checked, schema: schema, storeIdentifier: identifier, root: entity)
        switch (attribute.type, kind) {
        case (.int16, let kind?), (.int32, let kind?), (.int64, let kind?):
          guard kind.isNumber else { throw StoreError(.unsupported, "not a number") }
          value = Fragment("CAST(") + sql + Fragment(" AS INTEGER)")
        case (.double, let kind?), (.float, let kind?):
          guard kind.isNumber else { throw StoreError(.unsupported, "not a number") }
          value = Fragment("CAST(") + sql + Fragment(" AS REAL)")
        case (.string, .attribute(.string)?):
          value = sql
        default:
          throw StoreError(.unsupported, "needs a conversion")
        }
      }
      assignments.append(Fragment("\(quote(attribute.name)) = ") + value)
      attributes.append(attribute)
    }
    guard !assignments.isEmpty else { throw StoreError(.unsupported, "nothing to set") }
    var sql = Fragment("UPDATE \(quote(table.name)) AS t0 SET ")
    for assignment in assignments { sql = sql + assignment + Fragment(", ") }
    sql = sql + Fragment("\"_version\" = t0.\"_version\" + 1 WHERE t0.\"_pk\" IN (SELECT t0.\"_pk\" ") + query.fromClause
      + Fragment(") RETURNING \"_pk\"" + attributes.map { ", " + quote($0.name) }.joined())
    return (sql, attributes)
  }
}

extension ResolvedKeyPath.ValueKind {
  /// Whether values of this kind are numbers (integers, floating point, booleans, counts).
  var isNumber: Bool {
    switch self {
    case .count: true
    case .attribute(let type): type.isNumeric && type != .decimal || type == .bool
    case .objectID: false
    }
  }
}
