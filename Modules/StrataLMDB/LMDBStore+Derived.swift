import Foundation
import StrataStoreKit

extension LMDBSaveOperation {
  /// Computes the derived attributes the save changes (``DerivedRecomputation``, after every write) and
  /// rewrites those records with their indexes, keeping each record's version.
  /// - Returns: the recomputed snapshots.
  mutating func writeDerivedAttributes(_ derived: inout DerivedRecomputation) throws -> [Snapshot] {
    guard derived.isNeeded else { return [] }
    // A fresh reader: its cache starts empty, so it sees every write of the transaction so far.
    let source = LMDBReader(txn: txn, schema: schema, storeIdentifier: storeIdentifier)
    let recomputed = try derived.recompute(permanentIDs: keptPermanentIDs(), source: source)
    for snapshot in recomputed {
      let table = try schema.table(snapshot.objectID.entityName)
      guard let pk = snapshot.objectID.primaryKey, let old = try reader.record(table, pk) else { continue }
      try write(
        table, pk, version: snapshot.version, attributes: snapshot.attributes, toOne: snapshot.toOne, replacing: old,
        flags: 0)
    }
    return recomputed
  }
}
