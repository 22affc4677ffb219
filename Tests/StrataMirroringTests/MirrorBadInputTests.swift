import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Synchronization
import Testing

/// Bad input (docs/MIRRORING.md, Bad input): a replica or a hub of another app's model is refused with one
/// line naming both, nothing written on either side; a second process syncing the same store waits.
@Suite("Mirror bad input")
struct MirrorBadInputTests {
  /// A replica of another model than a memory hub's: one line naming both models' entities; the hub and
  /// the replica's store are left as they were.
  @Test func aReplicaOfAnotherModelIsRefusedByAMemoryHub() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let hub = MemoryHub(model: orchardModel)
    let varieties = try VarietyReplica(.sqlite, hub: hub, in: directory, name: "varieties")
    try varieties.add("Agria", rating: 4, note: "Buttery")
    let error = await #expect(throws: MirrorError.self) { try await varieties.mirror.sync() }
    let line = error?.description ?? ""
    #expect(!line.contains("\n") && line.contains("Variety, VarietyNote") && line.contains("Apple, Crate"), "\(line)")
    #expect(hub.ledger.lastPosition == 0 && hub.ledger.objects.isEmpty)
    let status = try varieties.mirror.status()
    #expect(status.replicaID == nil && status.pendingTransactions == 1, "nothing written locally: \(status)")
  }

  /// A PostgreSQL hub records its model in its schema: a replica of another model (its own hub built with
  /// that model) is refused with one line naming both, before anything is written to the hub or the
  /// replica; the password of the URI appears nowhere in the error.
  @Test func aHubOfAnotherModelIsRefusedOnPostgreSQL() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let schema = MirrorKillTests.freshSchema()
    let server = try PostgresHubTests.serverURI()
    let orchardHub = try PostgresHub(uri: server, schema: schema, model: orchardModel)
    let orchard = try Replica(.sqlite, hub: orchardHub, in: directory, name: "orchard")
    let crate = Crate(context: orchard.context)
    crate.label = "north"
    try orchard.context.save()
    _ = try await orchard.mirror.sync()

    let secret = "s3cret-word"
    let withPassword = server + (server.contains("?") ? "&" : "?") + "password=" + secret
    let otherHub = try PostgresHub(uri: withPassword, schema: schema, model: varietyModel)
    let varieties = try VarietyReplica(.lmdb, hub: otherHub, in: directory, name: "varieties")
    try varieties.add("Agria", rating: 4, note: "Buttery")
    let error = await #expect(throws: MirrorError.self) { try await varieties.mirror.sync() }
    let line = error?.description ?? ""
    #expect(!line.contains("\n") && line.contains("Variety, VarietyNote") && line.contains("Apple, Crate"), "\(line)")
    #expect(line.contains(schema) && !line.contains(secret), "\(line)")
    #expect(try await orchardHub.lastPosition() == 1 && orchardHub.liveObjects().count == 1)
    let status = try varieties.mirror.status()
    #expect(status.replicaID == nil && status.pendingTransactions == 1, "nothing written locally: \(status)")
    // The hub of the first model goes on.
    #expect(try await orchard.mirror.sync().pushed == 0)
  }

  /// A hub built with a newer version of the same app's model (one more entity) is accepted by a schema
  /// created with the older one: versions of one model are refused per transaction, not as a whole.
  @Test func aHubOfANewerVersionOfTheModelIsAccepted() async throws {
    let schema = MirrorKillTests.freshSchema()
    let server = try PostgresHubTests.serverURI()
    let older = try MirrorModel.adding(to: ObjectModel(Variety.self, VarietyNote.self))
    let newer = try MirrorModel.adding(to: ObjectModel(Variety.self, VarietyNote.self, Crate.self, Apple.self))
    _ = try await PostgresHub(uri: server, schema: schema, model: older).lastPosition()
    #expect(try await PostgresHub(uri: server, schema: schema, model: newer).lastPosition() == 0)
  }

  /// A second process syncing the same local store while a first one is in the middle of its round waits
  /// for that round to end (a kernel lock beside the store file), then syncs: nothing is pushed twice. The
  /// first process is `mirror-worker`, paused after the hub acknowledged its 5th transaction.
  @Test func aSecondProcessSyncingTheSameStoreWaits() async throws {
    let schema = MirrorKillTests.freshSchema()
    let server = try PostgresHubTests.serverURI()
    let hub = try PostgresHub(uri: server, schema: schema, model: orchardModel)
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appending(path: "shared.sqlite").path
    let second = SecondSync()
    let run = try await MirrorWorker.run(
      ["sqlite", path, server, schema, "shared", "12", "100"], failpoint: "afterPush:5:pause",
      whenPaused: {
        let opened = try Replica(.sqlite, hub: hub, in: directory, name: "shared")
        second.start(opened)
        Thread.sleep(forTimeInterval: 0.5)
        second.finishedWhilePaused.store(second.finished.load(ordering: .acquiring), ordering: .releasing)
      })
    #expect(run.output.contains("paused"), "the worker never paused: \(run.output) \(run.errors)")
    #expect(run.status == 0 && run.output.contains("synced pushed 12"), "\(run.output) \(run.errors)")
    let ranDuringThePause = second.finishedWhilePaused.load(ordering: .acquiring)
    #expect(!ranDuringThePause, "the second sync ran while the first process's round was under way")
    let (replica, task) = try #require(second.state.withLock { $0 })
    defer { replica.container.close() }
    let report = try await task.value
    #expect(report.pushed == 0, "the waiting sync found everything pushed: \(report)")
    let failures = try await MirrorKillTests.ledgerFailures(of: [replica], hub: hub)
    #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
  }
}

/// The second process's sync of `aSecondProcessSyncingTheSameStoreWaits`, started while the first is paused.
final class SecondSync: Sendable {
  let state = Mutex<(Replica, Task<SyncReport, any Error>)?>(nil)
  let finished = Atomic(false)
  let finishedWhilePaused = Atomic(false)

  func start(_ replica: Replica) {
    let task = Task {
      let report = try await replica.mirror.sync()
      self.finished.store(true, ordering: .releasing)
      return report
    }
    state.withLock { $0 = (replica, task) }
  }
}
