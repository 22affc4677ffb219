import FaveFlicks
import Foundation
import Strata
import StrataConformance
import Testing

@Suite("FaveFlicks ratings and watches")
struct RatingsAndWatchesTests {
  @Test(arguments: Backend.allCases)
  func ratingsAndWatchesShowInTheList(_ backend: Backend) throws {
    let library = try backend.makeLibrary()
    try library.add(title: "Heat", genre: "Crime", releaseDate: try ReleaseDate.parse("1995-12-15"))
    try library.add(title: "Ronin", genre: "Action", releaseDate: try ReleaseDate.parse("1998-09-25"))
    #expect(try library.list().map(\.rating) == [0, 0])
    #expect(try library.rate(title: "Heat", stars: 5) == 1)
    #expect(try library.watched(title: "Heat", on: try ReleaseDate.parse("2024-01-01")) == 1)
    #expect(try library.watched(title: "Heat", on: try ReleaseDate.parse("2024-02-01")) == 2)
    let movies = try library.list()
    #expect(movies.map(\.title) == ["Heat", "Ronin"])
    #expect(movies.map(\.rating) == [5, 0] && movies.map(\.watchCount) == [2, 0])

    expectStoreError(.validation) { try library.rate(title: "Heat", stars: 6) }
    expectStoreError(.notFound) { try library.rate(title: "Thief", stars: 3) }
    expectStoreError(.notFound) { try library.watched(title: "Thief", on: .now) }
    #expect(try library.list().map(\.rating) == [5, 0])

    try library.delete(title: "Heat")
    #expect(try library.container.viewContext.count(for: FetchRequest<Watch>()) == 0, "watches go with their movie")
  }
}
