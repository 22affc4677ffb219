import Foundation
import StrataStoreKit

/// A store that keeps everything in memory, with the same semantics as the file stores: atomic saves,
/// uniqueness constraints, optimistic locking, the shared query evaluator, query generations and change
/// notifications. Used for previews and fast tests; a test that passes here must pass on SQLite.
///
/// State is an immutable value swapped under a lock: a save builds the next state on a copy and swaps it
/// in only when everything checks out, so a failed save leaves the store exactly as it was, and a pinned
/// query generation simply keeps the value it pinned.
///
/// ```swift
/// let store = try MemoryStore(model: model)
/// let result = try store.save(ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Movie"),
///                                                              attributes: ["Heat"], toOne: [nil])]))
/// let movies = try store.fetch(FetchDescription(entityName: "Movie"), generation: nil)
/// ```
public final class MemoryStore: PersistentStore {
  public let storeType = StoreType.memory
  public let identifier: String
  /// Always `nil`: a memory store has no file.
  public let url: URL? = nil
  public let model: ObjectModel
  public let options: StoreOptions

  struct Storage: Sendable {
    var state = MemoryState()
    var pinned: [UInt64: MemoryState] = [:]
    var lastGeneration: UInt64 = 0
    var isClosed = false
    /// Persistent history, written under the same lock as `state` by the same save.
    var history = MemoryHistory()
  }

  let storage = Locked(Storage())
  let broadcaster = ChangeBroadcaster()

  /// Creates an empty store for `model`.
  ///
  /// - Parameter identifier: the store identifier, part of every permanent object ID; a new UUID string
  ///   by default (pass a fixed one for deterministic fixtures).
  public init(model: ObjectModel, options: StoreOptions = .init(), identifier: String = UUID().uuidString) {
    self.model = model
    self.options = options
    self.identifier = identifier
  }

  /// The state a read sees: the pinned one for `generation`, else the current one.
  /// - Throws: `.misuse` when the store is closed or `generation` is not pinned in this store.
  func readState(_ generation: QueryGeneration?) throws -> MemoryState {
    let identifier = self.identifier
    return try storage.withLock { storage throws(StoreError) -> MemoryState in
      guard !storage.isClosed else { throw StoreError(.misuse, "the memory store \(identifier) is closed") }
      guard let generation else { return storage.state }
      guard generation.storeIdentifier == identifier, let state = storage.pinned[generation.id] else {
        throw StoreError(.misuse, "query generation \(generation.id) is not pinned in the memory store \(identifier)")
      }
      return state
    }
  }

  /// The stored snapshots of `ids`; temporary IDs, IDs of other stores and deleted objects are omitted.
  public func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    let state = try readState(generation)
    return ids.compactMap { state.snapshot(for: $0, storeIdentifier: identifier) }
  }

  /// The targets of `relationship` of `id`, in primary-key order: from the inverse's foreign keys, or from
  /// the join table for many-to-many relationships and to-many relationships without an inverse.
  /// - Throws: `.notFound` for an unknown entity or relationship; `.misuse` when closed.
  ///
  /// ```swift
  /// let books = try store.relatedObjectIDs(of: authorID, relationship: "books", generation: nil)
  /// ```
  public func relatedObjectIDs(
    of id: ObjectID, relationship: String, generation: QueryGeneration?
  ) throws
    -> [ObjectID]
  {
    let state = try readState(generation)
    guard let entity = model.entity(named: id.entityName) else {
      throw StoreError(.notFound, "\(id) names unknown entity '\(id.entityName)'", entity: id.entityName)
    }
    guard let rel = entity.relationship(named: relationship) else {
      throw StoreError(
        .notFound, "\(entity.name) has no relationship '\(relationship)'", entity: entity.name, key: relationship)
    }
    return state.relatedObjectIDs(of: id, relationship: rel, model: model, storeIdentifier: identifier)
  }

  /// Keeps the current state for reads given the returned generation (an immutable value: no copying).
  public func pinGeneration() throws -> QueryGeneration {
    let identifier = self.identifier
    return try storage.withLock { storage throws(StoreError) -> QueryGeneration in
      guard !storage.isClosed else { throw StoreError(.misuse, "the memory store \(identifier) is closed") }
      storage.lastGeneration += 1
      storage.pinned[storage.lastGeneration] = storage.state
      return QueryGeneration(storeIdentifier: identifier, id: storage.lastGeneration)
    }
  }

  /// Releases the state kept for `generation`; later reads with it throw `.misuse`.
  public func unpin(_ generation: QueryGeneration) {
    guard generation.storeIdentifier == identifier else { return }
    storage.withLock { _ = $0.pinned.removeValue(forKey: generation.id) }
  }

  /// A stream yielding one ``StoreChange`` per committed save, in commit order; it finishes on ``close()``.
  public func changes() -> AsyncStream<StoreChange> {
    // Registering under the lock means a concurrent close() either finishes this stream or precedes it.
    storage.withLock { storage in
      storage.isClosed ? AsyncStream { $0.finish() } : broadcaster.stream()
    }
  }

  /// Drops the contents and finishes every change stream. Later calls throw `.misuse`.
  public func close() {
    storage.withLock { storage in
      storage.isClosed = true
      storage.state = MemoryState()
      storage.pinned = [:]
    }
    broadcaster.finish()
  }
}
