import Foundation
import Strata
import StrataMemory
import StrataMirroring
import Synchronization
import Testing

/// The rules that need no second replica: the hub's exactly-once ledger, what models and stores can be
/// mirrored, and local saves made while a sync runs.
@Suite("Mirror rules")
struct MirrorRulesTests {
  @Test func theLedgerAppliesATransactionOnceAndAnswersARetryWithTheFirstReceipt() throws {
    var ledger = HubLedger(model: orchardModel)
    let crate = UUID()
    let pushed = MirrorTransaction(
      replicaID: UUID(), localSequence: 3, basePosition: 0,
      changes: [
        MirrorChange(
          globalID: crate, entityName: "Crate", kind: .insert,
          fields: ["label": .value(.string("north")), "note": .value(.null)])
      ])
    let first = try ledger.apply(pushed)
    let again = try ledger.apply(pushed)
    #expect(!first.wasDuplicate && again.wasDuplicate)
    #expect(again.position == first.position)
    #expect(ledger.log.count == 1 && ledger.lastPosition == 1)
    #expect(ledger.liveObjects[crate]?.fields["label"] == .value(.string("north")))
  }

  @Test func aChangeThatRestoresTheHubsValueIsNotLoggedAgain() throws {
    var ledger = HubLedger(model: orchardModel)
    let replica = UUID()
    let crate = UUID()
    let label: [String: MirrorField] = ["label": .value(.string("north"))]
    _ = try ledger.apply(
      MirrorTransaction(
        replicaID: replica, localSequence: 1, basePosition: 0,
        changes: [MirrorChange(globalID: crate, entityName: "Crate", kind: .insert, fields: label)]))
    _ = try ledger.apply(
      MirrorTransaction(
        replicaID: UUID(), localSequence: 1, basePosition: 0,
        changes: [MirrorChange(globalID: crate, entityName: "Crate", kind: .update, fields: label)]))
    #expect(ledger.log.map(\.changes.count) == [1, 0])
    #expect(ledger.conflicts.isEmpty)
  }

  @Test func aModelWithAToManyWithoutInverseIsRefusedAndDenyOrderedAndManyToManyAreMirrored() throws {
    let noInverse = try ObjectModel(entities: [
      EntityDescription(
        name: "Shelf", relationships: [RelationshipDescription(name: "books", destination: "Book", isToMany: true)]),
      EntityDescription(name: "Book"),
    ])
    #expect(
      throws: MirrorError.unsupported(
        "Shelf.books is a to-many relationship without an inverse; mirrored relationships need one")
    ) { try MirrorModel.adding(to: noInverse) }
    let mirrorable = try PostgresHubRelationshipTests.shelves()
    #expect(try MirrorModel.adding(to: mirrorable).entity(named: MirrorModel.stateEntity) != nil)
  }

  @Test func aStoreWithoutHistoryOrAModelWithoutTheAdditionsIsRefused() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let noHistory = PersistentContainer(name: "n", model: orchardModel, types: [Crate.self, Apple.self], registry: registry)
    noHistory.storeDescriptions = [StoreDescription(type: .memory)]
    try noHistory.loadPersistentStores()
    #expect(throws: MirrorError.unsupported("the local store must track persistent history (StoreOptions.tracksHistory)")) {
      try StoreMirror(container: noHistory, hub: MemoryHub(model: orchardModel))
    }
    let plain = PersistentContainer(
      name: "p", model: try ObjectModel(Crate.self, Apple.self), types: [Crate.self, Apple.self], registry: registry)
    plain.storeDescriptions = [StoreDescription(type: .memory, options: StoreOptions(tracksHistory: true))]
    try plain.loadPersistentStores()
    #expect(throws: MirrorError.self) { try StoreMirror(container: plain, hub: MemoryHub(model: orchardModel)) }
  }

  @Test func aPushWritesNothingToTheAppsObjects() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let a = try Replica(.sqlite, hub: MemoryHub(model: orchardModel), in: directory, name: "a")
    let crate = Crate(context: a.context)
    crate.label = "north"
    try a.context.save()
    _ = try await a.mirror.sync()
    // Had the push written the object (its identity, say), its version would have moved under the
    // context, and this save of the object as the context knows it would fail its optimistic check.
    crate.label = "south"
    try a.context.save()
    #expect(try a.mirror.globalID(of: crate) != nil)
  }

  @Test func aLocalSaveMadeWhileASyncRunsIsNeitherOverwrittenNorLost() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let hub = MemoryHub(model: orchardModel)
    let a = try Replica(.memory, hub: hub, in: directory, name: "a")
    let interrupted = InterruptingHub(hub: hub)
    let b = try Replica(.sqlite, hub: interrupted, in: directory, name: "b")
    let crate = Crate(context: a.context)
    crate.label = "north"
    try a.context.save()
    _ = try await a.mirror.sync()
    _ = try await b.mirror.sync()

    crate.label = "from a"
    try a.context.save()
    _ = try await a.mirror.sync()
    // b saves between its push and its pull: the pull must not overwrite that label.
    interrupted.beforeNextPull {
      try b.context.performAndWait {
        try b.crate(labelled: "north").label = "from b, during the sync"
        try b.context.save()
      }
    }
    _ = try await b.mirror.sync()
    #expect(try b.crates().map(\.label) == ["from b, during the sync"])
    #expect(try b.mirror.status().pendingTransactions == 1)
    _ = try await b.mirror.sync()
    _ = try await a.mirror.sync()
    a.context.refreshAllObjects()
    for replica in [a, b] { #expect(try replica.crates().map(\.label) == ["from b, during the sync"]) }
  }
}

/// A hub that runs a closure (a local save of the replica) before it answers the next pull.
final class InterruptingHub: MirrorHub {
  let hub: MemoryHub
  private let pending = Mutex<(@Sendable () throws -> Void)?>(nil)

  init(hub: MemoryHub) { self.hub = hub }

  func beforeNextPull(_ body: @escaping @Sendable () throws -> Void) { pending.withLock { $0 = body } }

  func push(_ transaction: MirrorTransaction) async throws -> MirrorReceipt { try await hub.push(transaction) }

  func pull(after position: Int64, limit: Int) async throws -> [MirrorLogEntry] {
    if let body = pending.withLock({ body in
      defer { body = nil }; return body
    }) {
      try body()
    }
    return try await hub.pull(after: position, limit: limit)
  }

  func conflicts() async throws -> [MirrorConflict] { try await hub.conflicts() }

  func lastPosition() async throws -> Int64 { try await hub.lastPosition() }
}
