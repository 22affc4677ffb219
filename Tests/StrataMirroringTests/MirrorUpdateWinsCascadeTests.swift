import Foundation
import Strata
import StrataMirroring
import Testing

/// `updateWins` over a delete that cascaded (docs/MIRRORING.md, Deletes and tombstones): the objects the
/// delete cascaded to come back with the object the update names, as they were, on the hub and on every
/// replica; an object the deleter deleted on its own stays deleted.
@Suite("Mirror updateWins over a cascade")
struct MirrorUpdateWinsCascadeTests {
  typealias Orchard = MirrorPolicyTests.Orchard

  /// Crate "north" holding Gala (from `Orchard`) and Fuji, on both replicas, crates under `updateWins`.
  static func orchard(_ kind: MirrorPolicyTests.Hub) async throws -> Orchard {
    let orchard = try await Orchard(kind, MirrorPolicies(entities: ["Crate": MirrorPolicy(deleteVersusUpdate: .updateWins)]))
    let fuji = Apple(context: orchard.a.context)
    fuji.variety = "Fuji"
    fuji.weight = 150
    fuji.crate = try orchard.a.crate(labelled: "north")
    try orchard.a.context.save()
    try await orchard.sync(orchard.a, orchard.b)
    return orchard
  }

  /// B deletes the crate (its apples go with it under Cascade) while A changes its note: A's update wins,
  /// and the crate comes back everywhere with both apples, their weights and their crate.
  @Test(arguments: MirrorPolicyTests.Hub.allCases)
  func theObjectsADeleteCascadedToComeBack(_ kind: MirrorPolicyTests.Hub) async throws {
    let orchard = try await Self.orchard(kind)
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    b.context.delete(try b.crate(labelled: "north"))
    try b.context.save()
    #expect(try b.apples().isEmpty)
    try a.crate(labelled: "north").note = "keep it"
    try a.context.save()
    try await orchard.sync(b, a, b)
    for replica in [a, b] {
      #expect(try replica.crate(labelled: "north").note == "keep it")
      #expect(try replica.apples().map(\.variety).sorted() == ["Fuji", "Gala"])
      #expect(try replica.apple("Gala").weight == 100 && replica.apple("Fuji").weight == 150)
      #expect(try replica.apples().allSatisfy { $0.crate?.label == "north" })
    }
    try orchard.expectConverged()
  }

  /// B deletes Fuji on its own, then the crate in a later save: the crate and Gala come back, Fuji stays
  /// deleted.
  @Test(arguments: MirrorPolicyTests.Hub.allCases)
  func anObjectDeletedOnItsOwnStaysDeleted(_ kind: MirrorPolicyTests.Hub) async throws {
    let orchard = try await Self.orchard(kind)
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    b.context.delete(try b.apple("Fuji"))
    try b.context.save()
    b.context.delete(try b.crate(labelled: "north"))
    try b.context.save()
    try a.crate(labelled: "north").note = "keep it"
    try a.context.save()
    try await orchard.sync(b, a, b)
    for replica in [a, b] {
      #expect(try replica.apples().map(\.variety) == ["Gala"])
      #expect(try replica.apple("Gala").crate?.label == "north")
    }
    try orchard.expectConverged()
  }
}
