import CLMDB
import Foundation
import StrataCore

/// Persistent history in the `strata.history` database: one entry per transaction, keyed by its
/// sequence (8 bytes, big-endian with the sign bit flipped, like primary keys: byte order is sequence
/// order), holding the ``HistoryTransaction`` as JSON. `strata.meta` keeps `history_last_sequence` (the
/// last sequence given out; never reused) and `history_purged_through` (the last one a deletion removed).
enum LMDBHistory {
  static let databaseName = "strata.history"
  static let lastKey = Array("history_last_sequence".utf8)
  static let purgedKey = Array("history_purged_through".utf8)

  static func number(_ txn: LMDBTransaction, _ schema: LMDBSchema, _ key: [UInt8]) throws -> Int64 {
    try txn.get(schema.meta, key) { bytes in bytes.flatMap { Int64(String(decoding: $0, as: UTF8.self)) } ?? 0 }
  }

  static func setNumber(_ txn: LMDBTransaction, _ schema: LMDBSchema, _ key: [UInt8], _ value: Int64) throws {
    try txn.put(schema.meta, key, Array(String(value).utf8))
  }

  /// Appends one transaction inside the caller's write transaction and returns its token.
  static func append(
    _ txn: LMDBTransaction, _ schema: LMDBSchema, _ history: MDB_dbi, _ changes: [HistoryChange], author: String?,
    contextName: String?, storeIdentifier: String
  ) throws -> HistoryToken {
    let sequence = try number(txn, schema, lastKey) + 1
    let token = HistoryToken(storeIdentifier: storeIdentifier, sequence: sequence)
    let transaction = HistoryTransaction(
      token: token, timestamp: Date(), author: author, contextName: contextName, processID: HistoryLog.processID,
      changes: changes)
    try txn.put(history, primaryKey: sequence, Array(try JSONEncoder().encode(transaction)))
    try setNumber(txn, schema, lastKey, sequence)
    return token
  }

  /// Every transaction after `sequence`, in order.
  static func transactions(after sequence: Int64, _ txn: LMDBTransaction, _ history: MDB_dbi) throws -> [HistoryTransaction] {
    let decoder = JSONDecoder()
    return try txn.withCursor(history) { cursor in
      var result: [HistoryTransaction] = []
      var entry = try cursor.seek(KeyCoding.primaryKeyBytes(sequence + 1), exact: false)
      while let (_, value) = entry {
        result.append(try decoder.decode(HistoryTransaction.self, from: Data(value)))
        entry = try cursor.next(.next)
      }
      return result
    }
  }

  /// When history is off but was recorded before: drops it and reserves one sequence, so every token
  /// issued so far is expired and none silently skips the commits made while history was off.
  static func expireAll(_ txn: LMDBTransaction, _ schema: LMDBSchema, _ history: MDB_dbi) throws {
    let last = try number(txn, schema, lastKey)
    guard last > 0, try number(txn, schema, purgedKey) <= last else { return }
    try check(mdb_drop(txn.txn, history, 0), "mdb_drop(\(databaseName))")
    try setNumber(txn, schema, lastKey, last + 1)
    try setNumber(txn, schema, purgedKey, last + 1)
  }
}

extension LMDBStore {
  /// Reads persistent history from `strata.history` in one read transaction (see
  /// ``PersistentStore/fetchHistory(_:)``).
  ///
  /// ```swift
  /// let store = try LMDBStore(url: url, model: model, options: StoreOptions(tracksHistory: true))
  /// if case .count(let n) = try store.fetchHistory(HistoryRequest(resultType: .count)) { print(n) }
  /// ```
  public func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    let history = try historyDatabase()
    try HistoryLog.check(request)
    let schema = self.schema
    let identifier = self.identifier
    let transactions = try lmdb {
      try environment.read { txn -> [HistoryTransaction] in
        let purged = try LMDBHistory.number(txn, schema, LMDBHistory.purgedKey)
        let start = try HistoryLog.startSequence(of: request, storeIdentifier: identifier, purgedThrough: purged)
        return try LMDBHistory.transactions(after: start, txn, history)
      }
    }
    return try HistoryLog.answer(request, transactions: transactions)
  }

  /// Deletes history before a token or date in one write transaction (see ``PersistentStore/deleteHistory(before:)``).
  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    let history = try historyDatabase()
    try HistoryLog.checkDeletion(before: cutoff, storeIdentifier: identifier)
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    let schema = self.schema
    saveLock.lock()
    defer { saveLock.unlock() }
    return try lmdb {
      try environment.write { txn -> Int in
        var doomed: [Int64] = []
        for transaction in try LMDBHistory.transactions(after: 0, txn, history)
        where HistoryLog.deletes(sequence: transaction.token.sequence, timestamp: transaction.timestamp, before: cutoff) {
          doomed.append(transaction.token.sequence)
        }
        for sequence in doomed { _ = try txn.delete(history, primaryKey: sequence) }
        if let newest = doomed.max(), newest > (try LMDBHistory.number(txn, schema, LMDBHistory.purgedKey)) {
          try LMDBHistory.setNumber(txn, schema, LMDBHistory.purgedKey, newest)
        }
        return doomed.count
      }
    }
  }

  /// The token of the newest history transaction in the environment (whichever process wrote it);
  /// `nil` before the first one or without history tracking.
  public func currentHistoryToken() throws -> HistoryToken? {
    guard options.tracksHistory, schema.history != nil else { return nil }
    let schema = self.schema
    let last = try lmdb { try environment.read { try LMDBHistory.number($0, schema, LMDBHistory.lastKey) } }
    return last > 0 ? HistoryToken(storeIdentifier: identifier, sequence: last) : nil
  }

  private func historyDatabase() throws -> MDB_dbi {
    try checkOpen()
    guard options.tracksHistory else { throw HistoryLog.notTracked(storeType, path) }
    guard let history = schema.history else {
      throw StoreError(.notFound, "the store \(path) has no history yet (open it writable with tracksHistory first)")
    }
    return history
  }

  private func lmdb<R>(_ body: () throws -> R) throws -> R {
    do {
      return try body()
    } catch let error as LMDBError {
      throw error.storeError(path: path)
    }
  }
}
