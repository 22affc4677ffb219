import CLMDB
import Foundation
import StrataStoreKit

extension LMDBSaveOperation {
  /// Checks every uniqueness constraint of the written objects against the state the save produced,
  /// through the constraint's index: each clash is reported once, with both objects (by the IDs the
  /// context knows them by) and both sides' values. Nil values never clash.
  func checkUniqueness(_ written: [ObjectID]) throws {
    var changedByEntity: [String: [Int64]] = [:]
    var entityOrder: [String] = []
    // Written objects come in runs of one entity: its table is looked up once per run.
    var run: (first: ObjectID, hasUniques: Bool)?
    for id in written {
      if run?.first.hasSameEntityAndStore(as: id) != true {
        run = (id, schema.tables[id.entityName]?.uniques.isEmpty == false)
      }
      guard run?.hasUniques == true, let pk = id.primaryKey else { continue }
      if changedByEntity[id.entityName] == nil { entityOrder.append(id.entityName) }
      changedByEntity[id.entityName, default: []].append(pk)
    }
    guard !entityOrder.isEmpty else { return }
    var contextIDs: [ObjectID: ObjectID]?
    func contextID(_ id: ObjectID) -> ObjectID {
      if contextIDs == nil {
        contextIDs = Dictionary(permanentIDs.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
      }
      return contextIDs?[id] ?? id
    }
    var conflicts: [StoreError.Conflict] = []
    for entityName in entityOrder {
      let table = try schema.table(entityName)
      let changed = changedByEntity[entityName] ?? []
      let changedSet = Set(changed)
      for index in table.uniques {
        var reportedPairs = Set<[Int64]>()
        for pk in changed {
          guard let row = try reader.record(table, pk), let key = indexKey(index, table, row) else { continue }
          var others = try txn.primaryKeys(index.dbi, key.bytes).filter { $0 != pk }
          if !key.isExact {
            let full = fullKey(index, table, row)
            others = try others.filter { other in
              try reader.recordInHierarchy(table, other).map { fullKey(index, table, $0) } == full
            }
          }
          guard let other = others.first(where: { !changedSet.contains($0) }) ?? others.first,
            let otherRow = try reader.recordInHierarchy(table, other)
          else { continue }
          if changedSet.contains(other), !reportedPairs.insert([min(pk, other), max(pk, other)]).inserted { continue }
          conflicts.append(
            StoreError.Conflict(
              objectID: contextID(row.objectID), conflictingObjectID: contextID(otherRow.objectID), entity: entityName,
              keys: index.keys, values: index.values(of: row),
              storedValues: index.values(of: otherRow)))
        }
      }
    }
    if let error = StoreError.uniquenessViolation(conflicts) { throw error }
  }

  private func indexKey(_ index: LMDBSchema.Index, _ table: LMDBSchema.Table, _ row: Snapshot) -> IndexKey? {
    schema.indexKey(index, attributes: row.attributes, toOne: row.toOne, maxKeySize: maxKeySize)
  }

  /// The key without liblmdb's length limit: equal exactly when the values are.
  private func fullKey(_ index: LMDBSchema.Index, _ table: LMDBSchema.Table, _ row: Snapshot) -> [UInt8]? {
    schema.indexKey(index, attributes: row.attributes, toOne: row.toOne, maxKeySize: .max)?.bytes
  }

}
