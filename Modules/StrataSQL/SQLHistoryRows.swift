import Foundation
import StrataStoreKit

/// One row of a query's result, read by column: what the shared row decoders read.
package protocol SQLRow {
  func isNull(_ column: Int32) -> Bool
  func int64(_ column: Int32) -> Int64
  func double(_ column: Int32) -> Double
  func text(_ column: Int32) -> String
}

/// The rows of the SQL backends' history tables, decoded once.
package enum SQLHistoryRows {
  /// A transaction, its changes still empty, from `seq, timestamp, author, context_name, pid` (the
  /// timestamp in seconds since 2001).
  package static func transaction(_ row: some SQLRow, storeIdentifier: String) -> HistoryTransaction {
    HistoryTransaction(
      token: HistoryToken(storeIdentifier: storeIdentifier, sequence: row.int64(0)),
      timestamp: Date(timeIntervalSinceReferenceDate: row.double(1)), author: row.isNull(2) ? nil : row.text(2),
      contextName: row.isNull(3) ? nil : row.text(3), processID: Int32(truncatingIfNeeded: row.int64(4)), changes: [])
  }

  /// A change and the sequence of its transaction, from `transaction_seq, entity, pk, change_type,
  /// updated_properties, tombstone` (the properties comma-separated, the tombstone JSON).
  package static func change(
    _ row: some SQLRow, storeIdentifier: String, decoder: JSONDecoder
  ) -> (sequence: Int64, change: HistoryChange) {
    let type = HistoryChangeType(rawValue: row.text(3)) ?? .update
    let properties = row.isNull(4) ? [] : row.text(4).split(separator: ",").map(String.init)
    let tombstone = row.isNull(5) ? [:] : (try? decoder.decode([String: Value].self, from: Data(row.text(5).utf8))) ?? [:]
    let id = ObjectID(entityName: row.text(1), storeIdentifier: storeIdentifier, primaryKey: row.int64(2))
    return (row.int64(0), HistoryChange(objectID: id, changeType: type, updatedProperties: properties, tombstone: tombstone))
  }

  /// Appends each of `changes` to the transaction of its sequence among `transactions`, in order.
  package static func attach(
    _ changes: [(sequence: Int64, change: HistoryChange)], to transactions: inout [HistoryTransaction]
  ) {
    var position: [Int64: Int] = [:]
    for (index, transaction) in transactions.enumerated() { position[transaction.token.sequence] = index }
    for (sequence, change) in changes {
      if let index = position[sequence] { transactions[index].changes.append(change) }
    }
  }
}
