import Foundation
import StrataMemory
import StrataPostgres
import StrataStoreKit
import Testing

/// Studio (name unique, every attribute type) and Note (no constraint).
private func catalogue() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Studio",
      attributes: [
        AttributeDescription(name: "name", type: .string),
        AttributeDescription(name: "country", type: .string, defaultValue: .string("JP")),
        AttributeDescription(name: "founded", type: .int32, isOptional: true),
        AttributeDescription(name: "score", type: .double, isOptional: true),
        AttributeDescription(name: "opened", type: .date, isOptional: true),
        AttributeDescription(name: "logo", type: .data, isOptional: true),
        AttributeDescription(name: "tag", type: .uuid, isOptional: true),
        AttributeDescription(name: "budget", type: .decimal, isOptional: true),
        AttributeDescription(name: "active", type: .bool, isOptional: true),
      ],
      uniquenessConstraints: [["name"]]),
    EntityDescription(
      name: "Note",
      attributes: [
        AttributeDescription(name: "text", type: .string),
        AttributeDescription(name: "weight", type: .double, isOptional: true),
      ]),
  ])
}

private let awkward = "tab\there, new\nline, back\\slash, cr\r, quote ' \" and \\N"

/// The rows of the upsert: two names stored already, one named twice, one new with every type.
private let upsertRows: [[String: Value]] = [
  ["name": "Ghibli", "founded": .int(1985)],
  ["name": .string(awkward), "score": .double(0.1), "logo": .data(Data([0, 9, 10, 13, 92, 255]))],
  ["name": "A24", "score": .double(-1e-300), "opened": .date(Date(timeIntervalSinceReferenceDate: 123.456789))],
  ["name": .string(awkward), "founded": .int(-2012), "tag": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)],
  ["name": "Toei", "budget": .decimal(Decimal(string: "1234567.891")!), "active": .bool(true), "score": .double(.infinity)],
]

@Suite("PostgreSQL batch inserts")
struct PostgresBatchInsertTests {
  /// Runs the same seed save and batch on `store`; returns the batch's result and every Studio sorted by name.
  private func upsert(on store: any PersistentStore) throws -> (BatchResult, [Snapshot]) {
    let seed = ["Ghibli", "Toei"].map { name in
      ObjectChange(
        objectID: .makeTemporary(entityName: "Studio"),
        attributes: [.string(name), "FR", .int(1), .double(2), .null, .null, .null, .null, .bool(false)], toOne: [])
    }
    _ = try store.save(ChangeSet(inserted: seed))
    let result = try store.execute(
      .insert(BatchInsertDescription(entityName: "Studio", objects: upsertRows, resultType: .objectIDs)), author: "batch",
      contextName: nil)
    guard case .snapshots(let all) = try store.fetch(FetchDescription(entityName: "Studio"), generation: nil) else {
      return (result, [])
    }
    return (result, all.sorted { $0.attributes[0].description < $1.attributes[0].description })
  }

  @Test func anUpsertWritesWhatTheMemoryStoreWrites() throws {
    _ = try PostgresTestServer.uri()
    let model = try catalogue()
    let postgres = try PostgresStore(
      url: PostgresTestServer.freshLocation(), model: model, options: StoreOptions(tracksHistory: true))
    defer { postgres.close() }
    let memory = MemoryStore(model: model, options: StoreOptions(tracksHistory: true))
    let before = try postgres.currentHistoryToken()
    let (result, studios) = try upsert(on: postgres)
    let (expected, expectedStudios) = try upsert(on: memory)
    #expect(studios.map(\.attributes) == expectedStudios.map(\.attributes))
    #expect(studios.map(\.version) == expectedStudios.map(\.version))
    #expect(result.count == expected.count)
    #expect(result.objectIDs.map(\.primaryKey) == expected.objectIDs.map(\.primaryKey))
    #expect(result.updatedObjectIDs.map(\.primaryKey) == expected.updatedObjectIDs.map(\.primaryKey))
    guard case .transactions(let later) = try postgres.fetchHistory(HistoryRequest(after: before.map { .token($0) })),
      let batch = later.last
    else {
      Issue.record("expected history")
      return
    }
    #expect(batch.author == "batch")
    #expect(batch.changes.filter { $0.changeType == .insert }.count == result.count - result.updatedObjectIDs.count)
    #expect(Set(batch.changes.filter { $0.changeType == .update }.map(\.objectID)) == Set(result.updatedObjectIDs))
  }

  @Test func plainInsertsGoThroughCopyWithRisingKeys() throws {
    _ = try PostgresTestServer.uri()
    let model = try catalogue()
    let store = try PostgresStore(url: PostgresTestServer.freshLocation(), model: model)
    defer { store.close() }
    let rows: [[String: Value]] = (0..<2_500).map {
      ["text": .string("note \($0) \(awkward)"), "weight": .double(Double($0) / 7)]
    }
    let counter = Locked(0)
    let result = try store.execute(
      .insert(
        BatchInsertDescription(entityName: "Note", resultType: .objectIDs) { row in
          let index = counter.withLock { value in
            defer { value += 1 }
            return value
          }
          guard index < rows.count else { return true }
          row = rows[index]
          return false
        }), author: nil, contextName: nil)
    let keys = result.objectIDs.compactMap(\.primaryKey)
    #expect(keys.count == rows.count)
    #expect(keys == keys.sorted() && Set(keys).count == keys.count)
    let stored = try store.snapshots(for: Array(result.objectIDs.prefix(3)) + [result.objectIDs[rows.count - 1]], generation: nil)
      .sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
    #expect(stored.map(\.attributes) == ([0, 1, 2, rows.count - 1]).map { [rows[$0]["text"]!, rows[$0]["weight"]!] })
    #expect(stored.allSatisfy { $0.version == 1 })
  }

  @Test func aRefusedRowWritesNothing() throws {
    _ = try PostgresTestServer.uri()
    let store = try PostgresStore(url: PostgresTestServer.freshLocation(), model: try catalogue())
    defer { store.close() }
    #expect(throws: StoreError.self) {
      try store.execute(
        .insert(BatchInsertDescription(entityName: "Studio", objects: [["name": "Ok"], ["founded": .int(3)]])),
        author: nil, contextName: nil)
    }
    #expect(throws: StoreError.self) {
      try store.execute(
        .insert(
          BatchInsertDescription(entityName: "Studio", objects: [["name": "Ok"], ["name": "Big", "founded": .int(1 << 40)]])),
        author: nil, contextName: nil)
    }
    #expect(try store.count(FetchDescription(entityName: "Studio")) == 0)
  }

  @Test func concurrentUpsertsOfTheSameKeysNeitherFailNorDuplicate() async throws {
    let uri = try PostgresTestServer.uri()
    _ = uri
    let location = PostgresTestServer.freshLocation()
    let model = try catalogue()
    let first = try PostgresStore(url: location, model: model)
    defer { first.close() }
    let stores = try [first] + (1..<4).map { _ in try PostgresStore(url: location, model: model) }
    defer { for store in stores.dropFirst() { store.close() } }
    let names = (0..<300).map { "studio \($0)" }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for (index, store) in stores.enumerated() {
        group.addTask {
          for round in 0..<3 {
            let rows: [[String: Value]] = names.shuffled().map {
              ["name": .string($0), "founded": .int(Int64(index * 10 + round))]
            }
            _ = try store.execute(
              .insert(BatchInsertDescription(entityName: "Studio", objects: rows)), author: nil, contextName: nil)
          }
        }
      }
      try await group.waitForAll()
    }
    #expect(try first.count(FetchDescription(entityName: "Studio")) == names.count)
    guard case .snapshots(let all) = try first.fetch(FetchDescription(entityName: "Studio"), generation: nil) else { return }
    // Every batch wrote every name once: 1 insert then 11 updates.
    #expect(all.map(\.version).allSatisfy { $0 == Int64(stores.count * 3) })
  }
}
