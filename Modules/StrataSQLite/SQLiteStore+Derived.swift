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
    var statements: [String: (sql: String, indices: [Int])] = [:]
    for (position, snapshot) in recomputed.enumerated() {
      let table = try schema.table(snapshot.objectID.entityName)
      guard let pk = snapshot.objectID.primaryKey else { continue }
      let statement = statements[table.name] ?? Self.derivedUpdate(table)
      statements[table.name] = statement
      var bindings: [SQLValue] = []
      for index in statement.indices {
        let attribute = table.entity.attributes[index]
        let stored = try SQLiteSchema.storedForm(
          snapshot.attributes[index], as: attribute.type, entity: table.name, key: attribute.name)
        recomputed[position].attributes[index] = stored
        bindings.append(try SQLiteSchema.encode(stored, as: attribute.type, entity: table.name, key: attribute.name))
      }
      do {
        try connection.run(statement.sql, bindings + [.integer(pk)])
      } catch let error as SQLiteError where error.isUniqueViolation {
        // A derived value declared unique clashed: reported like a clash of given values, in the IDs
        // the context knows.
        let known = permanentIDs.first { $0.value == snapshot.objectID && $0.key.isTemporary }?.key ?? snapshot.objectID
        throw try constraintConflict([
          ObjectChange(objectID: known, attributes: recomputed[position].attributes, toOne: snapshot.toOne)
        ])
      }
    }
    return recomputed
  }

  /// `UPDATE` of the derived columns of one row of `table`, and the attributes it binds in order.
  private static func derivedUpdate(_ table: SQLiteSchema.Table) -> (sql: String, indices: [Int]) {
    let indices = table.storedAttributes.filter { table.entity.attributes[$0].derivation != nil }
    let sets = indices.map { "\(quote(table.entity.attributes[$0].name)) = ?" }.joined(separator: ", ")
    return ("UPDATE \(quote(table.storageName)) SET \(sets) WHERE \"_pk\" = ?", indices)
  }
}
