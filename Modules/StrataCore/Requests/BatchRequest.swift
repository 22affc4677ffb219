import Foundation

/// A request a store runs in one transaction without loading objects into a context.
public enum BatchRequest: Sendable, Hashable {
  /// Inserts rows given as dictionaries (attribute name → value) or made by a handler. With a uniqueness
  /// constraint, a row whose key exists updates the stored object instead (upsert).
  case insert(BatchInsertDescription)
  /// Sets properties of every object matching a predicate; values are expressions (`specialCount + 1`).
  case update(
    entityName: String, predicate: QueryPredicate?, propertiesToUpdate: [String: QueryExpression],
    resultType: BatchResultType = .objectIDs)
  /// Deletes every object matching a predicate, applying delete rules.
  case delete(entityName: String, predicate: QueryPredicate?, resultType: BatchResultType = .objectIDs)
  /// Deletes the given objects, applying delete rules.
  case deleteObjects([ObjectID], resultType: BatchResultType = .objectIDs)

  /// Inserts `objects`, one dictionary per row (upserting on uniqueness constraints).
  ///
  /// ```swift
  /// try store.execute(.insert(entityName: "Studio", objects: [["name": "Ghibli"]], resultType: .count)).count   // 1
  /// ```
  public static func insert(
    entityName: String, objects: [[String: Value]], resultType: BatchResultType = .statusOnly
  )
    -> BatchRequest
  {
    .insert(BatchInsertDescription(entityName: entityName, objects: objects, resultType: resultType))
  }

  /// What the result of this request reports.
  public var resultType: BatchResultType {
    switch self {
    case .insert(let insert): insert.resultType
    case .update(_, _, _, let type), .delete(_, _, let type), .deleteObjects(_, let type): type
    }
  }
}

/// What a batch request reports: only whether it ran, also how many objects it wrote, or also their IDs.
public enum BatchResultType: String, Sendable, Hashable {
  /// `statusOnly`: only whether it ran; `count`: also how many objects; `objectIDs`: also which.
  case statusOnly, count, objectIDs
}

/// The answer to a ``BatchRequest``.
public struct BatchResult: Sendable, Hashable {
  /// Whether the request ran.
  public var succeeded: Bool
  /// How many objects it inserted, updated or deleted.
  public var count: Int
  /// The objects it inserted, updated or deleted (with result type ``BatchResultType/objectIDs``).
  public var objectIDs: [ObjectID]
  /// For a batch insert: the objects of ``objectIDs`` that existed and were updated (upserted).
  public var updatedObjectIDs: [ObjectID]
  /// For a batch insert with a uniqueness constraint: stored objects whose rows gave only the values they
  /// already held. Nothing was written for them (no version bump, no history), and they are not in
  /// ``objectIDs`` or ``count``. Reported with ``BatchResultType/objectIDs`` only.
  ///
  /// ```swift
  /// let rows: [[String: Value]] = [["name": "Ghibli"]]
  /// _ = try store.execute(.insert(entityName: "Studio", objects: rows, resultType: .objectIDs))
  /// let again = try store.execute(.insert(entityName: "Studio", objects: rows, resultType: .objectIDs))
  /// again.count                      // 0: nothing written
  /// again.unchangedObjectIDs.count   // 1
  /// ```
  public var unchangedObjectIDs: [ObjectID]
  /// The history token of the transaction, when history tracking is on.
  public var historyToken: HistoryToken?
  /// Other objects whose derived attributes the request changed (the list of an updated item, say).
  public var recomputedObjectIDs: [ObjectID]

  /// A result; stores build it, apps read it.
  public init(
    succeeded: Bool = true, count: Int, objectIDs: [ObjectID] = [], historyToken: HistoryToken? = nil,
    recomputedObjectIDs: [ObjectID] = [], updatedObjectIDs: [ObjectID] = [], unchangedObjectIDs: [ObjectID] = []
  ) {
    self.succeeded = succeeded
    self.updatedObjectIDs = updatedObjectIDs
    self.unchangedObjectIDs = unchangedObjectIDs
    self.count = count
    self.objectIDs = objectIDs
    self.historyToken = historyToken
    self.recomputedObjectIDs = recomputedObjectIDs
  }
}

extension BatchResult {
  /// The result as `type` asks: `.statusOnly` keeps only ``succeeded`` (and the history token), `.count`
  /// also ``count``, `.objectIDs` everything.
  ///
  /// ```swift
  /// BatchResult(count: 2, objectIDs: ids).reported(as: .count).objectIDs   // []
  /// ```
  public func reported(as type: BatchResultType) -> BatchResult {
    switch type {
    case .objectIDs: return self
    case .count: return BatchResult(succeeded: succeeded, count: count, historyToken: historyToken)
    case .statusOnly: return BatchResult(succeeded: succeeded, count: 0, historyToken: historyToken)
    }
  }
}
