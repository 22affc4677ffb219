import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Synchronization
import Testing

/// The orchard model as a hub of another version holds it: `change` rewrites `entityName`'s attributes.
func orchardModel(
  changing entityName: String, _ change: ([AttributeDescription]) -> [AttributeDescription]
) throws -> ObjectModel {
  try ObjectModel(
    entities: orchardModel.entities.map { entity in
      guard entity.name == entityName else { return entity }
      return EntityDescription(
        name: entity.name, attributes: change(entity.attributes), relationships: entity.relationships,
        uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
    })
}

/// Collects a mirror's events from the moment it is made.
final class EventLog: Sendable {
  private final class Received: Sendable {
    let events = Mutex<[MirrorEvent]>([])
  }

  private let received = Received()
  private let task: Task<Void, Never>

  init(_ mirror: StoreMirror) {
    let stream = mirror.events()
    let received = self.received
    task = Task { for await event in stream { received.events.withLock { $0.append(event) } } }
  }

  deinit { task.cancel() }

  /// The events received once `count` of `kind` have arrived (or a while has passed).
  func waitFor(_ count: Int, of kind: MirrorEvent.Kind) async -> [MirrorEvent] {
    for _ in 0..<500 {
      let seen = received.events.withLock { $0 }
      if seen.count(where: { $0.kind == kind }) >= count { return seen }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return received.events.withLock { $0 }
  }
}

/// Rejections never block and are never dropped: a transaction the hub refuses is kept in the replica's
/// rejected list, later transactions go on, and a retry sends the objects' current values.
@Suite("Mirror rejections")
struct MirrorRejectionTests {
  @Test(arguments: [ReplicaStore.sqlite, .lmdb])
  func aRefusedTransactionIsListedAndTheNextOnesGoOn(_ store: ReplicaStore) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    // A hub whose model bounds apples' weight: a replica of a looser model sends one it refuses.
    let hub = MemoryHub(model: try boundedWeightModel())
    let a = try Replica(store, hub: hub, in: directory, name: "a")
    let b = try Replica(.memory, hub: hub, in: directory, name: "b")
    let events = EventLog(a.mirror)

    let gala = Apple(context: a.context)
    gala.variety = "Gala"
    gala.weight = 5000
    try a.context.save()
    let crate = Crate(context: a.context)
    crate.label = "north"
    try a.context.save()

    let report = try await a.mirror.sync()
    #expect(report == SyncReport(pushed: 1, pulled: 0, conflicts: 0, rejected: 1))
    let rejected = try a.mirror.rejected()
    #expect(rejected.count == 1)
    #expect(rejected.first?.reason.contains("Apple.weight") == true)
    #expect(rejected.first?.transaction.changes.map(\.entityName) == ["Apple"])
    let status = try a.mirror.status()
    #expect(status.pendingTransactions == 0 && status.rejectedTransactions == 1)
    let seen = await events.waitFor(1, of: .rejection)
    #expect(seen.first { $0.kind == .rejection }?.error?.contains("Apple.weight") == true)
    #expect(seen.first { $0.kind == .push }?.count == 1)

    _ = try await b.mirror.sync()
    #expect(try b.crates().map(\.label) == ["north"])
    #expect(try b.apples().isEmpty)

    // Refused again while nothing changed: still listed, with no duplicate entry.
    #expect(try await a.mirror.retryRejected().rejected == 1)
    #expect(try a.mirror.rejected().map(\.localSequence) == rejected.map(\.localSequence))

    // The user fixes the apple; the retry sends its current weight and the hub takes it.
    gala.weight = 900
    try a.context.save()
    _ = try await a.mirror.sync()
    let retried = try await a.mirror.retryRejected()
    #expect(retried.pushed == 1 && retried.rejected == 0)
    #expect(try a.mirror.rejected().isEmpty)
    _ = try await b.mirror.sync()
    #expect(try b.apples().map(\.weight) == [900])
    #expect(try a.canonicalDump() == canonicalDump(of: hub))
    #expect(try b.canonicalDump() == canonicalDump(of: hub))
  }

  @Test func aDiscardedRejectionLeavesTheListAndAnUnknownOneChangesNothing() async throws {
    let hub = MemoryHub(model: try boundedWeightModel())
    let a = try Replica(.memory, hub: hub, in: FileManager.default.temporaryDirectory, name: "a")
    let gala = Apple(context: a.context)
    gala.variety = "Gala"
    gala.weight = 5000
    try a.context.save()
    let report = try await a.mirror.sync()
    #expect(report.rejected == 1 && report.pushed == 0)
    let listed = try a.mirror.rejected()
    #expect(listed.first?.reason.contains("Apple.weight") == true)
    let sequence = try #require(listed.first?.localSequence)
    #expect(try await a.mirror.discardRejected([sequence + 1000]).isEmpty)
    #expect(try a.mirror.rejected() == listed)
    #expect(try await a.mirror.discardRejected([sequence]) == listed)
    #expect(try a.mirror.rejected().isEmpty)
    #expect(try a.mirror.status().rejectedTransactions == 0)
  }

  @Test func theLedgerRefusesATransactionOfANewerModelAndKeepsItsKeyFree() throws {
    var ledger = HubLedger(model: try orchardModel(changing: "Crate") { $0.filter { $0.name != "note" } })
    let replica = UUID()
    let pushed = MirrorTransaction(
      replicaID: replica, localSequence: 1, basePosition: 0,
      changes: [
        MirrorChange(
          globalID: UUID(), entityName: "Crate", kind: .insert,
          fields: ["label": .value(.string("north")), "note": .value(.null)])
      ])
    #expect(throws: MirrorError.self) { try ledger.apply(pushed) }
    #expect(ledger.log.isEmpty && ledger.lastPosition == 0 && ledger.liveObjects.isEmpty)
    var accepted = pushed
    accepted.changes[0].fields["note"] = nil
    #expect(try ledger.apply(accepted).wasDuplicate == false)
    let unknown = MirrorTransaction(
      replicaID: replica, localSequence: 2, basePosition: 0,
      changes: [MirrorChange(globalID: UUID(), entityName: "Barrel", kind: .insert)])
    #expect(throws: MirrorError.rejected("the hub's model has no entity Barrel (the hub's model is older)")) {
      try ledger.apply(unknown)
    }
  }

  /// The orchard's model with apples' weight at most 1000: the same fields, so not a newer version (a hub
  /// of it keeps it), and a replica of the looser model can send a weight it refuses.
  func boundedWeightModel() throws -> ObjectModel {
    try orchardModel(changing: "Apple") { attributes in
      attributes.map { attribute in
        var bounded = attribute
        if attribute.name == "weight" { bounded.validation = AttributeValidation(maximum: 1000) }
        return bounded
      }
    }
  }

  /// A PostgreSQL hub created with an older model (crates without notes) takes the newer model of the
  /// replica it admits: the replica's notes are accepted, and a replica whose hub object has the newer
  /// model gets them.
  @Test func aPostgresHubOfAnOlderModelTakesTheNewerModelOfTheReplicaItAdmits() async throws {
    let uri = try PostgresHubTests.serverURI()
    let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
    let older = try PostgresHub(
      uri: uri, schema: String(schema), model: try orchardModel(changing: "Crate") { $0.filter { $0.name != "note" } })
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let a = try Replica(.sqlite, hub: older, in: directory, name: "a")
    let crate = Crate(context: a.context)
    crate.label = "north"
    crate.note = "fragile"
    try a.context.save()
    let fuji = Apple(context: a.context)
    fuji.variety = "Fuji"
    fuji.weight = 180
    try a.context.save()

    let report = try await a.mirror.sync()
    #expect(report.pushed == 2 && report.rejected == 0)
    #expect(try older.liveObjects().values.map(\.entityName).sorted() == ["Apple", "Crate"])

    let upgraded = try PostgresHub(uri: uri, schema: String(schema), model: orchardModel)
    let b = try Replica(.lmdb, hub: upgraded, in: directory, name: "b")
    _ = try await b.mirror.sync()
    #expect(try b.crates().map(\.note) == ["fragile"])
    let hubDump = try upgraded.liveObjects().mapValues(\.fields)
    #expect(try a.canonicalDump() == hubDump)
    #expect(try b.canonicalDump() == hubDump)
  }
}
