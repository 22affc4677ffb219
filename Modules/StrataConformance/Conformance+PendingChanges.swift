import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// `includesPendingChanges`: fetches, ID fetches and counts reflect unsaved inserts, edits and deletes
  /// (matched and sorted by current values, through relationships too, with limit and offset), and
  /// answer exactly what the store answers once the changes are saved; without it, the store's answer.
  public static func pendingChanges(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = try backend.freshContext(container, url)
    let byTitle = [QuerySort("title", comparator: .localizedStandard)]

    func titles(
      _ format: String, sort: [QuerySort] = byTitle, limit: Int? = nil, offset: Int = 0, pending: Bool = true
    )
      throws -> [String]
    {
      var request = try FetchRequest<Film>(format: format, sortDescriptors: sort)
      request.fetchLimit = limit
      request.fetchOffset = offset
      request.includesPendingChanges = pending
      return try context.fetch(request).map(\.title)
    }
    func count(_ format: String, limit: Int? = nil, offset: Int = 0, pending: Bool = true) throws -> Int {
      var request = try FetchRequest<Film>(format: format)
      request.fetchLimit = limit
      request.fetchOffset = offset
      request.includesPendingChanges = pending
      let counted = try context.count(for: request)
      #expect(try context.fetchObjectIDs(request).count == counted, "count and IDs agree for \(format)")
      return counted
    }

    let zulu = Film(context: context)
    zulu.title = "Zulu"
    zulu.genre = "Crime"
    zulu.year = 2020
    zulu.uuid = UUID()
    #expect(try titles("genre == 'Crime'") == ["Heat", "Memories of Murder", "Zulu"])
    #expect(try count("genre == 'Crime'") == 3)
    #expect(try context.fetchObjectIDs(FetchRequest<Film>(format: "title == 'Zulu'")) == [zulu.objectID])

    let heat = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    heat.genre = "Drama"
    #expect(try titles("genre == 'Crime'") == ["Memories of Murder", "Zulu"])
    #expect(try titles("genre == 'Drama'") == ["Heat", "Straße"])
    #expect(try count("genre == 'Crime'") == 2)
    #expect(try count("genre == 'Drama'") == 2)

    let memories = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Memories of Murder'")).first)
    context.delete(memories)
    #expect(try titles("genre == 'Crime'") == ["Zulu"])
    #expect(try count("genre == 'Crime'") == 1)

    // Sorted by current values, paged after merging.
    let parasite = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).first)
    parasite.title = "Aardvark"
    #expect(try titles("TRUEPREDICATE", limit: 1) == ["Aardvark"])
    #expect(try titles("TRUEPREDICATE", limit: 3, offset: 1) == ["Amélie", "Collateral", "Delicatessen"])
    #expect(try titles("TRUEPREDICATE", sort: [QuerySort("year", ascending: false)], limit: 2) == ["Untitled Project", "Zulu"])
    #expect(try count("TRUEPREDICATE") == 10)
    #expect(try count("TRUEPREDICATE", limit: 4, offset: 8) == 2)
    #expect(try count("year > 2000", limit: 3) == 3)

    // Through relationships, to objects that exist only in the context.
    let newcomer = Director(context: context)
    newcomer.name = "New Director"
    zulu.director = newcomer
    #expect(try titles("director.name == 'New Director'") == ["Zulu"])
    #expect(try count("director.name BEGINSWITH 'New'") == 1)
    #expect(try context.count(for: FetchRequest<Director>(format: "films.@count == 0")) == 1)
    let oneFilm = try context.fetch(FetchRequest<Director>(format: "films.@count == 1", sortDescriptors: [QuerySort("name")]))
    #expect(oneFilm.map(\.name) == ["Bong Joon-ho", "New Director"])

    // Without pending changes: the store as it is.
    #expect(try titles("genre == 'Crime'", pending: false) == ["Heat", "Memories of Murder"])
    #expect(try count("genre == 'Crime'", pending: false) == 2)
    #expect(try titles("title == 'Zulu'", pending: false).isEmpty)

    // Saved, the store gives the answers the context gave.
    let questions = [
      "genre == 'Crime'", "genre == 'Drama'", "TRUEPREDICATE", "year > 2000", "director.name BEGINSWITH 'New'",
    ]
    let before = try questions.map { try titles($0) }
    let countsBefore = try questions.map { try count($0) }
    try context.save()
    let after = try backend.freshContext(container, url)
    for (i, question) in questions.enumerated() {
      let request = try FetchRequest<Film>(format: question, sortDescriptors: byTitle)
      #expect(try after.fetch(request).map(\.title) == before[i], "\(question)")
      #expect(try after.count(for: request) == countsBefore[i], "\(question)")
    }

    // Rolled back, the store's answer again.
    heat.genre = "Crime"
    let ghost = Film(context: context)
    ghost.title = "Ghost"
    ghost.uuid = UUID()
    #expect(try count("TRUEPREDICATE") == 11)
    context.rollback()
    #expect(try titles("genre == 'Crime'") == ["Zulu"])
    #expect(try count("TRUEPREDICATE") == 10)

    // A bad predicate is still an error naming the key, with pending changes about.
    _ = Film(context: context)
    expectStoreError(.invalidQuery) { try titles("nosuchkey == 1") }
    expectStoreError(.invalidQuery) { try count("nosuchkey == 1") }
  }
}
