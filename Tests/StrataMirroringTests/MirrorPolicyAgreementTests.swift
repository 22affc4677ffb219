import Foundation
import Strata
import StrataMirroring
import Synchronization
import Testing

@testable import StrataPostgresHub

/// Every replica merges by the same conflict policies (docs/MIRRORING.md, Conflict policies): the hub
/// records each entity's policy, and a replica whose hub object was given another one is refused with one
/// line, before anything is written on either side.
@Suite("Mirror policy agreement")
struct MirrorPolicyAgreementTests {
  /// A replica given `hubWins` for apples syncs first; a replica given the standard policies is refused
  /// with one line naming the entity and both policies; nothing is written on the hub or in its store; a
  /// replica given the same policies as the first (its own hub object) syncs.
  @Test(arguments: OneHub.Kind.allCases)
  func aReplicaGivenOtherPoliciesIsRefused(_ kind: OneHub.Kind) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let strict = MirrorPolicies(entities: ["Apple": MirrorPolicy(conflicts: .hubWins)])
    let hub = OneHub(kind)
    let first = try hub.object(policies: strict)
    let a = try Replica(.sqlite, hub: first, in: directory, name: "a")
    let crate = Crate(context: a.context)
    crate.label = "north"
    try a.context.save()
    #expect(try await a.mirror.sync().pushed == 1)

    let b = try Replica(.lmdb, hub: try hub.object(), in: directory, name: "b")
    let other = Crate(context: b.context)
    other.label = "south"
    try b.context.save()
    let error = await #expect(throws: MirrorError.self) { try await b.mirror.sync() }
    let line = error?.description ?? ""
    #expect(!line.contains("\n") && line.contains("Apple"), "\(line)")
    #expect(line.contains("conflicts laterPushWins") && line.contains("conflicts hubWins"), "\(line)")
    #expect(try await first.lastPosition() == 1)
    let status = try b.mirror.status()
    #expect(status.replicaID == nil && status.pendingTransactions == 1, "nothing written locally: \(status)")

    let c = try Replica(.memory, hub: try hub.object(policies: strict), in: directory, name: "c")
    _ = try await c.mirror.sync()
    #expect(try c.crates().map(\.label) == ["north"])
  }

  /// Custom resolvers are told apart by their names: a replica given another name (another version of the
  /// resolver) for an entity is refused, naming both; the same name is admitted.
  @Test(arguments: OneHub.Kind.allCases)
  func customResolversAreToldApartByTheirNames(_ kind: OneHub.Kind) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let sum: MirrorResolver = { values in values.local }
    let v1 = MirrorPolicies(entities: ["Apple": MirrorPolicy(conflicts: .resolver(named: "sum, v1", sum))])
    let v2 = MirrorPolicies(entities: ["Apple": MirrorPolicy(conflicts: .resolver(named: "sum, v2", sum))])
    let hub = OneHub(kind)
    let a = try Replica(.memory, hub: try hub.object(policies: v1), in: directory, name: "a")
    _ = try await a.mirror.sync()
    let b = try Replica(.memory, hub: try hub.object(policies: v2), in: directory, name: "b")
    let error = await #expect(throws: MirrorError.self) { try await b.mirror.sync() }
    let line = error?.description ?? ""
    #expect(line.contains("custom 'sum, v1'") && line.contains("custom 'sum, v2'"), "\(line)")
    let c = try Replica(.memory, hub: try hub.object(policies: v1), in: directory, name: "c")
    _ = try await c.mirror.sync()
  }

  /// A PostgreSQL hub made before the policies were recorded (no `policies` row) records those of the next
  /// replica that connects, and refuses a replica given others from then on.
  @Test func aHubWithoutRecordedPoliciesRecordsThoseOfTheNextReplica() async throws {
    let uri = try PostgresHubTests.serverURI()
    let schema = MirrorKillTests.freshSchema()
    _ = try await PostgresHub(uri: uri, schema: schema, model: orchardModel).lastPosition()
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let connection = try HubConnection(uri)
    try connection.query("DELETE FROM \"\(schema)\".strata_mirror_model WHERE key = 'policies'")
    #expect(try connection.query("SELECT count(*) FROM \"\(schema)\".strata_mirror_model WHERE key = 'policies'") == [["0"]])

    let strict = MirrorPolicies(entities: ["Crate": MirrorPolicy(deleteVersusUpdate: .updateWins)])
    let a = try Replica(
      .sqlite, hub: try PostgresHub(uri: uri, schema: schema, model: orchardModel, policies: strict), in: directory, name: "a")
    _ = try await a.mirror.sync()
    let recorded = try #require(
      try connection.query("SELECT value FROM \"\(schema)\".strata_mirror_model WHERE key = 'policies'").first?.first ?? nil)
    #expect(recorded.contains("delete versus update updateWins"), "\(recorded)")

    let b = try Replica(.memory, hub: try PostgresHub(uri: uri, schema: schema, model: orchardModel), in: directory, name: "b")
    let error = await #expect(throws: MirrorError.self) { try await b.mirror.sync() }
    #expect(error?.description.contains("Crate") == true, "\(error?.description ?? "")")
  }
}

/// Hub objects on one hub, as separate processes build them, each with its model and policies: a memory hub
/// and hub objects sharing it (`MemoryHub(sharing:model:policies:)`), or PostgreSQL hubs on one schema.
final class OneHub: Sendable {
  enum Kind: String, CaseIterable, Sendable { case memory, postgres }

  let kind: Kind
  let schema = MirrorKillTests.freshSchema()
  let memory = Mutex<MemoryHub?>(nil)

  init(_ kind: Kind) { self.kind = kind }

  /// Another hub object on the hub.
  func object(model: ObjectModel = orchardModel, policies: MirrorPolicies = .standard) throws -> any MirrorHub {
    switch kind {
    case .memory:
      return memory.withLock { first in
        guard let first else {
          let hub = MemoryHub(model: model, policies: policies)
          first = hub
          return hub
        }
        return MemoryHub(sharing: first, model: model, policies: policies)
      }
    case .postgres:
      return try PostgresHub(uri: PostgresHubTests.serverURI(), schema: schema, model: model, policies: policies)
    }
  }
}
