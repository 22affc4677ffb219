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
  static func planted(_ backend: ConformanceBackend) async throws -> MirrorGarden {
    let garden = try MirrorGarden(backend)
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
