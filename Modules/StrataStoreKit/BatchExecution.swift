import Foundation

extension PersistentStore {
  /// Runs a batch insert, update or delete as one ``ChangeSet`` saved in one transaction (see
  /// ``BatchExecution``), recorded in history under `author` and `contextName`.
  public func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    try BatchExecution(store: self, author: author, contextName: contextName).execute(request)
  }
}

/// Batch updates and deletes in terms of the store contract, so every backend runs them alike: the
/// matching objects are read, the new state is worked out, and one ``ChangeSet`` is saved — all of it or
/// none of it. Every change carries the version it was computed from, so a concurrent write to one of
/// the objects makes the batch fail with `.optimisticLockConflict` instead of overwriting it.
///
/// - Update: each property is set to a constant or an expression of the object's own values
///   (`specialCount + 1`), converted to the attribute's type; nil into a non-optional attribute, a value
///   that does not fit, a relationship or transient key are errors. As in Core Data, validation bounds
///   are not checked. Derived attributes cannot be set; the store recomputes them, and those of other
///   objects reading the updated ones (`BatchResult.recomputedObjectIDs`).
/// - Delete: delete rules are honoured — `cascade` deletes the targets too (recursively), `nullify` and
///   `noAction` leave the targets (whose references the store clears), `deny` fails the whole batch with
///   `.deleteDenied` when the object still has targets that are not deleted with it. The result lists
///   every deleted object, cascaded ones included, so contexts can forget all of them.
///
/// ```swift
/// let result = try store.execute(.update(
///   entityName: "Venue", predicate: nil,
///   propertiesToUpdate: ["favorite": .constant(true), "specialCount": try QueryExpression(format: "specialCount + 1")]))
/// result.count   // objects updated
/// ```
public struct BatchExecution<Store: PersistentStore> {
  let store: Store
  /// Recorded in persistent history with the batch's change set.
  let author: String?
  let contextName: String?

  /// The batch runner over `store`, for a store that runs some batches natively and the rest here;
  /// `author` and `contextName` go with its change set into persistent history.
  ///
  /// ```swift
  /// try BatchExecution(store: self, author: author, contextName: contextName).execute(request)
  /// ```
  public init(store: Store, author: String? = nil, contextName: String? = nil) {
    self.store = store
    self.author = author
    self.contextName = contextName
  }

  /// Runs `request` as one change set saved to the store, and reports what its result type asks.
  public func execute(_ request: BatchRequest) throws -> BatchResult {
    switch request {
    case .insert(let insert):
      return try self.insert(insert)
    case .update(let entityName, let predicate, let properties, let type):
      return try update(entityName, predicate, properties).reported(as: type)
    case .delete(let entityName, let predicate, let type):
      _ = try store.model.requireEntity(entityName)
      var request = FetchDescription(entityName: entityName, predicate: predicate)
      request.resultType = .objectIDs
      guard case .objectIDs(let ids) = try store.fetch(request, generation: nil) else { return BatchResult(count: 0) }
      return try delete(ids).reported(as: type)
    case .deleteObjects(let ids, let type):
      return try delete(ids).reported(as: type)
    }
  }

  private func update(
    _ entityName: String, _ predicate: QueryPredicate?, _ properties: [String: QueryExpression]
  ) throws
    -> BatchResult
  {
    let model = store.model
    let entity = try model.requireEntity(entityName)
    var assignments: [(index: Int, attribute: AttributeDescription, value: ComputedExpression)] = []
    for (key, expression) in properties.sorted(by: { $0.key < $1.key }) {
      guard let index = entity.attributes.firstIndex(where: { $0.name == key }) else {
        let what = entity.relationship(named: key) == nil ? "has no attribute" : "has a relationship, not an attribute,"
        throw StoreError(
          .invalidQuery, "\(entity.name) \(what) '\(key)'; a batch update sets attributes only", entity: entity.name, key: key)
      }
      let attribute = entity.attributes[index]
      if attribute.isTransient {
        throw StoreError(
          .invalidQuery, "\(entity.name).\(key) is transient and not stored; a batch update cannot set it",
          entity: entity.name, key: key)
      }
      if let derivation = attribute.derivation {
        throw StoreError(
          .invalidQuery,
          "\(entity.name).\(key) is derived from '\(derivation)'; the store computes it, a batch update cannot set it",
          entity: entity.name, key: key)
      }
      let (checked, _) = try QueryValidator.checkExpression(expression, entity: entity, model: model)
      assignments.append((index, attribute, try ComputedExpression(checked, entity: entity, model: model)))
    }
    guard
      case .snapshots(let snapshots) = try store.fetch(
        FetchDescription(entityName: entityName, predicate: predicate), generation: nil)
    else { return BatchResult(count: 0) }
    let source = StoreEvaluationSource(store: store)
    var changes: [ObjectChange] = []
    changes.reserveCapacity(snapshots.count)
    let keys = assignments.map(\.attribute.name)
    for snapshot in snapshots {
      var attributes = snapshot.attributes
      for assignment in assignments {
        let converted = try Self.assignable(
          try assignment.value.value(snapshot, source), to: assignment.attribute, of: entity.name, object: snapshot.objectID)
        attributes[assignment.index] = converted
      }
      changes.append(
        ObjectChange(
          objectID: snapshot.objectID, attributes: attributes, toOne: snapshot.toOne, expectedVersion: snapshot.version,
          changedKeys: keys))
    }
    let saved = try store.save(ChangeSet(updated: changes, author: author, contextName: contextName))
    let ids = changes.map(\.objectID)
    return BatchResult(
      count: changes.count, objectIDs: ids, historyToken: saved.historyToken,
      recomputedObjectIDs: Self.recomputed(saved, besides: ids))
  }

  /// `value` as a batch update stores it in `attribute`: converted to the attribute's type (numbers
  /// truncated to integers), or a `.validation` error when it cannot be, or when it is nil and the
  /// attribute is not optional. A store with a native batch path enforces the same rules as it writes
  /// (SQLite: in SQL) and falls back here to report a refusal, so the error is this one.
  public static func assignable(
    _ value: Value, to attribute: AttributeDescription, of entity: String, object: ObjectID
  )
    throws -> Value
  {
    guard
      let converted = attribute.type.coerce(value) ?? attribute.type.coerce(DictionaryFetch.converted(value, to: attribute.type))
    else {
      throw StoreError(
        .validation, "\(entity).\(attribute.name) is a \(attribute.type.rawValue) and cannot hold \(value)",
        entity: entity, key: attribute.name, value: value)
    }
    if converted.isNull && !attribute.isOptional {
      throw StoreError(
        .validation, "\(entity).\(attribute.name) is not optional; the batch update would set it to nil for \(object)",
        entity: entity, key: attribute.name)
    }
    return converted
  }

  private func delete(_ ids: [ObjectID]) throws -> BatchResult {
    let model = store.model
    var order: [ObjectID] = []
    var versions: [ObjectID: Int64] = [:]
    var denied: [(owner: ObjectID, relationship: RelationshipDescription, targets: [ObjectID])] = []
    var queue = ids
    var position = 0
    while position < queue.count {
      let batch = Array(queue[position...])
      position = queue.count
      for snapshot in try store.snapshots(for: batch.filter { versions[$0] == nil }, generation: nil)
      where versions[snapshot.objectID] == nil {
        versions[snapshot.objectID] = snapshot.version
        order.append(snapshot.objectID)
        let entity = try model.requireEntity(snapshot.objectID.entityName)
        for rel in entity.relationships where rel.deleteRule == .cascade || rel.deleteRule == .deny {
          let targets: [ObjectID]
          if rel.isToMany {
            targets = try store.relatedObjectIDs(of: snapshot.objectID, relationship: rel.name, generation: nil)
          } else {
            let index = entity.toOneRelationships.firstIndex { $0.name == rel.name }
            targets = index.flatMap { snapshot.toOne.indices.contains($0) ? snapshot.toOne[$0] : nil }.map { [$0] } ?? []
          }
          if rel.deleteRule == .cascade {
            queue += targets
          } else if !targets.isEmpty {
            denied.append((snapshot.objectID, rel, targets))
          }
        }
      }
    }
    for (owner, rel, targets) in denied {
      let remaining = targets.filter { versions[$0] == nil }
      guard remaining.isEmpty else {
        throw StoreError(
          .deleteDenied,
          "cannot delete \(owner.entityName) \(owner): its '\(rel.name)' relationship still holds \(remaining.count) \(rel.destination) object\(remaining.count == 1 ? "" : "s") and its delete rule is deny; nothing was deleted",
          entity: owner.entityName, key: rel.name)
      }
    }
    guard !order.isEmpty else { return BatchResult(count: 0) }
    let deletions = order.map { ObjectDeletion(objectID: $0, expectedVersion: versions[$0]) }
    let saved = try store.save(ChangeSet(deleted: deletions, author: author, contextName: contextName))
    return BatchResult(
      count: order.count, objectIDs: order, historyToken: saved.historyToken,
      recomputedObjectIDs: Self.recomputed(saved, besides: order))
  }

  /// The objects besides `ids` whose derived attributes the save recomputed, in a stable order.
  private static func recomputed(_ saved: SaveResult, besides ids: [ObjectID]) -> [ObjectID] {
    guard !saved.storedSnapshots.isEmpty else { return [] }
    let own = Set(ids)
    return saved.storedSnapshots.keys.filter { !own.contains($0) }.sorted { $0.description < $1.description }
  }
}

/// Reads a store for the evaluator, one object or relationship at a time.
struct StoreEvaluationSource<Store: PersistentStore>: EvaluationSource {
  let store: Store

  func snapshot(for id: ObjectID) throws -> Snapshot? {
    try store.snapshots(for: [id], generation: nil).first
  }

  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    try store.relatedObjectIDs(of: id, relationship: relationship.name, generation: nil)
  }
}
