import Foundation
import StrataSQL
import StrataStoreKit

extension SaveOperation {
  /// From how many new objects (without a key yet) a save writes them by `COPY` instead of one `INSERT`
  /// each: below it, the extra round trips of drawing keys and starting a copy cost more than they save.
  static let copyThreshold = 32

  /// Inserts the change set's new objects. Many objects without keys go by `COPY`: their keys are
  /// drawn from each table's identity sequence first (one statement per entity, rising in change-set
  /// order as single inserts would get them), so to-one references between them are written at once,
  /// then each entity's rows go in one `COPY … FROM STDIN`. Objects with a given key, and small saves,
  /// are inserted one statement each.
  mutating func insertAll(_ inserted: [ObjectChange]) throws {
    let fresh = inserted.filter { $0.objectID.primaryKey == nil }
    guard fresh.count >= Self.copyThreshold else {
      for change in inserted { try insert(change) }
      return
    }
    for change in inserted where change.objectID.primaryKey != nil { try insert(change) }
    var byEntity: [String: [ObjectChange]] = [:]
    var order: [String] = []
    for change in fresh {
      let name = change.objectID.entityName
      if byEntity[name] == nil { order.append(name) }
      byEntity[name, default: []].append(change)
    }
    for name in order {
      guard let changes = byEntity[name] else { continue }
      let table = try schema.table(name)
      let sequence = table.qualified.replacingOccurrences(of: "'", with: "''")
      let rows = try connection.query(
        "SELECT nextval(pg_get_serial_sequence('\(sequence)', '_pk')) FROM generate_series(1, $1::bigint)",
        [.int(Int64(changes.count))])
      let keys = (0..<rows.count).map { rows.int64($0, 0) }.sorted()
      for (change, key) in zip(changes, keys) {
        let permanent = ObjectID(entityName: name, storeIdentifier: storeIdentifier, primaryKey: key)
        state.permanentIDs[change.objectID] = permanent
        state.versions[permanent] = 1
      }
    }
    for name in order {
      guard let changes = byEntity[name] else { continue }
      let table = try schema.table(name)
      var data: [UInt8] = []
      data.reserveCapacity(changes.count * (8 + 12 * table.dataColumns.count))
      for change in changes { try appendCopyRow(change, table, to: &data) }
      let columns = (["_pk"] + table.dataColumns).map(quoteIdentifier).joined(separator: ", ")
      try connection.copyIn("COPY \(table.qualified) (\(columns)) FROM STDIN", data)
    }
  }

  /// One new object as a line of text COPY: its key, each stored attribute, each to-one target.
  private mutating func appendCopyRow(_ change: ObjectChange, _ table: PostgresSchema.Table, to data: inout [UInt8]) throws {
    let entity = table.entity
    guard let key = state.permanentIDs[change.objectID]?.primaryKey else { return }
    CopyText.appendInteger(key, to: &data)
    for index in table.storedAttributes {
      let value = change.attributes[index]
      let attribute = entity.attributes[index]
      if value.isNull && !attribute.isOptional {
        throw StoreError(
          .validation, "\(entity.name).\(attribute.name) is required but the value is nil", entity: entity.name,
          key: attribute.name, value: .null)
      }
      if !attribute.type.isCanonical(value) { state.converted.insert(change.objectID) }
      data.append(UInt8(ascii: "\t"))
      CopyText.append(
        try PostgresSchema.storedForm(value, as: attribute.type, entity: entity.name, key: attribute.name), to: &data)
    }
    for (rel, target) in zip(entity.toOneRelationships, change.toOne) {
      data.append(UInt8(ascii: "\t"))
      // Checked as a single insert checks it; a temporary target this save does not insert stays unset.
      _ = try encodeTarget(target, rel, of: entity.name)
      if let target, let pk = state.permanentIDs[target]?.primaryKey ?? (target.isTemporary ? nil : target.primaryKey) {
        CopyText.appendInteger(pk, to: &data)
      } else {
        CopyText.append(.null, to: &data)
      }
    }
    data.append(UInt8(ascii: "\n"))
  }
}
