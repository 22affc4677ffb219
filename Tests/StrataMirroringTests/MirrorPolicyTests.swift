import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Synchronization
import Testing

/// The conflict policies (`MirrorPolicies`), per entity, on a memory hub and on a PostgreSQL hub: each test
/// ends differently from the standard rules, so it fails when the hub ignores the policy.
@Suite("Mirror conflict policies")
struct MirrorPolicyTests {
  enum Hub: String, CaseIterable, Sendable { case memory, postgres }

  /// A fresh hub of `kind` with `policies`, and a way to read its live objects.
  static func make(_ kind: Hub, _ policies: MirrorPolicies) throws -> (any MirrorHub, () throws -> [UUID: HubLedger.Object]) {
    switch kind {
    case .memory:
      let hub = MemoryHub(model: orchardModel, policies: policies)
      return (hub, { hub.ledger.liveObjects })
    case .postgres:
      let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
      let hub = try PostgresHub(
        uri: try PostgresHubTests.serverURI(), schema: String(schema), model: orchardModel, policies: policies)
      return (hub, { try hub.liveObjects() })
    }
  }

  /// Two replicas of one hub holding crate "north" with apple "Gala" (weight 100), both synced.
  struct Orchard {
    let directory: URL
    let a: Replica
    let b: Replica
    let hubObjects: () throws -> [UUID: HubLedger.Object]

    init(_ kind: Hub, _ policies: MirrorPolicies) async throws {
      directory = try temporaryDirectory()
      let (hub, objects) = try MirrorPolicyTests.make(kind, policies)
      hubObjects = objects
      a = try Replica(.sqlite, hub: hub, in: directory, name: "a")
      b = try Replica(.lmdb, hub: hub, in: directory, name: "b")
      let crate = Crate(context: a.context)
      crate.label = "north"
      let apple = Apple(context: a.context)
      apple.variety = "Gala"
      apple.weight = 100
      apple.crate = crate
      try a.context.save()
      _ = try await a.mirror.sync()
      _ = try await b.mirror.sync()
    }

    func sync(_ replicas: Replica...) async throws {
      for replica in replicas { _ = try await replica.mirror.sync() }
    }

    /// A's edit and B's edit, each saved before either replica syncs (neither sees the other's), then A, B
    /// and A sync (every change reaches both).
    func concurrently(a editA: (Replica) throws -> Void, b editB: (Replica) throws -> Void) async throws {
      try editA(a)
      try a.context.save()
      try editB(b)
      try b.context.save()
      try await sync(a, b, a)
    }

    func expectConverged() throws {
      let hub = try hubObjects().mapValues(\.fields)
      #expect(try a.canonicalDump() == hub)
      #expect(try b.canonicalDump() == hub)
    }

    func replicaID(_ replica: Replica) throws -> UUID? { try replica.mirror.status().replicaID }
  }

  /// An edit giving apple "Gala" `weight`.
  static func weigh(_ weight: Int64) -> (Replica) throws -> Void { { try $0.apple("Gala").weight = weight } }

  /// An edit deleting apple "Gala".
  static func deleteGala(_ replica: Replica) throws { replica.context.delete(try replica.apple("Gala")) }

  /// `hubWins` for apples, the standard rule for crates: the apple keeps the weight the hub held (A's, pushed
  /// first) and B's later push of it loses; the crate's note goes to the later push as usual.
  @Test(arguments: Hub.allCases)
  func hubWinsKeepsTheHubsValuePerEntity(_ kind: Hub) async throws {
    let orchard = try await Orchard(kind, MirrorPolicies(entities: ["Apple": MirrorPolicy(conflicts: .hubWins)]))
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    try await orchard.concurrently(
      a: { a in
        try Self.weigh(120)(a)
        try a.crate(labelled: "north").note = "from A"
      },
      b: { b in
        try Self.weigh(150)(b)
        try b.crate(labelled: "north").note = "from B"
      })
    #expect(try a.apple("Gala").weight == 120 && b.apple("Gala").weight == 120)
    #expect(try a.crate(labelled: "north").note == "from B" && b.crate(labelled: "north").note == "from B")
    try orchard.expectConverged()
    let conflicts = try await a.mirror.conflicts()
    let apple = try #require(conflicts.first { $0.entityName == "Apple" })
    #expect(apple.rule == .hubWins && apple.field == "weight")
    #expect(apple.losingFields == ["weight": .value(.int(150))] && apple.keptFields == ["weight": .value(.int(120))])
    #expect(try apple.winningReplica == orchard.replicaID(a) && apple.losingReplica == orchard.replicaID(b))
    #expect(apple.winningPosition < apple.losingPosition)
    let crate = try #require(conflicts.first { $0.entityName == "Crate" })
    #expect(crate.rule == .laterPushWins && crate.losingFields == ["note": .value(.string("from A"))])
    #expect(try crate.winningReplica == orchard.replicaID(b))
  }

  /// A custom resolver is given the base, the pushed and the hub's values and its answer is kept
  /// everywhere: here both sides' additions to the weight (100 → 120 on A, 100 → 150 on B) add up to 170.
  @Test(arguments: Hub.allCases)
  func aCustomResolverKeepsItsValue(_ kind: Hub) async throws {
    let seen = Mutex<[MirrorConflictValues]>([])
    let addBoth = MirrorConflictPolicy.custom { values in
      seen.withLock { $0.append(values) }
      guard case .value(.int(let local)) = values.local, case .value(.int(let hub))? = values.hub,
        case .value(.int(let base))? = values.base
      else { return values.local }
      return .value(.int(local + hub - base))
    }
    let orchard = try await Orchard(kind, MirrorPolicies(entities: ["Apple": MirrorPolicy(conflicts: addBoth)]))
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    try await orchard.concurrently(a: Self.weigh(120), b: Self.weigh(150))
    #expect(try a.apple("Gala").weight == 170 && b.apple("Gala").weight == 170)
    try orchard.expectConverged()
    #expect(
      seen.withLock { $0 } == [
        MirrorConflictValues(
          entityName: "Apple", field: "weight", base: .value(.int(100)), local: .value(.int(150)), hub: .value(.int(120)))
      ])
    let conflict = try #require(try await a.mirror.conflicts().first)
    #expect(conflict.rule == .custom && conflict.keptFields == ["weight": .value(.int(170))])
    #expect(conflict.losingFields == ["weight": .value(.int(120))])
  }

  /// A resolver's value the attribute cannot hold (a string for an integer) keeps the hub's value.
  @Test func aResolversValueThatDoesNotFitKeepsTheHubs() async throws {
    let wrong = MirrorConflictPolicy.custom { _ in .value(.string("heavy")) }
    let orchard = try await Orchard(.memory, MirrorPolicies(defaultPolicy: MirrorPolicy(conflicts: wrong)))
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    try await orchard.concurrently(a: Self.weigh(120), b: Self.weigh(150))
    #expect(try a.apple("Gala").weight == 120 && b.apple("Gala").weight == 120)
    try orchard.expectConverged()
  }

  /// `updateWins`: a delete pushed after another replica's update it had not seen is not applied; the
  /// deleter gets the object back with the update.
  @Test(arguments: Hub.allCases)
  func updateWinsRestoresADeleteOfAnUpdatedObject(_ kind: Hub) async throws {
    let orchard = try await Orchard(kind, MirrorPolicies(entities: ["Apple": MirrorPolicy(deleteVersusUpdate: .updateWins)]))
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    try await orchard.concurrently(a: Self.weigh(120), b: Self.deleteGala)
    #expect(try a.apple("Gala").weight == 120 && b.apple("Gala").weight == 120)
    #expect(try b.apple("Gala").crate?.label == "north")
    try orchard.expectConverged()
    let conflict = try #require(try await a.mirror.conflicts().first)
    #expect(conflict.kind == .deleteVersusUpdate && conflict.rule == .updateWins)
    #expect(try conflict.winningReplica == orchard.replicaID(a) && conflict.losingReplica == orchard.replicaID(b))
  }

  /// `updateWins`: an update pushed after another replica's delete it had not seen brings the object back,
  /// with its last values and the update, on every replica.
  @Test(arguments: Hub.allCases)
  func updateWinsRevivesAnObjectDeletedElsewhere(_ kind: Hub) async throws {
    let orchard = try await Orchard(kind, MirrorPolicies(entities: ["Apple": MirrorPolicy(deleteVersusUpdate: .updateWins)]))
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    b.context.delete(try b.apple("Gala"))
    try b.context.save()
    try a.apple("Gala").weight = 120
    try a.context.save()
    try await orchard.sync(b, a, b)
    #expect(try a.apple("Gala").weight == 120 && b.apple("Gala").weight == 120)
    #expect(try b.apple("Gala").crate?.label == "north")
    try orchard.expectConverged()
    let conflict = try #require(try await a.mirror.conflicts().first)
    #expect(conflict.kind == .deleteVersusUpdate && conflict.rule == .updateWins)
    #expect(try conflict.winningReplica == orchard.replicaID(a) && conflict.losingReplica == orchard.replicaID(b))
    // Later edits of the revived object travel as usual.
    try b.apple("Gala").weight = 90
    try b.context.save()
    try await orchard.sync(b, a)
    #expect(try a.apple("Gala").weight == 90)
  }

  /// The standard rule, recorded: a delete wins over an update it had not seen.
  @Test func deleteWinsIsTheDefaultAndIsRecorded() async throws {
    let orchard = try await Orchard(.memory, .standard)
    defer { try? FileManager.default.removeItem(at: orchard.directory) }
    let (a, b) = (orchard.a, orchard.b)
    try await orchard.concurrently(a: Self.weigh(120), b: Self.deleteGala)
    #expect(try a.apples().isEmpty && b.apples().isEmpty)
    #expect(try await a.mirror.conflicts().map(\.rule) == [.deleteWins])
  }
}
