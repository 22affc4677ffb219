import Foundation
internal import StrataStoreKit

/// A request for a store's persistent history, run with ``ObjectContext/execute(_:)-(PersistentHistoryRequest)``
/// — Strata's `NSPersistentHistoryChangeRequest`. The store must be opened with `tracksHistory`.
///
/// ```swift
/// var request = PersistentHistoryRequest.fetchHistory(after: lastToken)
/// try request.setPredicate(format: "author != %@", "importer")
/// if case .transactions(let transactions) = try context.execute(request) {
///   for transaction in transactions {
///     ObjectContext.mergeChanges(fromRemoteContextSave: transaction.objectIDNotification(), into: [viewContext])
///   }
///   lastToken = transactions.last?.token ?? lastToken
/// }
/// let pruned = try context.execute(.deleteHistory(before: lastToken))     // .deleted(n)
/// ```
public struct PersistentHistoryRequest: Sendable, Hashable {
  /// What the request does.
  public enum Action: Sendable, Hashable {
    /// Fetch transactions after a point (`nil`: all retained history).
    case fetch(after: HistoryCutoff?)
    /// Delete transactions before a point.
    case delete(before: HistoryCutoff)
  }

  /// Whether the request fetches or deletes, and from or up to where.
  public var action: Action
  /// Limits fetched transactions by their fields: `author`, `contextName`, `timestamp`, `processID`.
  public var predicate: QueryPredicate?
  /// What a fetch returns: transactions with their changes (the default), transactions only, or a count.
  public var resultType: HistoryRequest.ResultType

  /// A request from its parts; the static constructors below read better.
  ///
  /// ```swift
  /// let request = PersistentHistoryRequest(action: .fetch(after: nil), resultType: .count)
  /// ```
  public init(action: Action, predicate: QueryPredicate? = nil, resultType: HistoryRequest.ResultType = .transactionsAndChanges) {
    self.action = action
    self.predicate = predicate
    self.resultType = resultType
  }

  /// The transactions after `token`; `nil` fetches all retained history.
  ///
  /// ```swift
  /// let request = PersistentHistoryRequest.fetchHistory(after: try container.currentPersistentHistoryToken())
  /// ```
  public static func fetchHistory(after token: HistoryToken?) -> PersistentHistoryRequest {
    PersistentHistoryRequest(action: .fetch(after: token.map(HistoryCutoff.token)))
  }

  /// The transactions committed after `date`.
  ///
  /// ```swift
  /// let lastHour = PersistentHistoryRequest.fetchHistory(after: Date().addingTimeInterval(-3600))
  /// ```
  public static func fetchHistory(after date: Date) -> PersistentHistoryRequest {
    PersistentHistoryRequest(action: .fetch(after: .date(date)))
  }

  /// The transactions after `transaction`.
  ///
  /// ```swift
  /// if let last = transactions.last { request = .fetchHistory(after: last) }
  /// ```
  public static func fetchHistory(after transaction: HistoryTransaction) -> PersistentHistoryRequest {
    fetchHistory(after: transaction.token)
  }

  /// Deletes the transactions before `token` (the token's own transaction stays).
  ///
  /// ```swift
  /// try context.execute(.deleteHistory(before: processedToken))
  /// ```
  public static func deleteHistory(before token: HistoryToken) -> PersistentHistoryRequest {
    PersistentHistoryRequest(action: .delete(before: .token(token)))
  }

  /// Deletes the transactions committed before `date`.
  ///
  /// ```swift
  /// try context.execute(.deleteHistory(before: Date().addingTimeInterval(-7 * 86_400)))
  /// ```
  public static func deleteHistory(before date: Date) -> PersistentHistoryRequest {
    PersistentHistoryRequest(action: .delete(before: .date(date)))
  }

  /// Sets ``predicate`` from an NSPredicate-style format string over the transaction fields.
  ///
  /// ```swift
  /// try request.setPredicate(format: "author != %@ AND processID == %d", "importer", 42)
  /// ```
  /// - Throws: `.invalidQuery` when the format does not parse (an unknown key is reported when the request runs).
  public mutating func setPredicate(format: String, _ arguments: any PredicateArgument...) throws {
    predicate = try QueryPredicate(format: format, argumentArray: arguments)
  }
}

/// The answer to a ``PersistentHistoryRequest``.
///
/// ```swift
/// switch try context.execute(request) {
/// case .transactions(let transactions): print(transactions.count, "transactions")
/// case .count(let n): print(n, "transactions")
/// case .deleted(let n): print(n, "transactions deleted")
/// }
/// ```
public enum PersistentHistoryResult: Sendable, Hashable {
  /// The fetched transactions, in token order.
  case transactions([HistoryTransaction])
  /// How many transactions a fetch with result type `HistoryRequest.ResultType.count` matched.
  case count(Int)
  /// How many transactions a delete removed.
  case deleted(Int)
}

extension ObjectContext {
  /// Runs a persistent-history request against the context's store.
  ///
  /// ```swift
  /// let result = try context.execute(.fetchHistory(after: lastToken))
  /// ```
  ///
  /// - Throws: `.historyExpired` when the token is older than the retained history or from another store
  ///   (refetch everything, then continue from `currentHistoryToken()`); `.invalidQuery` for a predicate
  ///   key other than `author`, `contextName`, `timestamp`, `processID`; `.misuse` without history tracking.
  public func execute(_ request: PersistentHistoryRequest) throws -> PersistentHistoryResult {
    checkQueue()
    let store = try requireStore()
    switch request.action {
    case .delete(let cutoff):
      return .deleted(try store.deleteHistory(before: cutoff))
    case .fetch(let after):
      switch try store.fetchHistory(HistoryRequest(after: after, predicate: request.predicate, resultType: request.resultType)) {
      case .transactions(let transactions): return .transactions(transactions)
      case .count(let count): return .count(count)
      }
    }
  }
}

extension HistoryTransaction {
  /// The transaction as a did-save value, to merge into live contexts with
  /// ``ObjectContext/mergeChanges(fromRemoteContextSave:into:)`` (Core Data's `objectIDNotification()`).
  ///
  /// ```swift
  /// ObjectContext.mergeChanges(fromRemoteContextSave: transaction.objectIDNotification(), into: [viewContext])
  /// ```
  public func objectIDNotification() -> ContextDidSave {
    ContextDidSave(self)
  }
}

extension ContextDidSave {
  /// The objects a history transaction inserted, updated and deleted, with its context name and token.
  ///
  /// ```swift
  /// let save = ContextDidSave(transaction)
  /// ```
  public init(_ transaction: HistoryTransaction) {
    var inserted = Set<ObjectID>()
    var updated = Set<ObjectID>()
    var deleted = Set<ObjectID>()
    for change in transaction.changes {
      switch change.changeType {
      case .insert: inserted.insert(change.objectID)
      case .update: updated.insert(change.objectID)
      case .delete: deleted.insert(change.objectID)
      }
    }
    self.init(
      contextName: transaction.contextName, insertedObjectIDs: inserted, updatedObjectIDs: updated.subtracting(deleted),
      deletedObjectIDs: deleted, historyToken: transaction.token)
  }
}

extension PersistentContainer {
  /// A new stream of the store's committed transactions — this process's and, with
  /// `postsRemoteChangeNotifications`, other processes' and other store objects' on the same file —
  /// each with its history token when the store tracks history. It mirrors Core Data's
  /// `NSPersistentStoreRemoteChange` notification carrying `NSPersistentHistoryTokenKey`. Each call
  /// returns a new stream; it finishes when the store closes. Without a loaded store it finishes at once.
  ///
  /// ```swift
  /// for await change in container.persistentStoreRemoteChanges() {
  ///   guard let token = change.historyToken else { continue }
  ///   let result = try container.viewContext.execute(.fetchHistory(after: lastToken))
  ///   lastToken = token
  /// }
  /// ```
  public func persistentStoreRemoteChanges() -> AsyncStream<StoreChange> {
    guard let store = persistentStore, store.options.postsRemoteChangeNotifications else {
      return AsyncStream { $0.finish() }
    }
    return store.changes()
  }
}
