import Foundation
import Strata
import StrataStoreKit

/// How many times the object graph called each read of a store: the way the suite checks that batch
/// faulting and prefetching cost one store call per batch or hop, not one per object.
public final class StoreCallCounts: Sendable {
  private let counts = Locked<[String: Int]>([:])

  /// Counts starting at zero.
  public init() {}

  func record(_ call: String) { counts.withLock { $0[call, default: 0] += 1 } }

  /// Calls of `fetch(_:generation:)` or `fetchSnapshots(_:generation:_:)`, `snapshots(for:generation:)` and
  /// `relatedObjectIDs(of:relationship:generation:)` since the last ``reset()``.
  public var fetches: Int { counts.withLock { $0["fetch", default: 0] } }
  /// Calls of `snapshots(for:generation:)` or `snapshot(for:generation:)` since the last ``reset()``.
  public var snapshotReads: Int { counts.withLock { $0["snapshots", default: 0] } }
  /// Calls of `relatedObjectIDs(of:relationship:generation:)` since the last ``reset()``.
  public var relationshipReads: Int { counts.withLock { $0["related", default: 0] } }
  /// Every read call.
  public var reads: Int { fetches + snapshotReads + relationshipReads }

  /// Sets every count back to zero.
  public func reset() { counts.withLock { $0 = [:] } }
}

/// A store that forwards everything to another one and counts its reads.
final class CountingStore: PersistentStore {
  let inner: any PersistentStore
  let counts: StoreCallCounts

  init(_ inner: any PersistentStore, counts: StoreCallCounts) {
    self.inner = inner
    self.counts = counts
  }

  var storeType: StoreType { inner.storeType }
  var identifier: String { inner.identifier }
  var url: URL? { inner.url }
  var model: ObjectModel { inner.model }
  var options: StoreOptions { inner.options }

  func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    counts.record("fetch")
    return try inner.fetch(request, generation: generation)
  }

  /// Forwarded, so that a counted store streams as the store it wraps does (the protocol's default
  /// collects through `fetch`); one call counts as one fetch either way.
  func fetchSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws {
    counts.record("fetch")
    try inner.fetchSnapshots(request, generation: generation, body)
  }

  func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    counts.record("snapshots")
    return try inner.snapshots(for: ids, generation: generation)
  }

  /// Counted as a call of `snapshots(for:generation:)`, which it answers for one ID.
  func snapshot(for id: ObjectID, generation: QueryGeneration?) throws -> Snapshot? {
    counts.record("snapshots")
    return try inner.snapshot(for: id, generation: generation)
  }

  func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    counts.record("related")
    return try inner.relatedObjectIDs(of: id, relationship: relationship, generation: generation)
  }

  func save(_ changes: ChangeSet) throws -> SaveResult { try inner.save(changes) }
  func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    try inner.execute(request, author: author, contextName: contextName)
  }
  func currentHistoryToken() throws -> HistoryToken? { try inner.currentHistoryToken() }
  func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult { try inner.fetchHistory(request) }
  func deleteHistory(before cutoff: HistoryCutoff) throws -> Int { try inner.deleteHistory(before: cutoff) }
  func pinGeneration() throws -> QueryGeneration { try inner.pinGeneration() }
  func unpin(_ generation: QueryGeneration) { inner.unpin(generation) }
  func changes() -> AsyncStream<StoreChange> { inner.changes() }
  func close() { inner.close() }
}

/// Opens the wrapped factory's stores inside a ``CountingStore``.
struct CountingStoreFactory: PersistentStoreFactory {
  let inner: any PersistentStoreFactory
  let counts: StoreCallCounts

  var storeType: StoreType { inner.storeType }
  var requiresLocation: Bool { inner.requiresLocation }

  func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    CountingStore(try inner.openStore(at: url, model: model, options: options), counts: counts)
  }

  func destroyStore(at url: URL) throws { try inner.destroyStore(at: url) }
}

extension ConformanceBackend {
  /// A loaded container over a fresh store holding the sample data, whose store reads are counted.
  func countedSampleContainer() throws -> (PersistentContainer, StoreCallCounts) {
    let counts = StoreCallCounts()
    let counted = ConformanceBackend(factory: CountingStoreFactory(inner: factory, counts: counts), location: location)
    let (container, _) = try counted.sampleContainer()
    counts.reset()
    return (container, counts)
  }
}
