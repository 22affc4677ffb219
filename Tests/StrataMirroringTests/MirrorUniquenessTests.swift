import Foundation
import Strata
import StrataLMDB
import StrataMemory
import StrataMirroring
import StrataPostgresHub
import StrataSQLite
import Testing

final class Variety: ManagedObject {
  @Attribute(.unique) var name: String
  @Attribute var rating: Int64
  @Relationship(inverse: "variety", deleteRule: .cascade) var notes: Set<VarietyNote>
}

final class VarietyNote: ManagedObject {
  @Attribute var text: String
  @Relationship(inverse: "notes") var variety: Variety?
}

let varietyModel: ObjectModel = {
  do {
    return try MirrorModel.adding(to: ObjectModel(Variety.self, VarietyNote.self))
  } catch {
    preconditionFailure("the test model is invalid: \(error)")
  }
}()

/// A replica of the varieties model.
struct VarietyReplica {
  let container: PersistentContainer
  let mirror: StoreMirror
  var context: ObjectContext { container.viewContext }

  init(
    _ store: ReplicaStore, hub: any MirrorHub, in directory: URL, name: String, pullBatchSize: Int = 500,
    pulledChangesPerSave: Int = 2_000
  ) throws {
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory(), LMDBStoreFactory()])
    container = PersistentContainer(
      name: name, model: varietyModel, types: [Variety.self, VarietyNote.self], registry: registry)
    let options = StoreOptions(tracksHistory: true)
    let url = directory.appending(path: "\(name).\(store.rawValue)")
    container.storeDescriptions = [
      store == .memory
        ? StoreDescription(type: .memory, options: options)
        : StoreDescription(type: StoreType(store.rawValue), url: url, options: options)
    ]
    try container.loadPersistentStores()
    mirror = try StoreMirror(
      container: container, hub: hub, pullBatchSize: pullBatchSize, pulledChangesPerSave: pulledChangesPerSave)
  }

  @discardableResult
  func add(_ name: String, rating: Int64, note: String) throws -> Variety {
    let variety = Variety(context: context)
    variety.name = name
    variety.rating = rating
    let written = VarietyNote(context: context)
    written.text = note
    written.variety = variety
    try context.save()
    return variety
  }

  /// name → (rating, sorted note texts), read afresh.
  func contents() throws -> [String: (Int64, [String])] {
    context.refreshAllObjects()
    var result: [String: (Int64, [String])] = [:]
    for variety in try context.fetch(FetchRequest<Variety>()) {
      #expect(result[variety.name] == nil, "\(variety.name) is there twice")
      result[variety.name] = (variety.rating, variety.notes.map(\.text).sorted())
    }
    return result
  }
}

/// Uniqueness across replicas: two replicas that create the same unique key offline end with one object
/// everywhere, the hub included, with the relationships of both.
@Suite("Mirror uniqueness across replicas")
struct MirrorUniquenessTests {
  enum Hub: String, CaseIterable, Sendable { case memory, postgres }

  /// A fresh hub of `kind` and a way to read its live objects.
  static func make(_ kind: Hub) throws -> (any MirrorHub, () throws -> [UUID: HubLedger.Object]) {
    switch kind {
    case .memory:
      let hub = MemoryHub(model: varietyModel)
      return (hub, { hub.ledger.liveObjects })
    case .postgres:
      let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
      let hub = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: String(schema), model: varietyModel)
      return (hub, { try hub.liveObjects() })
    }
  }

  /// Two hubs on one store of `kind`: for PostgreSQL, two `PostgresHub`s on one schema, so that each push
  /// after the other's reads the hub's objects afresh (its index of unique keys built from them).
  static func makeTwo(_ kind: Hub) throws -> (any MirrorHub, any MirrorHub, () throws -> [UUID: HubLedger.Object]) {
    switch kind {
    case .memory:
      let (hub, liveObjects) = try make(kind)
      return (hub, hub, liveObjects)
    case .postgres:
      let schema = String("mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20))
      let first = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: schema, model: varietyModel)
      let second = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: schema, model: varietyModel)
      return (first, second, { try first.liveObjects() })
    }
  }

  /// The hub finds a duplicate's survivor by its key among many, and a key that was changed or deleted
  /// names nothing any more: every note ends on the variety of its own name, on the hub and on the replica
  /// that pulls (a look-up that picked another variety, or a key's former holder, would move notes to it).
  /// The duplicates are pushed by hand as replica B's creations, through a second hub (for PostgreSQL, one
  /// that reads the hub's objects afresh and builds its index of unique keys from them).
  @Test(arguments: Hub.allCases)
  func aDuplicateMergesIntoTheObjectHoldingItsKeyNow(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (hubA, hubB, liveObjects) = try Self.makeTwo(kind)
    let a = try VarietyReplica(.sqlite, hub: hubA, in: directory, name: "a")
    var kestrel: Variety?
    var cara: Variety?
    for (rating, name) in ["Agria", "Cara", "Desiree", "Kestrel", "Maris"].enumerated() {
      let variety = try a.add(name, rating: Int64(rating + 1), note: "a's \(name)")
      if name == "Kestrel" { kestrel = variety }
      if name == "Cara" { cara = variety }
    }
    _ = try await a.mirror.sync()
    let renamed = try #require(kestrel)
    renamed.name = "Kerr's Pink"
    a.context.delete(try #require(cara))
    try a.context.save()
    let base = try await a.mirror.sync()
    #expect(base.pushed == 1)

    var changes: [MirrorChange] = []
    for name in ["Maris", "Desiree", "Kestrel", "Cara", "Kerr's Pink"] {
      let variety = UUID()
      changes.append(
        MirrorChange(
          globalID: variety, entityName: "Variety", kind: .insert,
          fields: ["name": .value(.string(name)), "rating": .value(.int(0))]))
      changes.append(
        MirrorChange(
          globalID: UUID(), entityName: "VarietyNote", kind: .insert,
          fields: ["text": .value(.string("b's \(name)")), "variety": .reference(variety)]))
    }
    _ = try await hubB.push(MirrorTransaction(replicaID: UUID(), localSequence: 1, basePosition: 0, changes: changes))
    _ = try await a.mirror.sync()

    let expected: [String: [String]] = [
      "Agria": ["a's Agria"], "Desiree": ["a's Desiree", "b's Desiree"], "Maris": ["a's Maris", "b's Maris"],
      "Kerr's Pink": ["a's Kestrel", "b's Kerr's Pink"], "Kestrel": ["b's Kestrel"], "Cara": ["b's Cara"],
    ]
    let live = try liveObjects()
    let varieties = Dictionary(
      uniqueKeysWithValues: live.compactMap { id, object -> (UUID, String)? in
        guard object.entityName == "Variety", case .value(.string(let name))? = object.fields["name"] else { return nil }
        return (id, name)
      })
    var notes: [String: [String]] = [:]
    for object in live.values where object.entityName == "VarietyNote" {
      guard case .reference(let target?)? = object.fields["variety"], let name = varieties[target],
        case .value(.string(let text))? = object.fields["text"]
      else { continue }
      notes[name, default: []].append(text)
    }
    #expect(notes.mapValues { $0.sorted() } == expected, "the hub's notes by variety")
    #expect(varieties.count == expected.count)
    #expect(try a.contents().mapValues(\.1) == expected)
    #expect(try a.contents()["Desiree"]?.0 == 3 && a.contents()["Maris"]?.0 == 5, "a duplicate's default rating changes nothing")
  }

  /// A duplicate creation's base is a new object: the rating it left at its default changes nothing, so the
  /// rating the survivor's replica set stands, and no conflict is recorded.
  @Test(arguments: Hub.allCases)
  func aDuplicatesDefaultValuesNeverOverwriteTheSurvivors(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (hub, _) = try Self.make(kind)
    let a = try VarietyReplica(.sqlite, hub: hub, in: directory, name: "a")
    let b = try VarietyReplica(.lmdb, hub: hub, in: directory, name: "b")
    try a.add("Agria", rating: 4, note: "Buttery")
    try b.add("Agria", rating: 0, note: "Good mash")
    _ = try await a.mirror.sync()
    let report = try await b.mirror.sync()
    _ = try await a.mirror.sync()
    #expect(report.conflicts == 0)
    #expect(try a.contents()["Agria"]?.0 == 4 && b.contents()["Agria"]?.0 == 4)
  }

  @Test(arguments: Hub.allCases)
  func theSameUniqueKeyCreatedOnTwoReplicasIsOneObjectEverywhere(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (hub, liveObjects) = try Self.make(kind)
    let a = try VarietyReplica(.sqlite, hub: hub, in: directory, name: "a")
    let b = try VarietyReplica(.lmdb, hub: hub, in: directory, name: "b")
    try a.add("Agria", rating: 4, note: "Buttery")
    try a.add("Cara", rating: 2, note: "Waxy")
    try b.add("Agria", rating: 1, note: "Good mash")

    _ = try await a.mirror.sync()
    let report = try await b.mirror.sync()
    #expect(report.conflicts == 1, "the rating both set is recorded")
    _ = try await a.mirror.sync()

    let expected = try a.contents()
    #expect(expected["Agria"]?.0 == 1, "the later push wins the rating")
    #expect(expected["Agria"]?.1 == ["Buttery", "Good mash"])
    #expect(expected.count == 2)
    let other = try b.contents()
    #expect(other.mapValues(\.0) == expected.mapValues(\.0) && other.mapValues(\.1) == expected.mapValues(\.1))
    let live = try liveObjects().values
    #expect(live.count { $0.entityName == "Variety" } == 2)
    #expect(live.count { $0.entityName == "VarietyNote" } == 3)
    let survivor = try #require(try liveObjects().first { $0.value.fields["name"] == .value(.string("Agria")) }?.key)
    #expect(live.filter { $0.entityName == "VarietyNote" }.count { $0.fields["variety"] == .reference(survivor) } == 2)

    // The merged object keeps working under its survivor's name: b's later edits and deletes reach a.
    let agria = try #require(try b.context.fetch(FetchRequest<Variety>()).first { $0.name == "Agria" })
    agria.rating = 5
    try b.context.save()
    _ = try await b.mirror.sync()
    _ = try await a.mirror.sync()
    #expect(try a.contents()["Agria"]?.0 == 5)
    b.context.delete(agria)
    try b.context.save()
    _ = try await b.mirror.sync()
    _ = try await a.mirror.sync()
    #expect(try a.contents()["Agria"] == nil)
    #expect(try a.contents().keys.sorted() == ["Cara"])
    #expect(try liveObjects().values.count { $0.entityName == "VarietyNote" } == 1)
  }

  @Test func aPulledObjectTakesOverALocalOneWithTheSameKeyNotPushedYet() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let hub = MemoryHub(model: varietyModel)
    let interrupted = InterruptingHub(hub: hub)
    let a = try VarietyReplica(.memory, hub: hub, in: directory, name: "a")
    let b = try VarietyReplica(.sqlite, hub: interrupted, in: directory, name: "b")
    try a.add("Agria", rating: 4, note: "Buttery")
    _ = try await a.mirror.sync()
    // b creates the same key between its push and its pull: the pulled Agria meets a local one.
    interrupted.beforeNextPull {
      try b.context.performAndWait { _ = try b.add("Agria", rating: 2, note: "Floury") }
    }
    _ = try await b.mirror.sync()
    _ = try await b.mirror.sync()
    _ = try await a.mirror.sync()
    let expected = try a.contents()
    #expect(expected.count == 1 && expected["Agria"]?.1 == ["Buttery", "Floury"])
    let other = try b.contents()
    #expect(other.mapValues(\.0) == expected.mapValues(\.0) && other.mapValues(\.1) == expected.mapValues(\.1))
    #expect(hub.ledger.liveObjects.values.count { $0.entityName == "Variety" } == 1)
  }

  /// A pulled insert takes over only a local object whose own insert the hub has not acknowledged: a, which
  /// created Kestrel and renamed it, replays on b (which never pulled before) as an insert of Kestrel while
  /// b's acknowledged Kestrel holds the key, then as its rename. b keeps its own Kestrel, and the two
  /// objects hold the key together only inside the pull's unsaved changes: b pulls one entry per request
  /// and saves after every change, unless a pulled key collides, so the collision spans pulls and saves.
  @Test(arguments: Hub.allCases)
  func aPulledInsertNeverTakesOverAnAcknowledgedObjectHoldingItsOldKey(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (hub, liveObjects) = try Self.make(kind)
    let a = try VarietyReplica(.sqlite, hub: hub, in: directory, name: "a")
    let b = try VarietyReplica(.lmdb, hub: hub, in: directory, name: "b", pullBatchSize: 1, pulledChangesPerSave: 1)
    let kestrel = try a.add("Kestrel", rating: 3, note: "a's")
    _ = try await a.mirror.sync()
    kestrel.name = "Kerr's Pink"
    try a.context.save()
    _ = try await a.mirror.sync()
    try b.add("Kestrel", rating: 5, note: "b's")
    let report = try await b.mirror.sync()
    #expect(report.pushed == 1 && report.pulled == 2)
    _ = try await a.mirror.sync()

    let expected = try a.contents()
    #expect(expected.mapValues(\.0) == ["Kerr's Pink": 3, "Kestrel": 5])
    #expect(expected.mapValues(\.1) == ["Kerr's Pink": ["a's"], "Kestrel": ["b's"]])
    let other = try b.contents()
    #expect(other.mapValues(\.0) == expected.mapValues(\.0) && other.mapValues(\.1) == expected.mapValues(\.1))
    let names = try liveObjects().values.compactMap { object -> String? in
      guard object.entityName == "Variety", case .value(.string(let name))? = object.fields["name"] else { return nil }
      return name
    }
    #expect(names.sorted() == ["Kerr's Pink", "Kestrel"])
  }
}
