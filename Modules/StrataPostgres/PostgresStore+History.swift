import Foundation
import StrataSQL
import StrataStoreKit

/// Persistent history in two tables of the store's schema:
///
/// ```sql
/// strata_history_transaction(seq bigint identity PRIMARY KEY, "timestamp" double precision (seconds since 2001), author text,
///                            context_name text, pid integer)
/// strata_history_change(transaction_seq bigint REFERENCES …, position integer, entity text, pk bigint,
///                       change_type text, updated_properties text[], tombstone jsonb)
/// ```
///
/// Appends take a transaction-level advisory lock, so sequences commit in order and a reader continuing
/// after a token never skips a transaction that committed later with a smaller number.
/// `_strata_metadata.history_purged_through` is the last sequence a deletion removed.
struct PostgresHistoryTables: SQLHistoryTables {
  static let transactionName = "strata_history_transaction"
  static let changeName = "strata_history_change"
  static let purgedKey = "history_purged_through"

  let schema: PostgresSchema
  let storeIdentifier: String

  var transactionTable: String { schema.qualify(Self.transactionName) }
  var changeTable: String { schema.qualify(Self.changeName) }
  var changeColumns: String {
    "transaction_seq, entity, pk, change_type, array_to_string(updated_properties, ','), tombstone::text"
  }
  var missingReason: String { "it was never opened with history tracking on" }

  /// Made when the store opens (``prepare(_:tracksHistory:)``).
  func createTables(on connection: PostgresConnection) throws {}

  func exist(on connection: PostgresConnection) throws -> Bool {
    !(try connection.query("SELECT to_regclass($1)::text", [.string(transactionTable)]).isNull(0, 0))
  }

  func lock(on connection: PostgresConnection) throws {
    try connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.string("strata-history:" + schema.name)])
  }

  /// Creates the tables when history is on; when it is off and history was recorded before, deletes it
  /// and marks every token issued so far expired.
  func prepare(_ connection: PostgresConnection, tracksHistory: Bool) throws {
    try connection.transaction {
      try lock(on: connection)
      let exists = try exist(on: connection)
      if tracksHistory {
        if exists { return }
        try connection.execute(
          "CREATE TABLE IF NOT EXISTS \(transactionTable) (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            + "\"timestamp\" double precision NOT NULL, author text, context_name text, pid integer NOT NULL)")
        try connection.execute(
          "CREATE TABLE IF NOT EXISTS \(changeTable) (transaction_seq bigint NOT NULL "
            + "REFERENCES \(transactionTable) (seq) ON DELETE CASCADE, position integer NOT NULL, "
            + "entity text NOT NULL, pk bigint NOT NULL, change_type text NOT NULL, updated_properties text[], "
            + "tombstone jsonb, PRIMARY KEY (transaction_seq, position))")
        return
      }
      guard exists else { return }
      let last = try lastSequence(on: connection)
      guard last > 0, try purgedThrough(on: connection) <= last else { return }
      try connection.run("DELETE FROM \(transactionTable)")
      // Reserve one sequence never given out: every token issued so far is older than it.
      let reserved = try connection.query(
        "SELECT nextval(pg_get_serial_sequence($1, 'seq'))", [.string(transactionTable)]
      ).int64(0, 0)
      try setPurgedThrough(reserved, on: connection)
    }
  }

  func purgedThrough(on connection: PostgresConnection) throws -> Int64 {
    let rows = try connection.query(
      "SELECT \"value\" FROM \(schema.qualify(PostgresSchema.metadataTable)) WHERE \"key\" = $1", [.string(Self.purgedKey)])
    return rows.count > 0 ? Int64(rows.text(0, 0)) ?? 0 : 0
  }

  func setPurgedThrough(_ sequence: Int64, on connection: PostgresConnection) throws {
    try connection.run(
      "INSERT INTO \(schema.qualify(PostgresSchema.metadataTable)) (\"key\", \"value\") VALUES ($1, $2) "
        + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = EXCLUDED.\"value\"",
      [.string(Self.purgedKey), .string(String(sequence))])
  }

  /// The newest sequence recorded or purged, 0 when none.
  func lastSequence(on connection: PostgresConnection) throws -> Int64 {
    let rows = try connection.query("SELECT coalesce(max(seq), 0) FROM \(transactionTable)")
    return max(rows.int64(0, 0), try purgedThrough(on: connection))
  }

  /// History change rows written by one `INSERT` (7 parameters each, far below PostgreSQL's 65,535).
  static let historyRowsPerInsert = 500

  func append(
    _ changes: [HistoryChange], on connection: PostgresConnection, author: String?, contextName: String?
  ) throws -> HistoryToken {
    try lock(on: connection)
    let sequence = try connection.query(
      "INSERT INTO \(transactionTable) (\"timestamp\", author, context_name, pid) VALUES ($1, $2, $3, $4) RETURNING seq",
      [
        PostgresSchema.encode(.date(Date())), author.map(PGParameter.string) ?? .null,
        contextName.map(PGParameter.string) ?? .null, .int(Int64(HistoryLog.processID)),
      ]
    ).int64(0, 0)
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    var rows: [[PGParameter]] = []
    rows.reserveCapacity(changes.count)
    for (position, change) in changes.enumerated() {
      guard let pk = change.objectID.primaryKey else { continue }
      let tombstone: PGParameter =
        change.tombstone.isEmpty ? .null : .text(String(decoding: try encoder.encode(change.tombstone), as: UTF8.self))
      let properties: PGParameter =
        change.updatedProperties.isEmpty
        ? .null : .text("{" + change.updatedProperties.map { "\"\($0)\"" }.joined(separator: ",") + "}")
      rows.append([
        .int(sequence), .int(Int64(position)), .string(change.objectID.entityName), .int(pk),
        .string(change.changeType.rawValue), properties, tombstone,
      ])
    }
    // A statement per `historyRowsPerInsert` rows: a transaction's changes cost a few round trips, not one each.
    var start = 0
    while start < rows.count {
      let batch = rows[start..<min(start + Self.historyRowsPerInsert, rows.count)]
      let values = (0..<batch.count).map { row in
        let p = row * 7
        return "($\(p + 1), $\(p + 2), $\(p + 3), $\(p + 4), $\(p + 5), $\(p + 6)::text[], $\(p + 7)::jsonb)"
      }
      try connection.run(
        "INSERT INTO \(changeTable) (transaction_seq, position, entity, pk, change_type, updated_properties, tombstone) "
          + "VALUES " + values.joined(separator: ", "),
        batch.flatMap { $0 })
      start += batch.count
    }
    return HistoryToken(storeIdentifier: storeIdentifier, sequence: sequence)
  }
}

extension PostgresStore {
  /// Reads persistent history (see ``PersistentStore/fetchHistory(_:)``).
  ///
  /// ```swift
  /// if case .transactions(let recent) = try store.fetchHistory(HistoryRequest(after: .token(last))) { … }
  /// ```
  public func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    try PostgresStoreCore(store: self).fetchHistory(request)
  }

  /// Deletes history before a token or date in one transaction (see ``PersistentStore/deleteHistory(before:)``).
  ///
  /// ```swift
  /// let removed = try store.deleteHistory(before: .date(Date().addingTimeInterval(-86_400)))
  /// ```
  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    try PostgresStoreCore(store: self).deleteHistory(before: cutoff)
  }

  /// The token of the newest history transaction (whichever process wrote it); `nil` before the first
  /// one or without history tracking.
  ///
  /// ```swift
  /// let token = try store.currentHistoryToken()
  /// ```
  public func currentHistoryToken() throws -> HistoryToken? {
    try PostgresStoreCore(store: self).currentHistoryToken()
  }
}
