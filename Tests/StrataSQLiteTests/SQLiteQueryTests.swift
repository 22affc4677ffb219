import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// A small store: three directors, four movies, three actors, tags for collation tests.
final class QueryFixture {
  let dir: TemporaryDirectory
  let store: SQLiteStore
  let ids: [String: ObjectID]
  static let code = UUID()
  static let bornMann = Date(timeIntervalSince1970: -848_000_000)

  init() throws {
    dir = try TemporaryDirectory()
    store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    var temp: [String: ObjectID] = [:]
    func id(_ name: String, _ entity: String) -> ObjectID {
      if let existing = temp[name] { return existing }
      let new = ObjectID.makeTemporary(entityName: entity)
      temp[name] = new
      return new
    }
    let directors = [
      ObjectChange(objectID: id("Mann", "Director"), attributes: ["Michael Mann", .date(Self.bornMann)], toOne: []),
      ObjectChange(objectID: id("Bigelow", "Director"), attributes: ["Kathryn Bigelow", .null], toOne: []),
      ObjectChange(objectID: id("Nolan", "Director"), attributes: ["Christopher Nolan", .null], toOne: []),
    ]
    let movies = [
      movieChange(
        MovieRow(
          "Heat", rating: 8.3, year: 1995, budget: 60_000_000, code: Self.code, watched: true,
          subtitle: "A Los Angeles crime saga"), id: id("Heat", "Movie"), director: id("Mann", "Director")),
      movieChange(
        MovieRow("Collateral", rating: 7.5, year: 2004), id: id("Collateral", "Movie"), director: id("Mann", "Director")),
      movieChange(
        MovieRow("The Hurt Locker", rating: 7.5, year: 2008, budget: Decimal(string: "15000000.25"), subtitle: "Straße"),
        id: id("Hurt Locker", "Movie"), director: id("Bigelow", "Director")),
      movieChange(MovieRow("Orphan", subtitle: "Crème brûlée"), id: id("Orphan", "Movie")),
    ]
    let actors = ["Al Pacino", "Robert De Niro", "Tom Cruise"].map { namedChange("Actor", $0, id: id($0, "Actor")) }
    let tags = ["file10", "File2", "apple", "Éclair", "eclair", "file1", "Apple"].map { namedChange("Tag", $0) }
    let links = [("Al Pacino", "Heat"), ("Robert De Niro", "Heat"), ("Tom Cruise", "Collateral")].map {
      LinkChange(entityName: "Movie", relationship: "actors", source: id($1, "Movie"), target: id($0, "Actor"), isInsertion: true)
    }
    let result = try store.save(ChangeSet(inserted: directors + movies + actors + tags, linkChanges: links))
    ids = temp.compactMapValues { result.permanentIDs[$0] }
  }

  func titles(_ predicate: QueryPredicate) throws -> Set<String> { Set(try store.titles(predicate)) }
  func directors(_ predicate: QueryPredicate) throws -> Set<String> { Set(try store.strings("Director", predicate)) }
}

@Suite struct SQLiteQueryTests {
  let f: QueryFixture
  init() throws { f = try QueryFixture() }

  @Test func nilRulesAreTwoValued() throws {
    #expect(try f.titles(where_("rating", .equalTo, .null)) == ["Orphan"])
    #expect(try f.titles(where_("rating", .notEqualTo, .null)) == ["Heat", "Collateral", "The Hurt Locker"])
    #expect(try f.titles(where_("rating", .notEqualTo, 7.5)) == ["Heat", "Orphan"])
    #expect(try f.titles(where_("rating", .lessThan, 8)) == ["Collateral", "The Hurt Locker"])
    #expect(try f.titles(.not(where_("rating", .lessThan, 8))) == ["Heat", "Orphan"])
    #expect(try f.titles(where_("subtitle", .contains, "a")) == ["Heat", "The Hurt Locker"])
    #expect(try f.titles(.not(where_("subtitle", .contains, "a"))) == ["Collateral", "Orphan"])
    #expect(try f.titles(where_("subtitle", .contains, "")) == [])
    #expect(try f.titles(where_("year", .between, [1990, 2005])) == ["Heat", "Collateral"])
    #expect(try f.titles(.not(where_("year", .between, [1990, 2005]))) == ["The Hurt Locker", "Orphan"])
    #expect(try f.titles(where_("year", .in, [1995, 2008])) == ["Heat", "The Hurt Locker"])
    #expect(try f.titles(.not(where_("year", .in, [1995, .null]))) == ["Collateral", "The Hurt Locker"])
    let rated: QueryPredicate = .comparison(Comparison(.keyPath("rating"), .lessThan, .keyPath("year")))
    #expect(try f.titles(.not(rated)) == ["Orphan"])
  }

  @Test func stringOptionsFollowStringSemantics() throws {
    #expect(try f.titles(where_("subtitle", .equalTo, "STRASSE", options: .caseInsensitive)) == ["The Hurt Locker"])
    #expect(try f.titles(where_("subtitle", .equalTo, "STRASSE")) == [])
    #expect(try f.titles(where_("subtitle", .equalTo, "Creme brulee", options: .diacriticInsensitive)) == ["Orphan"])
    #expect(
      try f.titles(where_("subtitle", .beginsWith, "CREME", options: [.caseInsensitive, .diacriticInsensitive])) == ["Orphan"])
    #expect(try f.titles(where_("subtitle", .beginsWith, "CREME", options: .caseInsensitive)) == [])
    #expect(try f.titles(where_("subtitle", .endsWith, "SAGA", options: .caseInsensitive)) == ["Heat"])
    #expect(try f.titles(where_("subtitle", .like, "*los ?ngeles*", options: .caseInsensitive)) == ["Heat"])
    #expect(try f.titles(where_("subtitle", .matches, ".*crime.*")) == ["Heat"])
    #expect(try f.titles(where_("title", .in, ["HEAT", "orphan"], options: .caseInsensitive)) == ["Heat", "Orphan"])
    #expect(try f.titles(.not(where_("subtitle", .like, "*e*", options: .diacriticInsensitive))) == ["Collateral"])
    let bad = #expect(throws: StoreError.self) { try f.titles(where_("title", .matches, "([")) }
    #expect(bad?.code == .invalidQuery)
  }

  @Test func typedValuesCompareByValue() throws {
    #expect(try f.titles(where_("budget", .greaterThan, 20_000_000)) == ["Heat"])
    #expect(
      try f.titles(where_("budget", .equalTo, .decimal(try #require(Decimal(string: "15000000.25"))))) == ["The Hurt Locker"])
    #expect(try f.titles(where_("code", .equalTo, .string(QueryFixture.code.uuidString.lowercased()))) == ["Heat"])
    #expect(try f.titles(where_("watched", .equalTo, true)) == ["Heat"])
    #expect(try f.titles(where_("year", .greaterThan, 2000.5)) == ["Collateral", "The Hurt Locker"])
    let heat = try #require(f.ids["Heat"])
    #expect(try f.titles(.comparison(Comparison(.evaluatedObject, .equalTo, .constant(.objectID(heat))))) == ["Heat"])
    #expect(try f.titles(.comparison(Comparison(.evaluatedObject, .notEqualTo, .constant(.objectID(heat))))).count == 3)
  }

  @Test func decimalsCompareExactly() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let budgets = ["9.5", "10", "0.1000000000000000000001", "0.1"]
    _ = try store.save(ChangeSet(inserted: budgets.map { movieChange(MovieRow($0, budget: Decimal(string: $0))) }))
    #expect(try store.titles(where_("budget", .equalTo, .decimal(try #require(Decimal(string: "0.1"))))) == ["0.1"])
    #expect(
      try store.titles(where_("budget", .greaterThan, .decimal(try #require(Decimal(string: "0.1"))))) == [
        "9.5", "10", "0.1000000000000000000001",
      ])
    #expect(try store.titles(where_("budget", .lessThan, 10)) == ["9.5", "0.1000000000000000000001", "0.1"])
    #expect(try store.titles(sort: [QuerySort("budget")]) == ["0.1", "0.1000000000000000000001", "9.5", "10"])
  }

  @Test func toOneKeyPaths() throws {
    #expect(try f.titles(where_("director.name", .equalTo, "Michael Mann")) == ["Heat", "Collateral"])
    #expect(try f.titles(where_("director.name", .notEqualTo, "Michael Mann")) == ["The Hurt Locker", "Orphan"])
    #expect(try f.titles(where_("director", .equalTo, .null)) == ["Orphan"])
    let mann = try #require(f.ids["Mann"])
    #expect(try f.titles(where_("director", .equalTo, .objectID(mann))) == ["Heat", "Collateral"])
    #expect(try f.titles(where_("director.born", .lessThan, .date(Date()))) == ["Heat", "Collateral"])
    #expect(try f.titles(where_("director.born", .equalTo, .null)) == ["The Hurt Locker", "Orphan"])
    #expect(
      try f.titles(
        .and([where_("director.name", .beginsWith, "k", options: .caseInsensitive), where_("director.born", .equalTo, .null)]))
        == ["The Hurt Locker"])
  }

  @Test func toManyQuantifiersAndCount() throws {
    #expect(try f.titles(where_("actors.name", .beginsWith, "Al", .any)) == ["Heat"])
    #expect(try f.titles(where_("actors.name", .equalTo, "Tom Cruise")) == ["Collateral"], "implicit ANY")
    #expect(try f.titles(where_("actors.name", .contains, "o", .all)) == ["Heat", "Collateral", "The Hurt Locker", "Orphan"])
    #expect(try f.titles(where_("actors.name", .contains, "Robert", .all)) == ["The Hurt Locker", "Orphan"])
    #expect(try f.titles(where_("actors.name", .equalTo, "Al Pacino", .none)) == ["Collateral", "The Hurt Locker", "Orphan"])
    #expect(try f.titles(where_("actors.@count", .equalTo, 2)) == ["Heat"])
    #expect(try f.titles(where_("director.movies.@count", .equalTo, 2)) == ["Heat", "Collateral"])
    #expect(try f.titles(.not(where_("director.movies.@count", .equalTo, 2))) == ["The Hurt Locker", "Orphan"])
    #expect(try f.titles(where_("director.movies.title", .equalTo, "Heat", .any)) == ["Heat", "Collateral"])
    #expect(try f.directors(where_("movies.title", .equalTo, "Heat", .any)) == ["Michael Mann"])
    #expect(try f.directors(where_("movies.@count", .equalTo, 0)) == ["Christopher Nolan"])
    #expect(try f.directors(.not(where_("movies.rating", .greaterThan, 8, .any))) == ["Kathryn Bigelow", "Christopher Nolan"])
    #expect(try f.directors(where_("movies.actors.name", .equalTo, "Tom Cruise", .any)) == ["Michael Mann"])
    let pacino = try #require(f.ids["Al Pacino"])
    #expect(try f.titles(where_("actors", .equalTo, .objectID(pacino), .any)) == ["Heat"])
    let actorMovies = try f.store.strings("Actor", where_("movies.director.name", .equalTo, "Michael Mann", .all))
    #expect(Set(actorMovies) == ["Al Pacino", "Robert De Niro", "Tom Cruise"])
  }

  @Test func sortingNullsCollationsAndTieBreaks() throws {
    #expect(try f.store.titles(sort: [QuerySort("rating")]) == ["Orphan", "Collateral", "The Hurt Locker", "Heat"])
    #expect(
      try f.store.titles(sort: [QuerySort("rating", ascending: false)]) == ["Heat", "Collateral", "The Hurt Locker", "Orphan"])
    #expect(
      try f.store.titles(sort: [QuerySort("director.name"), QuerySort("title", ascending: false)]) == [
        "Orphan", "The Hurt Locker", "Heat", "Collateral",
      ])
    #expect(
      try f.store.titles(sort: [QuerySort("budget", ascending: false)]) == ["Heat", "The Hurt Locker", "Collateral", "Orphan"])
    let standard = try f.store.strings("Tag", sort: [QuerySort("label", comparator: .localizedStandard)])
    #expect(standard == ["Apple", "apple", "eclair", "Éclair", "file1", "File2", "file10"])
    let plain = try f.store.strings("Tag", sort: [QuerySort("label")])
    #expect(plain == ["Apple", "File2", "apple", "eclair", "file1", "file10", "Éclair"])
    let caseless = try f.store.strings("Tag", sort: [QuerySort("label", comparator: .caseInsensitive)])
    #expect(caseless == ["Apple", "apple", "eclair", "file1", "file10", "File2", "Éclair"])
    let localized = try f.store.strings("Tag", sort: [QuerySort("label", ascending: false, comparator: .localized)])
    #expect(localized == ["File2", "file10", "file1", "Éclair", "eclair", "apple", "Apple"])
  }

  @Test func limitOffsetAndResultTypes() throws {
    let byTitle = [QuerySort("title")]
    #expect(try f.store.titles(sort: byTitle) == ["Collateral", "Heat", "Orphan", "The Hurt Locker"])
    #expect(try f.store.titles(sort: byTitle, limit: 2, offset: 1) == ["Heat", "Orphan"])
    #expect(try f.store.titles(sort: byTitle, offset: 3) == ["The Hurt Locker"])
    #expect(try f.store.count(FetchDescription(entityName: "Movie", predicate: where_("rating", .notEqualTo, .null))) == 3)
    #expect(try f.store.count(FetchDescription(entityName: "Movie", fetchLimit: 2, fetchOffset: 3)) == 1)
    let ids = try f.store.fetch(
      FetchDescription(entityName: "Movie", predicate: where_("director.name", .equalTo, "Michael Mann"), resultType: .objectIDs),
      generation: nil)
    #expect(ids == .objectIDs([try #require(f.ids["Heat"]), try #require(f.ids["Collateral"])]))
    var titles = FetchDescription(
      entityName: "Movie", sortDescriptors: [QuerySort("title")], fetchLimit: 2, resultType: .dictionaries)
    titles.propertiesToFetch = [.keyPath("title"), .keyPath("director.name")]
    #expect(
      try f.store.fetch(titles, generation: nil)
        == .dictionaries([
          ["title": "Collateral", "director.name": "Michael Mann"], ["title": "Heat", "director.name": "Michael Mann"],
        ]))
  }

  @Test func invalidQueriesNameEntityAndKey() throws {
    let transient = #expect(throws: StoreError.self) { try f.titles(where_("note", .equalTo, "x")) }
    #expect(transient?.code == .invalidQuery)
    #expect(transient?.key == "note")
    let unknown = #expect(throws: StoreError.self) { try f.store.titles(sort: [QuerySort("nope")]) }
    #expect(unknown?.code == .invalidQuery)
    #expect(unknown?.entity == "Movie")
    let mismatch = #expect(throws: StoreError.self) { try f.titles(where_("title", .equalTo, 5)) }
    #expect(mismatch?.code == .invalidQuery)
  }
}
