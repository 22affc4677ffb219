import Foundation
import Strata
import StrataStoreKit
import Testing

/// A reading of the unchanged-upserts area: unique, no derived attributes (the stores' native batch
/// insert path), values of several types.
final class Reading: ManagedObject {
  @Attribute(.unique) var code: String
  @Attribute var value: Double = 0
  @Attribute var taken: Date?
  @Attribute var note: String?
  @Attribute var count: Int32 = 1
}

/// A probe of the unchanged-upserts area: unique, with a derived attribute its rows change (the general
/// path, ``BatchExecution``).
final class Probe: ManagedObject {
  @Attribute(.unique) var serial: String
  @Attribute var name: String
  @Derived("canonical:(name)") var nameKey: String
}

/// The unchanged-upserts area's store (history tracked), its history and stored versions, and the three
/// readings its cases insert first (`rows`).
final class UpsertStore {
  static let types: [ManagedObject.Type] = [Reading.self, Probe.self]
  static let taken = Date(timeIntervalSinceReferenceDate: 733_000_000.125)
  static let rows: [[String: Value]] = [
    ["code": "r1", "value": 1.5, "taken": .date(taken), "note": "first"],
    ["code": "r2", "value": 0.1, "taken": .date(taken.addingTimeInterval(60)), "note": .null, "count": 7],
    ["code": "r3", "value": -2, "taken": .date(taken.addingTimeInterval(120))],
  ]
  let container: PersistentContainer
  let store: any PersistentStore
  let context: ObjectContext

  init(_ backend: ConformanceBackend) async throws {
    let url = try backend.makeLocation()
    container = PersistentContainer(
      name: "UnchangedUpserts", model: try ObjectModel(types: Self.types), types: Self.types,
      registry: StoreRegistry([backend.factory]))
    container.storeDescriptions = [
      StoreDescription(type: backend.factory.storeType, url: url, options: StoreOptions(tracksHistory: true))
    ]
    try await container.loadPersistentStores()
    store = try #require(container.persistentStore)
    context = container.viewContext
  }

  func transactions() throws -> [HistoryTransaction] {
    guard case .transactions(let all) = try context.execute(PersistentHistoryRequest.fetchHistory(after: nil as HistoryToken?))
    else {
      Issue.record("expected history transactions")
      return []
    }
    return all
  }

  func versions(_ entity: String) throws -> [ObjectID: Int64] {
    guard case .snapshots(let snapshots) = try store.fetch(FetchDescription(entityName: entity), generation: nil) else {
      Issue.record("expected snapshots of \(entity)")
      return [:]
    }
    return Dictionary(uniqueKeysWithValues: snapshots.map { ($0.objectID, $0.version) })
  }

  /// The three readings, inserted; their IDs.
  func insertReadings() throws -> BatchResult {
    try context.execute(BatchRequest.insert(entityName: "Reading", objects: Self.rows, resultType: .objectIDs))
  }
}

/// Upserts that change no value write nothing: a batch insert whose rows name stored objects and give
/// the values those objects hold bumps no `_version`, records no history transaction, and reports those
/// objects as unchanged (`BatchResult.unchangedObjectIDs`), outside `count` and `objectIDs` — on the
/// native path (an entity without derived attributes) and the general one. A batch mixing changed,
/// unchanged and new rows writes the changed and new ones only, and history names only those.
enum UnchangedUpsertCases {
  /// The first insert writes every row, one transaction, every version 1; the same rows again (one
  /// twice, one giving fewer attributes) write nothing and report all three unchanged.
  static func theSameRowsAgainWriteNothing(_ backend: ConformanceBackend) async throws {
    let s = try await UpsertStore(backend)
    defer { s.container.close() }
    let (store, context, rows) = (s.store, s.context, UpsertStore.rows)
    let first = try s.insertReadings()
    #expect(first.count == 3 && first.updatedObjectIDs.isEmpty && first.unchangedObjectIDs.isEmpty)
    let ids = first.objectIDs
    #expect(try s.transactions().count == 1)
    let token = try store.currentHistoryToken()
    let stored = try s.versions("Reading")
    #expect(Set(stored.values) == [1])

    // 1. The same rows again (one twice, one giving fewer attributes): nothing written, all three unchanged.
    let again = try context.execute(
      BatchRequest.insert(
        entityName: "Reading", objects: rows + [["code": "r1", "note": "first"]], resultType: .objectIDs))
    #expect(again.count == 0 && again.objectIDs.isEmpty && again.updatedObjectIDs.isEmpty)
    #expect(again.unchangedObjectIDs == ids)
    #expect(again.historyToken == nil)
    #expect(try s.versions("Reading") == stored)
    #expect(try s.transactions().count == 1)
    #expect(try store.currentHistoryToken() == token)
    let counted = try context.execute(BatchRequest.insert(entityName: "Reading", objects: rows, resultType: .count))
    #expect(counted.count == 0)
    #expect(try s.transactions().count == 1 && (try s.versions("Reading")) == stored)
  }

  /// Changed, unchanged and new rows in one batch: only the changed and the new are written.
  static func aMixedBatchWritesOnlyWhatChanged(_ backend: ConformanceBackend) async throws {
    let s = try await UpsertStore(backend)
    defer { s.container.close() }
    let (context, taken) = (s.context, UpsertStore.taken)
    let ids = try s.insertReadings().objectIDs
    let mixed = try context.execute(
      BatchRequest.insert(
        entityName: "Reading",
        objects: [
          ["code": "r1", "value": 1.5, "note": "first"],  // unchanged
          ["code": "r2", "note": "now set"],  // changed: nil → text
          ["code": "r4", "value": 4, "taken": .date(taken)],  // new
          ["code": "r3", "count": 1],  // unchanged: the default it holds
        ], resultType: .objectIDs))
    let r4 = try #require(mixed.objectIDs.last)
    #expect(mixed.count == 2 && mixed.objectIDs == [ids[1], r4] && mixed.updatedObjectIDs == [ids[1]])
    #expect(mixed.unchangedObjectIDs == [ids[0], ids[2]])
    let after = try s.versions("Reading")
    #expect(after[ids[0]] == 1 && after[ids[1]] == 2 && after[ids[2]] == 1 && after[r4] == 1)
    let history = try s.transactions()
    #expect(history.count == 2)
    let changed = Set(history.last?.changes.map(\.objectID) ?? [])
    #expect(changed == [ids[1], r4])
  }

  /// The general path (an entity whose derived attribute the rows could change) behaves alike.
  static func theGeneralPathBehavesAlike(_ backend: ConformanceBackend) async throws {
    let s = try await UpsertStore(backend)
    defer { s.container.close() }
    let context = s.context
    let probes: [[String: Value]] = [["serial": "p1", "name": "Alpha"], ["serial": "p2", "name": "Beta"]]
    let made = try context.execute(BatchRequest.insert(entityName: "Probe", objects: probes, resultType: .objectIDs))
    #expect(made.count == 2)
    let probeVersions = try s.versions("Probe")
    let before = try s.transactions().count
    let same = try context.execute(BatchRequest.insert(entityName: "Probe", objects: probes, resultType: .objectIDs))
    #expect(same.count == 0 && same.objectIDs.isEmpty && same.unchangedObjectIDs == made.objectIDs)
    #expect(try s.versions("Probe") == probeVersions && (try s.transactions().count) == before)
    let renamed = try context.execute(
      BatchRequest.insert(
        entityName: "Probe", objects: [["serial": "p1", "name": "Alpha"], ["serial": "p2", "name": "Gamma"]],
        resultType: .objectIDs))
    #expect(renamed.count == 1 && renamed.updatedObjectIDs == [made.objectIDs[1]])
    #expect(renamed.unchangedObjectIDs == [made.objectIDs[0]])
    #expect(try s.transactions().count == before + 1)
  }
}
