import Foundation
import StrataStoreKit

/// A memory store's persistent history: the transactions in sequence order, the last sequence given
/// out (never reused) and the last sequence a deletion removed.
struct MemoryHistory: Sendable {
  var transactions: [HistoryTransaction] = []
  var lastSequence: Int64 = 0
  var purgedThrough: Int64 = 0

  /// Records one transaction and returns its token.
  mutating func append(
    _ changes: [HistoryChange], author: String?, contextName: String?, storeIdentifier: String
  )
    -> HistoryToken
  {
    lastSequence += 1
    let token = HistoryToken(storeIdentifier: storeIdentifier, sequence: lastSequence)
    transactions.append(
      HistoryTransaction(
        token: token, timestamp: Date(), author: author, contextName: contextName, processID: HistoryLog.processID,
        changes: changes))
    return token
  }

  /// The tombstones of the deleted objects whose entities keep some values, read from the state before the save.
  static func tombstones(
    of deleted: [ObjectID], in state: MemoryState, model: ObjectModel, storeIdentifier: String
  )
    -> [ObjectID: [String: Value]]
  {
    var tombstones: [ObjectID: [String: Value]] = [:]
    for id in deleted where HistoryLog.recordsTombstone(id.entityName, model: model) {
      if let snapshot = state.snapshot(for: id, storeIdentifier: storeIdentifier) {
        tombstones[id] = HistoryLog.tombstone(of: snapshot, model: model)
      }
    }
    return tombstones
  }
}

extension MemoryStore {
  /// Reads persistent history (see ``PersistentStore/fetchHistory(_:)``).
  ///
  /// ```swift
  /// let store = try MemoryStore(model: model, options: StoreOptions(tracksHistory: true))
  /// if case .transactions(let all) = try store.fetchHistory(HistoryRequest()) { print(all.count) }
  /// ```
  public func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    let history = try readHistory()
    try HistoryLog.check(request)
    let start = try HistoryLog.startSequence(of: request, storeIdentifier: identifier, purgedThrough: history.purgedThrough)
    return try HistoryLog.answer(request, transactions: history.transactions.filter { $0.token.sequence > start })
  }

  /// Deletes history before a token or date (see ``PersistentStore/deleteHistory(before:)``).
  ///
  /// ```swift
  /// let removed = try store.deleteHistory(before: .token(processed))
  /// ```
  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    _ = try readHistory()
    try HistoryLog.checkDeletion(before: cutoff, storeIdentifier: identifier)
    if options.isReadOnly { throw StoreError(.readOnly, "the memory store \(identifier) was opened read-only") }
    return storage.withLock { storage in
      let before = storage.history.transactions.count
      var purged = storage.history.purgedThrough
      storage.history.transactions.removeAll { transaction in
        let deletes = HistoryLog.deletes(sequence: transaction.token.sequence, timestamp: transaction.timestamp, before: cutoff)
        if deletes { purged = max(purged, transaction.token.sequence) }
        return deletes
      }
      storage.history.purgedThrough = purged
      return before - storage.history.transactions.count
    }
  }

  /// The token of the newest transaction; `nil` before the first one or without history tracking.
  ///
  /// ```swift
  /// let token = try store.currentHistoryToken()
  /// ```
  public func currentHistoryToken() throws -> HistoryToken? {
    guard options.tracksHistory else { return nil }
    let last = try readHistory().lastSequence
    return last > 0 ? HistoryToken(storeIdentifier: identifier, sequence: last) : nil
  }

  private func readHistory() throws -> MemoryHistory {
    guard options.tracksHistory else { throw HistoryLog.notTracked(storeType, identifier) }
    let identifier = self.identifier
    return try storage.withLock { storage throws(StoreError) -> MemoryHistory in
      guard !storage.isClosed else { throw StoreError(.misuse, "the memory store \(identifier) is closed") }
      return storage.history
    }
  }
}
