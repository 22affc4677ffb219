import Foundation
import Strata
import StrataLMDB
import StrataSQLite
import StrataStoreKit
import Synchronization
import TaterRater
import Testing

/// Stores written by the first TaterRater (free-text notes on each potato), kept in Resources/v1 with the
/// list that version printed, open with today's model: each line of notes becomes a tasting.
@Suite("TaterRater version 1 stores")
struct VersionOneStoreTests {
  struct ListedPotato: Decodable, Equatable {
    var variety: String
    var crowdRating: Double
    var userRating: Int
    var notes: String?
  }

  static func fixture(_ name: String) throws -> URL {
    try #require(Bundle.module.url(forResource: "v1/\(name)", withExtension: nil))
  }

  /// A copy of the fixture `name` in a fresh directory: the fixture itself is never opened for writing.
  static func copy(_ name: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appending(path: "taterrater-v1-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let destination = directory.appending(path: name)
    try FileManager.default.copyItem(at: try fixture(name), to: destination)
    return destination
  }

  static let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory()])

  @Test(arguments: [
    (StoreType.sqlite, "TaterRater-v1.sqlite", "list-v1-sqlite.json"),
    (.lmdb, "TaterRater-v1.lmdb", "list-v1-lmdb.json"),
  ])
  func aVersionOneStoreOpensWithItsNotesAsTastings(_ type: StoreType, _ store: String, _ listing: String) throws {
    let expected = try JSONDecoder().decode([ListedPotato].self, from: Data(contentsOf: try Self.fixture(listing)))
    #expect(expected.count > 100 && expected.contains { $0.notes?.contains("\n") == true })
    let url = try Self.copy(store)
    let description = StoreDescription(type: type, url: url, options: StoreOptions(tracksHistory: true))
    let reports = Locked<[MigrationProgress]>([])
    let container = try PotatoRater.makeContainer(
      store: description, registry: Self.registry, migrationProgress: { report in reports.withLock { $0.append(report) } })
    let rater = PotatoRater(container: container)
    let listed = try rater.potatoes().map {
      ListedPotato(
        variety: $0.variety, crowdRating: (Double($0.crowdRating) * 10).rounded() / 10, userRating: $0.userRating,
        notes: $0.notes)
    }
    #expect(listed == expected)
    #expect(reports.withLock { $0.last?.fractionCompleted } == 1)

    let tastings = try container.viewContext.fetch(FetchRequest<Tasting>(sortDescriptors: [QuerySort("text")]))
    let lines = expected.compactMap(\.notes).flatMap { $0.split(separator: "\n").map(String.init) }
    #expect(tastings.map(\.text) == lines.sorted())
    #expect(tastings.allSatisfy { $0.writtenAt == nil && $0.potato != nil })
    guard case .transactions(let transactions) = try container.viewContext.execute(.fetchHistory(after: nil)) else {
      Issue.record("expected history")
      return
    }
    let migration = try #require(transactions.last)
    #expect(migration.author == "migration")
    #expect(migration.changes.filter { $0.objectID.entityName == "Tasting" }.count == lines.count)

    try rater.note("Yukon Gold", text: "Holds together in soup", at: Date(timeIntervalSince1970: 1_800_000_000))
    container.close()
    let reopened = PotatoRater(container: try PotatoRater.makeContainer(store: description, registry: Self.registry))
    let yukon = try reopened.potato("Yukon Gold")
    #expect(
      yukon.notes
        == [expected.first { $0.variety == "Yukon Gold" }?.notes, "Holds together in soup"].compactMap { $0 }.joined(
          separator: "\n"))
    reopened.container.close()
  }

  @Test func theFixturesWereWrittenWithVersionOneOfThePlan() throws {
    let plan = try PotatoRater.migrationPlan()
    for (type, store) in [(StoreType.sqlite, "TaterRater-v1.sqlite"), (.lmdb, "TaterRater-v1.lmdb")] {
      let opened = try Self.registry.openStore(
        type, at: try Self.copy(store), model: nil, options: StoreOptions(isReadOnly: true))
      #expect(plan.version(of: opened.model)?.name == "1")
      opened.close()
    }
    #expect(plan.current.name == "3")
  }

  /// Version "3" is version "2" mirrored: a store of version "2" (written here with a plan that ends
  /// there) opens with today's model, keeps its potatoes, and can be mirrored.
  @Test(arguments: [StoreType.sqlite, .lmdb])
  func aVersionTwoStoreOpensMirrored(_ type: StoreType) throws {
    let plan = try PotatoRater.migrationPlan()
    let directory = FileManager.default.temporaryDirectory.appending(path: "taterrater-v2-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let description = StoreDescription(type: type, url: directory.appending(path: "TaterRater.\(type.rawValue)"))
    let older = PersistentContainer(
      name: "TaterRater", plan: try MigrationPlan(Array(plan.versions.prefix(2)), stages: plan.stages),
      types: [Potato.self, Tasting.self], registry: Self.registry)
    older.storeDescriptions = [description]
    try older.loadPersistentStores()
    let written = PotatoRater(container: older)
    try written.container.viewContext.performAndWait {
      for record in PotatoRater.previewPotatoes.prefix(3) {
        let potato = Potato(context: written.container.viewContext)
        potato.variety = record.variety
        potato.crowdRating = record.crowdRating
      }
      try written.container.viewContext.save()
    }
    try written.note("Cara", text: "Floury")
    let before = try written.potatoes()
    older.close()

    let container = try PotatoRater.makeContainer(store: description, registry: Self.registry)
    defer { container.close() }
    #expect(plan.version(of: container.model)?.name == "3")
    #expect(try PotatoRater(container: container).potatoes() == before)
    #expect(container.storeDescriptions.first?.options.tracksHistory == true)
    #expect(container.model.entity(named: "StrataMirrorState") != nil)
  }

  @Test func aFailingStageLeavesTheVersionOneStoreAsItWas() throws {
    let url = try Self.copy("TaterRater-v1.sqlite")
    let before = try Data(contentsOf: url)
    let plan = try PotatoRater.migrationPlan()
    let failing = try MigrationPlan(
      plan.versions,
      stages: [.custom(from: plan.versions[0], to: plan.versions[1], didMigrate: { _ in throw CancellationError() })])
    let container = PersistentContainer(
      name: "TaterRater", plan: failing, types: [Potato.self, Tasting.self], registry: Self.registry)
    container.storeDescriptions = [StoreDescription(type: .sqlite, url: url)]
    #expect(throws: CancellationError.self) { try container.loadPersistentStores() }
    #expect(try Data(contentsOf: url) == before, "the file is byte-identical after a failed migration")
  }
}
