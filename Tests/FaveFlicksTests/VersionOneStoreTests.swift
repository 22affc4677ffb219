import FaveFlicks
import Foundation
import Strata
import StrataLMDB
import StrataSQLite
import StrataStoreKit
import Testing

/// Stores written by the first FaveFlicks (movies alone, `lastModified`, no rating), kept in Resources/v1
/// with the list that version printed, open with today's model.
@Suite("FaveFlicks version 1 stores")
struct VersionOneStoreTests {
  struct ListedMovie: Decodable, Equatable {
    var title: String
    var genre: String
    var releaseDate: String
    var lastModified: String
  }

  static func fixture(_ name: String) throws -> URL {
    try #require(Bundle.module.url(forResource: "v1/\(name)", withExtension: nil))
  }

  /// A copy of the fixture `name` in a fresh directory: the fixture itself is never opened for writing.
  static func copy(_ name: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appending(path: "faveflicks-v1-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let destination = directory.appending(path: name)
    try FileManager.default.copyItem(at: try fixture(name), to: destination)
    return destination
  }

  @Test(arguments: [
    (StoreType.sqlite, "FaveFlicks-v1.sqlite", "list-v1.json"), (.lmdb, "FaveFlicks-v1.lmdb", "list-v1-lmdb.json"),
  ])
  func aVersionOneStoreOpensWithEveryMovieIntact(_ type: StoreType, _ store: String, _ listing: String) throws {
    let expected = try JSONDecoder().decode([ListedMovie].self, from: Data(contentsOf: try Self.fixture(listing)))
    let url = try Self.copy(store)
    let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory()])
    let description = StoreDescription(type: type, url: url)

    let preview = try #require(try MovieLibrary.pendingMigration(store: description, registry: registry))
    #expect(preview.lines.first == "from version '1' to '4':", "\(preview.lines)")
    #expect(preview.lines.contains("  Movie.updatedAt: renamed from lastModified (3 objects)"), "\(preview.lines)")
    #expect(preview.lines.contains("  Movie.rating: added, filled with 0 (3 objects)"), "\(preview.lines)")
    #expect(preview.lines.contains("  Watch: entity added"), "\(preview.lines)")
    let movieStorage: StorageChange = type == .sqlite ? .alteredInPlace : .rewritten
    #expect(preview.steps.first?.storage["Movie"] == movieStorage, "an added column and a rename need no table copy on SQLite")
    #expect(preview.steps.first?.storage["Watch"] == .created)

    let library = MovieLibrary(container: try MovieLibrary.makeContainer(store: description, registry: registry))
    let movies = try library.list()
    let listed = movies.map {
      ListedMovie(
        title: $0.title, genre: $0.genre, releaseDate: ReleaseDate.format($0.releaseDate),
        lastModified: $0.updatedAt.map { $0.formatted(.iso8601) } ?? "")
    }
    #expect(listed == expected)
    #expect(movies.map(\.rating) == [0, 0, 0] && movies.map(\.watchCount) == [0, 0, 0])
    #expect(try library.list(titleMatching: "amelie").map(\.title) == ["Amélie"], "the derived title search is kept")
    try library.rate(title: "Heat", stars: 4)
    try library.watched(title: "Heat", on: try ReleaseDate.parse("2024-05-01"))
    library.container.close()

    #expect(try MovieLibrary.pendingMigration(store: description, registry: registry) == nil)
    let reopened = MovieLibrary(container: try MovieLibrary.makeContainer(store: description, registry: registry))
    #expect(try reopened.list().first { $0.title == "Heat" }.map { [$0.rating, $0.watchCount] } == [4, 1])
  }

  @Test func theFixturesWereWrittenWithVersionOneOfThePlan() throws {
    let plan = try MovieLibrary.migrationPlan()
    for store in ["FaveFlicks-v1.sqlite", "FaveFlicks-v1.lmdb"] {
      let url = try Self.copy(store)
      let type: StoreType = store.hasSuffix("lmdb") ? .lmdb : .sqlite
      let opened = try StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory()]).openStore(
        type, at: url, model: nil, options: StoreOptions(isReadOnly: true))
      #expect(plan.version(of: opened.model)?.name == "1")
      opened.close()
    }
    #expect(plan.current.name == "4")
  }
}
