import Foundation
import Strata
import StrataMirroring
import Testing

/// What a replica tells about itself: status (connected, hub position, lag, oldest pending), events, and
/// waiting until its own writes are acknowledged and pulled back.
@Suite("Mirror status, events and waiting")
struct MirrorStatusTests {
  let hub = MemoryHub(model: orchardModel)
  let a: Replica
  let b: Replica

  init() throws {
    a = try Replica(.memory, hub: hub, in: FileManager.default.temporaryDirectory, name: "a")
    b = try Replica(.memory, hub: hub, in: FileManager.default.temporaryDirectory, name: "b")
  }

  func addCrate(_ label: String, on replica: Replica) throws {
    let crate = Crate(context: replica.context)
    crate.label = label
    try replica.context.save()
  }

  @Test func statusTellsConnectionLagAndTheOldestPendingTransaction() async throws {
    let before = try b.mirror.status()
    #expect(!before.isConnected && before.hubPosition == nil && before.lag == nil && before.oldestPendingAge == nil)
    for label in ["one", "two", "three"] { try addCrate(label, on: a) }
    #expect(try a.mirror.status().oldestPendingAge.map { $0 >= 0 } == true)
    _ = try await a.mirror.sync()
    #expect(try a.mirror.status().oldestPendingAge == nil)

    let behind = try await b.mirror.refreshStatus()
    #expect(behind.isConnected && behind.offlineReason == nil)
    #expect(behind.hubPosition == hub.ledger.lastPosition)
    #expect(behind.lag == hub.ledger.lastPosition && behind.lastPulledPosition == 0)
    _ = try await b.mirror.sync()
    #expect(try b.mirror.status().lag == 0)

    hub.isReachable = false
    let offline = try await b.mirror.refreshStatus()
    #expect(!offline.isConnected)
    #expect(offline.offlineReason?.hasPrefix("offline:") == true)
  }

  @Test func eventsReportEachPushPullAndConflictWithCountsAndErrors() async throws {
    let events = EventLog(a.mirror)
    try addCrate("north", on: a)
    try addCrate("south", on: a)
    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()
    let south = try b.crate(labelled: "south")
    south.note = "from b"
    try b.context.save()
    _ = try await b.mirror.sync()
    try a.crate(labelled: "south").note = "from a"
    try a.context.save()
    hub.isReachable = false
    await #expect(throws: MirrorError.self) { try await a.mirror.sync() }
    hub.isReachable = true
    _ = try await a.mirror.sync()

    let seen = await events.waitFor(3, of: .push)
    let pushes = seen.filter { $0.kind == .push }
    #expect(pushes.map(\.count) == [2, 0, 1])
    #expect(pushes.map { $0.error == nil } == [true, false, true])
    #expect(pushes[1].error?.hasPrefix("offline:") == true)
    #expect(seen.filter { $0.kind == .pull }.map(\.count) == [0, 1])
    #expect(seen.filter { $0.kind == .conflict }.map(\.count) == [1])
    #expect(seen.allSatisfy { $0.startedAt <= $0.endedAt })
  }

  @Test func waitUntilSyncedReturnsOnceOwnWritesAreAcknowledgedAndPulledBack() async throws {
    hub.isReachable = false
    try addCrate("north", on: a)
    let events = EventLog(a.mirror)
    let waiting = Task { try await a.mirror.waitUntilSynced(retryingEvery: .milliseconds(20)) }
    // It keeps trying while the hub is off: a failed push is reported before the hub comes back.
    let failed = await events.waitFor(1, of: .push)
    #expect(failed.first { $0.kind == .push }?.error != nil)
    #expect(try a.mirror.status().pendingTransactions == 1)
    hub.isReachable = true
    try await waiting.value
    let status = try a.mirror.status()
    #expect(status.pendingTransactions == 0)
    #expect(status.lastPulledPosition >= status.lastPushedPosition && status.lastPushedPosition > 0)
    _ = try await b.mirror.sync()
    #expect(try b.crates().map(\.label) == ["north"])
  }

  /// Offline, the waiter waits for the next round's end rather than its next retry (an hour away): another
  /// caller's round, which pushes and pulls back its writes, ends the wait. The limit is far below the retry
  /// and far above the test's own time (0.02 s alone, ~100 s in the whole suite, whose tests that wait on
  /// processes hold the cooperative pool's threads).
  @Test(.timeLimit(.minutes(10)))
  func waitUntilSyncedReturnsAtTheEndOfAnotherCallersRound() async throws {
    hub.isReachable = false
    try addCrate("north", on: a)
    let events = EventLog(a.mirror)
    let waiting = Task { try await a.mirror.waitUntilSynced(retryingEvery: .seconds(3_600)) }
    _ = await events.waitFor(1, of: .push)
    hub.isReachable = true
    while true {
      do {
        _ = try await a.mirror.sync()
        break
      } catch MirrorError.syncInProgress {
        // The waiter's own failed round has not ended yet.
        try await Task.sleep(for: .milliseconds(5))
      }
    }
    try await waiting.value
    let status = try a.mirror.status()
    #expect(status.pendingTransactions == 0 && status.lastPulledPosition >= status.lastPushedPosition)
  }

  /// A save made while it waits is not waited for: the round that acknowledges and pulls back the writes
  /// saved before the call ends the wait, with the later save still pending.
  @Test func waitUntilSyncedWaitsForTheWritesSavedBeforeItNotForLaterOnes() async throws {
    let interrupted = InterruptingHub(hub: hub)
    let c = try Replica(.memory, hub: interrupted, in: FileManager.default.temporaryDirectory, name: "c")
    try addCrate("north", on: c)
    interrupted.beforeNextPull {
      try c.context.performAndWait { try addCrate("late", on: c) }
    }
    try await c.mirror.waitUntilSynced(retryingEvery: .seconds(3_600))
    let status = try c.mirror.status()
    #expect(status.pendingTransactions == 1, "the crate saved during the wait is still to push")
    #expect(status.lastPulledPosition >= status.lastPushedPosition && status.lastPushedPosition > 0)
    _ = try await b.mirror.sync()
    #expect(try b.crates().map(\.label) == ["north"])
  }

  @Test func waitUntilSyncedStopsWhenItsTaskIsCancelled() async throws {
    hub.isReachable = false
    try addCrate("north", on: a)
    let waiting = Task { try await a.mirror.waitUntilSynced(retryingEvery: .milliseconds(20)) }
    waiting.cancel()
    await #expect(throws: CancellationError.self) { try await waiting.value }
  }
}
