import Foundation

/// A request a store runs in one transaction without loading objects into a context.
public enum BatchRequest: Sendable, Hashable {
  /// Inserts rows given as dictionaries (attribute name → value). With a uniqueness constraint,
  /// a row whose key exists updates the stored object instead (upsert).
  case insert(entityName: String, objects: [[String: Value]])
  /// Sets properties of every object matching a predicate; values are expressions (`specialCount + 1`).
  case update(entityName: String, predicate: QueryPredicate?, propertiesToUpdate: [String: QueryExpression])
  /// Deletes every object matching a predicate, applying delete rules.
  case delete(entityName: String, predicate: QueryPredicate?)
  /// Deletes the given objects, applying delete rules.
  case deleteObjects([ObjectID])
}

/// What a batch request reports.
public enum BatchResultType: String, Sendable, Hashable {
  case statusOnly, count, objectIDs
}

/// The answer to a ``BatchRequest``.
public struct BatchResult: Sendable, Hashable {
  /// Whether the request ran.
  public var succeeded: Bool
  /// How many objects it inserted, updated or deleted.
  public var count: Int
  /// The objects it inserted, updated or deleted.
  public var objectIDs: [ObjectID]
  /// The history token of the transaction, when history tracking is on.
  public var historyToken: HistoryToken?
  /// Other objects whose derived attributes the request changed (the list of an updated item, say).
  public var recomputedObjectIDs: [ObjectID]

  public init(
    succeeded: Bool = true, count: Int, objectIDs: [ObjectID] = [], historyToken: HistoryToken? = nil,
    recomputedObjectIDs: [ObjectID] = []
  ) {
    self.succeeded = succeeded
    self.count = count
    self.objectIDs = objectIDs
    self.historyToken = historyToken
    self.recomputedObjectIDs = recomputedObjectIDs
  }
}
