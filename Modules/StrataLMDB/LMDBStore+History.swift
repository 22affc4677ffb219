import CLMDB
import Foundation
import StrataStoreKit

/// Persistent history in the `strata.history` database: one entry per transaction, keyed by its
/// sequence (8 bytes, big-endian with the sign bit flipped, like primary keys: byte order is sequence
/// order), holding the transaction in a compact binary form (``HistoryCodec``). `strata.meta` keeps `history_last_sequence` (the
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
    try txn.put(history, primaryKey: sequence, try HistoryCodec.encode(transaction))
    try setNumber(txn, schema, lastKey, sequence)
    return token
  }

  /// Every transaction after `sequence`, in order.
  static func transactions(
    after sequence: Int64, _ txn: LMDBTransaction, _ history: MDB_dbi, storeIdentifier: String
  ) throws
    -> [HistoryTransaction]
  {
    try txn.withCursor(history) { cursor in
      var result: [HistoryTransaction] = []
      var entry = try cursor.seek(KeyCoding.primaryKeyBytes(sequence + 1), exact: false)
      while let (key, value) = entry {
        let token = HistoryToken(storeIdentifier: storeIdentifier, sequence: try KeyCoding.primaryKey(key))
        result.append(try HistoryCodec.decode(value, token: token))
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
        return try LMDBHistory.transactions(after: start, txn, history, storeIdentifier: identifier)
      }
    }
    return try HistoryLog.answer(request, transactions: transactions)
  }

  /// Deletes history before a token or date in one write transaction (see ``PersistentStore/deleteHistory(before:)``).
  ///
  /// ```swift
  /// let removed = try store.deleteHistory(before: .token(processed))
  /// ```
  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    let history = try historyDatabase()
    try HistoryLog.checkDeletion(before: cutoff, storeIdentifier: identifier)
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    let schema = self.schema
    let identifier = self.identifier
    saveLock.lock()
    defer { saveLock.unlock() }
    return try lmdb {
      try environment.write { txn -> Int in
        var doomed: [Int64] = []
        for transaction in try LMDBHistory.transactions(after: 0, txn, history, storeIdentifier: identifier)
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
  ///
  /// ```swift
  /// let token = try store.currentHistoryToken()
  /// ```
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

/// The stored form of one history transaction: a format byte, the timestamp (8 bytes), the process ID,
/// author and context name, then per change the entity name, primary key, kind, updated property names
/// and the tombstone (JSON of its values, empty when there is none). Strings and lists are length-prefixed
/// varints, as in records (``RecordCodec``).
enum HistoryCodec {
  static let format: UInt8 = 1
  private static let kinds: [HistoryChangeType] = [.insert, .update, .delete]

  static func encode(_ transaction: HistoryTransaction) throws -> [UInt8] {
    var buffer: [UInt8] = [format]
    buffer.reserveCapacity(32 + transaction.changes.count * 16)
    withUnsafeBytes(of: transaction.timestamp.timeIntervalSinceReferenceDate.bitPattern.littleEndian) {
      buffer.append(contentsOf: $0)
    }
    RecordCodec.appendVarint(RecordCodec.zigzag(Int64(transaction.processID)), to: &buffer)
    for text in [transaction.author, transaction.contextName] {
      buffer.append(text == nil ? 0 : 1)
      if let text { appendString(text, to: &buffer) }
    }
    RecordCodec.appendVarint(UInt64(transaction.changes.count), to: &buffer)
    let encoder = JSONEncoder()
    var lastEntity = ""
    for change in transaction.changes {
      // The entity name is written when it differs from the previous change's (changes come grouped).
      if change.objectID.entityName == lastEntity {
        buffer.append(0)
      } else {
        buffer.append(1)
        lastEntity = change.objectID.entityName
        appendString(lastEntity, to: &buffer)
      }
      RecordCodec.appendVarint(RecordCodec.zigzag(change.objectID.primaryKey ?? 0), to: &buffer)
      buffer.append(UInt8(kinds.firstIndex(of: change.changeType) ?? 1))
      RecordCodec.appendVarint(UInt64(change.updatedProperties.count), to: &buffer)
      for name in change.updatedProperties { appendString(name, to: &buffer) }
      let tombstone = change.tombstone.isEmpty ? Data() : try encoder.encode(change.tombstone)
      RecordCodec.appendVarint(UInt64(tombstone.count), to: &buffer)
      buffer.append(contentsOf: tombstone)
    }
    return buffer
  }

  static func decode(_ bytes: UnsafeRawBufferPointer, token: HistoryToken) throws -> HistoryTransaction {
    let corrupted = StoreError(.corrupted, "the history transaction \(token) is damaged")
    var reader = RecordReader(bytes: bytes)
    guard reader.byte() == format, let time = reader.fixed64(), let pid = reader.varint() else { throw corrupted }
    var texts: [String?] = []
    for _ in 0..<2 {
      guard let present = reader.byte() else { throw corrupted }
      if present == 0 {
        texts.append(nil)
      } else {
        guard let text = reader.string() else { throw corrupted }
        texts.append(text)
      }
    }
    guard let count = reader.varint(), count <= UInt64(reader.remaining) else { throw corrupted }
    let decoder = JSONDecoder()
    var changes: [HistoryChange] = []
    changes.reserveCapacity(Int(count))
    var scope: ObjectID?
    for _ in 0..<count {
      guard let hasEntity = reader.byte() else { throw corrupted }
      if hasEntity == 1 {
        guard let name = reader.string() else { throw corrupted }
        scope = ObjectID(entityName: name, storeIdentifier: token.storeIdentifier, primaryKey: 0)
      }
      guard let scope, let pk = reader.varint(), let kind = reader.byte(), Int(kind) < kinds.count,
        let propertyCount = reader.varint(), propertyCount <= UInt64(reader.remaining)
      else { throw corrupted }
      var properties: [String] = []
      for _ in 0..<propertyCount {
        guard let name = reader.string() else { throw corrupted }
        properties.append(name)
      }
      guard let tombstoneBytes = reader.slice() else { throw corrupted }
      let tombstone = tombstoneBytes.isEmpty ? [:] : try decoder.decode([String: Value].self, from: Data(tombstoneBytes))
      changes.append(
        HistoryChange(
          objectID: scope.withPrimaryKey(RecordCodec.unzigzag(pk)), changeType: kinds[Int(kind)],
          updatedProperties: properties, tombstone: tombstone))
    }
    return HistoryTransaction(
      token: token, timestamp: Date(timeIntervalSinceReferenceDate: Double(bitPattern: time)), author: texts[0],
      contextName: texts[1], processID: Int32(truncatingIfNeeded: RecordCodec.unzigzag(pid)), changes: changes)
  }

  private static func appendString(_ text: String, to buffer: inout [UInt8]) {
    text.withUTF8Contents { utf8 in
      RecordCodec.appendVarint(UInt64(utf8.count), to: &buffer)
      buffer.append(contentsOf: utf8)
    }
  }
}
