import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// Runs a batch request. A batch update that sets attributes to constants runs natively as one
  /// statement in the server, `UPDATE … SET col = $1, …, _version = _version + 1 WHERE <predicate>
  /// RETURNING _pk` (`WHERE _pk IN (SELECT …)` when the predicate follows a to-one relationship), with the
  /// predicate compiled as a fetch's is. The constants are converted to their attributes' types first;
  /// the columns' `NOT NULL` and unique constraints check what is written. A batch delete of an entity
  /// without cascading or denying relationships, in a model without derived attributes, is one
  /// `DELETE … RETURNING`. A batch insert runs natively as described at `nativeInsert`: `COPY` into the
  /// table, or with a uniqueness constraint `COPY` into a temporary table then one `UPDATE … FROM` and
  /// one `INSERT … SELECT` under a table lock. Everything else — expressions, inserts, other deletes, updates that derived
  /// attributes depend on — and an update a constraint refuses
  /// (rolled back, then reported in full) runs through ``BatchExecution``, with the same answers and
  /// errors.
  ///
  /// ```swift
  /// let result = try store.execute(.update(
  ///   entityName: "Venue", predicate: try QueryPredicate(format: "priceInfo.priceCategory == '$'"),
  ///   propertiesToUpdate: ["favorite": .constant(true)], resultType: .objectIDs))
  /// ```
  public func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    let general = BatchExecution(store: self, author: author, contextName: contextName)
    if case .insert(let description) = request {
      // Handler rows are produced once: kept, so the general path can run them when the native one declines.
      let rows = description.materialized()
      if let result = try nativeInsert(rows, author: author, contextName: contextName) { return result }
      return try general.execute(.insert(rows))
    }
    if case .delete(let entityName, let predicate, let resultType) = request,
      let result = try nativeDelete(entityName, predicate, author: author, contextName: contextName)
    {
      return result.reported(as: resultType)
    }
    guard case .update(let entityName, let predicate, let properties, let resultType) = request,
      let update = try? nativeUpdate(entityName, predicate, properties)
    else { return try general.execute(request) }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    let identifier = self.identifier
    let history = historyRecorder
    let keys = properties.keys.sorted()
    let outcome: BatchResult?
    do {
      outcome = try PostgresStoreCore(store: self).commit { connection -> (BatchResult?, StoreChange?) in
        let rows = try connection.query(update.numbered(), update.bindings)
        let ids = (0..<rows.count).map {
          ObjectID(entityName: entityName, storeIdentifier: identifier, primaryKey: rows.int64($0, 0))
        }
        .sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }
        guard !ids.isEmpty else { return (BatchResult(count: 0, objectIDs: []), nil) }
        let token = try history?.record(
          HistoryLog.changes(inserted: [], updated: ids, keys: keys), on: connection, author: author,
          contextName: contextName)
        return (
          BatchResult(count: ids.count, objectIDs: ids, historyToken: token),
          StoreChange(storeIdentifier: identifier, historyToken: token, inserted: [], updated: ids, deleted: [])
        )
      }
    } catch let error as StoreError where error.code == .constraintConflict || error.code == .validation {
      // A uniqueness clash or a refused nil (rolled back): the general path reports it precisely.
      outcome = nil
    }
    guard let outcome else { return try general.execute(request) }
    return outcome.reported(as: resultType)
  }

  /// Runs a batch delete as one `DELETE … WHERE <predicate> RETURNING …` in the server, when nothing but
  /// the rows themselves goes: the entity has no cascade or deny relationships and the model no derived
  /// attributes. References to the deleted objects are cleared (join-table rows go by `ON DELETE
  /// CASCADE`) and reported as updates, as a save's are; tombstones are read from the deleted rows.
  /// Returns `nil` for what the general path must run.
  private func nativeDelete(
    _ entityName: String, _ predicate: QueryPredicate?, author: String?, contextName: String?
  ) throws -> BatchResult? {
    let table = try schema.table(entityName)
    guard model.derivedAttributes.isEmpty, !model.inheritance.isInHierarchy(entityName),
      !table.entity.relationships.contains(where: { $0.deleteRule == .cascade || $0.deleteRule == .deny })
    else { return nil }
    let query = try PostgresQueryCompiler.compile(
      FetchDescription(entityName: entityName, predicate: predicate), schema: schema, storeIdentifier: identifier)
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    let tombstones = historyRecorder != nil && HistoryLog.recordsTombstone(entityName, model: model)
    var delete = Fragment("DELETE FROM \(table.qualified) AS t0") + query.rowFilter
    delete.sql += " RETURNING " + (tombstones ? table.selectList(alias: "t0") : "t0.\"_pk\"")
    let (identifier, schema, model) = (self.identifier, self.schema, self.model)
    let history = historyRecorder
    return try PostgresStoreCore(store: self).commit { connection -> (BatchResult, StoreChange?) in
      let rows = try connection.query(delete.numbered(), delete.bindings)
      var keys: [Int64] = []
      var removed: [ObjectID: [String: Value]] = [:]
      for row in 0..<rows.count {
        let key = rows.int64(row, 0)
        keys.append(key)
        if tombstones {
          let snapshot = try rows.snapshot(row, table, storeIdentifier: identifier)
          removed[snapshot.objectID] = HistoryLog.tombstone(of: snapshot, model: model)
        }
      }
      keys.sort()
      let deleted = keys.map { ObjectID(entityName: entityName, storeIdentifier: identifier, primaryKey: $0) }
      guard !deleted.isEmpty else { return (BatchResult(count: 0), nil) }
      var cleared: [ObjectID] = []
      var seen = Set(deleted)
      let list = "{" + keys.map(String.init).joined(separator: ",") + "}"
      for entity in model.entities {
        for relationship in entity.toOneRelationships where relationship.destination == entityName {
          let updated = try connection.query(
            "UPDATE \(schema.qualify(entity.name)) SET \(quoteIdentifier(relationship.name)) = NULL "
              + "WHERE \(quoteIdentifier(relationship.name)) = ANY($1::bigint[]) RETURNING \"_pk\"", [.text(list)])
          for row in 0..<updated.count {
            let id = ObjectID(entityName: entity.name, storeIdentifier: identifier, primaryKey: updated.int64(row, 0))
            if seen.insert(id).inserted { cleared.append(id) }
          }
        }
      }
      var change = StoreChange(storeIdentifier: identifier, inserted: [], updated: cleared, deleted: deleted)
      if let history {
        let changeSet = ChangeSet(
          deleted: deleted.map { ObjectDeletion(objectID: $0) }, author: author, contextName: contextName)
        change.historyToken = try history.record(
          HistoryLog.changes(of: change, changeSet: changeSet, tombstones: removed, recomputed: [], model: model),
          on: connection, author: author, contextName: contextName)
      }
      return (BatchResult(count: deleted.count, objectIDs: deleted, historyToken: change.historyToken), change)
    }
  }

  /// The `UPDATE` of a batch update the store runs natively (constants only), or an error when it cannot
  /// (the caller then runs the general path, which reports problems precisely).
  private func nativeUpdate(
    _ entityName: String, _ predicate: QueryPredicate?, _ properties: [String: QueryExpression]
  ) throws -> Fragment {
    let update = try PostgresQueryCompiler.batchUpdate(
      entityName, predicate, properties, schema: schema, storeIdentifier: identifier
    ) { entity, key, expression in
      guard let attribute = entity.attributes.first(where: { $0.name == key }), attribute.isPersistent,
        attribute.derivation == nil
      else {
        throw StoreError(.unsupported, "not a stored attribute")
      }
      let (checked, _) = try QueryValidator.checkExpression(expression, entity: entity, model: model)
      guard case .constant(let constant) = checked, !(constant.isNull && !attribute.isOptional) else {
        throw StoreError(.unsupported, "not a constant the attribute takes")
      }
      let value = try PostgresSchema.encode(constant, as: attribute.type, entity: entityName, key: key)
      return Fragment("\(quoteIdentifier(attribute.name)) = ?", [value])
    }
    return update + Fragment(" RETURNING t0.\"_pk\"")
  }
}
