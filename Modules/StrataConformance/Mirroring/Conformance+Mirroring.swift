import Foundation
import Strata
import StrataMirroring
import Testing

/// The mirroring area: the backend's stores as replicas of one in-memory hub (`MirrorGarden`), each case
/// one rule of docs/MIRRORING.md — two replicas edit offline, sync A, B, A, and must end identical to each
/// other and to the hub.
enum MirroringCases {
  /// A bed "north" with plants a, b, c (in that order) and a pest "aphid" on plant a, created on A and
  /// synced to B.
  static func planted(_ backend: ConformanceBackend, policies: MirrorPolicies = .standard) async throws -> MirrorGarden {
    let garden = try MirrorGarden(backend, policies: policies)
    let bed = MirrorBed(context: garden.a.context)
    bed.name = "north"
    for name in ["a", "b", "c"] { garden.a.addPlant(name, in: bed) }
    let aphid = MirrorPest(context: garden.a.context)
    aphid.name = "aphid"
    aphid.plants = [try garden.a.plant("a")]
    try garden.a.context.save()
    try await garden.sync(garden.a, garden.b)
    #expect(try garden.b.bed("north").plants.map(\.name) == ["a", "b", "c"])
    return garden
  }

  /// Different attributes of one object changed on both replicas: both changes everywhere, no conflict.
  static let updateUpdateDifferentAttributesMerge: Conformance.Check = { backend in
    let garden = try await planted(backend)
    try garden.a.plant("a").height = 5
    try garden.a.context.save()
    try garden.b.bed("north").note = "sunny"
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.b.plant("a").height == 5)
    #expect(try garden.a.bed("north").note == "sunny")
    #expect(try await garden.hub.conflicts().isEmpty)
  }

  /// The same attribute changed on both replicas: the later push wins everywhere, the loser recorded.
  static let updateUpdateSameAttributeLaterPushWins: Conformance.Check = { backend in
    let garden = try await planted(backend)
    try garden.a.plant("b").height = 7
    try garden.a.context.save()
    try garden.b.plant("b").height = 9
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.a.plant("b").height == 9)
    let conflicts = try await garden.conflicts(.updateVersusUpdate)
    #expect(conflicts.map(\.field) == ["height"])
    #expect(conflicts.first?.losingFields["height"] == .value(.int(7)))
  }

  /// The same attribute changed on both replicas under `hubWins` for plants: the value the hub held (A's,
  /// pushed first) stays everywhere, B's recorded as the losing one.
  static let updateUpdateSameAttributeHubWins: Conformance.Check = { backend in
    let garden = try await planted(
      backend, policies: MirrorPolicies(entities: ["MirrorPlant": MirrorPolicy(conflicts: .hubWins)]))
    try garden.a.plant("b").height = 7
    try garden.a.context.save()
    try garden.b.plant("b").height = 9
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.a.plant("b").height == 7 && garden.b.plant("b").height == 7)
    let conflicts = try await garden.conflicts(.updateVersusUpdate)
    #expect(conflicts.map(\.rule) == [.hubWins])
    #expect(conflicts.first?.losingFields["height"] == .value(.int(9)))
  }

  /// The same attribute changed on both replicas under a custom resolver (both sides' additions add up:
  /// 1 → 7 on A, 1 → 9 on B give 15): the resolver's value everywhere.
  static let updateUpdateSameAttributeCustomResolver: Conformance.Check = { backend in
    let addBoth = MirrorConflictPolicy.custom { values in
      guard case .value(.int(let local)) = values.local, case .value(.int(let hub))? = values.hub,
        case .value(.int(let base))? = values.base
      else { return values.local }
      return .value(.int(local + hub - base))
    }
    let garden = try await planted(backend, policies: MirrorPolicies(defaultPolicy: MirrorPolicy(conflicts: addBoth)))
    try garden.a.plant("b").height = 7
    try garden.a.context.save()
    try garden.b.plant("b").height = 9
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.a.plant("b").height == 15 && garden.b.plant("b").height == 15)
    #expect(try await garden.conflicts(.updateVersusUpdate).first?.keptFields == ["height": .value(.int(15))])
  }

  /// Under `updateWins`, a delete pushed after an update it had not seen is not applied: the plant is back
  /// on the deleter, in its bed's list, with the update.
  static let deleteUpdateUpdateWinsRestores: Conformance.Check = { backend in
    let policies = MirrorPolicies(entities: ["MirrorPlant": MirrorPolicy(deleteVersusUpdate: .updateWins)])
    let garden = try await planted(backend, policies: policies)
    try garden.a.plant("c").height = 3
    try garden.a.context.save()
    garden.b.context.delete(try garden.b.plant("c"))
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.b.plant("c").height == 3)
    #expect(try garden.b.bed("north").plants.map(\.name) == ["a", "b", "c"])
    #expect(try await garden.conflicts(.deleteVersusUpdate).map(\.rule) == [.updateWins])
  }

  /// Under `updateWins`, an update pushed after a delete it had not seen brings the plant back everywhere,
  /// with the update.
  static let deleteUpdateUpdateWinsRevives: Conformance.Check = { backend in
    let policies = MirrorPolicies(entities: ["MirrorPlant": MirrorPolicy(deleteVersusUpdate: .updateWins)])
    let garden = try await planted(backend, policies: policies)
    garden.a.context.delete(try garden.a.plant("c"))
    try garden.a.context.save()
    try garden.b.plant("c").height = 3
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.a.plant("c").height == 3 && garden.b.plant("c").height == 3)
    #expect(try garden.a.plant("c").bed?.name == "north")
    #expect(try await garden.conflicts(.deleteVersusUpdate).map(\.rule) == [.updateWins])
  }

  /// An object deleted on one replica and updated on the other: the delete wins, the update recorded.
  static let deleteUpdateDeleteWins: Conformance.Check = { backend in
    let garden = try await planted(backend)
    garden.a.context.delete(try garden.a.plant("c"))
    try garden.a.context.save()
    try garden.b.plant("c").height = 3
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.b.plants().map(\.name).sorted() == ["a", "b"])
    #expect(try await garden.conflicts(.deleteVersusUpdate).count == 1)
  }

  /// A pest deleted on one replica while the other puts it on a plant: the pest is gone everywhere and the
  /// plant keeps its other pests.
  static let deleteRelateDropsTheLink: Conformance.Check = { backend in
    let garden = try await planted(backend)
    let mite = MirrorPest(context: garden.a.context)
    mite.name = "mite"
    try garden.a.context.save()
    try await garden.sync(garden.a, garden.b)
    garden.a.context.delete(try garden.a.pest("mite"))
    try garden.a.context.save()
    try garden.b.plant("a").pests.insert(try garden.b.pest("mite"))
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.b.pests().map(\.name) == ["aphid"])
    #expect(try garden.b.plant("a").pests.map(\.name) == ["aphid"])
  }

  /// The same unique key created on both replicas offline: one bed everywhere, with the plants of both.
  static let createCreateSameUniqueKeyIsOneObject: Conformance.Check = { backend in
    let garden = try MirrorGarden(backend)
    for (replica, plant) in [(garden.a, "x"), (garden.b, "y")] {
      let bed = MirrorBed(context: replica.context)
      bed.name = "south"
      replica.addPlant(plant, in: bed)
      try replica.context.save()
    }
    try await garden.converge()
    for replica in [garden.a, garden.b] {
      #expect(try replica.beds().map(\.name) == ["south"])
      #expect(try Set(replica.bed("south").plants.map(\.name)) == ["x", "y"])
    }
  }

  /// A rename onto a unique key another replica's bed took first: the hub refuses it (two live beds would
  /// hold the key), B syncs on, and A's discard gives the bed its old name back: then both replicas and
  /// the hub hold the same beds.
  static let renameOntoAHeldKeyIsRefusedAndDiscarded: Conformance.Check = { backend in
    let garden = try await planted(backend)
    MirrorBed(context: garden.b.context).name = "east"
    try garden.b.context.save()
    try await garden.sync(garden.b, garden.a)
    try garden.b.bed("east").name = "south"
    try garden.b.context.save()
    try await garden.sync(garden.b)
    try garden.a.bed("north").name = "south"
    try garden.a.context.save()
    // A's pull of B's south fails while A still holds its own.
    _ = try? await garden.a.mirror.sync()
    #expect(try garden.a.mirror.rejected().map(\.reason) == [#"MirrorBed.name "south" is already held by another object"#])
    try await garden.sync(garden.b)
    try await garden.a.mirror.discardRejected()
    try await garden.converge()
    #expect(try garden.a.mirror.rejected().isEmpty)
    #expect(try garden.b.beds().map(\.name).sorted() == ["north", "south"])
    #expect(try garden.b.bed("north").plants.map(\.name) == ["a", "b", "c"])
  }

  /// Deny: a bed deleted on A (empty there) while B plants in it is never deleted with a plant in it: the
  /// hub refuses the delete, records it, and A gets the bed back with B's plant.
  static let denyKeepsAParentThatGainedAChild: Conformance.Check = { backend in
    let garden = try MirrorGarden(backend)
    let bed = MirrorBed(context: garden.a.context)
    bed.name = "east"
    try garden.a.context.save()
    try await garden.sync(garden.a, garden.b)
    garden.a.context.delete(try garden.a.bed("east"))
    try garden.a.context.save()
    garden.b.addPlant("z", in: try garden.b.bed("east"))
    try garden.b.context.save()
    try await garden.sync(garden.b)
    try await garden.converge()
    #expect(try garden.a.bed("east").plants.map(\.name) == ["z"])
    let denied = try await garden.conflicts(.deleteDenied)
    #expect(denied.map(\.field) == ["MirrorBed.plants"])
  }

  /// Deny, the other way round: the hub took A's delete of the empty bed first, so B's plant added to it
  /// offline loses its bed everywhere (the delete came first), and B's pull deletes the bed without
  /// failing on its own plant (each entry pulled in a save of its own: the delete before the entry that
  /// clears the plant's bed).
  static let denyLetsAnEmptyParentGoFirst: Conformance.Check = { backend in
    let garden = try MirrorGarden(backend, pullBatchSize: 1)
    let bed = MirrorBed(context: garden.a.context)
    bed.name = "west"
    try garden.a.context.save()
    try await garden.sync(garden.a, garden.b)
    garden.a.context.delete(try garden.a.bed("west"))
    try garden.a.context.save()
    garden.b.addPlant("w", in: try garden.b.bed("west"))
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.b.beds().isEmpty)
    #expect(try garden.b.plant("w").bed == nil)
    #expect(try await garden.conflicts(.deleteDenied).isEmpty)
  }

  /// An ordered relationship reordered on both replicas, each adding a member: the later push's order
  /// everywhere, the other side's new member kept after it.
  static let orderedReorderedOnBothSidesConverges: Conformance.Check = { backend in
    let garden = try await planted(backend)
    let onA = try garden.a.bed("north")
    onA.plants = [try garden.a.plant("c"), try garden.a.plant("b"), try garden.a.plant("a")]
    garden.a.addPlant("e", in: onA)
    try garden.a.context.save()
    let onB = try garden.b.bed("north")
    onB.plants = [try garden.b.plant("b"), try garden.b.plant("a"), try garden.b.plant("c")]
    garden.b.addPlant("d", in: onB)
    try garden.b.context.save()
    try await garden.converge()
    #expect(try garden.a.bed("north").plants.map(\.name) == ["b", "a", "c", "d", "e"])
  }

  /// A many-to-many relationship changed on both replicas: the set union of both sides' additions minus
  /// their removals, not one side's whole set. A puts the aphid on b (from the plant's side) and takes it
  /// off a; B puts it on c (from the pest's side), and both put a new pest of their own on a.
  static let toManyAddedOnBothSidesKeepsBoth: Conformance.Check = { backend in
    let garden = try await planted(backend)
    try garden.a.plant("b").pests.insert(try garden.a.pest("aphid"))
    try garden.a.plant("a").pests.remove(try garden.a.pest("aphid"))
    try garden.a.context.save()
    try garden.b.pest("aphid").plants.insert(try garden.b.plant("c"))
    try garden.b.context.save()
    for (replica, name) in [(garden.a, "beetle"), (garden.b, "slug")] {
      let pest = MirrorPest(context: replica.context)
      pest.name = name
      try replica.plant("a").pests.insert(pest)
      try replica.context.save()
    }
    try await garden.converge()
    #expect(try Set(garden.b.pest("aphid").plants.map(\.name)) == ["b", "c"])
    #expect(try Set(garden.b.plant("a").pests.map(\.name)) == ["beetle", "slug"])
  }
}
