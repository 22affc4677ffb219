import CLMDB
import Foundation
import StrataStoreKit

/// What the store's reads and writes need besides a transaction: the schema (with its model and
/// database handles), the store's identifier and liblmdb's key limit.
///
/// Every read and write is written once against a scope and a transaction: ``LMDBStore`` runs them in
/// the transactions it begins, and the store a migration hands its custom stages (``LMDBBoundStore``)
/// in the migration's own write transaction.
struct LMDBScope: Sendable {
  let schema: LMDBSchema
  let storeIdentifier: String
  let maxKeySize: Int

  var model: ObjectModel { schema.model }

  func reader(_ txn: LMDBTransaction) -> LMDBReader {
    LMDBReader(txn: txn, schema: schema, storeIdentifier: storeIdentifier)
  }

  /// The snapshots of the objects that exist among `ids` (temporary IDs and other stores' IDs skipped).
  func snapshots(for ids: [ObjectID], in txn: LMDBTransaction) throws -> [Snapshot] {
    let reader = reader(txn)
    var result: [Snapshot] = []
    result.reserveCapacity(ids.count)
    for id in ids {
      guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey, let table = schema.tables[id.entityName] else {
        continue
      }
      if let snapshot = try reader.record(table, pk) { result.append(snapshot) }
    }
    return result
  }

  /// The relationship `name` of `id`'s entity.
  /// - Throws: `.notFound` for an unknown entity or relationship.
  func relationship(_ name: String, of id: ObjectID) throws -> RelationshipDescription {
    guard let entity = model.entity(named: id.entityName) else {
      throw StoreError(.notFound, "\(id) names unknown entity '\(id.entityName)'", entity: id.entityName)
    }
    guard let relationship = entity.relationship(named: name) else {
      throw StoreError(.notFound, "\(entity.name) has no relationship '\(name)'", entity: entity.name, key: name)
    }
    return relationship
  }
}
