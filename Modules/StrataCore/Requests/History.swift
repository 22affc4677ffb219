import Foundation

/// An opaque, ordered position in a store's persistent history. `Codable`, so apps can persist it.
///
/// A token is the store's identifier and the sequence number of one history transaction (sequence numbers
/// grow by one per recorded transaction and are never reused). Keep the last token you processed and ask
/// for what came after it:
///
/// ```swift
/// let saved = try JSONEncoder().encode(token)                         // persist between launches
/// let next = try store.fetchHistory(HistoryRequest(after: .token(token)))
/// ```
public struct HistoryToken: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
  /// The identifier of the store that issued the token.
  public let storeIdentifier: String
  /// The transaction's place in that store's history: 1, 2, 3, … (never reused).
  public let sequence: Int64

  /// The token of transaction `sequence` of the store `storeIdentifier`.
  public init(storeIdentifier: String, sequence: Int64) {
    self.storeIdentifier = storeIdentifier
    self.sequence = sequence
  }

  public static func < (a: HistoryToken, b: HistoryToken) -> Bool { a.sequence < b.sequence }

  /// `STORE:SEQUENCE`, the form CLIs print and accept.
  public var description: String { "\(storeIdentifier):\(sequence)" }

  /// Parses the form produced by ``description``.
  public init?(string: String) {
    guard let colon = string.lastIndex(of: ":"), let seq = Int64(string[string.index(after: colon)...]) else {
      return nil
    }
    self.init(storeIdentifier: String(string[..<colon]), sequence: seq)
  }
}

/// The kind of one change in a history transaction.
public enum HistoryChangeType: String, Sendable, Hashable, Codable {
  /// The object was inserted (`insert`), had attributes or relationships changed (`update`), or was deleted
  /// (`delete`).
  case insert, update, delete
}

/// One object's change inside a ``HistoryTransaction``.
///
/// ```swift
/// for change in transaction.changes where change.changeType == .update {
///   print(change.objectID, change.updatedProperties)    // strata://…/Movie/p3 ["title"]
/// }
/// ```
public struct HistoryChange: Sendable, Hashable, Codable {
  /// The object changed (a permanent ID).
  public var objectID: ObjectID
  /// Whether it was inserted, updated or deleted.
  public var changeType: HistoryChangeType
  /// For updates: the attributes and relationships that changed.
  public var updatedProperties: [String]
  /// For deletes: the values of attributes marked `preservesValueInHistoryOnDeletion`.
  public var tombstone: [String: Value]

  /// A change; stores build it from a save, apps read it.
  public init(
    objectID: ObjectID, changeType: HistoryChangeType, updatedProperties: [String] = [],
    tombstone: [String: Value] = [:]
  ) {
    self.objectID = objectID
    self.changeType = changeType
    self.updatedProperties = updatedProperties
    self.tombstone = tombstone
  }
}

/// One committed save or batch request, as recorded in persistent history.
///
/// ```swift
/// if case .transactions(let transactions) = try store.fetchHistory(HistoryRequest(after: .token(last))) {
///   for transaction in transactions where transaction.author != "importer" { print(transaction.changes.count) }
/// }
/// ```
public struct HistoryTransaction: Sendable, Hashable, Codable {
  /// The transaction's place in the store's history.
  public var token: HistoryToken
  /// When the transaction was committed (the committing process's clock).
  public var timestamp: Date
  /// The saving context's `transactionAuthor` (or the author given with a batch request).
  public var author: String?
  /// The saving context's `name`.
  public var contextName: String?
  /// The ID of the process that committed the transaction (`getpid()`).
  public var processID: Int32
  /// The objects inserted, updated and deleted; empty for ``HistoryRequest/ResultType/transactionsOnly``.
  public var changes: [HistoryChange]

  /// A transaction; stores build it when they record a save, apps read it.
  public init(
    token: HistoryToken, timestamp: Date, author: String?, contextName: String?, processID: Int32,
    changes: [HistoryChange]
  ) {
    self.token = token
    self.timestamp = timestamp
    self.author = author
    self.contextName = contextName
    self.processID = processID
    self.changes = changes
  }

  /// How many of the transaction's changes are of `type`.
  ///
  /// ```swift
  /// print("\(transaction.count(of: .insert)) inserted, \(transaction.count(of: .delete)) deleted")
  /// ```
  public func count(of type: HistoryChangeType) -> Int {
    changes.count { $0.changeType == type }
  }
}

/// Where a history fetch starts, or where a history deletion stops.
///
/// ```swift
/// try store.deleteHistory(before: .date(Date().addingTimeInterval(-7 * 86_400)))   // keep a week
/// ```
public enum HistoryCutoff: Sendable, Hashable {
  /// A transaction's token: fetches start after it, deletions stop before it.
  case token(HistoryToken)
  /// A moment: fetches return what was committed after it, deletions what was committed before it.
  case date(Date)
}

/// A request for persistent history, answered in token order.
///
/// ```swift
/// let request = HistoryRequest(
///   after: .token(lastToken), predicate: try QueryPredicate(format: "author != %@", "importer"), resultType: .count)
/// ```
public struct HistoryRequest: Sendable, Hashable {
  /// What the answer holds.
  public enum ResultType: String, Sendable, Hashable {
    /// Transactions with their changes.
    case transactionsAndChanges
    /// Transactions with empty ``HistoryTransaction/changes``.
    case transactionsOnly
    /// Only how many transactions match.
    case count
  }

  /// Return transactions after this point (a token: strictly after it; a date: committed after it);
  /// `nil` returns all retained history.
  public var after: HistoryCutoff?
  /// A predicate over transaction fields (`author`, `contextName`, `timestamp`, `processID`).
  public var predicate: QueryPredicate?
  /// What the answer holds: transactions with changes (the default), transactions only, or a count.
  public var resultType: ResultType

  /// A request for the transactions after `after` (all retained history when `nil`) that match `predicate`.
  public init(after: HistoryCutoff? = nil, predicate: QueryPredicate? = nil, resultType: ResultType = .transactionsAndChanges) {
    self.after = after
    self.predicate = predicate
    self.resultType = resultType
  }
}

/// The answer to a ``HistoryRequest``.
///
/// ```swift
/// if case .count(let n) = try store.fetchHistory(HistoryRequest(resultType: .count)) { print(n) }
/// ```
public enum HistoryResult: Sendable, Hashable {
  /// The matching transactions in token order.
  case transactions([HistoryTransaction])
  /// How many transactions match (result type ``HistoryRequest/ResultType/count``).
  case count(Int)
}
