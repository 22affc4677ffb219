import Foundation
internal import StrataStoreKit

/// What a child context sees as its store: its parent context's objects as they are now. Reads answer
/// with the parent's current values (its unsaved changes included); a save applies the change set to
/// the parent's objects, leaving them unsaved there. Everything else (batch requests, history, query
/// generations, change streams) goes to the store beneath.
final class ParentContextStore: PersistentStore, @unchecked Sendable {
  let parent: ObjectContext
  /// The child context reading through this store (used on the child's queue only).
  weak var child: ObjectContext?
  /// How many of the parent's former temporary IDs the child has taken.
  private var seenFormerTemporaryIDs = 0

  init(parent: ObjectContext) {
    self.parent = parent
  }

  /// Runs `body` on the parent's queue; then, before the child uses the answer, gives the child's objects
  /// the permanent IDs the parent has saved them under since the child last asked.
  private func withParent<T>(_ body: () throws -> T) rethrows -> T {
    var saved: [ObjectID: ObjectID] = [:]
    let result = try parent.performAndWait {
      let result = try body()
      saved = parent.formerTemporaryIDs(after: &seenFormerTemporaryIDs)
      return result
    }
    if !saved.isEmpty { child?.adoptPermanentIDs(saved) }
    return result
  }

  private var root: any PersistentStore {
    get throws { try parent.requireStore() }
  }

  var storeType: StoreType { (try? root.storeType) ?? StoreType("parent") }
  var identifier: String { (try? root.identifier) ?? "" }
  var url: URL? { try? root.url }
  var model: ObjectModel { parent.coordinator.model }
  var options: StoreOptions { (try? root.options) ?? StoreOptions() }

  func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    if request.resultType == .dictionaries { return try root.fetch(request, generation: generation) }
    return try withParent {
      let typed = FetchRequest<ManagedObject>(request)
      switch request.resultType {
      case .count: return .count(try parent.count(for: typed))
      case .objectIDs: return .objectIDs(try parent.fetchObjectIDs(typed))
      case .snapshots, .dictionaries: return .snapshots(try parent.fetchObjects(typed).map { parent.currentSnapshot(of: $0) })
      }
    }
  }

  func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    try withParent { try parent.currentSnapshots(for: ids, generation: generation) }
  }

  func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    try withParent { try parent.currentRelatedObjectIDs(of: id, relationship: relationship, generation: generation) }
  }

  func save(_ changes: ChangeSet) throws -> SaveResult {
    try withParent { try parent.apply(changes) }
  }

  func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    try root.execute(request, author: author, contextName: contextName)
  }
  func currentHistoryToken() throws -> HistoryToken? { try root.currentHistoryToken() }
  func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult { try root.fetchHistory(request) }
  func deleteHistory(before cutoff: HistoryCutoff) throws -> Int { try root.deleteHistory(before: cutoff) }
  func pinGeneration() throws -> QueryGeneration { try root.pinGeneration() }
  func unpin(_ generation: QueryGeneration) { try? root.unpin(generation) }
  func changes() -> AsyncStream<StoreChange> {
    (try? root.changes()) ?? AsyncStream { $0.finish() }
  }
  func close() {}
}

extension ObjectContext {
  /// Applies a child context's save to this context's objects: inserts become inserted objects here (with
  /// the child's temporary IDs), updates set the changed properties, deletes delete. Nothing is saved.
  /// A temporary ID of an object this context has saved since names that object.
  func apply(_ changes: ChangeSet) throws -> SaveResult {
    let model = coordinator.model
    var inserted: [(ManagedObject, ObjectChange)] = []
    for change in changes.inserted {
      guard let info = coordinator.info(forEntity: change.objectID.entityName) else {
        throw StoreError(.invalidQuery, "the model has no entity '\(change.objectID.entityName)'", entity: change.objectID.entityName)
      }
      let object = info.objectClass.init(
        .managed(info, self, change.objectID, isInserted: true))
      registerInserted(object)
      for (i, attribute) in info.entity.attributes.enumerated() where attribute.derivation == nil && i < change.attributes.count {
        object.setAttribute(change.attributes[i], index: i)
      }
      inserted.append((object, change))
    }
    for (object, change) in inserted {
      guard let entity = object.info?.entity else { continue }
      for (i, rel) in entity.toOneRelationships.enumerated() where i < change.toOne.count {
        if let target = change.toOne[i] { setRelationship(object, rel, targets: [self.object(with: target)]) }
      }
    }
    var versions: [ObjectID: Int64] = [:]
    for change in changes.updated {
      let object = self.object(with: change.objectID)
      guard let entity = object.info?.entity else { continue }
      object.fireFault()
      for key in change.changedKeys {
        switch entity.property(named: key) {
        case .attribute(let attribute, let index) where attribute.derivation == nil && index < change.attributes.count:
          object.setAttribute(change.attributes[index], index: index)
        case .toOne(let rel, let index) where index < change.toOne.count:
          setRelationship(object, rel, targets: change.toOne[index].map { [self.object(with: $0)] } ?? [])
        default:
          continue
        }
      }
      versions[object.objectID] = object.snapshot?.version
    }
    for link in changes.linkChanges {
      guard let rel = model.entity(named: link.entityName)?.relationship(named: link.relationship) else { continue }
      let source = object(with: link.source)
      let target = resolvingFormerTemporaryID(link.target)
      var targets = Set(currentTargets(of: source, rel).map(\.objectID))
      if link.isInsertion { targets.insert(target) } else { targets.remove(target) }
      setRelationship(source, rel, targets: targets.map { object(with: $0) })
    }
    for deletion in changes.deleted {
      delete(object(with: deletion.objectID))
    }
    processPendingChanges()
    return SaveResult(versions: versions)
  }
}
