import Foundation
import StrataSQL
import StrataStoreKit

extension SaveOperation {
  /// Computes the derived attributes the save changes (``DerivedRecomputation``, after every write) and
  /// writes them with one `UPDATE … SET <derived columns>` per object, leaving `_version` alone.
  /// - Returns: the recomputed snapshots, values in their stored form.
  func writeDerivedAttributes(_ derived: inout DerivedRecomputation) throws -> [Snapshot] {
    guard derived.isNeeded else { return [] }
    var recomputed = try derived.recompute(permanentIDs: permanentIDs, source: transactionSource)
    for (position, snapshot) in recomputed.enumerated() {
      let table = try schema.table(snapshot.objectID.entityName)
      guard let pk = snapshot.objectID.primaryKey else { continue }
      let indices = table.storedAttributes.filter { table.entity.attributes[$0].derivation != nil }
      guard !indices.isEmpty else { continue }
      var bindings: [PGParameter] = []
      var sets: [String] = []
      for index in indices {
        let attribute = table.entity.attributes[index]
        let stored = try PostgresSchema.storedForm(
          snapshot.attributes[index], as: attribute.type, entity: table.name, key: attribute.name)
        recomputed[position].attributes[index] = stored
        bindings.append(try PostgresSchema.encode(stored, as: attribute.type, entity: table.name, key: attribute.name))
        sets.append("\(quoteIdentifier(attribute.name)) = $\(bindings.count)")
      }
      try connection.run(
        "UPDATE \(table.qualified) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = $\(bindings.count + 1)",
        bindings + [.int(pk)])
    }
    return recomputed
  }
}
