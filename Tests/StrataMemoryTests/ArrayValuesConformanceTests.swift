import Foundation
import StrataConformance
import StrataMemory
import StrataStoreKit
import Testing

/// A backend written against `[Value]`: every snapshot it hands out is rebuilt from a `[Value]` array (so its
/// values are kept in a layout made from them, not the entity's) and every change it is given is rebuilt the
/// same way before the memory store sees it. The whole conformance suite passes through this adapter.
final class ArrayValuesStore: PersistentStore {
  let inner: any PersistentStore

  init(_ inner: any PersistentStore) { self.inner = inner }

  var storeType: StoreType { .arrayValues }
  var identifier: String { inner.identifier }
  var url: URL? { inner.url }
  var model: ObjectModel { inner.model }
  var options: StoreOptions { inner.options }

  static func rebuilt(_ snapshot: Snapshot) -> Snapshot {
    let values: [Value] = snapshot.attributes.map { $0 }
    return Snapshot(objectID: snapshot.objectID, version: snapshot.version, attributes: values, toOne: snapshot.toOne)
  }

  static func rebuilt(_ change: ObjectChange) -> ObjectChange {
    let values: [Value] = change.attributes.map { $0 }
    return ObjectChange(
      objectID: change.objectID, attributes: values, toOne: change.toOne, expectedVersion: change.expectedVersion,
      changedKeys: change.changedKeys)
  }

  func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let result = try inner.fetch(request, generation: generation)
    guard case .snapshots(let rows) = result else { return result }
    return .snapshots(rows.map(Self.rebuilt))
  }

  func fetchSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws {
    try inner.fetchSnapshots(request, generation: generation) { snapshot, remaining in
      try body(Self.rebuilt(snapshot), remaining)
    }
  }

  func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    try inner.snapshots(for: ids, generation: generation).map(Self.rebuilt)
  }

  func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    try inner.relatedObjectIDs(of: id, relationship: relationship, generation: generation)
  }

  func save(_ changes: ChangeSet) throws -> SaveResult {
    var changes = changes
    changes.inserted = changes.inserted.map(Self.rebuilt)
    changes.updated = changes.updated.map(Self.rebuilt)
    return try inner.save(changes)
  }

  func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    try inner.execute(request, author: author, contextName: contextName)
  }

  func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult { try inner.fetchHistory(request) }
  func deleteHistory(before cutoff: HistoryCutoff) throws -> Int { try inner.deleteHistory(before: cutoff) }
  func currentHistoryToken() throws -> HistoryToken? { try inner.currentHistoryToken() }
  func pinGeneration() throws -> QueryGeneration { try inner.pinGeneration() }
  func unpin(_ generation: QueryGeneration) { inner.unpin(generation) }
  func changes() -> AsyncStream<StoreChange> { inner.changes() }
  func close() { inner.close() }

  func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    ArrayValuesStore(try inner.migrated(along: steps, reporting: progress))
  }

  func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    try inner.storageChanges(for: migration)
  }
}

extension StoreType {
  static let arrayValues = StoreType("array-values")
}

struct ArrayValuesStoreFactory: PersistentStoreFactory {
  let inner = MemoryStoreFactory()
  var storeType: StoreType { .arrayValues }
  var requiresLocation: Bool { inner.requiresLocation }

  func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    ArrayValuesStore(try inner.openStore(at: url, model: model, options: options))
  }

  func destroyStore(at url: URL) throws { try inner.destroyStore(at: url) }
}

let arrayValuesBackend = ConformanceBackend(
  factory: ArrayValuesStoreFactory(), capabilities: [.migration, .inheritance, .hierarchyMigration])

@Test("Conformance of a backend written against [Value]", arguments: Conformance.cases)
func arrayValuesConformance(_ check: Conformance.Case) async throws {
  try await Conformance.run(check, on: arrayValuesBackend)
}
