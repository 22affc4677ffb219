import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  static let budgeted: Set<String> = ["Heat", "Collateral", "Parasite"]
  static let dated: Set<String> = allTitles.subtracting(["Untitled Project", "File2", "file10"])

  /// Non-finite numbers, numbers beyond `Decimal`'s range, NaN dates, constants compared with constants
  /// and integer overflow: one answer on every backend, never a trap (docs/QUERY-SEMANTICS.md, Values).
  static let nonFiniteCases: [EntityCase] = [
    EntityCase(.film, "budget == %@", [Double.infinity], []),
    EntityCase(.film, "budget != %@", [Double.infinity], allTitles),
    EntityCase(.film, "budget < %@", [Double.infinity], budgeted),
    EntityCase(.film, "budget > %@", [-Double.infinity], budgeted),
    EntityCase(.film, "budget == CAST('inf', 'NSNumber')", [], []),
    EntityCase(.film, "budget BETWEEN {CAST('-inf', 'NSNumber'), CAST('inf', 'NSNumber')}", [], budgeted),
    EntityCase(.film, "budget < 1e200", [], budgeted),
    EntityCase(.film, "budget > 1e200", [], []),
    EntityCase(.film, "budget >= -1e200", [], budgeted),
    EntityCase(.film, "budget > 1e-200", [], budgeted),
    EntityCase(.film, "budget IN {1e200, 60000000}", [], ["Heat"]),
    EntityCase(.film, "ANY actors.films.budget < 1e200", [], ["Heat", "Parasite", "Memories of Murder", "Straße"]),
    EntityCase(.film, "budget == %@", [Double.nan], []),
    EntityCase(.film, "budget != %@", [Double.nan], allTitles),
    EntityCase(.film, "budget < %@", [Double.nan], []),
    EntityCase(.film, "rating == CAST('nan', 'NSNumber')", [], []),
    EntityCase(.film, "rating != CAST('nan', 'NSNumber')", [], allTitles),
    EntityCase(.film, "rating < %@", [Double.infinity], allTitles),
    EntityCase(.film, "rating BETWEEN %@", [[Double.nan, Double.infinity]], []),
    EntityCase(.film, "rating IN %@", [[Double.nan, 8.3]], ["Heat", "Amélie"]),
    EntityCase(.film, "year < 1e200", [], allTitles),
    EntityCase(.film, "year > CAST('-inf', 'NSNumber')", [], allTitles),
    EntityCase(.film, "score < %@", [Double.infinity], allTitles),
    EntityCase(.film, "releaseDate == %@", [Date(timeIntervalSinceReferenceDate: .nan)], []),
    EntityCase(.film, "releaseDate != %@", [Date(timeIntervalSinceReferenceDate: .nan)], allTitles),
    EntityCase(.film, "releaseDate < %@", [Date(timeIntervalSinceReferenceDate: .nan)], []),
    EntityCase(.film, "releaseDate > CAST('nan', 'NSDate')", [], []),
    EntityCase(.film, "releaseDate < %@", [Date(timeIntervalSinceReferenceDate: .infinity)], dated),
    EntityCase(.film, "{1} == {2}", [], []),
    EntityCase(.film, "{1, 2} == {1, 2}", [], allTitles),
    EntityCase(.film, "1 == 2", [], []),
    EntityCase(.film, "2 > 1 AND year == 1995", [], ["Heat"]),
    EntityCase(.film, "abs:(boxOffice * 0 - 9223372036854775807 - 1) > 0", [], allTitles),
    EntityCase(.film, "abs:(boxOffice - 20) == 10", [], ["File2", "Straße"]),
  ]

  /// The limits of the query language (docs/QUERY-SEMANTICS.md, Limits): non-finite numbers, depth, key
  /// path length, long IN lists and boolean chains, regular expressions. Every backend gives the same
  /// answer or the same `.invalidQuery`, and none crashes or hangs.
  public static func queryLimits(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = try backend.freshContext(container, url)

    for testCase in nonFiniteCases + limitCases {
      let names = try names(context, testCase.entity, testCase.format, testCase.arguments)
      #expect(names.fetched == testCase.expected, "\(testCase.entity) \(testCase.format.prefix(200))")
      #expect(names.counted == testCase.expected.count, "count of \(testCase.entity) \(testCase.format.prefix(200))")
    }
    for format in refusedFormats {
      let error = expectStoreError(.invalidQuery, "\(format.prefix(80))") {
        try context.fetch(try FetchRequest<Film>(format: format))
      }
      #expect(
        error?.message.contains("level") == true || error?.message.contains("component") == true
          || error?.message.contains("constant") == true, "\(error?.message ?? "")")
    }
    let many = (0..<(QueryLimits.maxConstants + 1)).map { Int($0) }
    expectStoreError(.invalidQuery) { try context.fetch(try FetchRequest<Film>(format: "year IN %@", many)) }
    for predicate in refusedTrees {
      let error = expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Film>(predicate: predicate)) }
      #expect(error?.message.contains("nests deeper than \(QueryLimits.maxDepth) levels") == true)
    }
    try matchesLimits(backend, context)
  }

  /// `MATCHES` within ``QueryLimits/maxPatternLength`` and ``QueryLimits/maxMatchSteps``: a pattern that
  /// backtracks catastrophically stops with the same `.invalidQuery` on every backend that matches with ICU
  /// (the shared ``StringSemantics``); PostgreSQL matches with its own engine, which does not backtrack so:
  /// it answers, or refuses the pattern.
  static func matchesLimits(_ backend: ConformanceBackend, _ context: ObjectContext) throws {
    let sharesICU = backend.factory.storeType != StoreType("postgres")
    for format in ["title MATCHES '(.+)+!'", "title MATCHES[c] '(.{0,30}){0,30}!'", "title MATCHES '(.*){1,32000}!'"] {
      let request = try FetchRequest<Film>(format: format)
      for run in [{ _ = try context.fetch(request) }, { _ = try context.count(for: request) }] {
        guard sharesICU else {
          do { try run() } catch let error as StoreError { #expect(error.code == .invalidQuery, "\(format): \(error)") }
          continue
        }
        let error = expectStoreError(.invalidQuery, "\(format)") { try run() }
        #expect(
          error?.message.contains("exceeded its limit of \(QueryLimits.maxMatchSteps) matching steps") == true,
          "\(error?.message ?? "")")
      }
    }
    let long = String(repeating: "(x)?", count: QueryLimits.maxPatternLength / 4) + "."
    let error = expectStoreError(.invalidQuery) { try context.fetch(try FetchRequest<Film>(format: "title MATCHES %@", long)) }
    #expect(error?.message.contains("longer than \(QueryLimits.maxPatternLength)") == true, "\(error?.message ?? "")")
    // The limit leaves room for ordinary patterns, nested repetition that does not backtrack included.
    for (format, expected) in [("title MATCHES '(.+)+'", allTitles), ("title MATCHES '(H|Z)(e|a)(a|t)+'", ["Heat"])] {
      let names = try names(context, .film, format, [])
      #expect(names.fetched == expected, "\(format)")
      #expect(names.counted == expected.count, "count of \(format)")
    }
  }

  static let atDepth = QueryLimits.maxDepth - 2
  static let longRuns: Set<String> = ["Heat", "Collateral", "Amélie", "Parasite", "Memories of Murder"]
  static let fiveThousand = (1...5_000).filter { $0 != 1995 }.map { Int($0) }

  /// Predicates at the limits: as deep as allowed, 5,000-value IN lists, 5,001-term AND and OR chains,
  /// the longest key paths (through to-many hops that fan out).
  static let limitCases: [EntityCase] = [
    EntityCase(
      .film, String(repeating: "abs:(", count: atDepth) + "runtime" + String(repeating: ")", count: atDepth) + " > 100",
      [], longRuns),
    EntityCase(.film, "runtime" + String(repeating: " + 0", count: atDepth) + " > 100", [], longRuns),
    EntityCase(.film, String(repeating: "NOT ", count: atDepth) + "year == 1995", [], ["Heat"]),
    EntityCase(
      .director,
      "SUBQUERY(films, $f, " + String(repeating: "abs:(", count: atDepth - 3) + "$f.runtime"
        + String(repeating: ")", count: atDepth - 3) + " > 150).@count > 0", [], ["Michael Mann"]),
    EntityCase(
      .director, "SUBQUERY(films, $f, " + String(repeating: "NOT ", count: atDepth - 3) + "$f.year > 2003).@count > 0",
      [], ["Michael Mann", "Jean-Pierre Jeunet", "Bong Joon-ho"]),
    EntityCase(.film, "ANY actors.name IN %@", [fiveThousand.map { "n\($0)" } + ["Al Pacino"]], ["Heat"]),
    EntityCase(
      .film,
      String(repeating: "(year == 1 OR ", count: atDepth / 2) + "year == 1995"
        + String(repeating: ")", count: atDepth / 2), [], ["Heat"]),
    EntityCase(.film, "year IN %@", [fiveThousand], allTitles.subtracting(["Heat"])),
    EntityCase(.film, "NOT (year IN %@)", [fiveThousand], ["Heat"]),
    EntityCase(.film, "title IN %@", [fiveThousand.map { "t\($0)" } + ["Heat"]], ["Heat"]),
    EntityCase(.film, "rating IN %@", [fiveThousand.map { Double($0) + 0.5 }], ["Collateral", "Parasite", "file10"]),
    EntityCase(
      .film, fiveThousand.map { "year != \($0)" }.joined(separator: " AND ") + " AND title != 'Parasite' AND title != 'x'", [],
      ["Heat"]),
    EntityCase(
      .film, fiveThousand.map { "year == \($0)" }.joined(separator: " OR ") + " OR year == 1995 OR title == 'x'",
      [], allTitles),
    EntityCase(
      .film, "ANY " + Array(repeating: "actors.films", count: 7).joined(separator: ".") + ".title == 'Straße'", [],
      ["Heat", "Straße"]),
    EntityCase(
      .film, "ANY " + Array(repeating: "director.films", count: 7).joined(separator: ".") + ".title == 'Heat'", [],
      ["Heat", "Collateral"]),
  ]

  /// Format strings past a limit: refused when parsed, with the limit named.
  static let refusedFormats: [String] = [
    "SELF" + String(repeating: ".@count", count: 2_000) + " == 1",
    "SELF" + String(repeating: ".@sum", count: 10_000) + " == 1",
    String(repeating: "abs:(", count: 500) + "runtime" + String(repeating: ")", count: 500) + " > 1",
    "runtime" + String(repeating: " + 1", count: 500) + " > 1",
    String(repeating: "NOT ", count: 500) + "year == 1",
    "ANY " + Array(repeating: "actors.films", count: 50).joined(separator: ".") + ".title == 'Heat'",
    Array(repeating: "director.films.director", count: 14_000).joined(separator: ".") + ".name == 'x'",
  ]

  /// Trees built in code past ``QueryLimits/maxDepth``: refused before any recursive pass.
  static var refusedTrees: [QueryPredicate] {
    var counts = QueryExpression.evaluatedObject
    for _ in 0..<2_000 { counts = .function("count:", [counts]) }
    var nots = QueryPredicate.comparison(Comparison(.keyPath("year"), .equalTo, .constant(1)))
    for _ in 0..<2_000 { nots = .not(nots) }
    var sums = QueryExpression.keyPath("runtime")
    for _ in 0..<2_000 { sums = .function("add:to:", [sums, .constant(1)]) }
    return [
      .comparison(Comparison(counts, .equalTo, .constant(1))), nots, .comparison(Comparison(sums, .greaterThan, .constant(1))),
    ]
  }
}
