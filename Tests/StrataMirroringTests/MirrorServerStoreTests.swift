import Foundation
import Strata
import StrataMirroring
import StrataPostgres
import StrataPostgresHub
import Testing

/// The server's own Strata store, beside a PostgreSQL hub's tables, kept up to date by the hub after every
/// round of its replicas (docs/MIRRORING.md, The server's own Strata store).
@Suite("Mirror server store")
struct MirrorServerStoreTests {
  static let registry = StoreRegistry([PostgresStoreFactory()])

  /// Opens the varieties' container on the store at `url`.
  static func open(_ url: URL) throws -> PersistentContainer {
    let container = PersistentContainer(
      name: "server", model: varietyModel, types: [Variety.self, VarietyNote.self], registry: registry)
    container.storeDescriptions = [StoreDescription(type: .postgres, url: url, options: StoreOptions(tracksHistory: true))]
    try container.loadPersistentStores()
    return container
  }

  /// name → sorted note texts of the store at `url`.
  static func contents(at url: URL) throws -> [String: [String]] {
    let server = try open(url)
    defer { server.close() }
    let varieties = try server.viewContext.fetch(FetchRequest<Variety>())
    return Dictionary(uniqueKeysWithValues: varieties.map { ($0.name, $0.notes.map(\.text).sorted()) })
  }

  /// Two replicas, each through a hub object of its own given the way to open the server store: after
  /// their rounds alone (no step of the app's), a container opened on the server store holds what both
  /// made; a save made there reaches a replica, as any replica's does.
  @Test func everyRoundOfAReplicaBringsTheServerStoreUpToDate() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let schema = String("mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20))
    let uri = try PostgresHubTests.serverURI()
    func hub() throws -> PostgresHub {
      try PostgresHub(uri: uri, schema: schema, model: varietyModel, serverStore: { try Self.open($0) })
    }
    let a = try VarietyReplica(.sqlite, hub: try hub(), in: directory, name: "a")
    let b = try VarietyReplica(.lmdb, hub: try hub(), in: directory, name: "b")
    try a.add("Agria", rating: 4, note: "Buttery")
    _ = try await a.mirror.sync()
    try b.add("Cara", rating: 2, note: "Waxy")
    _ = try await b.mirror.sync()
    let location = try hub().storeLocation
    #expect(try Self.contents(at: location) == ["Agria": ["Buttery"], "Cara": ["Waxy"]])

    let server = try Self.open(location)
    let desiree = Variety(context: server.viewContext)
    desiree.name = "Desiree"
    desiree.rating = 5
    try server.viewContext.save()
    server.close()
    _ = try await a.mirror.sync()
    _ = try await a.mirror.sync()
    #expect(try a.contents().keys.sorted() == ["Agria", "Cara", "Desiree"])
  }
}
