import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// The hub keeps the newest version of the app's model it has admitted and checks every push against it
/// (docs/MIRRORING.md, Versions of the model): a replica of an older version cannot create an object
/// without a field the newer version requires, and can still make every change its model allows.
@Suite("Mirror model versions")
struct MirrorModelVersionTests {
  /// Version 2 of the orchard: apples gain a required `grade` (its default fills the stores a lightweight
  /// migration upgrades).
  static let version2: ObjectModel = {
    do {
      return try orchardModel(changing: "Apple") {
        $0 + [AttributeDescription(name: "grade", type: .string, defaultValue: .string("B"))]
      }
    } catch {
      preconditionFailure("the test model is invalid: \(error)")
    }
  }()

  /// A hub of `kind` and a replica of version 1 that created the apple Gala and pushed it.
  static func galaOnAVersion1Replica(_ kind: OneHub.Kind, in directory: URL) async throws -> (OneHub, Replica) {
    let hub = OneHub(kind)
    let old = try Replica(.sqlite, hub: try hub.object(), in: directory, name: "a")
    let gala = Apple(context: old.context)
    gala.variety = "Gala"
    gala.weight = 100
    try old.context.save()
    #expect(try await old.mirror.sync().pushed == 1)
    return (hub, old)
  }

  /// A replica of version 1 syncs; a replica of version 2 connects (the hub takes version 2); the older
  /// replica's new apple lacks the grade version 2 requires and is refused as older, kept in its rejected
  /// list, while its change of an apple's weight and its new crate are accepted. Once the app is upgraded
  /// (its store opened with version 2), the retry is accepted.
  @Test(arguments: OneHub.Kind.allCases)
  func anOlderReplicaCannotCreateWhatTheNewerModelRequires(_ kind: OneHub.Kind) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (hub, old) = try await Self.galaOnAVersion1Replica(kind, in: directory)

    let b = try Replica(.lmdb, hub: try hub.object(model: Self.version2), in: directory, name: "b", model: Self.version2)
    _ = try await b.mirror.sync()
    #expect(try b.apples().map(\.variety) == ["Gala"])

    let fuji = Apple(context: old.context)
    fuji.variety = "Fuji"
    fuji.weight = 150
    try old.context.save()
    try old.apple("Gala").weight = 120
    let crate = Crate(context: old.context)
    crate.label = "north"
    try old.context.save()
    let report = try await old.mirror.sync()
    #expect(report.pushed == 1 && report.rejected == 1, "\(report)")
    let reason = try old.mirror.rejected().first?.reason ?? ""
    #expect(reason.contains("Apple.grade") && reason.contains("older than the hub's"), "\(reason)")

    _ = try await b.mirror.sync()
    #expect(try b.apples().map(\.variety) == ["Gala"] && b.apple("Gala").weight == 120)
    #expect(try b.crates().map(\.label) == ["north"])

    // The app is upgraded: the same store opened with version 2, and the retry goes through.
    old.container.close()
    let upgraded = try Replica(.sqlite, hub: try hub.object(model: Self.version2), in: directory, name: "a", model: Self.version2)
    let retried = try await upgraded.mirror.retryRejected()
    #expect(retried.pushed == 1 && retried.rejected == 0, "\(retried)")
    _ = try await b.mirror.sync()
    #expect(try b.apples().map(\.variety).sorted() == ["Fuji", "Gala"])
  }

  /// A replica of version 1 pulls what a replica of version 2 did, skipping the field its model lacks
  /// instead of failing the pull; once the app is upgraded, its next sync pulls the log again from its start
  /// and the skipped values arrive: both replicas then hold the same grades.
  @Test(arguments: OneHub.Kind.allCases)
  func anOlderReplicaSkipsFieldsItLacksAndGetsThemOnceUpgraded(_ kind: OneHub.Kind) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (hub, old) = try await Self.galaOnAVersion1Replica(kind, in: directory)

    let b = try Replica(.lmdb, hub: try hub.object(model: Self.version2), in: directory, name: "b", model: Self.version2)
    _ = try await b.mirror.sync()
    try b.apple("Gala").setValue("C", forKey: "grade")
    let fuji = Apple(context: b.context)
    fuji.variety = "Fuji"
    fuji.weight = 150
    try fuji.setValue("A", forKey: "grade")
    try b.context.save()
    _ = try await b.mirror.sync()

    let report = try await old.mirror.sync()
    #expect(report.pulled == 1, "\(report)")
    #expect(try old.apples().map(\.variety).sorted() == ["Fuji", "Gala"])

    old.container.close()
    let upgraded = try Replica(.sqlite, hub: try hub.object(model: Self.version2), in: directory, name: "a", model: Self.version2)
    _ = try await upgraded.mirror.sync()
    func grades(_ replica: Replica) throws -> [String: Value?] {
      Dictionary(uniqueKeysWithValues: try replica.apples().map { ($0.variety, $0.primitiveValue(forKey: "grade")) })
    }
    #expect(try grades(upgraded) == ["Gala": .string("C"), "Fuji": .string("A")])
    #expect(try grades(upgraded) == grades(b))
  }

  /// A newer replica's admit upgrades the model of a hub built with the older one: an insert without the
  /// newer model's required field is refused, also after an older replica's admit (which does not bring
  /// the older model back).
  @Test func theHubKeepsTheNewestModelItAdmitted() async throws {
    let hub = MemoryHub(model: orchardModel)
    try await hub.admit(replicaOf: Self.version2)
    let insert = MirrorChange(
      globalID: UUID(), entityName: "Apple", kind: .insert,
      fields: ["variety": .value(.string("Gala")), "weight": .value(.int(1)), "crate": .reference(nil)])
    let pushed = MirrorTransaction(replicaID: UUID(), localSequence: 1, basePosition: 0, changes: [insert])
    await #expect(throws: MirrorError.self) { try await hub.push(pushed) }
    try await hub.admit(replicaOf: orchardModel)
    await #expect(throws: MirrorError.self) { try await hub.push(pushed) }
    #expect(hub.ledger.lastPosition == 0)
  }
}
