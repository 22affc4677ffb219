import Foundation
import Strata
import StrataLMDB
import StrataMemory
import StrataMirroring
import StrataPostgresHub
import StrataSQLite
import Testing

/// Mirroring configured on the store description (`MirroringOptions`), started by
/// `PersistentContainer.startMirroring(hubs:)` as Core Data's CloudKit container starts its mirror.
@Suite("Mirror configuration")
struct MirrorConfigurationTests {
  /// A container on `type` in `directory` whose description mirrors with `hub`.
  static func container(
    _ type: StoreType, _ name: String, in directory: URL, mirroring: MirroringOptions?
  ) throws -> PersistentContainer {
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory(), LMDBStoreFactory()])
    let container = PersistentContainer(name: name, model: orchardModel, types: [Crate.self, Apple.self], registry: registry)
    container.storeDescriptions = [
      StoreDescription(
        type: type, url: directory.appending(path: "\(name).\(type.rawValue)"), options: StoreOptions(tracksHistory: true),
        mirroring: mirroring)
    ]
    try container.loadPersistentStores()
    return container
  }

  /// The labels of the crates a fresh context of `container` reads.
  static func labels(_ container: PersistentContainer) throws -> Set<String> {
    let context = container.newBackgroundContext()
    return try context.performAndWait { Set(try context.fetch(FetchRequest<Crate>()).map(\.label)) }
  }

  @Test(arguments: HubKind.allCases)
  func aDescribedMirrorSyncsBothWaysByItself(_ kind: HubKind) async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let factories: [any MirrorHubFactory] = [
      MemoryHubFactory(hub: MemoryHub(model: orchardModel)), PostgresHubFactory(defaultSchema: "unused"),
    ]
    let location: String
    switch kind {
    case .memory: location = "memory:orchard"
    case .postgres:
      let schema = "configured_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(16)
      var components = try #require(URLComponents(string: try PostgresHubTests.serverURI()))
      components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "schema", value: String(schema))]
      location = try #require(components.string)
    }
    let a = try Self.container(.sqlite, "a", in: directory, mirroring: MirroringOptions(hub: location))
    let b = try Self.container(.lmdb, "b", in: directory, mirroring: MirroringOptions(hub: location))
    let mirrors = try [a, b].map { try #require(try $0.startMirroring(hubs: factories)) }
    #expect(mirrors.allSatisfy { $0.isSyncingAutomatically })
    let remembered = try StoreMirror.rememberedHub(of: a)
    #expect(remembered == location)

    try a.viewContext.performAndWait {
      let crate = Crate(context: a.viewContext)
      crate.label = "from a"
      try a.viewContext.save()
    }
    try await eventually("b holds a's crate") { try Self.labels(b) == ["from a"] }
    try b.viewContext.performAndWait {
      let crate = Crate(context: b.viewContext)
      crate.label = "from b"
      try b.viewContext.save()
    }
    try await eventually("a holds b's crate") { try Self.labels(a) == ["from a", "from b"] }
    for mirror in mirrors { await mirror.stopAutomaticSync() }
  }

  @Test func withoutOptionsNothingStartsAndAnUnknownHubIsNamed() throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let factories: [any MirrorHubFactory] = [MemoryHubFactory(hub: MemoryHub(model: orchardModel))]
    let plain = try Self.container(.sqlite, "plain", in: directory, mirroring: nil)
    let none = try plain.startMirroring(hubs: factories)
    #expect(none == nil)

    let manual = try Self.container(
      .sqlite, "manual", in: directory, mirroring: MirroringOptions(hub: "memory:x", automaticallySyncs: false))
    let mirror = try #require(try manual.startMirroring(hubs: factories))
    #expect(!mirror.isSyncingAutomatically)

    let elsewhere = try Self.container(
      .lmdb, "elsewhere", in: directory, mirroring: MirroringOptions(hub: "carrier-pigeon://loft"))
    #expect {
      _ = try elsewhere.startMirroring(hubs: factories)
    } throws: { error in
      guard case .unsupported(let reason) = error as? MirrorError else { return false }
      return reason.contains("no hub factory accepts")
    }
    let unremembered = try StoreMirror.rememberedHub(of: elsewhere)
    #expect(unremembered == nil, "nothing was written")
  }
}
