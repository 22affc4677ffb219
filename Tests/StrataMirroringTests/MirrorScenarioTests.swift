import Foundation
import Strata
import StrataMirroring
import Testing

/// Two replicas and a memory hub: each concurrent pair of the scenario matrix built so far.
@Suite("Mirror scenarios")
struct MirrorScenarioTests {
  let hub = MemoryHub(model: orchardModel)
  let directory: URL
  let a: Replica
  let b: Replica

  init() throws {
    directory = try temporaryDirectory()
    a = try Replica(.memory, hub: hub, in: directory, name: "a")
    b = try Replica(.sqlite, hub: hub, in: directory, name: "b")
  }

  /// A crate labelled `label` with apples of `varieties`, created on `replica` and synced to both.
  @discardableResult
  func seedCrate(_ label: String, apples varieties: [String] = [], on replica: Replica) async throws -> Crate {
    let crate = Crate(context: replica.context)
    crate.label = label
    for (i, variety) in varieties.enumerated() {
      let apple = Apple(context: replica.context)
      apple.variety = variety
      apple.weight = Int64(100 + i)
      apple.crate = crate
    }
    try replica.context.save()
    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()
    return crate
  }

  func syncAll() async throws {
    for replica in [a, b, a] { _ = try await replica.mirror.sync() }
  }

  @Test func createdObjectsReachTheOtherReplicaWithTheirRelationships() async throws {
    try await seedCrate("north", apples: ["Gala", "Fuji"], on: a)
    let crate = try b.crate(labelled: "north")
    #expect(Set(crate.apples.map(\.variety)) == ["Gala", "Fuji"])
    #expect(try a.canonicalDump() == b.canonicalDump())
    #expect(try a.canonicalDump() == canonicalDump(of: hub))
    #expect(try a.mirror.status().pendingTransactions == 0)
    #expect(try b.mirror.status().pendingTransactions == 0)
  }

  @Test func pulledChangesAreNotPushedBack() async throws {
    try await seedCrate("north", apples: ["Gala"], on: a)
    let positions = hub.ledger.lastPosition
    let report = try await b.mirror.sync()
    #expect(report.pushed == 0)
    #expect(hub.ledger.lastPosition == positions)
  }

  @Test func differentAttributesChangedOnBothSidesMergeSilently() async throws {
    try await seedCrate("north", on: a)
    try a.crate(labelled: "north").note = "by the door"
    try a.context.save()
    try b.crate(labelled: "north").label = "south"
    try b.context.save()
    try await syncAll()
    for replica in [a, b] {
      let crate = try replica.crate(labelled: "south")
      #expect(crate.note == "by the door")
    }
    #expect(try await a.mirror.conflicts().isEmpty)
    #expect(try a.canonicalDump() == b.canonicalDump())
  }

  @Test func theSameAttributeChangedOnBothSidesGoesToTheLaterPushAndIsRecorded() async throws {
    try await seedCrate("north", on: a)
    try a.crate(labelled: "north").label = "from a"
    try a.context.save()
    try b.crate(labelled: "north").label = "from b"
    try b.context.save()
    let first = try await a.mirror.sync()
    let second = try await b.mirror.sync()
    _ = try await a.mirror.sync()
    #expect(first.conflicts == 0 && second.conflicts == 1)
    for replica in [a, b] { #expect(try replica.crates().map(\.label) == ["from b"]) }
    let conflicts = try await b.mirror.conflicts()
    let conflict = try #require(conflicts.first)
    #expect(conflicts.count == 1)
    #expect(conflict.kind == .updateVersusUpdate && conflict.field == "label" && conflict.entityName == "Crate")
    #expect(conflict.losingFields == ["label": .value(.string("from a"))])
    #expect(conflict.winningReplica == (try b.mirror.status().replicaID))
    #expect(conflict.losingReplica == (try a.mirror.status().replicaID))
    #expect(conflict.losingPosition < conflict.winningPosition)
    #expect(conflict.winningPosition == (try b.mirror.status().lastPushedPosition))
  }

  @Test func anUpdateAfterSeeingTheOtherChangeIsNoConflict() async throws {
    try await seedCrate("north", on: a)
    try a.crate(labelled: "north").label = "from a"
    try a.context.save()
    try await syncAll()
    try b.crate(labelled: "from a").label = "from b"
    try b.context.save()
    try await syncAll()
    #expect(try await a.mirror.conflicts().isEmpty)
    #expect(try a.crates().map(\.label) == ["from b"])
  }

  @Test(arguments: [true, false])
  func deleteWinsOverAConcurrentUpdate(deletePushedFirst: Bool) async throws {
    try await seedCrate("north", apples: ["Gala", "Fuji"], on: a)
    a.context.delete(try a.apple("Gala"))
    try a.context.save()
    try b.apple("Gala").weight = 999
    try b.context.save()
    for replica in deletePushedFirst ? [a, b, a] : [b, a, b] { _ = try await replica.mirror.sync() }
    for replica in [a, b] { #expect(try replica.apples().map(\.variety) == ["Fuji"]) }
    let conflicts = try await a.mirror.conflicts()
    #expect(conflicts.map(\.kind) == [.deleteVersusUpdate])
    #expect(conflicts.first?.losingFields["weight"] == .value(.int(999)))
    #expect(conflicts.first?.winningReplica == (try a.mirror.status().replicaID))
    #expect(try a.canonicalDump() == b.canonicalDump())
    #expect(try a.canonicalDump() == canonicalDump(of: hub))
  }

  @Test func applesAddedToOneCrateOnBothSidesAreAllThere() async throws {
    try await seedCrate("north", apples: ["Gala"], on: a)
    for (replica, variety) in [(a, "Fuji"), (b, "Honeycrisp")] {
      let apple = Apple(context: replica.context)
      apple.variety = variety
      apple.crate = try replica.crate(labelled: "north")
      try replica.context.save()
    }
    try await syncAll()
    for replica in [a, b] {
      #expect(Set(try replica.crate(labelled: "north").apples.map(\.variety)) == ["Gala", "Fuji", "Honeycrisp"])
    }
    #expect(try await a.mirror.conflicts().isEmpty)
  }

  @Test func aDeletedCrateTakesAnAppleAddedToItConcurrentlyWithIt() async throws {
    try await seedCrate("north", apples: ["Gala"], on: a)
    a.context.delete(try a.crate(labelled: "north"))
    try a.context.save()
    let apple = Apple(context: b.context)
    apple.variety = "Fuji"
    apple.crate = try b.crate(labelled: "north")
    try b.context.save()
    try await syncAll()
    for replica in [a, b] {
      #expect(try replica.crates().isEmpty)
      #expect(try replica.apples().isEmpty)
    }
    #expect(canonicalDump(of: hub).isEmpty)
  }

  @Test func aRetryAfterALostReplyIsAppliedOnce() async throws {
    try await seedCrate("north", on: a)
    try a.crate(labelled: "north").note = "once"
    try a.context.save()
    hub.loseReplies(1)
    await #expect(throws: MirrorError.self) { try await a.mirror.sync() }
    #expect(try a.mirror.status().pendingTransactions == 1)
    let applied = hub.ledger.lastPosition
    let retry = try await a.mirror.sync()
    #expect(retry.pushed == 1)
    #expect(hub.ledger.lastPosition == applied)
    #expect(try a.mirror.status().pendingTransactions == 0)
    let sequences = hub.ledger.log.map { "\($0.replicaID) \($0.localSequence)" }
    #expect(Set(sequences).count == sequences.count)
  }

  @Test func offlineSavesSucceedAndSyncSaysOfflineInOneLine() async throws {
    try await seedCrate("north", on: a)
    hub.isReachable = false
    try a.crate(labelled: "north").note = "written offline"
    try a.context.save()
    let error = await #expect(throws: MirrorError.self) { try await a.mirror.sync() }
    let message = String(describing: try #require(error))
    #expect(message.hasPrefix("offline:") && !message.contains("\n"))
    #expect(try a.mirror.status().pendingTransactions == 1)
    hub.isReachable = true
    let report = try await a.mirror.sync()
    #expect(report.pushed == 1)
    _ = try await b.mirror.sync()
    #expect(try b.crate(labelled: "north").note == "written offline")
  }

  @Test func pulledChangesMergeIntoLiveContexts() async throws {
    try await seedCrate("north", on: a)
    let live = b.container.newBackgroundContext()
    live.automaticallyMergesChangesFromParent = true
    let shown = try live.performAndWait {
      try #require(try live.fetch(FetchRequest<Crate>()).first { $0.label == "north" })
    }
    #expect(live.performAndWait { shown.note } == nil)
    try a.crate(labelled: "north").note = "fresh"
    try a.context.save()
    try await syncAll()
    let deadline = Date.now.addingTimeInterval(10)
    while live.performAndWait({ shown.note }) == nil && Date.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(live.performAndWait { shown.note } == "fresh")
  }

  @Test func statusCountsPendingTransactionsAndPositions() async throws {
    #expect(
      try a.mirror.status() == MirrorStatus(replicaID: nil, pendingTransactions: 0, lastPushedPosition: 0, lastPulledPosition: 0))
    for label in ["one", "two"] {
      let crate = Crate(context: a.context)
      crate.label = label
      try a.context.save()
    }
    #expect(try a.mirror.status().pendingTransactions == 2)
    let report = try await a.mirror.sync()
    let status = try a.mirror.status()
    #expect(report == SyncReport(pushed: 2, pulled: 0, conflicts: 0))
    #expect(status.pendingTransactions == 0 && status.lastPushedPosition == 2 && status.lastPulledPosition == 2)
  }

  /// A pull of more changes than one save holds arrives whole, in saves of bounded size, each with its
  /// position: with saves of at most 20 changes, 3 pushes of 9 crates are 2 saves on the pulling replica
  /// (18 changes, then 9).
  @Test func aLongPullIsAppliedInBoundedSaves() async throws {
    let perPush = 9
    let bounded = try StoreMirror(container: b.container, hub: hub, pulledChangesPerSave: 20)
    _ = try await bounded.sync()  // b's first sync names the replica (a save of its own)
    for push in 0..<3 {
      for i in 0..<perPush { Crate(context: a.context).label = "c\(push)-\(i)" }
      try a.context.save()
      _ = try await a.mirror.sync()
    }
    let before = try b.mirrorTransactions()
    let report = try await bounded.sync()
    #expect(report.pulled == 3)
    #expect(try b.crates().count == 3 * perPush)
    let saves = try b.mirrorTransactions() - before
    #expect(saves == 2)
    #expect(try bounded.status().lastPulledPosition == hub.ledger.lastPosition)
    #expect(try a.canonicalDump() == b.canonicalDump())
  }
}
