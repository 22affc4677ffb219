import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteStore {
  /// Runs a batch request. A batch insert runs natively when it can (see ``nativeInsert(_:)``). A batch update whose values are constants or expressions of the object's own
  /// attributes runs natively as one statement, `UPDATE … SET col = <value>, _version = _version + 1
  /// WHERE <predicate>` (`WHERE _pk IN (SELECT …)` when the predicate follows a to-one relationship);
  /// SQLite names the rows it updates through an update hook. The values are checked by SQL as they are
  /// written — `NOT NULL` columns refuse nil for non-optional attributes, and an Int16 or Int32 value
  /// outside its range calls `strata_refuse`, which fails the statement — so a value the general path
  /// would refuse never commits. Everything else, and an update that fails a check or a uniqueness
  /// constraint (rolled back, then reported in full), runs through ``BatchExecution``, with the same
  /// answers and errors.
  ///
  /// ```swift
  /// let result = try store.execute(.update(
  ///   entityName: "Venue", predicate: nil, propertiesToUpdate: ["specialCount": try QueryExpression(format: "specialCount + 1")]))
  /// ```
  public func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    let general = BatchExecution(store: self, author: author, contextName: contextName)
    if case .insert(let insert) = request,
      let result = try nativeInsert(insert, author: author, contextName: contextName)
    {
      return result
    }
    guard case .update(let entityName, let predicate, let properties, let resultType) = request,
      let update = try? nativeUpdate(entityName, predicate, properties)
    else { return try general.execute(request) }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    let identifier = self.identifier
    let broadcaster = self.broadcaster
    let history = historyRecorder
    let scope = ObjectID(entityName: entityName, storeIdentifier: identifier, primaryKey: 0)
    let outcome: BatchResult? = try write { connection -> BatchResult? in
      do {
        let (ids, token) = try connection.transaction { () throws -> ([ObjectID], HistoryToken?) in
          // SQLite names the rows as it updates them (an update hook, one call per row).
          var changed = 0
          let keys = try connection.updatedRowIDs {
            changed = try connection.run(update.sql, update.bindings)
          }
          guard changed == keys.count else { throw NativeBatchRefused() }
          var ids: [ObjectID] = []
          ids.reserveCapacity(keys.count)
          for key in keys { ids.append(scope.withPrimaryKey(key)) }
          let token = try history?.record(
            HistoryLog.changes(inserted: [], updated: ids, keys: properties.keys.sorted()), on: connection, author: author,
            contextName: contextName)
          return (ids, token)
        }
        broadcaster.yield(StoreChange(storeIdentifier: identifier, historyToken: token, inserted: [], updated: ids, deleted: []))
        return BatchResult(count: ids.count, objectIDs: ids, historyToken: token).reported(as: resultType)
      } catch is NativeBatchRefused {
        return nil
      } catch let error as SQLiteError where error.code == SQLITE_CONSTRAINT {
        // A value a check refused (`strata_refuse`, NOT NULL) or a uniqueness clash (rolled back): the
        // general path reports it precisely.
        return nil
      }
    }
    return try outcome ?? general.execute(request)
  }

  /// The UPDATE of an update the store can run natively, or an error when it cannot (the caller then runs
  /// the general path, which reports problems precisely).
  private func nativeUpdate(
    _ entityName: String, _ predicate: QueryPredicate?, _ properties: [String: QueryExpression]
  ) throws -> Fragment {
    try SQLiteQueryCompiler.batchUpdate(
      entityName, predicate, properties, schema: schema, storeIdentifier: identifier
    ) { entity, key, expression in
      guard let attribute = entity.attributes.first(where: { $0.name == key }), !attribute.isTransient else {
        throw StoreError(.unsupported, "not an attribute")
      }
      let (checked, kind) = try QueryValidator.checkExpression(expression, entity: entity, model: model)
      guard !checked.keyPaths.contains(where: { $0.contains(".") }) else {
        throw StoreError(.unsupported, "reads another object")
      }
      // What the column's constraint does not check itself (it refuses NULL when the attribute is not
      // optional): a constant is converted (or refused) here, an expression checked as it is written.
      let value: Fragment
      if case .constant(let constant) = checked {
        value = Fragment("?", [try SQLiteSchema.encode(constant, as: attribute.type, entity: entityName, key: key)])
      } else {
        let sql = try SQLiteQueryCompiler.compileValue(checked, schema: schema, storeIdentifier: identifier, root: entity)
        switch (attribute.type, kind) {
        case (.int16, let kind?), (.int32, let kind?):
          guard kind.isNumber else { throw StoreError(.unsupported, "not a number") }
          let range = attribute.type == .int16 ? "\(Int16.min) AND \(Int16.max)" : "\(Int32.min) AND \(Int32.max)"
          let integer = Fragment("CAST(") + sql + Fragment(" AS INTEGER)")
          value =
            Fragment("CASE WHEN ") + integer + Fragment(" BETWEEN \(range) THEN ") + integer
            + Fragment(" ELSE \(SQLiteFunctions.refuseFunction)(") + integer + Fragment(") END")
        case (.int64, let kind?):
          guard kind.isNumber else { throw StoreError(.unsupported, "not a number") }
          // A real beyond Int64's range (an overflow turns integers into reals) would be clamped by CAST.
          value =
            Fragment("CASE WHEN typeof(") + sql + Fragment(") = 'real' AND abs(") + sql
            + Fragment(") >= 9223372036854775808.0 THEN \(SQLiteFunctions.refuseFunction)(") + sql
            + Fragment(") ELSE CAST(") + sql + Fragment(" AS INTEGER) END")
        case (.double, let kind?):
          guard kind.isNumber else { throw StoreError(.unsupported, "not a number") }
          value = Fragment("CAST(") + sql + Fragment(" AS REAL)")
        case (.float, let kind?):
          guard kind.isNumber else { throw StoreError(.unsupported, "not a number") }
          // Rounded to the nearest Float, as every other path stores it; refused when that is infinite.
          value = Fragment("\(SQLiteFunctions.floatFunction)(CAST(") + sql + Fragment(" AS REAL))")
        case (.string, .attribute(.string)?):
          value = sql
        default:
          throw StoreError(.unsupported, "needs a conversion")
        }
      }
      return Fragment("\(quote(attribute.name)) = ") + value
    }
  }
}

/// A native batch update that must run through the general path instead, thrown to roll it back.
private struct NativeBatchRefused: Error {}

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
