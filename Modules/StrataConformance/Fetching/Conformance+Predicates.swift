import Foundation
import Strata
import StrataStoreKit
import Testing

/// One predicate case over any entity of the sample model: the names (titles for films) it must match.
struct EntityCase: Sendable {
  enum Entity: String, Sendable {
    case film, director, studio, actor
  }

  var entity: Entity
  var format: String
  var arguments: [any PredicateArgument & Sendable]
  var expected: Set<String>

  init(_ entity: Entity, _ format: String, _ arguments: [any PredicateArgument & Sendable] = [], _ expected: Set<String>) {
    self.entity = entity
    self.format = format
    self.arguments = arguments
    self.expected = expected
  }
}

extension Conformance {
  // The actors by the names the cases use.
  static let al = "Al Pacino"
  static let robert = "Robert De Niro"
  static let audrey = "Audrey Tautou"
  static let song = "Song Kang-ho"
  static let zoeK = "Zoë Kravitz"
  static let zoeS = SampleData.zoeSaldana
  static let ilker = "İlker Kaleli"
  static let kivanc = "Kıvanç Tatlıtuğ"
  static let han = "宋康昊"
  static let hangul = "배두나"
  static let melina = "Μελίνα Μερκούρη"
  static let astronaut = "👩🏽‍🚀 Astronaut"
  static let allActors = Set(SampleData.actors.map(\.name))
  static let actorsWithoutFilms: Set<String> = [zoeK, zoeS, ilker, kivanc, han, hangul, melina, astronaut]
  static let actorsWithoutID: Set<String> = [audrey, song, ilker, kivanc, han, hangul, melina, astronaut]

  /// Every string operator under every option on `Actor.name`, over Latin, Turkish, Greek, Han,
  /// Hangul, emoji and combining-mark names; expected names by hand from docs/QUERY-SEMANTICS.md.
  static let stringCases: [EntityCase] = [
    // == and !=: literal without options; [c] [d] fold, canonical equivalents equal; [n] supersedes.
    EntityCase(.actor, "name == 'Al Pacino'", [], [al]),
    EntityCase(.actor, "name == 'al pacino'", [], []),
    EntityCase(.actor, "name ==[c] 'al pacino'", [], [al]),
    EntityCase(.actor, "name ==[d] 'Zoe Kravitz'", [], [zoeK]),
    EntityCase(.actor, "name ==[cd] 'zoe saldana'", [], [zoeS]),
    EntityCase(.actor, "name ==[n] 'Al Pacino'", [], [al]),
    EntityCase(.actor, "name ==[cn] 'al pacino'", [], []),
    EntityCase(.actor, "name == %@", ["Zo\u{EB} Salda\u{F1}a"], []),
    EntityCase(.actor, "name ==[c] %@", ["zo\u{EB} salda\u{F1}a"], [zoeS]),
    EntityCase(.actor, "name == %@", ["Zoe\u{308} Saldan\u{303}a"], []),
    EntityCase(.actor, "name ==[c] 'ΜΕΛΊΝΑ ΜΕΡΚΟΎΡΗ'", [], [melina]),
    EntityCase(.actor, "name ==[cd] 'μελινα μερκουρη'", [], [melina]),
    EntityCase(.actor, "name ==[c] 'İLKER KALELI'", [], [ilker]),
    EntityCase(.actor, "name ==[c] 'İLKER KALELİ'", [], []),
    EntityCase(.actor, "name ==[c] 'ilker kaleli'", [], []),
    EntityCase(.actor, "name ==[cd] 'ilker kaleli'", [], [ilker]),
    EntityCase(.actor, "name ==[cd] 'KIVANC TATLITUG'", [], []),
    EntityCase(.actor, "name ==[cd] 'kıvanc tatlıtug'", [], [kivanc]),
    EntityCase(.actor, "name == '宋康昊'", [], [han]),
    EntityCase(.actor, "name != 'Al Pacino'", [], allActors.subtracting([al])),
    EntityCase(.actor, "name !=[c] 'AL PACINO'", [], allActors.subtracting([al])),
    EntityCase(.actor, "name !=[cd] 'zoe kravitz'", [], allActors.subtracting([zoeK])),
    // Order: code points without options (decomposed "Zoe\u{308}" before precomposed "Zoë").
    EntityCase(.actor, "name < 'B'", [], [al, audrey]),
    EntityCase(.actor, "name >= 'Z'", [], [zoeS, zoeK, ilker, melina, han, hangul, astronaut]),
    EntityCase(.actor, "name > 'Zz'", [], [ilker, melina, han, hangul, astronaut]),
    EntityCase(.actor, "name < %@", ["Zo\u{EB}"], [al, audrey, kivanc, robert, song, zoeS]),
    EntityCase(.actor, "name <[c] 'b'", [], [al, audrey]),
    EntityCase(.actor, "name >[c] 'z'", [], [zoeK, zoeS, melina, han, hangul, astronaut]),
    EntityCase(.actor, "name <=[cd] 'al pacino'", [], [al]),
    EntityCase(.actor, "name BETWEEN {'K', 'S'}", [], [kivanc, robert]),
    EntityCase(.actor, "name BETWEEN[c] {'k', 't'}", [], [kivanc, robert, song]),
    // CONTAINS: code-unit search (an emoji's parts are found), folding first under options.
    EntityCase(.actor, "name CONTAINS 'an'", [], [kivanc, song]),
    EntityCase(.actor, "name CONTAINS[d] 'an'", [], [kivanc, song, zoeS]),
    EntityCase(.actor, "name CONTAINS 'ë'", [], [zoeK]),
    EntityCase(.actor, "name CONTAINS[c] 'Ë'", [], [zoeK, zoeS]),
    EntityCase(.actor, "name CONTAINS '康'", [], [han]),
    EntityCase(.actor, "name CONTAINS '👩'", [], [astronaut]),
    EntityCase(.actor, "name CONTAINS '🏽'", [], [astronaut]),
    EntityCase(.actor, "name CONTAINS[cd] 'KANG'", [], [song]),
    EntityCase(.actor, "name CONTAINS[c] 'ΡΗ'", [], [melina]),
    EntityCase(.actor, "name CONTAINS ''", [], []),
    EntityCase(.actor, "name CONTAINS[n] 'ë'", [], [zoeK]),
    // BEGINSWITH / ENDSWITH.
    EntityCase(.actor, "name BEGINSWITH 'A'", [], [al, audrey]),
    EntityCase(.actor, "name BEGINSWITH[c] 'zo'", [], [zoeK, zoeS]),
    EntityCase(.actor, "name BEGINSWITH 'İ'", [], [ilker]),
    EntityCase(.actor, "name BEGINSWITH[c] 'i'", [], [ilker]),
    EntityCase(.actor, "name BEGINSWITH '배'", [], [hangul]),
    EntityCase(.actor, "name BEGINSWITH[n] 'Zoë'", [], [zoeK]),
    EntityCase(.actor, "name BEGINSWITH[cd] 'μελ'", [], [melina]),
    EntityCase(.actor, "name ENDSWITH 'ou'", [], [audrey]),
    EntityCase(.actor, "name ENDSWITH[c] 'ASTRONAUT'", [], [astronaut]),
    EntityCase(.actor, "name ENDSWITH '昊'", [], [han]),
    EntityCase(.actor, "name ENDSWITH[d] 'saldana'", [], []),
    EntityCase(.actor, "name ENDSWITH[cd] 'SALDANA'", [], [zoeS]),
    EntityCase(.actor, "name ENDSWITH 'ğ'", [], [kivanc]),
    EntityCase(.actor, "name ENDSWITH[d] 'g'", [], [kivanc]),
    // LIKE: `?` is one user-perceived character; characters compare literally without options.
    EntityCase(.actor, "name LIKE 'A*'", [], [al, audrey]),
    EntityCase(.actor, "name LIKE '?? Pacino'", [], [al]),
    EntityCase(.actor, "name LIKE 'Zo? *'", [], [zoeK, zoeS]),
    EntityCase(.actor, "name LIKE 'Zoë *'", [], [zoeK]),
    EntityCase(.actor, "name LIKE[d] 'Zoe *'", [], [zoeK, zoeS]),
    EntityCase(.actor, "name LIKE '? Astronaut'", [], [astronaut]),
    EntityCase(.actor, "name LIKE '*康*'", [], [han]),
    EntityCase(.actor, "name LIKE '???'", [], [han, hangul]),
    EntityCase(.actor, "name LIKE[c] 'song*'", [], [song]),
    EntityCase(.actor, "name LIKE[cd] '*tug'", [], [kivanc]),
    // MATCHES: ICU regular expressions over code points.
    EntityCase(.actor, "name MATCHES '[A-Z][a-z]+ [A-Z][a-z]+'", [], [al, audrey]),
    EntityCase(.actor, "name MATCHES 'Zo. .*'", [], [zoeK]),
    EntityCase(.actor, "name MATCHES[c] 'zo. .*'", [], [zoeK]),
    EntityCase(.actor, "name MATCHES[d] 'Zo. .*'", [], [zoeK, zoeS]),
    EntityCase(.actor, "name MATCHES '\\\\p{Han}+'", [], [han]),
    EntityCase(.actor, "name MATCHES '\\\\p{Hangul}+'", [], [hangul]),
    EntityCase(.actor, "name MATCHES[c] 'μελίνα.*'", [], [melina]),
    // IN: a collection of constants, or a string on the right (substring).
    EntityCase(.actor, "name IN {'Al Pacino', 'al pacino', '宋康昊'}", [], [al, han]),
    EntityCase(.actor, "name IN[c] {'AL PACINO', 'ZOË KRAVITZ'}", [], [al, zoeK]),
    EntityCase(.actor, "name IN[cd] {'zoe kravitz', 'zoe saldana'}", [], [zoeK, zoeS]),
    EntityCase(.actor, "name IN %@", [["배두나", "Nobody"]], [hangul]),
    EntityCase(.actor, "'Tautou' IN name", [], [audrey]),
    EntityCase(.actor, "'tautou' IN[c] name", [], [audrey]),
    // An optional string: nil on either side, nil never ordered.
    EntityCase(.actor, "imdbID == nil", [], actorsWithoutID),
    EntityCase(.actor, "nil == imdbID", [], actorsWithoutID),
    EntityCase(.actor, "imdbID != nil", [], [al, robert, zoeK, zoeS]),
    EntityCase(.actor, "nil != imdbID", [], [al, robert, zoeK, zoeS]),
    EntityCase(.actor, "imdbID BEGINSWITH 'nm000'", [], [al, robert, zoeK]),
    EntityCase(.actor, "imdbID > 'nm0005'", [], [zoeK, zoeS]),
    EntityCase(.actor, "imdbID < 'nm0001'", [], [al, robert]),
    EntityCase(.actor, "NOT (imdbID < 'nm0001')", [], allActors.subtracting([al, robert])),
    EntityCase(.actor, "imdbID IN {nil, 'nm0000199'}", [], actorsWithoutID.union([al])),
    EntityCase(.actor, "imdbID CONTAINS nil", [], []),
    EntityCase(.actor, "imdbID ENDSWITH[c] '34'", [], [robert]),
  ]

  /// Every comparison operator on every attribute type of `Film`, with nil and constants on either side.
  static let typeCases: [EntityCase] = [
    EntityCase(.film, "year BETWEEN {2001, 2004}", [], ["Amélie", "Memories of Murder", "Collateral"]),
    EntityCase(.film, "1995 == year", [], ["Heat"]),
    EntityCase(.film, "2010 < year", [], ["Parasite", "Untitled Project", "file10", "Straße"]),
    EntityCase(.film, "'Heat' == title", [], ["Heat"]),
    // Conjunctions of tests of several types, which a store may decide from stored bytes (code-point order).
    EntityCase(.film, "title > 'Amf' AND title < 'B' AND rating > 8 AND released == YES", [], ["Amélie"]),
    EntityCase(.film, "title >= 'D' AND rating > 7.55", [], ["Heat", "Delicatessen", "Parasite", "Memories of Murder"]),
    EntityCase(.film, "runtime == 170", [], ["Heat"]),
    EntityCase(.film, "runtime != 0", [], allTitles.subtracting(["Untitled Project"])),
    EntityCase(.film, "runtime < 95", [], ["Untitled Project", "File2", "file10"]),
    EntityCase(.film, "runtime IN {90, 91, 92}", [], ["File2", "file10"]),
    EntityCase(.film, "boxOffice BETWEEN {1000000, 2000000}", [], ["Delicatessen", "Memories of Murder"]),
    EntityCase(.film, "boxOffice < 100", [], ["Untitled Project", "File2", "file10", "Straße"]),
    EntityCase(.film, "boxOffice IN {10, 20}", [], ["File2", "file10"]),
    EntityCase(.film, "rating BETWEEN {7.5, 7.6}", [], ["Collateral", "Delicatessen"]),
    EntityCase(.film, "rating != 8.3", [], allTitles.subtracting(["Heat", "Amélie"])),
    EntityCase(.film, "rating < 5.5", [], ["Untitled Project", "File2"]),
    EntityCase(.film, "rating IN {5, 5.5}", [], ["File2", "file10"]),
    EntityCase(.film, "score == 2.5", [], ["File2"]),
    EntityCase(.film, "score BETWEEN {2.5, 2.75}", [], ["File2", "file10"]),
    EntityCase(.film, "score < 1", [], ["Untitled Project"]),
    EntityCase(.film, "budget == 60000000", [], ["Heat"]),
    EntityCase(.film, "budget BETWEEN {10000000, 62000000}", [], ["Heat", "Parasite"]),
    EntityCase(.film, "budget IN {65000000, 11400000}", [], ["Collateral", "Parasite"]),
    EntityCase(.film, "budget <= 11400000", [], ["Parasite"]),
    EntityCase(.film, "budget > 11399999.99", [], ["Heat", "Collateral", "Parasite"]),
    EntityCase(.film, "budget != nil", [], ["Heat", "Collateral", "Parasite"]),
    EntityCase(.film, "released != YES", [], ["Untitled Project", "File2", "file10"]),
    EntityCase(.film, "released == TRUE AND year > 2010", [], ["Parasite", "Straße"]),
    EntityCase(
      .film, "releaseDate BETWEEN %@", [[SampleData.date("1995-01-01"), SampleData.date("2001-12-31")]], ["Heat", "Amélie"]),
    EntityCase(.film, "releaseDate == %@", [SampleData.date("2019-05-30")], ["Parasite"]),
    EntityCase(.film, "releaseDate != nil AND releaseDate <= %@", [SampleData.date("1995-12-15")], ["Heat", "Delicatessen"]),
    EntityCase(.film, "poster == %@", [Data([1, 2, 3, 255])], ["Heat"]),
    EntityCase(.film, "poster != %@", [Data([1, 2, 3, 255])], allTitles.subtracting(["Heat"])),
    EntityCase(.film, "uuid IN %@", [[SampleData.uuid(2), SampleData.uuid(3)]], ["Collateral", "Amélie"]),
    EntityCase(.film, "uuid != %@", [SampleData.uuid(1)], allTitles.subtracting(["Heat"])),
    EntityCase(
      .film, "homepage == %@", [URL(string: "https://parasite.example/film") ?? URL(fileURLWithPath: "/")], ["Parasite"]),
    EntityCase(.film, "homepage == nil", [], allTitles.subtracting(["Parasite"])),
    EntityCase(.film, "nil == genre", [], ["Untitled Project"]),
    EntityCase(
      .film, "nil != director", [],
      ["Heat", "Collateral", "Amélie", "Delicatessen", "Parasite", "Memories of Murder"]),
  ]

  /// Empty and absent to-many collections, to-many then to-one, and to-many through two and three hops.
  static let toManyCases: [EntityCase] = [
    EntityCase(.actor, "films.@count == 0", [], actorsWithoutFilms),
    EntityCase(.actor, "ANY films.year > 2000", [], [audrey, song, robert]),
    EntityCase(.actor, "ALL films.year > 2000", [], actorsWithoutFilms.union([audrey, song])),
    EntityCase(.actor, "NONE films.year > 2000", [], actorsWithoutFilms.union([al])),
    EntityCase(.actor, "films.@count >= 2", [], [robert, song]),
    EntityCase(.actor, "ANY films.director.name == 'Bong Joon-ho'", [], [song]),
    EntityCase(.actor, "ANY films.studio == nil", [], [song, robert]),
    EntityCase(.actor, "ALL films.studio.name == 'Warner'", [], actorsWithoutFilms.union([al])),
    EntityCase(.studio, "ANY films.actors.name == 'Al Pacino'", [], ["Warner"]),
    EntityCase(.studio, "ANY films.actors.name BEGINSWITH 'Au'", [], ["UGC"]),
    EntityCase(.studio, "NONE films.actors.name == 'Robert De Niro'", [], ["UGC", "Empty Studio"]),
    EntityCase(.studio, "ALL films.actors.imdbID != nil", [], ["Warner", "Empty Studio"]),
    EntityCase(.studio, "count:(films.actors) == 2", [], ["Warner"]),
    EntityCase(.studio, "count:(films.actors) == 0", [], ["Empty Studio"]),
    EntityCase(.studio, "films.@count == 0", [], ["Empty Studio"]),
    EntityCase(.studio, "films.@count > 2", [], ["Warner"]),
    EntityCase(.director, "ANY films.actors.name == 'Song Kang-ho'", [], ["Bong Joon-ho"]),
    EntityCase(.director, "ANY films.actors.films.title == 'Straße'", [], ["Michael Mann"]),
    EntityCase(.director, "count:(films.actors) == 2", [], ["Michael Mann", "Bong Joon-ho"]),
    EntityCase(.director, "films.@count == 0", [], ["Nobody"]),
    EntityCase(
      .director, "SUBQUERY(films, $f, SUBQUERY($f.actors, $a, $a.name BEGINSWITH 'Al').@count > 0).@count > 0", [],
      ["Michael Mann"]),
    EntityCase(
      .director, "SUBQUERY(films, $f, SUBQUERY($f.actors, $a, $a.imdbID == nil).@count > 0).@count == 2", [],
      ["Bong Joon-ho"]),
  ]

  /// The collection functions (over to-many key paths, literals of expressions and constants) and the
  /// numeric functions.
  static let functionCases: [EntityCase] = [
    EntityCase(.director, "average:(films.rating) > 8", [], ["Bong Joon-ho"]),
    EntityCase(.director, "sum:(films.runtime) == 290", [], ["Michael Mann"]),
    EntityCase(.director, "max:(films.year) >= 2019", [], ["Bong Joon-ho"]),
    EntityCase(.director, "min:(films.title) == 'Amélie'", [], ["Jean-Pierre Jeunet"]),
    EntityCase(.director, "count:(films) == 0", [], ["Nobody"]),
    EntityCase(.director, "median:(films.rating) > 8.2", [], ["Bong Joon-ho"]),
    EntityCase(.director, "median:(films.runtime) == 145", [], ["Michael Mann"]),
    EntityCase(.director, "median:(films.runtime) == nil", [], ["Nobody"]),
    EntityCase(.director, "mode:(films.rating) < 7.6", [], ["Michael Mann"]),
    EntityCase(.director, "mode:(films.genre) == 'Crime'", [], ["Michael Mann", "Bong Joon-ho"]),
    EntityCase(.director, "stddev:(films.year) == 4.5", [], ["Michael Mann"]),
    EntityCase(.director, "stddev:(films.year) > 4.9", [], ["Jean-Pierre Jeunet", "Bong Joon-ho"]),
    EntityCase(.film, "sum:({runtime, year}) > 2150", [], ["Heat", "Parasite"]),
    EntityCase(
      .film, "min:({runtime, 100}) == 100", [],
      ["Heat", "Collateral", "Amélie", "Parasite", "Memories of Murder", "Straße"]),
    EntityCase(.film, "average:({rating, 10}) >= 9", [], ["Heat", "Amélie", "Parasite", "Memories of Murder"]),
    EntityCase(.film, "count:({rating, genre}) == 1", [], ["Untitled Project"]),
    EntityCase(.film, "sum:({1, 2, 3}) == 6", [], allTitles),
    EntityCase(.film, "stddev:({2, 4, 4, 4, 5, 5, 7, 9}) == 2", [], allTitles),
    EntityCase(.film, "median:({1, 9, 3}) == 3", [], allTitles),
    EntityCase(.film, "sqrt:(runtime) > 12", [], ["Heat"]),
    EntityCase(.film, "floor:(rating) == 8", [], ["Heat", "Amélie", "Parasite", "Memories of Murder"]),
    EntityCase(.film, "ceiling:(rating) == 8", [], ["Collateral", "Delicatessen"]),
    EntityCase(.film, "trunc:(rating / 2) == 4", [], ["Heat", "Amélie", "Parasite", "Memories of Murder"]),
    EntityCase(.film, "modulus:by:(year, 100) == 19", [], ["Parasite"]),
    EntityCase(
      .film, "modulus:by:(year, 2) == 1", [],
      ["Heat", "Amélie", "Delicatessen", "Parasite", "Memories of Murder", "Untitled Project", "file10", "Straße"]),
    EntityCase(.film, "raise:toPower:(runtime, 2) > 20000", [], ["Heat"]),
    EntityCase(.film, "runtime ** 2 > 20000", [], ["Heat"]),
    EntityCase(.film, "ln:(boxOffice) > 19", [], ["Heat", "Collateral", "Parasite"]),
    EntityCase(.film, "log:(boxOffice) >= 8", [], ["Heat", "Collateral", "Amélie", "Parasite"]),
    EntityCase(.film, "exp:(score) > 60", [], ["Heat", "Amélie", "Parasite"]),
    EntityCase(.film, "abs:(rating - 8) < 0.2", [], ["Memories of Murder"]),
    EntityCase(.film, "sqrt:(runtime - 200) == nil", [], allTitles),
  ]

  /// The whole predicate table of this area, with the fetching and expressions areas' tables.
  public static var predicateCaseCount: Int {
    stringCases.count + typeCases.count + toManyCases.count + functionCases.count + subscriptCases.count + filmCases.count
      + filmExpressionCases.count + directorExpressionCases.count
  }

  static func names(
    _ context: ObjectContext, _ entity: EntityCase.Entity, _ format: String, _ arguments: [any PredicateArgument & Sendable]
  ) throws -> (fetched: Set<String>, counted: Int) {
    switch entity {
    case .film:
      let request = try FetchRequest<Film>(format: format, argumentArray: arguments)
      return (Set(try context.fetch(request).map(\.title)), try context.count(for: request))
    case .director:
      let request = try FetchRequest<Director>(format: format, argumentArray: arguments)
      return (Set(try context.fetch(request).map(\.name)), try context.count(for: request))
    case .studio:
      let request = try FetchRequest<Studio>(format: format, argumentArray: arguments)
      return (Set(try context.fetch(request).map(\.name)), try context.count(for: request))
    case .actor:
      let request = try FetchRequest<Actor>(format: format, argumentArray: arguments)
      return (Set(try context.fetch(request).map(\.name)), try context.count(for: request))
    }
  }

  static func actorNames(_ context: ObjectContext, _ sort: QuerySort) throws -> [String] {
    try context.fetch(FetchRequest<Actor>(sortDescriptors: [sort, QuerySort("imdbID")])).map(\.name)
  }

  /// Sorting Unicode names: code points by default; folded (NFC) then code points for the others.
  static func unicodeSorting(_ context: ObjectContext) throws {
    let byCodePoint = [al, audrey, kivanc, robert, song, zoeS, zoeK, ilker, melina, han, hangul, astronaut]
    let folded = [al, audrey, ilker, kivanc, robert, song, zoeK, zoeS, melina, han, hangul, astronaut]
    #expect(try actorNames(context, QuerySort("name")) == byCodePoint)
    #expect(try actorNames(context, QuerySort("name", ascending: false)) == byCodePoint.reversed())
    #expect(try actorNames(context, QuerySort("name", comparator: .caseInsensitive)) == folded)
    #expect(try actorNames(context, QuerySort("name", comparator: .localized)) == folded)
    #expect(try actorNames(context, QuerySort("name", comparator: .localizedStandard)) == folded)
    #expect(
      try actorNames(context, QuerySort("name", ascending: false, comparator: .localizedStandard)) == folded.reversed())
  }

  /// Typed key-path predicates and `#Predicate`s give the same objects as their format strings.
  static func typedForms(_ context: ObjectContext) throws {
    let typed: [(Where<Actor>, String)] = [
      (\.name == "Al Pacino", "name == 'Al Pacino'"),
      ((\Actor.name).contains("kang", options: [.caseInsensitive, .diacriticInsensitive]), "name CONTAINS[cd] 'kang'"),
      ((\Actor.name).beginsWith("zo", options: .caseInsensitive), "name BEGINSWITH[c] 'zo'"),
      (\.imdbID == nil, "imdbID == nil"),
      (\.imdbID != nil && (\Actor.name).endsWith("z"), "imdbID != nil AND name ENDSWITH 'z'"),
      (\.name > "Zz", "name > 'Zz'"),
    ]
    for (condition, format) in typed {
      let viaFormat = try names(context, .actor, format, []).fetched
      #expect(Set(try context.fetch(FetchRequest(where: condition)).map(\.name)) == viaFormat, "\(format)")
      #expect(try QueryPredicate(format: format) == condition.predicate, "\(format) has the same tree")
    }

    let foundation: [(Foundation.Predicate<Actor>, String)] = [
      (#Predicate<Actor> { $0.name == "宋康昊" }, "name == '宋康昊'"),
      (#Predicate<Actor> { $0.imdbID == nil && $0.name > "Zz" }, "imdbID == nil AND name > 'Zz'"),
      (#Predicate<Actor> { $0.name.localizedStandardContains("kang") }, "name CONTAINS[cd] 'kang'"),
      (#Predicate<Actor> { $0.name.starts(with: "Zo") }, "name BEGINSWITH 'Zo'"),
    ]
    for (predicate, format) in foundation {
      let viaFormat = try names(context, .actor, format, []).fetched
      #expect(Set(try context.fetch(try FetchRequest(predicate)).map(\.name)) == viaFormat, "#Predicate of \(format)")
    }
    let films: [(Foundation.Predicate<Film>, String)] = [
      (#Predicate<Film> { $0.year >= 2010 && $0.released == true }, "year >= 2010 AND released == YES"),
      (#Predicate<Film> { $0.genre == nil || $0.rating > 8.4 }, "genre == nil OR rating > 8.4"),
    ]
    for (predicate, format) in films {
      let viaFormat = try names(context, .film, format, []).fetched
      #expect(Set(try context.fetch(try FetchRequest(predicate)).map(\.title)) == viaFormat, "#Predicate of \(format)")
    }
  }
}

/// String operators × options over Unicode, every attribute type, to-many collections (empty, two and
/// three hops, nested SUBQUERY), collection and numeric functions, Unicode sorting, and typed /
/// `#Predicate` forms that must agree with their format strings — identical answers on every backend.
enum PredicateCases {
  /// The sample store, read by a fresh context.
  static func sampleContext(_ backend: ConformanceBackend) throws -> ObjectContext {
    let (container, url) = try backend.sampleContainer()
    return try backend.freshContext(container, url)
  }

  /// The string, type, to-many, function and subscript tables: fetches and counts answer as written by hand.
  static func tablesAnswerAsWrittenByHand(_ backend: ConformanceBackend) async throws {
    let context = try sampleContext(backend)
    let C = Conformance.self
    for testCase in C.stringCases + C.typeCases + C.toManyCases + C.functionCases + C.subscriptCases {
      let names = try C.names(context, testCase.entity, testCase.format, testCase.arguments)
      #expect(names.fetched == testCase.expected, "\(testCase.entity) \(testCase.format)")
      #expect(names.counted == testCase.expected.count, "count of \(testCase.entity) \(testCase.format)")
    }
  }

  /// A nested SUBQUERY reading the outer variable is refused as unsupported.
  static func nestedSubqueriesReadingTheOuterVariableAreRefused(_ backend: ConformanceBackend) async throws {
    let context = try sampleContext(backend)
    do {
      let format = "SUBQUERY(films, $f, SUBQUERY($f.actors, $a, $a.name == $f.title).@count > 0).@count > 0"
      _ = try context.fetch(try FetchRequest<Director>(format: format))
      Issue.record("a nested SUBQUERY reading the outer variable must be rejected")
    } catch let error as StoreError {
      #expect(error.code == .unsupported, "\(error.message)")
    }
  }

  /// Bad subscripts are refused (see ``Conformance/subscriptErrors(_:)``).
  static func badSubscriptsAreRefused(_ backend: ConformanceBackend) async throws {
    try Conformance.subscriptErrors(try sampleContext(backend))
  }

  /// Sorting by Unicode strings (see ``Conformance/unicodeSorting(_:)``).
  static func unicodeStringsSortAlike(_ backend: ConformanceBackend) async throws {
    try Conformance.unicodeSorting(try sampleContext(backend))
  }

  /// Typed and `#Predicate` forms agree with their format strings (see ``Conformance/typedForms(_:)``).
  static func typedFormsAgreeWithFormatStrings(_ backend: ConformanceBackend) async throws {
    try Conformance.typedForms(try sampleContext(backend))
  }

  /// Every string operator under every option on tricky names answers as the reference.
  static func stringOperatorsAnswerAsTheReference(_ backend: ConformanceBackend) async throws {
    try Conformance.stringOperatorsAnswerAsTheReference(backend)
  }

  /// `MATCHES` on tricky names answers as the reference.
  static func matchesAnswersAsTheReference(_ backend: ConformanceBackend) async throws {
    try Conformance.matchesAnswersAsTheReference(backend)
  }

  /// String answers written by hand from docs/QUERY-SEMANTICS.md.
  static func stringAnswersWrittenByHand(_ backend: ConformanceBackend) async throws {
    try Conformance.stringAnswersWrittenByHand(backend)
  }
}
