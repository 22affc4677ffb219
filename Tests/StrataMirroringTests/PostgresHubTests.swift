import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// The scenarios against a real PostgreSQL hub (`STRATA_POSTGRES_URI`, started by scripts/postgres-server);
/// without a server they fail, never skip.
@Suite("Mirror on a PostgreSQL hub")
struct PostgresHubTests {
  static func serverURI() throws -> String {
    guard let uri = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URI"], !uri.isEmpty else {
      Issue.record(
        "no PostgreSQL test server: set STRATA_POSTGRES_URI, e.g. `dir=$(mktemp -d); export STRATA_POSTGRES_URI=$(scripts/postgres-server start $dir)`"
      )
      throw MirrorError.hubUnreachable("STRATA_POSTGRES_URI is not set")
    }
    return uri
  }

  let hub: PostgresHub
  let directory: URL
  let a: Replica
  let b: Replica

  init() throws {
    let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
    hub = try PostgresHub(uri: try Self.serverURI(), schema: String(schema), model: orchardModel)
    directory = try temporaryDirectory()
    a = try Replica(.sqlite, hub: hub, in: directory, name: "a")
    b = try Replica(.lmdb, hub: hub, in: directory, name: "b")
  }

  func syncAll() async throws {
    for replica in [a, b, a] { _ = try await replica.mirror.sync() }
  }

  func expectConverged() throws {
    let hubDump = try hub.liveObjects().mapValues(\.fields)
    #expect(try a.canonicalDump() == hubDump)
    #expect(try b.canonicalDump() == hubDump)
  }

  @discardableResult
  func seedCrate(_ label: String, apples varieties: [String] = []) async throws -> Crate {
    let crate = Crate(context: a.context)
    crate.label = label
    for variety in varieties {
      let apple = Apple(context: a.context)
      apple.variety = variety
      apple.crate = crate
    }
    try a.context.save()
    try await syncAll()
    _ = try await b.mirror.sync()
    return crate
  }

  @Test func objectsAndRelationshipsReachTheOtherReplica() async throws {
    try await seedCrate("north", apples: ["Gala", "Fuji"])
    #expect(Set(try b.crate(labelled: "north").apples.map(\.variety)) == ["Gala", "Fuji"])
    try expectConverged()
  }

  @Test func updatesOnBothSidesMergeByFieldAndTheSameFieldGoesToTheLaterPush() async throws {
    try await seedCrate("north")
    try a.crate(labelled: "north").note = "by the door"
    try a.crate(labelled: "north").label = "from a"
    try a.context.save()
    try b.crate(labelled: "north").label = "from b"
    try b.context.save()
    try await syncAll()
    a.context.refreshAllObjects()
    for replica in [a, b] {
      let crate = try replica.crate(labelled: "from b")
      #expect(crate.note == "by the door")
    }
    let conflicts = try await a.mirror.conflicts()
    #expect(conflicts.map(\.field) == ["label"])
    #expect(conflicts.first?.losingFields == ["label": .value(.string("from a"))])
    try expectConverged()
  }

  @Test func deleteWinsOverAConcurrentUpdateAndToManyAddsMerge() async throws {
    try await seedCrate("north", apples: ["Gala"])
    a.context.delete(try a.apple("Gala"))
    let fuji = Apple(context: a.context)
    fuji.variety = "Fuji"
    fuji.crate = try a.crate(labelled: "north")
    try a.context.save()
    try b.apple("Gala").weight = 999
    let honeycrisp = Apple(context: b.context)
    honeycrisp.variety = "Honeycrisp"
    honeycrisp.crate = try b.crate(labelled: "north")
    try b.context.save()
    try await syncAll()
    for replica in [a, b] {
      #expect(Set(try replica.crate(labelled: "north").apples.map(\.variety)) == ["Fuji", "Honeycrisp"])
    }
    #expect(try await b.mirror.conflicts().map(\.kind) == [.deleteVersusUpdate])
    try expectConverged()
  }

  @Test func aRetryAfterALostReplyIsAppliedOnce() async throws {
    try await seedCrate("north")
    try a.crate(labelled: "north").note = "once"
    try a.context.save()
    hub.loseReplies(1)
    await #expect(throws: MirrorError.self) { try await a.mirror.sync() }
    #expect(try a.mirror.status().pendingTransactions == 1)
    let report = try await a.mirror.sync()
    #expect(report.pushed == 1)
    #expect(try a.mirror.status().pendingTransactions == 0)
    let entries = try await hub.pull(after: 0, limit: 1000)
    let keys = entries.map { "\($0.replicaID)/\($0.localSequence)" }
    #expect(Set(keys).count == keys.count)
    _ = try await b.mirror.sync()
    #expect(try b.crate(labelled: "north").note == "once")
  }

  @Test func anUnreachableServerLeavesLocalSavesAndSaysOfflineInOneLine() async throws {
    let nowhere = try PostgresHub(
      uri: "postgresql://mirror:secret@127.0.0.1:1/nowhere?connect_timeout=2", schema: "mirror", model: orchardModel)
    let offline = try Replica(.sqlite, hub: nowhere, in: directory, name: "offline")
    let crate = Crate(context: offline.context)
    crate.label = "kept"
    try offline.context.save()
    let error = await #expect(throws: MirrorError.self) { try await offline.mirror.sync() }
    let message = String(describing: try #require(error))
    #expect(message.hasPrefix("offline:") && !message.contains("\n") && !message.contains("secret"))
    #expect(try offline.mirror.status().pendingTransactions == 1)
    #expect(try offline.crates().map(\.label) == ["kept"])
  }
}
