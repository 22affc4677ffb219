import FaveFlicks
import Foundation
import Strata
import StrataConformance
import StrataMemory
import StrataSQLite
import Testing

enum Backend: String, CaseIterable, Sendable {
  case memory, sqlite

  func makeLibrary() throws -> MovieLibrary {
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory()])
    switch self {
    case .memory:
      return MovieLibrary(container: try MovieLibrary.makeContainer(store: StoreDescription(type: .memory), registry: registry))
    case .sqlite:
      let url = FileManager.default.temporaryDirectory.appending(path: "faveflicks-\(UUID().uuidString)/FaveFlicks.sqlite")
      return MovieLibrary(
        container: try MovieLibrary.makeContainer(store: StoreDescription(type: .sqlite, url: url), registry: registry))
    }
  }
}

@Suite("FaveFlicks")
struct MovieLibraryTests {
  @Test func previewHoldsTheDefaultMoviesSortedByTitle() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let library = try MovieLibrary.preview(registry: registry)
    let movies = try library.list()
    #expect(movies.map(\.title) == ["Kung Pow: Enter the Fist", "Sharknado", "The Room"])
    #expect(movies.map { ReleaseDate.format($0.releaseDate) } == ["2002-01-25", "2013-07-11", "2003-06-27"])
  }

  @Test(arguments: Backend.allCases)
  func addListFilterDelete(_ backend: Backend) throws {
    let library = try backend.makeLibrary()
    try library.add(title: "Apollo 13", genre: "Drama", releaseDate: try ReleaseDate.parse("1995-06-30"))
    try library.add(title: "apollo 2", genre: "Science Fiction", releaseDate: try ReleaseDate.parse("1999-01-01"))
    try library.add(title: "Amélie", genre: "Comédie, Romance", releaseDate: try ReleaseDate.parse("2001-04-25"))
    try library.add(title: "Zodiac", genre: "Crime, Drama", releaseDate: try ReleaseDate.parse("2007-03-02"))
    #expect(try library.list().map(\.title) == ["Amélie", "apollo 2", "Apollo 13", "Zodiac"])
    #expect(try library.list(genreContaining: "drama").map(\.title) == ["Apollo 13", "Zodiac"])
    #expect(try library.list(genreContaining: "COMEDIE").map(\.title) == ["Amélie"])
    #expect(try library.list(genreContaining: "western").isEmpty)
    #expect(try library.list(titleMatching: "amelie").map(\.title) == ["Amélie"])
    #expect(try library.list(titleMatching: "APOLLO").map(\.title) == ["apollo 2", "Apollo 13"])
    #expect(try library.list(genreContaining: "drama", titleMatching: "pollo").map(\.title) == ["Apollo 13"])
    #expect(try library.list(titleMatching: "zzz").isEmpty)

    #expect(try library.delete(title: "Zodiac") == 1)
    #expect(try library.list().map(\.title) == ["Amélie", "apollo 2", "Apollo 13"])
    expectStoreError(.notFound) { try library.delete(title: "Zodiac") }
    expectStoreError(.validation) { try library.add(title: "  ", genre: "Drama", releaseDate: Date()) }
    #expect(try library.list().count == 3)
  }

  @Test(arguments: Backend.allCases)
  func anEmptyTitleIsAValidationErrorNamingTheKey(_ backend: Backend) throws {
    let library = try backend.makeLibrary()
    for title in ["", "   "] {
      do {
        try library.add(title: title, genre: "Drama", releaseDate: Date())
        Issue.record("'\(title)' should be refused")
      } catch let error as StoreError {
        #expect(error.code == .validation)
        #expect(error.key == "title")
        #expect(error.message.contains("Movie.title"))
      }
    }
    #expect(try library.list().isEmpty)
  }

  @Test(arguments: Backend.allCases)
  func updatedAtIsStampedWhenSaved(_ backend: Backend) throws {
    let library = try backend.makeLibrary()
    let before = Date.now
    try library.add(title: "Heat", genre: "Crime", releaseDate: try ReleaseDate.parse("1995-12-15"))
    let stamped = try #require(try library.list().first?.updatedAt)
    #expect(stamped >= before && stamped <= Date.now)
  }

  @Test func sqliteStorePersistsAcrossContainers() throws {
    let registry = StoreRegistry([SQLiteStoreFactory()])
    let url = FileManager.default.temporaryDirectory.appending(path: "faveflicks-\(UUID().uuidString)/FaveFlicks.sqlite")
    let first = MovieLibrary(
      container: try MovieLibrary.makeContainer(store: StoreDescription(type: .sqlite, url: url), registry: registry))
    try first.add(title: "Heat", genre: "Crime", releaseDate: try ReleaseDate.parse("1995-12-15"))
    first.container.close()
    let second = MovieLibrary(
      container: try MovieLibrary.makeContainer(store: StoreDescription(type: .sqlite, url: url), registry: registry))
    let movies = try second.list()
    #expect(movies.map(\.title) == ["Heat"] && movies.map(\.genre) == ["Crime"])
    #expect(movies.map(\.releaseDate) == [try ReleaseDate.parse("1995-12-15")])
    #expect(movies.first?.updatedAt != nil)
  }

  @Test(arguments: ["2023-02-30", "2023-2-3", "23-02-03", "abc", "", "2023-13-01", "2023-01-01T00:00"])
  func badReleaseDatesAreRejected(_ text: String) {
    expectStoreError(.validation) { try ReleaseDate.parse(text) }
  }

  @Test func releaseDatesRoundTrip() throws {
    for text in ["1895-12-28", "2000-02-29", "2024-12-31"] {
      #expect(ReleaseDate.format(try ReleaseDate.parse(text)) == text)
    }
  }
}
