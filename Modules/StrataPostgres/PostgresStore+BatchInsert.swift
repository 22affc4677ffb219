import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresStore {
  /// Runs a batch insert natively when it can, with set-based statements in the server.
  ///
  /// The rows are checked (``BatchInsertRow``) and rows naming the same key are merged (the later row's
  /// given attributes win), all in the client before anything is written. Then, in one transaction:
  /// - **Without a uniqueness constraint**, keys are drawn from the table's identity sequence in one
  ///   statement and the rows go straight into the table by one `COPY … FROM STDIN`.
  /// - **With one uniqueness constraint**, `LOCK TABLE … IN SHARE ROW EXCLUSIVE MODE` (no other writer
  ///   can add or change a row until commit; readers go on), a `COPY` into a temporary table, one
  ///   `UPDATE t … FROM tmp` of the stored objects whose key a row names and whose values it changes (the
  ///   attributes that row gave, and `_version + 1`), and one `INSERT … SELECT … WHERE NOT EXISTS` of the
  ///   rest. A stored object whose row gives only the values it holds is not written (no version bump,
  ///   no history; `BatchResult.unchangedObjectIDs`); a batch that changes nothing records no history
  ///   transaction and notifies no one.
  ///
  /// Not `INSERT … ON CONFLICT`: PostgreSQL refuses a deferrable unique constraint as a conflict target,
  /// and the store's unique constraints are deferrable so that a save is judged on the state it
  /// produces. The lock makes update-then-insert race-free instead.
  ///
  /// Returns `nil` for what the general path must run: several uniqueness constraints (a row's match is
  /// decided constraint by constraint), derived attributes the rows could change, an entity without
  /// stored attributes, and a batch a constraint refuses (rolled back first; the general path reports it
  /// in full).
  func nativeInsert(_ request: BatchInsertDescription, author: String?, contextName: String?) throws -> BatchResult? {
    let entity = try model.requireEntity(request.entityName)
    let table = try schema.table(entity.name)
    let settable = entity.attributes.filter { $0.isPersistent && $0.derivation == nil }.map(\.name)
    guard entity.uniquenessConstraints.count <= 1, !table.storedAttributes.isEmpty,
      !model.derivedAttributes.isAffected(byUpdating: settable, of: entity.name)
    else { return nil }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    let plan = try BatchInsertPlan(request, entity: entity, table: table)
    guard !plan.writes.isEmpty else { return BatchResult(count: 0).reported(as: request.resultType) }
    let (identifier, schema, history, bound) = (self.identifier, self.schema, historyRecorder, isBoundToMigration)
    let outcome: BatchInsertPlan.Outcome
    do {
      outcome = try write { connection in
        var outcome = try plan.run(on: connection, schema: schema, storeIdentifier: identifier)
        guard !outcome.ids.isEmpty else { return outcome }
        if let history {
          outcome.token = try history.record(
            HistoryLog.changes(inserted: outcome.inserted, updated: outcome.updated, keys: outcome.updatedKeys),
            on: connection, author: author, contextName: contextName)
        }
        if !bound { try notify(connection) }
        return outcome
      }
    } catch let error as StoreError where error.code == .constraintConflict || error.code == .validation {
      return nil
    }
    return .nativeInsert(
      ids: outcome.ids, inserted: outcome.inserted, updated: outcome.updated, unchanged: outcome.unchanged,
      token: outcome.token, storeIdentifier: identifier, broadcaster: broadcaster, as: request.resultType)
  }
}

/// The rows of a batch insert, checked and merged by key, and the statements that write them.
struct BatchInsertPlan: Sendable {
  /// One object to write: every attribute value, and which attributes its rows gave (ascending).
  struct Write: Sendable {
    var values: AttributeValues
    var given: [Int]
  }

  /// What the statements wrote.
  struct Outcome: Sendable {
    var ids: [ObjectID] = []
    var inserted: [ObjectID] = []
    var updated: [ObjectID] = []
    /// Stored objects whose rows gave only the values they hold (not written).
    var unchanged: [ObjectID] = []
    /// The attributes the updating rows gave (history's updated properties).
    var updatedKeys: [String] = []
    var token: HistoryToken?
  }

  let entity: EntityDescription
  let table: PostgresSchema.Table
  /// The attribute positions of the uniqueness constraint (empty: none).
  let key: [Int]
  /// Each object once, in the order rows first named it.
  var writes: [Write] = []

  init(_ request: BatchInsertDescription, entity: EntityDescription, table: PostgresSchema.Table) throws {
    self.entity = entity
    self.table = table
    key = entity.uniquenessConstraints.first.map { $0.compactMap { entity.attributeIndex(named: $0) } } ?? []
    let rules = BatchInsertRow.Rules(entity)
    // Rows naming a key seen before merge into its write: by the value itself for a one-attribute key.
    var bySingleKey: [Value: Int] = [:]
    var byKey: [[Value]: Int] = [:]
    let key = self.key
    var row = BatchInsertRow(rules: rules)
    try request.forEachRow { index, dictionary in
      try row.reload(dictionary, index: index, rules: rules)
      var earlier: Int?
      if key.count == 1 {
        let value = row.values[key[0]]
        if !value.isNull {
          earlier = bySingleKey[value]
          if earlier == nil { bySingleKey[value] = writes.count }
        }
      } else if !key.isEmpty {
        let rowKey = key.map { row.values[$0] }
        if !rowKey.contains(where: \.isNull) {
          earlier = byKey[rowKey]
          if earlier == nil { byKey[rowKey] = writes.count }
        }
      }
      guard let earlier else {
        writes.append(Write(values: row.values, given: row.given))
        return
      }
      for position in row.given { writes[earlier].values[position] = row.values[position] }
      writes[earlier].given = Array(Set(writes[earlier].given).union(row.given)).sorted()
    }
  }

  /// Writes the rows inside the caller's transaction.
  func run(on connection: PostgresConnection, schema: PostgresSchema, storeIdentifier: String) throws -> Outcome {
    let scope = ObjectID(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: 0)
    let columns = table.storedAttributes.map { quoteIdentifier(entity.attributes[$0].name) }
    var pks = [Int64?](repeating: nil, count: writes.count)
    var outcome = Outcome()
    if key.isEmpty {
      let keys = try newKeys(writes.count, connection)
      let data = try copyData { ordinal, data in
        CopyText.appendInteger(keys[ordinal], to: &data)
        data.append(UInt8(ascii: "\t"))
      }
      try connection.copyIn(
        "COPY \(table.qualified) (\"_pk\", \(columns.joined(separator: ", "))) FROM STDIN", data)
      outcome.ids = keys.map(scope.withPrimaryKey)
      outcome.inserted = outcome.ids
      return outcome
    }
    try connection.execute("LOCK TABLE \(table.qualified) IN SHARE ROW EXCLUSIVE MODE")
    let staging = "pg_temp.strata_batch"
    let definitions = table.storedAttributes.map {
      "\(quoteIdentifier(entity.attributes[$0].name)) \(PostgresSchema.columnType(entity.attributes[$0].type))"
    }
    try connection.execute(
      "CREATE TEMPORARY TABLE strata_batch (\"_ord\" integer NOT NULL, \"_given\" text NOT NULL, "
        + "\(definitions.joined(separator: ", "))) ON COMMIT DROP")
    let width = entity.attributes.count
    let data = try copyData { ordinal, data in
      CopyText.appendInteger(Int64(ordinal), to: &data)
      data.append(UInt8(ascii: "\t"))
      // One character per attribute: '1' where the row gave it.
      let start = data.count
      data.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
      for position in writes[ordinal].given { data[start + position] = UInt8(ascii: "1") }
      data.append(UInt8(ascii: "\t"))
    }
    try connection.copyIn("COPY \(staging) (\"_ord\", \"_given\", \(columns.joined(separator: ", "))) FROM STDIN", data)
    let matches = key.map {
      let column = quoteIdentifier(entity.attributes[$0].name)
      return "t.\(column) = b.\(column)"
    }.joined(separator: " AND ")
    // Each stored column takes the row's value where the row gave the attribute, else keeps its own.
    let assignments = table.storedAttributes.map { position in
      let column = quoteIdentifier(entity.attributes[position].name)
      return "\(column) = CASE WHEN substr(b.\"_given\", \(position + 1), 1) = '1' THEN b.\(column) ELSE t.\(column) END"
    }
    // Only a row that changes a value it gave updates its stored object.
    let differs = table.storedAttributes.map { position in
      let column = quoteIdentifier(entity.attributes[position].name)
      return "(substr(b.\"_given\", \(position + 1), 1) = '1' AND b.\(column) IS DISTINCT FROM t.\(column))"
    }
    let updated = try connection.query(
      "UPDATE \(table.qualified) AS t SET \(assignments.joined(separator: ", ")), \"_version\" = t.\"_version\" + 1 "
        + "FROM \(staging) AS b WHERE \(matches) AND (\(differs.joined(separator: " OR "))) RETURNING b.\"_ord\", t.\"_pk\"")
    var given = Set<Int>()
    var unchangedOrdinals = Set<Int>()
    for row in 0..<updated.count {
      let ordinal = Int(updated.int64(row, 0))
      pks[ordinal] = updated.int64(row, 1)
      given.formUnion(writes[ordinal].given)
    }
    if updated.count < writes.count {
      // The stored objects the rows name that the update left as they were.
      let matched = try connection.query(
        "SELECT b.\"_ord\", t.\"_pk\" FROM \(staging) AS b JOIN \(table.qualified) AS t ON \(matches) ORDER BY b.\"_ord\"")
      for row in 0..<matched.count {
        let ordinal = Int(matched.int64(row, 0))
        guard pks[ordinal] == nil else { continue }
        pks[ordinal] = matched.int64(row, 1)
        unchangedOrdinals.insert(ordinal)
      }
    }
    let fresh = pks.indices.filter { pks[$0] == nil }
    if !fresh.isEmpty {
      // Keys are drawn in row order from the sorted rows, so they rise with the rows.
      let inserted = try connection.query(
        "INSERT INTO \(table.qualified) (\"_pk\", \"_version\", \(columns.joined(separator: ", "))) "
          + "SELECT nextval(pg_get_serial_sequence('\(table.qualified.replacingOccurrences(of: "'", with: "''"))', '_pk')), 1, "
          + "\(columns.joined(separator: ", ")) FROM (SELECT * FROM \(staging) AS b "
          + "WHERE NOT EXISTS (SELECT 1 FROM \(table.qualified) AS t WHERE \(matches)) ORDER BY b.\"_ord\") AS s "
          + "RETURNING \"_pk\"")
      guard inserted.count == fresh.count else {
        throw StoreError(
          .io, "the batch insert into \(entity.name) wrote \(inserted.count) new rows where \(fresh.count) were expected")
      }
      let keys = (0..<inserted.count).map { inserted.int64($0, 0) }.sorted()
      for (ordinal, pk) in zip(fresh, keys) { pks[ordinal] = pk }
    }
    try connection.execute("DROP TABLE \(staging)")
    let freshOrdinals = Set(fresh)
    for (ordinal, pk) in pks.enumerated() {
      guard let pk else { continue }
      let id = scope.withPrimaryKey(pk)
      if unchangedOrdinals.contains(ordinal) {
        outcome.unchanged.append(id)
        continue
      }
      outcome.ids.append(id)
      if freshOrdinals.contains(ordinal) { outcome.inserted.append(id) } else { outcome.updated.append(id) }
    }
    outcome.updatedKeys = given.sorted().map { entity.attributes[$0].name }
    return outcome
  }

  /// `count` new keys from the table's identity sequence, in rising order.
  private func newKeys(_ count: Int, _ connection: PostgresConnection) throws -> [Int64] {
    let sequence = table.qualified.replacingOccurrences(of: "'", with: "''")
    let rows = try connection.query(
      "SELECT nextval(pg_get_serial_sequence('\(sequence)', '_pk')) FROM generate_series(1, $1::bigint)",
      [.int(Int64(count))])
    return (0..<rows.count).map { rows.int64($0, 0) }.sorted()
  }

  /// Every write as a line of text COPY: what `prefix` appends (its columns, each ended by a tab), then
  /// each stored attribute.
  private func copyData(prefix: (Int, inout [UInt8]) -> Void) throws -> [UInt8] {
    var data: [UInt8] = []
    data.reserveCapacity(writes.count * (16 + 12 * table.storedAttributes.count))
    for (ordinal, write) in writes.enumerated() {
      prefix(ordinal, &data)
      for (column, position) in table.storedAttributes.enumerated() {
        if column > 0 { data.append(UInt8(ascii: "\t")) }
        let attribute = entity.attributes[position]
        let value = write.values[position]
        if attribute.type.isCanonical(value) {
          CopyText.append(value, to: &data)
        } else {
          CopyText.append(
            try PostgresSchema.storedForm(value, as: attribute.type, entity: entity.name, key: attribute.name), to: &data)
        }
      }
      data.append(UInt8(ascii: "\n"))
    }
    return data
  }
}

/// Values in PostgreSQL's text COPY format: `\N` for NULL, backslash escapes for the tab, newline,
/// carriage return and backslash, and each type's input syntax.
enum CopyText {
  static func append(_ value: Value, to data: inout [UInt8]) {
    switch value {
    case .null, .array: data.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
    case .int(let i): appendInteger(i, to: &data)
    case .double(let d): data.append(contentsOf: double(d).utf8)
    case .date(let d): data.append(contentsOf: double(d.timeIntervalSinceReferenceDate).utf8)
    case .decimal(let d): data.append(contentsOf: "\(d)".utf8)
    case .bool(let b): data.append(b ? UInt8(ascii: "t") : UInt8(ascii: "f"))
    case .string(let s): escape(s, into: &data)
    case .url(let u): escape(u.absoluteString, into: &data)
    case .uuid(let u): data.append(contentsOf: u.uuidString.utf8)
    case .objectID(let id):
      if let key = id.primaryKey {
        data.append(contentsOf: String(key).utf8)
      } else {
        data.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
      }
    case .data(let bytes):
      // bytea's hex input `\x…`, its backslash escaped for COPY.
      data.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")])
      let digits = Array("0123456789abcdef".utf8)
      for byte in bytes {
        data.append(digits[Int(byte >> 4)])
        data.append(digits[Int(byte & 0x0F)])
      }
    }
  }

  /// The decimal digits of `value`, without making a string.
  static func appendInteger(_ value: Int64, to data: inout [UInt8]) {
    if value < 0 { data.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
    var count = 0
    withUnsafeMutableBytes(of: &digits) { buffer in
      repeat {
        buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
        magnitude /= 10
        count += 1
      } while magnitude > 0
      for index in stride(from: count - 1, through: 0, by: -1) { data.append(buffer[index]) }
    }
  }

  /// A double in float8's input syntax: the shortest text that reads back to the same bits.
  static func double(_ d: Double) -> String {
    if d.isNaN { return "NaN" }
    if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
    return "\(d)"
  }

  static func escape(_ text: String, into data: inout [UInt8]) {
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\\"): data.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
      case UInt8(ascii: "\t"): data.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
      case UInt8(ascii: "\n"): data.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
      case UInt8(ascii: "\r"): data.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
      default: data.append(byte)
      }
    }
  }
}
