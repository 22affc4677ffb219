import Foundation
import StrataStoreKit

extension SQLSaveOperation {
  /// Applies the change set inside the save's transaction: checks, deletes, the backend's writes of
  /// objects, patched references, links, ordered lists, cleared references, derived attributes, then the
  /// result, the change announcement and the history transaction.
  package mutating func apply() throws -> (SaveResult, StoreChange) {
    try checkChangeSet()
    try checkVersions()
    var derived = DerivedRecomputation(model: model, changes: changes)
    try derived.noteRelatedObjects(before: transactionSource)
    let deleted = try deleteRows()
    let storeIdentifier = self.storeIdentifier
    let deletedIDs = Set(
      deleted.flatMap { entity, keys in
        let template = ObjectID(entityName: entity, storeIdentifier: storeIdentifier, primaryKey: 0)
        return keys.map { template.withPrimaryKey($0) }
      })
    try writeObjects(excluding: deletedIDs)
    try applyPatches()
    for link in changes.linkChanges { try apply(link) }
    for list in changes.orderedLists { try writePositions(list) }
    let cleared = try clearReferences(to: deleted)
    let recomputed = try writeDerivedAttributes(&derived)
    try checkConstraints(recomputed: recomputed)
    var (result, change) = try results(deleted: deletedIDs, cleared: cleared, recomputed: recomputed)
    derived.report(recomputed, into: &result, change: &change)
    if let history {
      let token = try history.record(
        HistoryLog.changes(of: change, changeSet: changes, tombstones: tombstones, recomputed: recomputed, model: model),
        on: connection, author: changes.author, contextName: changes.contextName)
      result.historyToken = token
      change.historyToken = token
    }
    return (result, change)
  }

  /// Fills the to-one columns whose targets were inserted after their objects.
  private func applyPatches() throws {
    let sets: (String, String) -> String = { table, column in
      "UPDATE \(table) SET \(SQLLayout.quote(column)) = \(Schema.placeholder(1)) WHERE \"_pk\" = \(Schema.placeholder(2))"
    }
    var refused: [ObjectChange] = []
    for patch in patches {
      guard let target = permanentIDs[patch.target]?.primaryKey else { continue }
      do {
        try connection.run(sets(patch.table, patch.column), [Schema.encode(.int(target)), Schema.encode(.int(patch.pk))])
      } catch let error where Connection.isUniqueViolation(error) {
        refused.append(patch.change)
      }
    }
    if !refused.isEmpty { throw try constraintConflict(refused) }
  }

  /// Adds or removes one join-table row; a link to an object that is not stored is dropped, as deleting
  /// an object drops its links.
  private func apply(_ link: LinkChange) throws {
    guard let row = try linkRow(link) else { return }
    let p = Schema.placeholder
    if link.isInsertion {
      try connection.run(
        "INSERT INTO \(schema.qualify(row.table)) (\"source\", \"target\") SELECT \(p(1)), \(p(2)) "
          + "WHERE EXISTS (SELECT 1 FROM \(schema.qualify(row.sourceEntity)) WHERE \"_pk\" = \(p(3))) "
          + "AND EXISTS (SELECT 1 FROM \(schema.qualify(row.destination)) WHERE \"_pk\" = \(p(4))) ON CONFLICT DO NOTHING",
        [row.source, row.target, row.sourceKey, row.destinationKey].map { Schema.encode(.int($0)) })
    } else {
      try connection.run(
        "DELETE FROM \(schema.qualify(row.table)) WHERE \"source\" = \(p(1)) AND \"target\" = \(p(2))",
        [Schema.encode(.int(row.source)), Schema.encode(.int(row.target))])
    }
  }

  /// Sets every to-one reference to a deleted object to nil (and, where the database does not, removes
  /// the deleted objects' join-table rows). Returns the `entity/pk/relationship` of each cleared reference.
  private func clearReferences(to deleted: [String: [Int64]]) throws -> Set<String> {
    guard !deleted.isEmpty else { return [] }
    var cleared = Set<String>()
    let model = self.model
    // A reference to a parent entity may name an object of any of its sub-entities.
    var deleted = deleted
    for (entityName, keys) in deleted {
      var ancestor = model.inheritance.parent(of: entityName)
      while let parent = ancestor {
        deleted[parent, default: []] += keys
        ancestor = model.inheritance.parent(of: parent)
      }
    }
    for entity in model.entities {
      guard let table = schema.tables[entity.name] else { continue }
      // An inherited relationship's column is cleared once, by the entity that declares it.
      for rel in entity.toOneRelationships where model.declaringEntity(of: rel.name, in: entity.name) == entity.name {
        guard let keys = deleted[rel.destination], !keys.isEmpty else { continue }
        for (row, owner) in try clearColumn(rel.name, of: table, pointingAt: keys) {
          cleared.insert("\(owner)/\(row)/\(rel.name)")
        }
      }
    }
    guard Self.deletesJoinRows else { return cleared }
    for join in schema.joinTables {
      for (column, entity) in [("source", join.sourceEntity), ("target", join.targetEntity)] {
        for pk in deleted[entity] ?? [] {
          try connection.run(
            "DELETE FROM \(schema.qualify(join.name)) WHERE \"\(column)\" = \(Schema.placeholder(1))",
            [Schema.encode(.int(pk))])
        }
      }
    }
    return cleared
  }

  /// Computes the derived attributes the save changes (`DerivedRecomputation`, after every write) and
  /// writes them with one `UPDATE … SET <derived columns>` per object, leaving `_version` alone.
  /// - Returns: the recomputed snapshots, values in their stored form.
  private func writeDerivedAttributes(_ derived: inout DerivedRecomputation) throws -> [Snapshot] {
    guard derived.isNeeded else { return [] }
    var recomputed = try derived.recompute(permanentIDs: permanentIDs, source: transactionSource)
    var statements: [String: (sql: String, indices: [Int])] = [:]
    for (position, snapshot) in recomputed.enumerated() {
      let table = try schema.table(snapshot.objectID.entityName)
      guard let pk = snapshot.objectID.primaryKey else { continue }
      let statement = statements[table.name] ?? Self.derivedUpdate(table)
      statements[table.name] = statement
      guard !statement.indices.isEmpty else { continue }
      var bindings: [Schema.Binding] = []
      for index in statement.indices {
        let attribute = table.entity.attributes[index]
        let stored = try Schema.storedForm(
          snapshot.attributes[index], as: attribute.type, entity: table.name, key: attribute.name)
        recomputed[position].attributes[index] = stored
        bindings.append(try Schema.encode(stored, as: attribute.type, entity: table.name, key: attribute.name))
      }
      do {
        try connection.run(statement.sql, bindings + [Schema.encode(.int(pk))])
      } catch let error where Connection.isUniqueViolation(error) {
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
  private static func derivedUpdate(_ table: Table) -> (sql: String, indices: [Int]) {
    let indices = table.storedAttributes.filter { table.entity.attributes[$0].derivation != nil }
    let sets = indices.enumerated().map { position, index in
      "\(SQLLayout.quote(table.entity.attributes[index].name)) = \(Schema.placeholder(position + 1))"
    }
    return (
      "UPDATE \(table.writtenSQLName) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = \(Schema.placeholder(indices.count + 1))",
      indices
    )
  }
}
