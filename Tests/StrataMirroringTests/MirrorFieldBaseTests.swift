import Foundation
import Strata
import StrataMirroring
import Testing

/// A field whose pulled change a replica left alone because a local change of it waited to be pushed is
/// pushed with the base that local change had (docs/MIRRORING.md, Pull), so the hub sees the conflict.
@Suite("Mirror field bases")
struct MirrorFieldBaseTests {
  /// b changes Gala's weight and syncs; a saves its own weight while its sync runs (after the push, before
  /// the pull), so the pull leaves b's weight alone and moves on past it. a's next push is still a change
  /// made without seeing b's: the hub records the conflict and settles it by the policy (the later push
  /// without one, b's weight under hubWins), and both replicas end with the hub's weight.
  @Test(arguments: [false, true])
  func aLocalChangeMadeWhileASyncPulledAnotherIsAConflict(hubWins: Bool) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let policies = hubWins ? MirrorPolicies(entities: ["Apple": MirrorPolicy(conflicts: .hubWins)]) : .standard
    let hub = MemoryHub(model: orchardModel, policies: policies)
    let interrupted = InterruptingHub(hub: hub)
    let a = try Replica(.sqlite, hub: interrupted, in: directory, name: "a")
    let b = try Replica(.lmdb, hub: hub, in: directory, name: "b")
    let gala = Apple(context: a.context)
    gala.variety = "Gala"
    gala.weight = 100
    try a.context.save()
    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()
    try b.apple("Gala").weight = 120
    try b.context.save()
    _ = try await b.mirror.sync()

    interrupted.beforeNextPull {
      try a.context.performAndWait {
        try a.apple("Gala").weight = 150
        try a.context.save()
      }
    }
    _ = try await a.mirror.sync()
    let report = try await a.mirror.sync()
    #expect(report.conflicts == 1, "\(report)")
    _ = try await b.mirror.sync()
    _ = try await a.mirror.sync()

    let expected: Int64 = hubWins ? 120 : 150
    a.context.refreshAllObjects()
    b.context.refreshAllObjects()
    #expect(try a.apple("Gala").weight == expected && b.apple("Gala").weight == expected)
    let conflict = try #require(hub.ledger.conflicts.first)
    #expect(hub.ledger.conflicts.count == 1 && conflict.field == "weight")
    #expect(conflict.keptFields == ["weight": .value(.int(expected))])
  }
}
