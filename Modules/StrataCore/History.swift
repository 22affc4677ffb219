import Foundation

/// An opaque, ordered position in a store's persistent history. `Codable`, so apps can persist it.
public struct HistoryToken: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
  public let storeIdentifier: String
  public let sequence: Int64

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
  case insert, update, delete
}

/// One object's change inside a ``HistoryTransaction``.
public struct HistoryChange: Sendable, Hashable {
  public var objectID: ObjectID
  public var changeType: HistoryChangeType
  /// For updates: the attributes and relationships that changed.
  public var updatedProperties: [String]
  /// For deletes: the values of attributes marked `preservesValueInHistoryOnDeletion`.
  public var tombstone: [String: Value]

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
public struct HistoryTransaction: Sendable, Hashable {
  public var token: HistoryToken
  public var timestamp: Date
  public var author: String?
  public var contextName: String?
  public var processID: Int32
  public var changes: [HistoryChange]

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
}

/// Where a history fetch starts, or where a history deletion stops.
public enum HistoryCutoff: Sendable, Hashable {
  case token(HistoryToken)
  case date(Date)
}

/// A request for persistent history.
public struct HistoryRequest: Sendable, Hashable {
  public enum ResultType: String, Sendable, Hashable {
    case transactionsAndChanges, transactionsOnly, count
  }

  /// Return transactions after this point; `nil` returns all retained history.
  public var after: HistoryCutoff?
  /// A predicate over transaction fields (`author`, `contextName`, `timestamp`, `processID`).
  public var predicate: QueryPredicate?
  public var resultType: ResultType

  public init(after: HistoryCutoff? = nil, predicate: QueryPredicate? = nil, resultType: ResultType = .transactionsAndChanges) {
    self.after = after
    self.predicate = predicate
    self.resultType = resultType
  }
}

/// The answer to a ``HistoryRequest``.
public enum HistoryResult: Sendable, Hashable {
  case transactions([HistoryTransaction])
  case count(Int)
}
