import Foundation
internal import StrataStoreKit

/// What a child context sees as its store: its parent context's objects as they are now. Reads answer
/// with the parent's current values (its unsaved changes included); a save applies the change set to
/// the parent's objects, leaving them unsaved there. Everything else (batch requests, history, query
/// generations, change streams) goes to the store beneath.
final class ParentContextStore: PersistentStore, @unchecked Sendable {
  let parent: ObjectContext
  /// The parent's permanent IDs for temporary IDs, collected with each answer until the child takes them.
  private let handover = PermanentIDHandover()

  init(parent: ObjectContext) {
    self.parent = parent
  }

  /// Runs `body` on the parent's queue and, in the same turn, collects the permanent IDs the parent has
  /// saved objects under since the last answer, for the child to take before it uses this answer.
  private func withParent<T>(_ body: () throws -> T) rethrows -> T {
    try parent.performAndWait {
      let result = try body()
      handover.collect(from: parent.formerTemporaryIDs)
      return result
    }
  }

  /// The permanent IDs (by temporary ID) collected with the answers given since the last call.
  func takePermanentIDs() -> [ObjectID: ObjectID] {
    handover.take()
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
