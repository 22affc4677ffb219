import Foundation
import StrataStoreKit

extension SQLStore {
  /// Reads persistent history, in one read transaction (see `PersistentStore.fetchHistory(_:)`).
  package func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    try checkHistoryTracked()
    try HistoryLog.check(request)
    let (identifier, tables, location, readOnly) = (self.identifier, historyTables, self.location, options.isReadOnly)
    let p1 = Schema.placeholder(1)
    let transactions = try readSnapshot { connection -> [HistoryTransaction] in
      // Before history is recorded there is none to read (opened read-only, a store cannot tell that from
      // one that never tracked history).
      guard try tables.exist(on: connection) else {
        guard readOnly else { return [] }
        throw StoreError(.notFound, "the store \(location) has no history: \(tables.missingReason)")
      }
      let start = try Schema.encode(
        .int(
          HistoryLog.startSequence(
            of: request, storeIdentifier: identifier, purgedThrough: try tables.purgedThrough(on: connection))))
      var transactions = try connection.query(
        "SELECT seq, \"timestamp\", author, context_name, pid FROM \(tables.transactionTable) WHERE seq > \(p1) ORDER BY seq",
        [start]
      ) { SQLHistoryRows.transaction($0, storeIdentifier: identifier) }
      guard request.resultType == .transactionsAndChanges, !transactions.isEmpty else { return transactions }
      let decoder = JSONDecoder()
      let changes = try connection.query(
        "SELECT \(tables.changeColumns) FROM \(tables.changeTable) WHERE transaction_seq > \(p1) "
          + "ORDER BY transaction_seq, position", [start]
      ) { SQLHistoryRows.change($0, storeIdentifier: identifier, decoder: decoder) }
      SQLHistoryRows.attach(changes, to: &transactions)
      return transactions
    }
    return try HistoryLog.answer(request, transactions: transactions)
  }

  /// Deletes history before a token or date in one transaction (see
  /// `PersistentStore.deleteHistory(before:)`); the number of transactions deleted.
  package func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    try checkHistoryTracked()
    try HistoryLog.checkDeletion(before: cutoff, storeIdentifier: identifier)
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    let tables = historyTables
    return try commit { connection -> (Int, StoreChange?) in
      guard try tables.exist(on: connection) else { return (0, nil) }
      try tables.lock(on: connection)
      let (condition, bound) =
        switch cutoff {
        case .token(let token): ("seq < \(Schema.placeholder(1))", Schema.encode(.int(token.sequence)))
        case .date(let date): ("\"timestamp\" < \(Schema.placeholder(1))", Schema.encode(.date(date)))
        }
      try connection.run(
        "DELETE FROM \(tables.changeTable) WHERE transaction_seq IN "
          + "(SELECT seq FROM \(tables.transactionTable) WHERE \(condition))", [bound])
      let deleted = try connection.query(
        "DELETE FROM \(tables.transactionTable) WHERE \(condition) RETURNING seq", [bound]
      ) { $0.int64(0) }
      if let newest = deleted.max(), newest > (try tables.purgedThrough(on: connection)) {
        try tables.setPurgedThrough(newest, on: connection)
      }
      return (deleted.count, nil)
    }
  }

  /// The token of the newest history transaction (whichever process wrote it); `nil` before the first
  /// one or without history tracking.
  package func currentHistoryToken() throws -> HistoryToken? {
    if isBoundToMigration { throw unsupportedInMigration("persistent history") }
    guard options.tracksHistory else { return nil }
    let tables = historyTables
    let last = try readSnapshot { connection in
      try tables.exist(on: connection) ? try tables.lastSequence(on: connection) : 0
    }
    return last > 0 ? HistoryToken(storeIdentifier: identifier, sequence: last) : nil
  }

  private var isBoundToMigration: Bool { store.isBoundToMigration }

  private func checkHistoryTracked() throws {
    if isBoundToMigration { throw unsupportedInMigration("persistent history") }
    guard options.tracksHistory else { throw HistoryLog.notTracked(store.storeType, location) }
  }
}
