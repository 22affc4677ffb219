import Foundation
import Strata
import StrataStoreKit
import Testing

/// The dictionaries area's reader: the sample store and a dictionary fetch of films.
struct DictionaryRows {
  let context: ObjectContext

  init(_ backend: ConformanceBackend) throws {
    let (container, url) = try backend.sampleContainer()
    context = try backend.freshContext(container, url)
  }

  func rows(
    _ properties: [PropertySelection]?, where format: String? = nil, groupBy: [String]? = nil, having: String? = nil,
    sort: [QuerySort] = [], limit: Int? = nil, offset: Int = 0, distinct: Bool = false
  ) throws -> [[String: Value]] {
    var request = FetchRequest<Film>(sortDescriptors: sort, fetchLimit: limit, fetchOffset: offset)
    request.predicate = try format.map { try QueryPredicate(format: $0) }
    request.propertiesToFetch = properties
    request.propertiesToGroupBy = groupBy
    request.havingPredicate = try having.map { try QueryPredicate(format: $0) }
    request.returnsDistinctResults = distinct
    return try context.fetchDictionaries(request)
  }

  /// Genre, film count and minutes: the selection of the grouped cases.
  static func byGenre() throws -> [PropertySelection] {
    [
      .keyPath("genre"), try .expression("films", format: "count:(title)", resultType: .int64),
      try .expression("minutes", format: "sum:(runtime)", resultType: .int64),
    ]
  }
}

/// Dictionary results: properties and to-one key paths, nil left out, folds over all rows and per group,
/// group order, having, distinct rows, per-row expressions, paging, and the errors of a bad request.
/// Expected rows are worked out by hand from SampleData.
enum DictionaryCases {
  /// Properties and to-one key paths, nil left out; a to-one alone is its object ID; every property when
  /// none is named.
  static func propertiesAndToOneKeyPaths(_ backend: ConformanceBackend) async throws {
    let s = try DictionaryRows(backend)
    let context = s.context
    #expect(
      try s.rows([.keyPath("title"), .keyPath("year")], sort: [QuerySort("year")], limit: 3) == [
        ["title": "Delicatessen", "year": 1991], ["title": "Heat", "year": 1995], ["title": "Amélie", "year": 2001],
      ])
    #expect(try s.rows([.keyPath("title"), .keyPath("genre")], where: "genre == nil") == [["title": "Untitled Project"]])
    #expect(
      try s.rows([.keyPath("title"), .keyPath("director.name")], where: "year < 1996", sort: [QuerySort("title")]) == [
        ["title": "Delicatessen", "director.name": "Jean-Pierre Jeunet"], ["title": "Heat", "director.name": "Michael Mann"],
      ])
    let directorRow = try s.rows([.keyPath("director")], where: "title == 'Heat'")
    let mann = try context.fetch(FetchRequest<Director>(format: "name == 'Michael Mann'")).map(\.objectID)
    #expect(directorRow.map { $0["director"] } == mann.map { .objectID($0) })
    #expect(
      try s.rows(nil, where: "title == 'Parasite'").first?["homepage"]
        == .url(URL(string: "https://parasite.example/film") ?? URL(fileURLWithPath: "/")))
  }

  /// Folds over every row: one row, even over no rows.
  static func foldsOverEveryRow(_ backend: ConformanceBackend) async throws {
    let s = try DictionaryRows(backend)
    let totals = try s.rows([
      try .expression("minutes", format: "sum:(runtime)", resultType: .int64),
      try .expression("films", format: "count:(title)", resultType: .int64),
      try .expression("genres", format: "count:(genre)", resultType: .int64),
      try .expression("first", format: "min:(year)", resultType: .int16),
      try .expression("latest", format: "max:(releaseDate)", resultType: .date),
      try .expression("middle", format: "median:(runtime)", resultType: .double),
      try .expression("average", format: "average:(rating)", resultType: .double),
    ])
    #expect(totals.count == 1)
    let total = totals.first ?? [:]
    #expect(total["minutes"] == .int(1055))
    #expect(total["films"] == .int(10))
    #expect(total["genres"] == .int(9))
    #expect(total["first"] == .int(1991))
    #expect(total["latest"] == .date(SampleData.date("2019-05-30")))
    #expect(total["middle"] == .double(110))
    #expect(abs((total["average"]?.numericValue ?? 0) - 6.48) < 1e-9)
    #expect(
      try s.rows(
        [
          try .expression("minutes", format: "sum:(runtime)", resultType: .int64),
          try .expression("films", format: "count:(title)", resultType: .int64),
          try .expression("first", format: "min:(year)", resultType: .int16),
        ], where: "year > 3000") == [["minutes": 0, "films": 0]])
  }

  /// Groups, ordered by their values (nil first) unless sorted; having; paging.
  static func groupsHavingAndPaging(_ backend: ConformanceBackend) async throws {
    let s = try DictionaryRows(backend)
    let byGenre = try DictionaryRows.byGenre()
    let genres: [[String: Value]] = [
      ["films": 1, "minutes": 0], ["genre": "Comedy", "films": 1, "minutes": 122],
      ["genre": "Crime", "films": 2, "minutes": 301], ["genre": "Documentary", "films": 2, "minutes": 181],
      ["genre": "Drama", "films": 1, "minutes": 100], ["genre": "Thriller", "films": 2, "minutes": 252],
      ["genre": "comedy", "films": 1, "minutes": 99],
    ]
    #expect(try s.rows(byGenre, groupBy: ["genre"]) == genres)
    #expect(try s.rows(byGenre, groupBy: ["genre"], having: "films >= 2") == genres.filter { $0["films"] == 2 })
    #expect(try s.rows(byGenre, groupBy: ["genre"], having: "genre BEGINSWITH[c] 'c'") == [genres[1], genres[2], genres[6]])
    #expect(try s.rows(byGenre, groupBy: ["genre"], limit: 2, offset: 1) == [genres[1], genres[2]])
    #expect(
      try s.rows(byGenre, where: "released == YES", groupBy: ["genre"], sort: [QuerySort("genre", ascending: false)]) == [
        ["genre": "comedy", "films": 1, "minutes": 99], ["genre": "Thriller", "films": 2, "minutes": 252],
        ["genre": "Drama", "films": 1, "minutes": 100], ["genre": "Crime", "films": 2, "minutes": 301],
        ["genre": "Comedy", "films": 1, "minutes": 122],
      ])
    #expect(
      try s.rows(
        [.keyPath("director.name"), try .expression("films", format: "count:(title)", resultType: .int64)],
        groupBy: ["director.name"], sort: [QuerySort("director.name", ascending: false)]) == [
          ["director.name": "Michael Mann", "films": 2], ["director.name": "Jean-Pierre Jeunet", "films": 2],
          ["director.name": "Bong Joon-ho", "films": 2], ["films": 4],
        ])
  }

  /// Distinct rows keep their first place; per-row expressions.
  static func distinctRowsAndPerRowExpressions(_ backend: ConformanceBackend) async throws {
    let s = try DictionaryRows(backend)
    #expect(
      try s.rows([.keyPath("studio.name")], sort: [QuerySort("studio.name")], distinct: true) == [
        [:], ["studio.name": "UGC"], ["studio.name": "Warner"],
      ])
    #expect(
      try s.rows([.keyPath("studio.name")], sort: [QuerySort("studio.name")], limit: 2, distinct: true) == [
        [:], ["studio.name": "UGC"],
      ])
    #expect(
      try s.rows(
        [.keyPath("title"), try .expression("twice", format: "runtime * 2", resultType: .int64)],
        where: "title == 'Heat'") == [["title": "Heat", "twice": 340]])
  }

  /// Bad requests: an error naming the key, nothing fetched.
  static func badRequestsNameTheKey(_ backend: ConformanceBackend) async throws {
    let s = try DictionaryRows(backend)
    let byGenre = try DictionaryRows.byGenre()
    func rows(
      _ properties: [PropertySelection]?, groupBy: [String]? = nil, having: String? = nil, sort: [QuerySort] = []
    ) throws -> [[String: Value]] {
      try s.rows(properties, groupBy: groupBy, having: having, sort: sort)
    }
    func expectError(_ key: String, _ body: () throws -> [[String: Value]]) {
      do {
        _ = try body()
        Issue.record("expected an error naming \(key)")
      } catch let error as StoreError {
        #expect(error.code == .invalidQuery, "\(error.message)")
        #expect(error.message.contains(key), "\(error.message) names \(key)")
      } catch {
        Issue.record("expected a StoreError, got \(error)")
      }
    }
    expectError("title") { try rows([.keyPath("title"), try .expression("n", format: "count:(title)", resultType: .int64)]) }
    expectError("actors") { try rows([.keyPath("actors")]) }
    expectError("havingPredicate") { try rows([.keyPath("genre")], having: "genre == 'Crime'") }
    expectError("runtime") { try rows(byGenre, groupBy: ["genre"], having: "runtime > 1") }
    expectError("sum:") { try rows([try .expression("n", format: "sum:(title)", resultType: .int64)]) }
    expectError("year") { try rows(byGenre, groupBy: ["genre"], sort: [QuerySort("year")]) }
    expectError("twice") {
      try rows([.keyPath("genre"), try .expression("twice", format: "runtime * 2", resultType: .int64)], groupBy: ["genre"])
    }
  }
}
