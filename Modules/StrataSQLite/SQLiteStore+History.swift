import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

/// Persistent history in two tables, readable in the `sqlite3` shell:
///
/// ```sql
/// strata_history_transaction(seq INTEGER PRIMARY KEY AUTOINCREMENT, timestamp REAL, author TEXT,
///                            context_name TEXT, pid INTEGER)
/// strata_history_change(transaction_seq INTEGER, position INTEGER, entity TEXT, pk INTEGER,
///                       change_type TEXT, updated_properties TEXT, tombstone TEXT)   -- WITHOUT ROWID
/// ```
///
/// `timestamp` is seconds since 2001 like every stored date; `change_type` is `insert`, `update` or
/// `delete`; `updated_properties` the comma-separated names; `tombstone` a JSON object of `Value`s.
/// `_strata_metadata.history_purged_through` is the last sequence a deletion removed.
struct SQLiteHistoryTables: SQLHistoryTables {
  static let transactionName = "strata_history_transaction"
  static let changeName = "strata_history_change"
  static let purgedKey = "history_purged_through"

  let storeIdentifier: String

  var transactionTable: String { Self.transactionName }
  var changeTable: String { Self.changeName }
  var changeColumns: String { "transaction_seq, entity, pk, change_type, updated_properties, tombstone" }
  var missingReason: String { "none was recorded with history tracking on" }

  /// Whether the history tables exist. A store created with history on has them from its creation; opening
  /// an existing store with history on writes nothing: the first write that records history makes them
  /// inside its own transaction (so a migration refused right after opening, on a full disk say, leaves
  /// the file as it was). When history is off and an earlier opening recorded
  /// history, drops what was recorded and marks it all expired, so no token silently skips the commits
  /// made meanwhile.
  func prepare(_ connection: SQLiteConnection, tracksHistory: Bool) throws -> Bool {
    let exists = try exist(on: connection)
    guard !tracksHistory, exists else { return exists }
    try connection.transaction {
      guard
        case .integer(let last)? = try connection.scalar(
          "SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(transactionTable)]), last > 0
      else { return }
      let purged = try purgedThrough(on: connection)
      guard purged <= last else { return }
      // Reserve one sequence that is never given out: every token issued so far is now older than it.
      try connection.run("DELETE FROM \(changeTable)")
      try connection.run("DELETE FROM \(transactionTable)")
      try connection.run("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", [.integer(last + 1), .text(transactionTable)])
      try setPurgedThrough(last + 1, on: connection)
    }
    return true
  }

  func exist(on connection: SQLiteConnection) throws -> Bool {
    try connection.scalar(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(transactionTable)]) == .integer(1)
  }

  func createTables(on connection: SQLiteConnection) throws {
    try connection.execute(
      "CREATE TABLE IF NOT EXISTS \(transactionTable) (seq INTEGER PRIMARY KEY AUTOINCREMENT, timestamp REAL NOT NULL, "
        + "author TEXT, context_name TEXT, pid INTEGER NOT NULL)")
    // Clustered by (transaction, position): a transaction's changes are appended and read in one range,
    // with no second index to maintain per change.
    try connection.execute(
      "CREATE TABLE IF NOT EXISTS \(changeTable) (transaction_seq INTEGER NOT NULL REFERENCES \(transactionTable)(seq), "
        + "position INTEGER NOT NULL, entity TEXT NOT NULL, pk INTEGER NOT NULL, change_type TEXT NOT NULL, "
        + "updated_properties TEXT, tombstone TEXT, PRIMARY KEY (transaction_seq, position)) WITHOUT ROWID")
  }

  /// The write transaction holds SQLite's one write lock already.
  func lock(on connection: SQLiteConnection) throws {}

  func purgedThrough(on connection: SQLiteConnection) throws -> Int64 {
    let value = try connection.scalar(
      "SELECT \"value\" FROM \(quote(SQLiteSchema.metadataTable)) WHERE \"key\" = ?", [.text(Self.purgedKey)])
    if case .text(let text)? = value { return Int64(text) ?? 0 }
    return 0
  }

  func setPurgedThrough(_ sequence: Int64, on connection: SQLiteConnection) throws {
    try connection.run(
      "INSERT OR REPLACE INTO \(quote(SQLiteSchema.metadataTable)) (\"key\", \"value\") VALUES (?, ?)",
      [.text(Self.purgedKey), .text(String(sequence))])
  }

  func append(
    _ changes: [HistoryChange], on connection: SQLiteConnection, author: String?, contextName: String?
  ) throws -> HistoryToken {
    try connection.run(
      "INSERT INTO \(transactionTable) (timestamp, author, context_name, pid) VALUES (?, ?, ?, ?)",
      [
        .real(Date().timeIntervalSinceReferenceDate), author.map(SQLValue.text) ?? .null,
        contextName.map(SQLValue.text) ?? .null, .integer(Int64(HistoryLog.processID)),
      ])
    let sequence = connection.lastInsertRowID
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    try connection.withStatement(
      "INSERT INTO \(changeTable) (transaction_seq, position, entity, pk, change_type, updated_properties, tombstone) "
        + "VALUES (?, ?, ?, ?, ?, ?, ?)"
    ) { statement in
      for (position, change) in changes.enumerated() {
        guard let pk = change.objectID.primaryKey else { continue }
        let tombstone: SQLValue =
          change.tombstone.isEmpty ? .null : .text(String(decoding: try encoder.encode(change.tombstone), as: UTF8.self))
        statement.reset()
        try statement.bind([
          .integer(sequence), .integer(Int64(position)), .text(change.objectID.entityName), .integer(pk),
          .text(change.changeType.rawValue),
          change.updatedProperties.isEmpty ? .null : .text(change.updatedProperties.joined(separator: ",")), tombstone,
        ])
        while try statement.step() {}
      }
    }
    return HistoryToken(storeIdentifier: storeIdentifier, sequence: sequence)
  }

  /// The newest sequence given out (kept by `AUTOINCREMENT` even when history was deleted), 0 when none.
  func lastSequence(on connection: SQLiteConnection) throws -> Int64 {
    let last = try connection.scalar("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(transactionTable)])
    if case .integer(let last)? = last { return last }
    return 0
  }
}

extension SQLiteStore {
  /// Reads persistent history from `strata_history_transaction` and `strata_history_change` (see
  /// ``PersistentStore/fetchHistory(_:)``).
  ///
  /// ```swift
  /// let store = try SQLiteStore(url: url, model: model, options: StoreOptions(tracksHistory: true))
  /// if case .transactions(let recent) = try store.fetchHistory(HistoryRequest(after: .token(last))) { … }
  /// ```
  public func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    try SQLiteStoreCore(store: self).fetchHistory(request)
  }

  /// Deletes history before a token or date in one transaction (see ``PersistentStore/deleteHistory(before:)``).
  ///
  /// ```swift
  /// let removed = try store.deleteHistory(before: .date(Date().addingTimeInterval(-86_400)))
  /// ```
  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    try SQLiteStoreCore(store: self).deleteHistory(before: cutoff)
  }

  /// The token of the newest history transaction in the file (whichever process wrote it); `nil`
  /// before the first one or without history tracking.
  ///
  /// ```swift
  /// let token = try store.currentHistoryToken()   // STORE:42
  /// ```
  public func currentHistoryToken() throws -> HistoryToken? {
    try SQLiteStoreCore(store: self).currentHistoryToken()
  }
}
