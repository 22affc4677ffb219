import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// A unique key taken by an update: the hub refuses a transaction that leaves two live objects holding the
/// same key (every replica pulling both would fail its save), accepts one that frees a key and takes it in
/// any order, and a discarded rejection gives the replica the hub's values back.
@Suite("Mirror unique keys taken by updates")
struct MirrorKeyUpdateTests {
  typealias Hub = MirrorUniquenessTests.Hub

  /// A replica of the varieties model, with the canonical dump of `Replica`.
  static func replica(_ store: ReplicaStore, _ hub: any MirrorHub, _ directory: URL, _ name: String) throws -> Replica {
    try Replica(store, hub: hub, in: directory, name: name, model: varietyModel, types: [Variety.self, VarietyNote.self])
  }

  static func variety(_ name: String, in replica: Replica) throws -> Variety {
    let found = try replica.context.fetch(FetchRequest<Variety>()).first { $0.name == name }
    return try #require(found, "no variety \(name)")
  }

  static func names(_ replica: Replica) throws -> [String] {
    replica.context.refreshAllObjects()
    return try replica.context.fetch(FetchRequest<Variety>()).map(\.name).sorted()
  }

  @discardableResult
  static func add(_ name: String, rating: Int64, to replica: Replica) throws -> Variety {
    let variety = Variety(context: replica.context)
    variety.name = name
    variety.rating = rating
    let note = VarietyNote(context: replica.context)
    note.text = "about \(name)"
    note.variety = variety
    try replica.context.save()
    return variety
  }

  /// Replica a (SQLite) and b (memory) on a fresh hub of `kind`, once a has created `names` (each with a
  /// note, rated 1, 2, …) and both have synced; a's varieties in the order of `names`.
  static func orchard(
    _ kind: Hub, in directory: URL, _ names: [String]
  ) async throws -> (a: Replica, b: Replica, varieties: [Variety], live: () throws -> [UUID: HubLedger.Object]) {
    let (hub, live) = try MirrorUniquenessTests.make(kind)
    let a = try replica(.sqlite, hub, directory, "a")
    let b = try replica(.memory, hub, directory, "b")
    var varieties: [Variety] = []
    for (index, name) in names.enumerated() { varieties.append(try add(name, rating: Int64(index + 1), to: a)) }
    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()
    return (a, b, varieties, live)
  }

  /// The orchard of Rooster, Fuji and Maris; then b renames Fuji to Kestrel and pushes it, which a has not
  /// pulled.
  static func kestrelOnTheHub(
    _ kind: Hub, in directory: URL
  ) async throws -> (a: Replica, b: Replica, live: () throws -> [UUID: HubLedger.Object]) {
    let (a, b, _, live) = try await orchard(kind, in: directory, ["Rooster", "Fuji", "Maris"])
    try variety("Fuji", in: b).name = "Kestrel"
    try b.context.save()
    #expect(try await b.mirror.sync().pushed == 1)
    return (a, b, live)
  }

  /// a renames Rooster to Kestrel, which another variety holds on the hub, and syncs: the hub refuses it.
  /// a's pull of the other Kestrel then gives a's Rooster the hub's name back (the key goes to the hub's
  /// holder), so the sync goes on.
  static func renameRoosterOntoKestrel(_ a: Replica) async throws -> [RejectedTransaction] {
    try variety("Rooster", in: a).name = "Kestrel"
    try a.context.save()
    _ = try await a.mirror.sync()
    let rejected = try a.mirror.rejected()
    #expect(rejected.map(\.reason) == [#"Variety.name "Kestrel" is already held by another object"#])
    return rejected
  }

  /// Every replica and the hub hold the same objects with the same fields.
  static func expectConverged(_ replicas: [Replica], _ live: () throws -> [UUID: HubLedger.Object]) throws {
    let hub = try live().mapValues(\.fields)
    for replica in replicas { #expect(try replica.canonicalDump() == hub) }
  }

  @Test(arguments: Hub.allCases)
  func aRenameOntoAHeldKeyIsRefusedAndADiscardRestoresTheOldName(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (a, b, live) = try await Self.kestrelOnTheHub(kind, in: directory)
    let rejected = try await Self.renameRoosterOntoKestrel(a)
    #expect(try live().values.filter { $0.fields["name"] == .value(.string("Kestrel")) }.count == 1)
    // The other replica is not stuck: the hub holds one Kestrel.
    _ = try await b.mirror.sync()
    #expect(try Self.names(b) == ["Kestrel", "Maris", "Rooster"])

    let dropped = try await a.mirror.discardRejected()
    #expect(dropped.map(\.localSequence) == rejected.map(\.localSequence))
    #expect(try a.mirror.rejected().isEmpty)
    #expect(try Self.names(a).contains("Rooster"))
    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()
    #expect(try Self.names(a) == ["Kestrel", "Maris", "Rooster"])
    #expect(try a.mirror.status().pendingTransactions == 0)
    try Self.expectConverged([a, b], live)
  }

  /// Two keys swapped in one transaction are accepted, and every replica ends with the same data.
  @Test(arguments: Hub.allCases)
  func aSwapOfTwoKeysInOneTransactionIsAccepted(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (a, b, varieties, live) = try await Self.orchard(kind, in: directory, ["Rooster", "Kestrel"])
    let (rooster, kestrel) = (varieties[0], varieties[1])
    kestrel.name = "Rooster"
    rooster.name = "Kestrel"
    try a.context.save()
    let swapped = try await a.mirror.sync()
    #expect(swapped.pushed == 1 && swapped.rejected == 0)
    #expect(try a.mirror.rejected().isEmpty)
    _ = try await b.mirror.sync()
    #expect(try Self.variety("Rooster", in: b).rating == 2)
    #expect(try Self.variety("Kestrel", in: b).rating == 1)
    try Self.expectConverged([a, b], live)
  }

  /// A key freed by a rename and taken by a new object (with a note) in the same transaction is accepted,
  /// and the new object is not merged into the renamed one (which no longer holds the key once the
  /// transaction is applied): the hub and the pushing replica hold both.
  @Test(arguments: Hub.allCases)
  func aKeyFreedAndTakenByANewObjectInOneTransactionIsAccepted(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (a, b, varieties, live) = try await Self.orchard(kind, in: directory, ["Rooster"])
    varieties[0].name = "Kerr's Pink"
    try Self.add("Rooster", rating: 3, to: a)
    let report = try await a.mirror.sync()
    #expect(report.pushed == 1 && report.rejected == 0)
    #expect(try a.mirror.rejected().isEmpty)
    let names = try live().values.compactMap { $0.entityName == "Variety" ? $0.fields["name"] : nil }
    #expect(Set(names) == [.value(.string("Kerr's Pink")), .value(.string("Rooster"))] && names.count == 2)
    #expect(try Self.names(a) == ["Kerr's Pink", "Rooster"])
    try Self.expectConverged([a], live)
    // A replica pulling the entry meets the new Rooster while its own copy of the renamed variety still
    // holds the key (its insert acknowledged long ago, so not its twin) until the rename in the same entry.
    _ = try await b.mirror.sync()
    #expect(try Self.names(b) == ["Kerr's Pink", "Rooster"])
    try Self.expectConverged([b], live)
  }

  /// A refused transaction that created a variety (with its note), deleted another (its note went with it)
  /// and took b's key: its discard deletes the new ones, brings back the deleted ones with the hub's values
  /// and relationships, and gives the renamed variety its name back — except a field a save not pushed yet
  /// changed since, which that save's push carries.
  @Test(arguments: Hub.allCases)
  func aDiscardUndoesARefusedInsertAndDeleteAndKeepsPendingFields(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (a, b, live) = try await Self.kestrelOnTheHub(kind, in: directory)
    let before = try live().mapValues(\.fields)
    let rooster = try Self.variety("Rooster", in: a)
    let nadine = Variety(context: a.context)
    nadine.name = "Nadine"
    nadine.rating = 9
    let note = VarietyNote(context: a.context)
    note.text = "about Nadine"
    note.variety = nadine
    a.context.delete(try Self.variety("Maris", in: a))
    rooster.name = "Kestrel"
    rooster.rating = 7
    try a.context.save()
    _ = try await a.mirror.sync()
    #expect(try a.mirror.rejected().count == 1)
    #expect(try live().mapValues(\.fields) == before)
    // The pull of b's Kestrel took the key back for the hub: the refused rename is undone already.
    a.context.refreshAllObjects()
    #expect(rooster.name == "Rooster")

    // Changed again and not pushed: the discard leaves the rating alone.
    rooster.rating = 8
    try a.context.save()
    try await a.mirror.discardRejected()
    #expect(try Self.names(a) == ["Kestrel", "Maris", "Rooster"])
    a.context.refreshAllObjects()
    #expect(try Self.variety("Rooster", in: a).rating == 8)
    let maris = try Self.variety("Maris", in: a)
    #expect(maris.notes.map(\.text) == ["about Maris"])
    #expect(
      try a.context.fetch(FetchRequest<VarietyNote>()).map(\.text).sorted() == ["about Fuji", "about Maris", "about Rooster"])

    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()
    #expect(try Self.names(a) == ["Kestrel", "Maris", "Rooster"])
    #expect(try Self.variety("Rooster", in: b).rating == 8)
    try Self.expectConverged([a, b], live)
  }

  /// A conflict settled by the hub's policy can give an object a key the same transaction gives another:
  /// under hubWins, b's swap of X and Y keeps a's newer name for X, which b gives Y. The hub refuses it,
  /// names the key, and leaves its ledger as it was; the same key is judged again when pushed again.
  @Test func aKeyCollisionThatAConflictPolicyMakesIsRefusedAndLeavesTheLedgerAsItWas() throws {
    var ledger = HubLedger(
      model: varietyModel, policies: MirrorPolicies(entities: ["Variety": MirrorPolicy(conflicts: .hubWins)]))
    let (a, b, x, y) = (UUID(), UUID(), UUID(), UUID())
    func named(_ id: UUID, _ name: String, _ kind: MirrorChange.Kind = .update) -> MirrorChange {
      MirrorChange(
        globalID: id, entityName: "Variety", kind: kind,
        fields: kind == .insert ? ["name": .value(.string(name)), "rating": .value(.int(0))] : ["name": .value(.string(name))])
    }
    _ = try ledger.apply(
      MirrorTransaction(
        replicaID: a, localSequence: 1, basePosition: 0, changes: [named(x, "P", .insert), named(y, "R", .insert)]))
    _ = try ledger.apply(MirrorTransaction(replicaID: a, localSequence: 2, basePosition: 1, changes: [named(x, "Q")]))
    let before = ledger
    let collides = MirrorTransaction(
      replicaID: b, localSequence: 1, basePosition: 1, changes: [named(x, "S"), named(y, "Q")])
    #expect(throws: MirrorError.rejected(#"Variety.name "Q" is already held by another object"#)) {
      try ledger.apply(collides)
    }
    #expect(ledger.objects == before.objects && ledger.log == before.log && ledger.conflicts == before.conflicts)
    #expect(ledger.lastPosition == before.lastPosition && ledger.changedObjects == before.changedObjects)

    // Not refused under the default policy: the later push wins X's name, and Q is free for Y.
    var later = HubLedger(model: varietyModel, objects: before.objects, lastPosition: before.lastPosition)
    #expect(try later.apply(collides).wasDuplicate == false)
    // Pushed again without the collision, the same key is applied.
    var retried = collides
    retried.changes = [named(y, "T")]
    #expect(try ledger.apply(retried).position == 3)
    #expect(ledger.liveObjects[y]?.fields["name"] == .value(.string("T")))
    // The index of keys is as the refusal found it: a new Q merges into X.
    let duplicate = UUID()
    _ = try ledger.apply(
      MirrorTransaction(replicaID: b, localSequence: 2, basePosition: 3, changes: [named(duplicate, "Q", .insert)]))
    #expect(ledger.objects[duplicate]?.mergedInto == x)
  }

  /// A rename onto a key b created (not renamed) is refused alike. a's pull of b's insert meets a's renamed
  /// variety holding the key: an acknowledged object, not the insert's twin, so the pull settles the key for
  /// the hub (a's variety takes the hub's name back) instead of failing, and the discard finds nothing left.
  @Test(arguments: Hub.allCases)
  func aRenameOntoAKeyAnotherReplicaCreatedIsRefused(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (a, b, _, live) = try await Self.orchard(kind, in: directory, ["Rooster"])
    try Self.add("Kestrel", rating: 5, to: b)
    _ = try await b.mirror.sync()
    let rejected = try await Self.renameRoosterOntoKestrel(a)
    #expect(try await a.mirror.discardRejected() == rejected)
    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()
    #expect(try Self.names(b) == ["Kestrel", "Rooster"])
    #expect(try Self.names(a) == ["Kestrel", "Rooster"])
    try Self.expectConverged([a, b], live)
  }

  /// A refused transaction deleted Maris (its note went with it) while b gave Maris another note: a's pull
  /// of that note finds no Maris here and leaves the note without it. The discard brings Maris back and,
  /// from the hub's objects that name Maris, the new note's link to it: a, b and the hub end identical.
  @Test(arguments: Hub.allCases)
  func aDiscardedDeleteBringsBackTheReferencesPulledWhileItWaited(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (a, b, live) = try await Self.kestrelOnTheHub(kind, in: directory)
    a.context.delete(try Self.variety("Maris", in: a))
    try Self.variety("Rooster", in: a).name = "Kestrel"
    try a.context.save()
    let late = VarietyNote(context: b.context)
    late.text = "late about Maris"
    late.variety = try Self.variety("Maris", in: b)
    try b.context.save()
    _ = try await b.mirror.sync()
    _ = try await a.mirror.sync()
    #expect(try a.mirror.rejected().count == 1)

    try await a.mirror.discardRejected()
    a.context.refreshAllObjects()
    #expect(try Self.variety("Maris", in: a).notes.map(\.text).sorted() == ["about Maris", "late about Maris"])
    try Self.expectConverged([a, b], live)
  }

  /// A refused transaction created Nadine; a later save, accepted, moved Maris's note onto her (the hub,
  /// which has no Nadine, left the note on Maris). The discard deletes Nadine, whose notes cascade: the note
  /// goes back to Maris first, as the hub holds it, instead of going with her.
  @Test(arguments: Hub.allCases)
  func aDiscardedInsertTakesNothingTheHubKeepsWithIt(_ kind: Hub) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (a, _, live) = try await Self.kestrelOnTheHub(kind, in: directory)
    let nadine = Variety(context: a.context)
    nadine.name = "Nadine"
    try Self.variety("Rooster", in: a).name = "Kestrel"
    try a.context.save()
    let note = try #require(try Self.variety("Maris", in: a).notes.first)
    note.variety = nadine
    try a.context.save()
    let report = try await a.mirror.sync()
    #expect(report.rejected == 1 && report.pushed == 1, "\(report)")

    try await a.mirror.discardRejected()
    a.context.refreshAllObjects()
    #expect(try Self.names(a) == ["Kestrel", "Maris", "Rooster"])
    #expect(try Self.variety("Maris", in: a).notes.map(\.text) == ["about Maris"])
    try Self.expectConverged([a], live)
  }
}
