import Foundation
import StrataSQL
import StrataStoreKit

/// Reads objects and relationships through one connection for the shared evaluator, inside the
/// connection's current transaction: a save sees its own writes before it commits.
struct SQLiteTransactionSource: EvaluationSource {
  let connection: SQLiteConnection
  let schema: SQLiteSchema
  let storeIdentifier: String

  /// The row of `id` as the transaction sees it; `nil` for temporary IDs, other stores' IDs and missing rows.
  func snapshot(for id: ObjectID) throws -> Snapshot? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey, let table = schema.tables[id.entityName] else {
      return nil
    }
    return try connection.query(table.selectByKeySQL, [.integer(pk)]) {
      try $0.snapshot(table, storeIdentifier: storeIdentifier)
    }.first
  }

  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return [] }
    return try connection.query(schema.relatedKeysSQL(id.entityName, relationship), [.integer(pk)]) {
      ObjectID(entityName: relationship.destination, storeIdentifier: storeIdentifier, primaryKey: $0.int64(0))
    }
  }
}
