import FaveFlicks
import Foundation
import Strata
import StrataLMDB
import StrataSQLite
import StrataStoreKit
import Testing

/// Stores written by FaveFlicks version 2 (movies with ratings and watches), kept in Resources/v2 with the
/// list that version printed, open with version 3, where series are a sub-entity of movies.
@Suite("FaveFlicks version 2 stores")
struct VersionTwoStoreTests {
  struct ListedMovie: Decodable, Equatable {
    var title: String
    var genre: String
    var releaseDate: String
    var rating: Int
    var watches: Int
  }

  static func copy(_ name: String) throws -> URL {
    let fixture = try #require(Bundle.module.url(forResource: "v2/\(name)", withExtension: nil))
    let directory = FileManager.default.temporaryDirectory.appending(path: "faveflicks-v2-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let destination = directory.appending(path: name)
    try FileManager.default.copyItem(at: fixture, to: destination)
    return destination
  }

  @Test func theFixturesWereWrittenWithVersionTwoOfThePlan() throws {
    let plan = try MovieLibrary.migrationPlan()
    for store in ["FaveFlicks-v2.sqlite", "FaveFlicks-v2.lmdb"] {
      let url = try Self.copy(store)
      let type: StoreType = store.hasSuffix("lmdb") ? .lmdb : .sqlite
      let opened = try StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory()]).openStore(
        type, at: url, model: nil, options: StoreOptions(isReadOnly: true))
      #expect(plan.version(of: opened.model)?.name == "2")
      opened.close()
    }
  }

  @Test(arguments: [
    (StoreType.sqlite, "FaveFlicks-v2.sqlite", "list-v2-sqlite.json"), (.lmdb, "FaveFlicks-v2.lmdb", "list-v2-lmdb.json"),
  ])
  func aVersionTwoStoreMigratesAndTakesSeries(_ type: StoreType, _ store: String, _ listing: String) throws {
    let listed = try #require(Bundle.module.url(forResource: "v2/\(listing)", withExtension: nil))
    let expected = try JSONDecoder().decode([ListedMovie].self, from: Data(contentsOf: listed))
    let url = try Self.copy(store)
    let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory()])
    let description = StoreDescription(type: type, url: url)

    let preview = try #require(try MovieLibrary.pendingMigration(store: description, registry: registry))
    #expect(preview.lines.first == "from version '2' to '4':", "\(preview.lines)")
    #expect(preview.lines.contains { $0.contains("Movie.poster: added") }, "\(preview.lines)")
    #expect(preview.lines.contains { $0.contains("Series") }, "\(preview.lines)")

    let library = MovieLibrary(container: try MovieLibrary.makeContainer(store: description, registry: registry))
    let migrated = try library.list()
    #expect(
      migrated.map {
        ListedMovie(
          title: $0.title, genre: $0.genre, releaseDate: ReleaseDate.format($0.releaseDate), rating: $0.rating,
          watches: $0.watchCount)
      } == expected)
    #expect(migrated.allSatisfy { $0.seasons == nil })

    let series = try library.add(
      title: "Twin Peaks", genre: "Mystery", releaseDate: try ReleaseDate.parse("1990-04-08"), seasons: 3)
    #expect(series.seasons == 3)
    try library.watched(title: "Twin Peaks", on: try ReleaseDate.parse("2024-02-01"))
    library.container.viewContext.reset()

    let reopened = MovieLibrary(container: try MovieLibrary.makeContainer(store: description, registry: registry))
    let all = try reopened.list()
    let twinPeaks = try #require(all.first { $0.title == "Twin Peaks" })
    #expect(twinPeaks.seasons == 3 && twinPeaks.watchCount == 1)
    #expect(all.count == expected.count + 1)
    #expect(try reopened.list(titleMatching: "twin").map(\.title) == ["Twin Peaks"])
    let context = reopened.container.viewContext
    #expect(try context.fetch(FetchRequest<Series>()).map(\.title) == ["Twin Peaks"])
    var filmsOnly = FetchRequest<Movie>()
    filmsOnly.includesSubentities = false
    #expect(try context.count(for: filmsOnly) == expected.count)
    let bad = #expect(throws: StoreError.self) {
      try reopened.add(title: "Nothing", genre: "None", releaseDate: try ReleaseDate.parse("2000-01-01"), seasons: 0)
    }
    #expect(bad?.code == .validation)
  }
}
