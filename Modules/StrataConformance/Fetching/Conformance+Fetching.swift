import Foundation
import Strata
import StrataStoreKit
import Testing

/// One predicate case: a format string with arguments and the titles it must match.
struct PredicateCase: Sendable {
  var format: String
  var arguments: [any PredicateArgument & Sendable]
  var expected: Set<String>

  init(_ format: String, _ arguments: [any PredicateArgument & Sendable] = [], _ expected: Set<String>) {
    self.format = format
    self.arguments = arguments
    self.expected = expected
  }
}

extension Conformance {
  static let allTitles = Set(SampleData.films.map(\.title))

  static let filmCases: [PredicateCase] = [
    PredicateCase("year == 1995", [], ["Heat"]),
    PredicateCase("year = %d", [2004], ["Collateral"]),
    PredicateCase("year != 1995", [], allTitles.subtracting(["Heat"])),
    PredicateCase("year > 2010", [], ["Parasite", "Untitled Project", "file10", "Straße"]),
    PredicateCase("year >= 2010", [], ["Parasite", "Untitled Project", "file10", "Straße", "File2"]),
    PredicateCase("year < 1995", [], ["Delicatessen"]),
    PredicateCase("year <= 1995", [], ["Delicatessen", "Heat"]),
    PredicateCase("rating > 8.2", [], ["Heat", "Amélie", "Parasite"]),
    PredicateCase("rating == 8.3", [], ["Heat", "Amélie"]),
    PredicateCase("rating >= %f", [8.5], ["Parasite"]),
    PredicateCase("score > 4", [], ["Heat", "Amélie", "Parasite", "Memories of Murder"]),
    PredicateCase("runtime BETWEEN {120, 131}", [], ["Collateral", "Amélie", "Memories of Murder"]),
    PredicateCase("year IN {1991, 2001}", [], ["Delicatessen", "Amélie"]),
    PredicateCase("year IN %@", [[1995, 2019]], ["Heat", "Parasite"]),
    PredicateCase("boxOffice >= 200000000", [], ["Collateral", "Parasite"]),
    PredicateCase("budget > 50000000", [], ["Heat", "Collateral"]),
    PredicateCase(
      "budget == nil", [], ["Amélie", "Delicatessen", "Memories of Murder", "Untitled Project", "File2", "file10", "Straße"]),
    PredicateCase(
      "released == YES", [], ["Heat", "Collateral", "Amélie", "Delicatessen", "Parasite", "Memories of Murder", "Straße"]),
    PredicateCase("released == NO", [], ["Untitled Project", "File2", "file10"]),
    PredicateCase(
      "releaseDate > %@", [SampleData.date("2003-01-01")], ["Collateral", "Parasite", "Memories of Murder", "Straße"]),
    PredicateCase("releaseDate < %@", [SampleData.date("2003-01-01")], ["Heat", "Amélie", "Delicatessen"]),
    PredicateCase("releaseDate == nil", [], ["Untitled Project", "File2", "file10"]),
    PredicateCase("uuid == %@", [SampleData.uuid(1)], ["Heat"]),
    PredicateCase("homepage != nil", [], ["Parasite"]),
    PredicateCase("poster != nil", [], ["Heat"]),
    PredicateCase("title == 'Heat'", [], ["Heat"]),
    PredicateCase("title == 'heat'", [], []),
    PredicateCase("title ==[c] 'heat'", [], ["Heat"]),
    PredicateCase("title BEGINSWITH 'Mem'", [], ["Memories of Murder"]),
    PredicateCase("title BEGINSWITH[c] 'file'", [], ["File2", "file10"]),
    PredicateCase("title BEGINSWITH ''", [], []),
    PredicateCase("title CONTAINS 'll'", [], ["Collateral"]),
    PredicateCase("title CONTAINS[d] 'amelie'", [], []),
    PredicateCase("title CONTAINS[cd] 'amelie'", [], ["Amélie"]),
    PredicateCase("title CONTAINS[c] 'AMÉLIE'", [], ["Amélie"]),
    PredicateCase("title ==[c] 'STRASSE'", [], ["Straße"]),
    PredicateCase("title ENDSWITH 'e'", [], ["Amélie", "Parasite", "Straße"]),
    PredicateCase("title LIKE 'F*'", [], ["File2"]),
    PredicateCase("title LIKE[c] 'f?le*'", [], ["File2", "file10"]),
    PredicateCase("title MATCHES 'M.* of .*'", [], ["Memories of Murder"]),
    PredicateCase("genre == nil", [], ["Untitled Project"]),
    PredicateCase("genre != nil", [], allTitles.subtracting(["Untitled Project"])),
    PredicateCase("genre == 'Crime'", [], ["Heat", "Memories of Murder"]),
    PredicateCase("genre != 'Crime'", [], allTitles.subtracting(["Heat", "Memories of Murder"])),
    PredicateCase("genre ==[c] 'comedy'", [], ["Amélie", "Delicatessen"]),
    PredicateCase("genre CONTAINS[c] 'dram'", [], ["Straße"]),
    PredicateCase("NOT (genre CONTAINS 'r')", [], ["Amélie", "Delicatessen", "Untitled Project"]),
    PredicateCase("genre > 'Drama'", [], ["Collateral", "Parasite", "Delicatessen"]),
    PredicateCase("director.name == 'Michael Mann'", [], ["Heat", "Collateral"]),
    PredicateCase("director.name BEGINSWITH[c] 'bong'", [], ["Parasite", "Memories of Murder"]),
    PredicateCase("director.country == nil", [], ["Untitled Project", "File2", "file10", "Straße"]),
    PredicateCase("director == nil", [], ["Untitled Project", "File2", "file10", "Straße"]),
    PredicateCase("director != nil AND studio == nil", [], ["Parasite", "Memories of Murder"]),
    PredicateCase("studio.name == 'Warner' AND year > 2000", [], ["Collateral", "File2", "file10"]),
    PredicateCase(
      "studio.name == 'Warner' OR director.name == 'Bong Joon-ho'", [],
      ["Heat", "Collateral", "File2", "file10", "Parasite", "Memories of Murder"]),
    PredicateCase("runtime > 125 AND NOT rating < 8.2", [], ["Heat", "Parasite"]),
    PredicateCase("(year < 2000 OR year > 2015) AND released == YES", [], ["Heat", "Delicatessen", "Parasite"]),
    PredicateCase("TRUEPREDICATE", [], allTitles),
    PredicateCase("FALSEPREDICATE", [], []),
    PredicateCase("ANY actors.name == 'Al Pacino'", [], ["Heat"]),
    PredicateCase("actors.@count == 0", [], ["Collateral", "Delicatessen", "Untitled Project", "File2", "file10"]),
    PredicateCase("actors.@count > 1", [], ["Heat"]),
    PredicateCase("NONE actors.name == 'Song Kang-ho'", [], allTitles.subtracting(["Parasite", "Memories of Murder"])),
    PredicateCase(
      "ALL actors.name BEGINSWITH 'A'", [],
      ["Amélie", "Collateral", "Delicatessen", "Untitled Project", "File2", "file10"]),
  ]

  static func titles(_ context: ObjectContext, _ sorts: [QuerySort], limit: Int? = nil, offset: Int = 0) throws -> [String] {
    try context.fetch(FetchRequest<Film>(sortDescriptors: sorts, fetchLimit: limit, fetchOffset: offset)).map(\.title)
  }

  static func sorting(_ context: ObjectContext) throws {
    #expect(
      try titles(context, [QuerySort("title")]) == [
        "Amélie", "Collateral", "Delicatessen", "File2", "Heat", "Memories of Murder", "Parasite", "Straße",
        "Untitled Project", "file10",
      ])
    #expect(
      try titles(context, [QuerySort(\Film.title, comparator: .localizedStandard)]) == [
        "Amélie", "Collateral", "Delicatessen", "File2", "file10", "Heat", "Memories of Murder", "Parasite", "Straße",
        "Untitled Project",
      ])
    #expect(
      try titles(context, [QuerySort("title", ascending: false, comparator: .localizedStandard)]) == [
        "Untitled Project", "Straße", "Parasite", "Memories of Murder", "Heat", "file10", "File2", "Delicatessen",
        "Collateral", "Amélie",
      ])
    #expect(
      try titles(context, [QuerySort("title", comparator: .caseInsensitive)]) == [
        "Amélie", "Collateral", "Delicatessen", "file10", "File2", "Heat", "Memories of Murder", "Parasite", "Straße",
        "Untitled Project",
      ])
    #expect(
      try titles(context, [QuerySort("genre"), QuerySort("title")]) == [
        "Untitled Project", "Amélie", "Heat", "Memories of Murder", "File2", "file10", "Straße", "Collateral", "Parasite",
        "Delicatessen",
      ])
    #expect(
      try titles(context, [QuerySort("genre", ascending: false), QuerySort("title")]) == [
        "Delicatessen", "Collateral", "Parasite", "Straße", "File2", "file10", "Heat", "Memories of Murder", "Amélie",
        "Untitled Project",
      ])
    #expect(
      try titles(context, [QuerySort("rating", ascending: false), QuerySort("title")]) == [
        "Parasite", "Amélie", "Heat", "Memories of Murder", "Delicatessen", "Collateral", "Straße", "file10", "File2",
        "Untitled Project",
      ])
    #expect(try titles(context, [QuerySort("releaseDate")], limit: 4) == ["Untitled Project", "File2", "file10", "Delicatessen"])
    #expect(try titles(context, [QuerySort("year", ascending: false)], limit: 3) == ["Untitled Project", "Parasite", "Straße"])
    #expect(try titles(context, [QuerySort("year")], limit: 3, offset: 2) == ["Amélie", "Memories of Murder", "Collateral"])
    #expect(try titles(context, [QuerySort("year")], offset: 9) == ["Untitled Project"])
    #expect(try titles(context, [QuerySort("year")], offset: 20).isEmpty)
    #expect(
      try titles(context, [QuerySort("director.name"), QuerySort("title")], limit: 6) == [
        "File2", "Straße", "Untitled Project", "file10", "Memories of Murder", "Parasite",
      ])
  }

  /// Without sorts, results come in creation order, and offset and limit page through that same order,
  /// counted after the predicate, also where a store reads through a unique attribute's index.
  static func pagingWithoutSorts(_ context: ObjectContext) throws {
    #expect(try titles(context, []) == SampleData.films.map(\.title))
    let inserted = SampleData.films.map(\.title)
    #expect(try titles(context, [], limit: 3, offset: 2) == Array(inserted[2..<5]))
    #expect(try titles(context, [], offset: 8) == Array(inserted[8...]))
    #expect(try titles(context, [], limit: 2, offset: 20).isEmpty)
    let highlyRated = SampleData.films.filter { $0.rating > 7 }.map(\.title)
    #expect(highlyRated.count > 4)
    let page = try context.fetch(
      FetchRequest<Film>(predicate: try QueryPredicate(format: "rating > 7"), fetchLimit: 2, fetchOffset: 1))
    #expect(page.map(\.title) == Array(highlyRated[1..<3]))
    // The same on a unique attribute, which a store may read through its index (in the index's order).
    let studios = try context.fetch(FetchRequest<Studio>(format: "name >= %@", "A"))
    #expect(studios.count > 2)
    // Without sorts the results still come in key order (creation order), not in the index's order.
    #expect(studios.map(\.name) == SampleData.studios.map(\.name).filter { $0 >= "A" }, "\(studios.map(\.name))")
    let second = try context.fetch(
      FetchRequest<Studio>(predicate: try QueryPredicate(format: "name >= 'A'"), fetchLimit: 1, fetchOffset: 1))
    #expect(second.map(\.objectID) == [studios[1].objectID])
    let rated = try context.fetch(
      FetchRequest<Film>(
        predicate: try QueryPredicate(format: "rating > 7"), sortDescriptors: [QuerySort("rating")], fetchLimit: 2))
    #expect(rated.map(\.title) == ["Collateral", "Delicatessen"])
  }
}

/// Predicates (comparison operators on every attribute type, nil on either side, string options,
/// to-one key paths, to-many ANY/ALL/NONE and @count), sorting with every comparator, limit and offset,
/// counts — identical answers on every backend.
enum FetchingCases {
  /// The film table (``Conformance/filmCases``): fetches and counts answer as written by hand.
  static func filmPredicatesAnswerAsWrittenByHand(_ backend: ConformanceBackend) async throws {
    let context = try PredicateCases.sampleContext(backend)
    for testCase in Conformance.filmCases {
      let request = try FetchRequest<Film>(format: testCase.format, argumentArray: testCase.arguments)
      let titles = Set(try context.fetch(request).map(\.title))
      #expect(titles == testCase.expected, "\(testCase.format)")
      #expect(try context.count(for: request) == testCase.expected.count, "count of \(testCase.format)")
    }
  }

  /// A fetched array is an ordinary array of its type: it grows, shrinks and sorts like any other.
  static func fetchedArraysAreOrdinaryArrays(_ backend: ConformanceBackend) async throws {
    let context = try PredicateCases.sampleContext(backend)
    var films = try context.fetch(FetchRequest<Film>())
    let fetchedCount = films.count
    films.append(contentsOf: try context.fetch(FetchRequest<Film>(format: "year < 2000")))
    films.append(Film(context: context))
    #expect(films.count > fetchedCount + 1)
    films.removeFirst()
    films.sort { $0.title < $1.title }
    #expect(films.allSatisfy { type(of: $0) == Film.self } && films.last?.title != nil)
    context.rollback()
  }

  /// To-many counts and ANY over a relationship, from the other side.
  static func toManyPredicatesOnDirectors(_ backend: ConformanceBackend) async throws {
    let context = try PredicateCases.sampleContext(backend)
    let directorsWithoutFilms = try context.fetch(FetchRequest<Director>(format: "films.@count == 0"))
    #expect(directorsWithoutFilms.map(\.name) == ["Nobody"])
    let recent = try context.fetch(FetchRequest<Director>(format: "ANY films.year > 2015"))
    #expect(recent.map(\.name) == ["Bong Joon-ho"])
  }

  /// Typed predicates give the same answers as their format strings.
  static func typedPredicatesAgreeWithFormatStrings(_ backend: ConformanceBackend) async throws {
    let context = try PredicateCases.sampleContext(backend)
    let typed: [(Where<Film>, Set<String>)] = [
      (\.year == 1995, ["Heat"]),
      (\.rating > 8.2, ["Heat", "Amélie", "Parasite"]),
      (\.genre == nil, ["Untitled Project"]),
      (\.title ~= "amelie", ["Amélie"]),
      ((\Film.title).beginsWith("file", options: .caseInsensitive), ["File2", "file10"]),
      (\.director?.name == "Michael Mann", ["Heat", "Collateral"]),
      (\.year >= 2010 && \.released == true, ["Parasite", "Straße"]),
      (!(\Film.genre).contains("r"), ["Amélie", "Delicatessen", "Untitled Project"]),
    ]
    for (condition, expected) in typed {
      #expect(Set(try context.fetch(FetchRequest(where: condition)).map(\.title)) == expected, "\(condition.predicate)")
    }
  }

  /// Sorting with every comparator, limit and offset (see ``Conformance/sorting(_:)``).
  static func sortsComparatorsAndPaging(_ backend: ConformanceBackend) async throws {
    try Conformance.sorting(try PredicateCases.sampleContext(backend))
  }

  /// Paging in creation order without sorts (see ``Conformance/pagingWithoutSorts(_:)``).
  static func pagesWithoutSortsFollowCreationOrder(_ backend: ConformanceBackend) async throws {
    try Conformance.pagingWithoutSorts(try PredicateCases.sampleContext(backend))
  }
}
