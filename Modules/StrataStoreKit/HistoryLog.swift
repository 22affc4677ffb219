import Foundation

/// What every backend's persistent history shares: what one transaction records, how a
/// `HistoryRequest` is checked and answered, and which transactions a deletion removes. A backend
/// only stores and reads transactions in sequence order; the rules live here, once.
///
/// ```swift
/// let changes = HistoryLog.changes(of: storeChange, changeSet: changes, tombstones: tombstones, model: model)
/// let start = try HistoryLog.startSequence(of: request, storeIdentifier: identifier, purgedThrough: purged)
/// return try HistoryLog.answer(request, transactions: storedAfter(start))
/// ```
public enum HistoryLog {
  /// The fields a history predicate may read: `author`, `contextName` (strings, optional), `timestamp`
  /// (a date) and `processID` (an integer). Anything else is `.invalidQuery` naming the key.
  public static let transactionEntityName = "HistoryTransaction"

  private static let transactionEntity = EntityDescription(
    name: transactionEntityName,
    attributes: [
      AttributeDescription(name: "author", type: .string, isOptional: true),
      AttributeDescription(name: "contextName", type: .string, isOptional: true),
      AttributeDescription(name: "timestamp", type: .date),
      AttributeDescription(name: "processID", type: .int32),
    ])

  // MARK: Recording

  /// The process ID recorded with every transaction.
  ///
  /// ```swift
  /// HistoryTransaction(token: token, timestamp: Date(), author: nil, contextName: nil, processID: HistoryLog.processID, changes: [])
  /// ```
  public static var processID: Int32 { getpid() }

  /// Whether deleting an object of `entityName` records a tombstone (some attribute of it is marked
  /// `preservesValueInHistoryOnDeletion`), so a store reads the object before deleting it only then.
  ///
  /// ```swift
  /// if HistoryLog.recordsTombstone(id.entityName, model: model), let old = try stored(id) { tombstones[id] = HistoryLog.tombstone(of: old, model: model) }
  /// ```
  public static func recordsTombstone(_ entityName: String, model: ObjectModel) -> Bool {
    model.entity(named: entityName)?.attributes.contains { $0.preservesValueInHistoryOnDeletion && !$0.isTransient } ?? false
  }

  /// The values of `snapshot`'s attributes marked `preservesValueInHistoryOnDeletion`, by name.
  ///
  /// ```swift
  /// HistoryLog.tombstone(of: movieSnapshot, model: model)   // ["title": "Heat"]
  /// ```
  public static func tombstone(of snapshot: Snapshot, model: ObjectModel) -> [String: Value] {
    guard let entity = model.entity(named: snapshot.objectID.entityName) else { return [:] }
    var tombstone: [String: Value] = [:]
    for (index, attribute) in entity.attributes.enumerated()
    where attribute.preservesValueInHistoryOnDeletion && !attribute.isTransient && index < snapshot.attributes.count {
      tombstone[attribute.name] = snapshot.attributes[index]
    }
    return tombstone
  }

  /// The changes one committed save records, from what it announced: inserts, updates with the keys
  /// the context changed plus the derived attributes whose recomputed value (in `recomputed`, the
  /// snapshots the store recomputed) differs from the one the change set carried, objects the save changed
  /// on its own (derived attributes recomputed, references to deleted objects cleared) with those keys,
  /// and deletes with their tombstones.
  ///
  /// ```swift
  /// let changes = HistoryLog.changes(of: storeChange, changeSet: changeSet, tombstones: [:], recomputed: [], model: model)
  /// ```
  public static func changes(
    of change: StoreChange, changeSet: ChangeSet, tombstones: [ObjectID: [String: Value]], recomputed: [Snapshot],
    model: ObjectModel
  ) -> [HistoryChange] {
    var changedKeys: [ObjectID: [String]] = [:]
    changedKeys.reserveCapacity(changeSet.updated.count)
    let recomputedByID =
      recomputed.isEmpty ? [:] : Dictionary(recomputed.map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
    for update in changeSet.updated {
      changedKeys[update.objectID] =
        update.changedKeys + derivedKeys(changedBy: recomputedByID[update.objectID], from: update, model: model)
    }
    for link in changeSet.linkChanges where !link.source.isTemporary {
      changedKeys[link.source, default: []].append(link.relationship)
    }
    for list in changeSet.orderedLists where !list.source.isTemporary {
      changedKeys[list.source, default: []].append(list.relationship)
    }
    let deletedEntities = Set(change.deleted.map(\.entityName))
    var result: [HistoryChange] = []
    result.reserveCapacity(change.inserted.count + change.updated.count + change.deleted.count)
    for id in change.inserted { result.append(HistoryChange(objectID: id, changeType: .insert)) }
    for id in change.updated {
      let keys = changedKeys[id] ?? sideEffectKeys(of: id.entityName, deletedEntities: deletedEntities, model: model)
      result.append(HistoryChange(objectID: id, changeType: .update, updatedProperties: unique(keys)))
    }
    for id in change.deleted {
      result.append(HistoryChange(objectID: id, changeType: .delete, tombstone: tombstones[id] ?? [:]))
    }
    return result
  }

  /// The changes of a batch written without a change set: every object in `updated` changed `keys`.
  ///
  /// ```swift
  /// HistoryLog.changes(inserted: [], updated: ids, keys: ["favorite"])
  /// ```
  public static func changes(inserted: [ObjectID], updated: [ObjectID], keys: [String]) -> [HistoryChange] {
    let keys = unique(keys)
    return inserted.map { HistoryChange(objectID: $0, changeType: .insert) }
      + updated.map { HistoryChange(objectID: $0, changeType: .update, updatedProperties: keys) }
  }

  /// The derived attributes whose recomputed value differs from the one the context sent.
  private static func derivedKeys(changedBy snapshot: Snapshot?, from update: ObjectChange, model: ObjectModel) -> [String] {
    guard let snapshot, let entity = model.entity(named: snapshot.objectID.entityName) else { return [] }
    return entity.attributes.indices.filter { index in
      entity.attributes[index].derivation != nil && index < snapshot.attributes.count && index < update.attributes.count
        && snapshot.attributes[index] != update.attributes[index]
    }.map { entity.attributes[$0].name }
  }

  /// What a save changed in an object it did not write: its derived attributes, and its to-one
  /// relationships to entities whose objects it deleted.
  private static func sideEffectKeys(of entityName: String, deletedEntities: Set<String>, model: ObjectModel) -> [String] {
    guard let entity = model.entity(named: entityName) else { return [] }
    return entity.attributes.filter { $0.derivation != nil }.map(\.name)
      + entity.toOneRelationships.filter { deletedEntities.contains($0.destination) }.map(\.name)
  }

  private static func unique(_ keys: [String]) -> [String] {
    var seen = Set<String>()
    return keys.filter { seen.insert($0).inserted }
  }

  // MARK: Fetching

  /// The error for a history request on a store opened without `tracksHistory`.
  ///
  /// ```swift
  /// guard options.tracksHistory else { throw HistoryLog.notTracked(storeType, path) }
  /// ```
  public static func notTracked(_ storeType: StoreType, _ location: String) -> StoreError {
    StoreError(
      .misuse,
      "the \(storeType) store \(location) was opened without history tracking; "
        + "open it with StoreOptions(tracksHistory: true) to record and read persistent history")
  }

  /// The sequence after which `request` reads (0: from the start), after checking its token.
  ///
  /// - Throws: `.historyExpired` when the token is older than the retained history (`purgedThrough`, the
  ///   last sequence a deletion removed) or comes from another store — both mean the app must refetch
  ///   everything and continue from ``PersistentStore/currentHistoryToken()``.
  ///
  /// ```swift
  /// let start = try HistoryLog.startSequence(of: request, storeIdentifier: identifier, purgedThrough: purged)
  /// ```
  public static func startSequence(of request: HistoryRequest, storeIdentifier: String, purgedThrough: Int64) throws -> Int64 {
    guard case .token(let token) = request.after else { return 0 }
    try check(token, storeIdentifier: storeIdentifier, purgedThrough: purgedThrough)
    return max(token.sequence, 0)
  }

  /// Throws `.historyExpired` for a token this store cannot continue from (see ``startSequence(of:storeIdentifier:purgedThrough:)``).
  ///
  /// ```swift
  /// try HistoryLog.check(token, storeIdentifier: identifier, purgedThrough: purged)
  /// ```
  public static func check(_ token: HistoryToken, storeIdentifier: String, purgedThrough: Int64) throws {
    guard token.storeIdentifier == storeIdentifier else {
      throw StoreError(
        .historyExpired,
        "the history token \(token) belongs to another store (this one is \(storeIdentifier)); "
          + "fetch everything again and continue from the store's currentHistoryToken()")
    }
    guard token.sequence >= purgedThrough else {
      throw StoreError(
        .historyExpired,
        "the history token \(token) has expired: history up to \(purgedThrough) was deleted; "
          + "fetch everything again and continue from the store's currentHistoryToken()")
    }
  }

  /// Checks `request`'s predicate against the transaction fields before anything is read.
  /// - Throws: `.invalidQuery` naming an unknown key or a type mismatch.
  ///
  /// ```swift
  /// try HistoryLog.check(HistoryRequest(predicate: try QueryPredicate(format: "colour == 'red'")))   // throws
  /// ```
  public static func check(_ request: HistoryRequest) throws {
    _ = try evaluator(request.predicate)
  }

  /// Answers `request` from `transactions` (with changes, in sequence order, after its start sequence):
  /// the date cutoff, the predicate and the result type are applied here.
  ///
  /// ```swift
  /// return try HistoryLog.answer(request, transactions: stored.filter { $0.token.sequence > start })
  /// ```
  public static func answer(_ request: HistoryRequest, transactions: [HistoryTransaction]) throws -> HistoryResult {
    let evaluator = try evaluator(request.predicate)
    var matching: [HistoryTransaction] = []
    for transaction in transactions {
      if case .date(let date) = request.after, transaction.timestamp <= date { continue }
      if let evaluator, try !evaluator.evaluate(snapshot(of: transaction), source: NoRelatedObjects()) { continue }
      matching.append(transaction)
    }
    switch request.resultType {
    case .count: return .count(matching.count)
    case .transactionsOnly:
      return .transactions(
        matching.map { transaction in
          var bare = transaction
          bare.changes = []
          return bare
        })
    case .transactionsAndChanges: return .transactions(matching)
    }
  }

  private static func evaluator(_ predicate: QueryPredicate?) throws -> PredicateEvaluator? {
    guard let predicate else { return nil }
    let model = try ObjectModel(entities: [transactionEntity])
    return try PredicateEvaluator(predicate, entity: transactionEntity, model: model)
  }

  private static func snapshot(of transaction: HistoryTransaction) -> Snapshot {
    Snapshot(
      objectID: ObjectID(
        entityName: transactionEntityName, storeIdentifier: transaction.token.storeIdentifier,
        primaryKey: transaction.token.sequence),
      version: 1,
      attributes: AttributeValues(
        [
          transaction.author.map(Value.string) ?? .null, transaction.contextName.map(Value.string) ?? .null,
          .date(transaction.timestamp), .int(Int64(transaction.processID)),
        ], layout: transactionEntity.valueLayout),
      toOne: [])
  }

  private struct NoRelatedObjects: EvaluationSource {
    func snapshot(for id: ObjectID) throws -> Snapshot? { nil }
    func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] { [] }
  }

  // MARK: Deleting

  /// Whether a deletion before `cutoff` removes the transaction numbered `sequence`, committed at
  /// `timestamp`: a token removes the transactions before it (not its own), a date those committed before it.
  ///
  /// ```swift
  /// transactions.removeAll { HistoryLog.deletes(sequence: $0.token.sequence, timestamp: $0.timestamp, before: cutoff) }
  /// ```
  public static func deletes(sequence: Int64, timestamp: Date, before cutoff: HistoryCutoff) -> Bool {
    switch cutoff {
    case .token(let token): sequence < token.sequence
    case .date(let date): timestamp < date
    }
  }

  /// Refuses a deletion before a token of another store (`.invalidQuery`: deleting by it would guess).
  ///
  /// ```swift
  /// try HistoryLog.checkDeletion(before: cutoff, storeIdentifier: identifier)
  /// ```
  public static func checkDeletion(before cutoff: HistoryCutoff, storeIdentifier: String) throws {
    if case .token(let token) = cutoff, token.storeIdentifier != storeIdentifier {
      throw StoreError(
        .invalidQuery,
        "cannot delete history before \(token): the token belongs to another store (this one is \(storeIdentifier))")
    }
  }
}
