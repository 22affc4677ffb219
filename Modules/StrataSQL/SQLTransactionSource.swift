import Foundation
import StrataStoreKit

/// Reads objects and relationships through a save's connection for the shared evaluator, inside the
/// save's open transaction: a save sees its own writes before it commits (``DerivedRecomputation``).
package struct SQLTransactionSource<Operation: SQLSaveOperation>: EvaluationSource {
  let operation: Operation

  /// The row of `id` as the transaction sees it; `nil` for temporary IDs, other stores' IDs and missing rows.
  package func snapshot(for id: ObjectID) throws -> Snapshot? {
    guard id.storeIdentifier == operation.storeIdentifier, let pk = id.primaryKey,
      let table = operation.schema.tables[id.entityName]
    else { return nil }
    return try operation.firstSnapshot(table.selectByKeySQL, [Operation.Schema.encode(.int(pk))], table)
  }

  package func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    guard id.storeIdentifier == operation.storeIdentifier, let pk = id.primaryKey else { return [] }
    let sql = operation.schema.relatedKeysSQL(id.entityName, relationship)
    // The targets' entity and store interned once, not once per target.
    let template = ObjectID(entityName: relationship.destination, storeIdentifier: operation.storeIdentifier, primaryKey: 0)
    return try operation.connection.query(sql, [Operation.Schema.encode(.int(pk))]) { $0.int64(0) }.map {
      template.withPrimaryKey($0)
    }
  }
}

extension SQLSaveOperation {
  /// The stored state of `id` as the save's transaction sees it; `nil` when it is not stored.
  package func storedSnapshot(_ table: Table, _ id: ObjectID) throws -> Snapshot? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return nil }
    return try firstSnapshot(table.selectByKeySQL, [Schema.encode(.int(pk))], table)
  }

  /// A reader of the store as this save's transaction sees it.
  package var transactionSource: SQLTransactionSource<Self> { SQLTransactionSource(operation: self) }
}
