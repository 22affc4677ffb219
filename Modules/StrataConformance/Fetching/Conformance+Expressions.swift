import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Film predicates with function expressions, arithmetic, aggregates and SUBQUERY; the expected titles
  /// are worked out by hand from SampleData.
  static let filmExpressionCases: [PredicateCase] = [
    // String functions: Foundation's full Unicode mappings, nil in → nil out.
    PredicateCase("lowercase:(title) == 'heat'", [], ["Heat"]),
    PredicateCase("lowercase:(title) == 'amélie'", [], ["Amélie"]),
    PredicateCase("lowercase:(title) BEGINSWITH 'file'", [], ["File2", "file10"]),
    PredicateCase("lowercase:(title) IN {'heat', 'parasite'}", [], ["Heat", "Parasite"]),
    PredicateCase("uppercase:(title) == 'STRASSE'", [], ["Straße"]),
    PredicateCase("uppercase:(director.name) CONTAINS 'MANN'", [], ["Heat", "Collateral"]),
    PredicateCase("lowercase:(genre) == 'comedy'", [], ["Amélie", "Delicatessen"]),
    PredicateCase("lowercase:(genre) == nil", [], ["Untitled Project"]),
    PredicateCase("canonical:(title) BEGINSWITH 'ame'", [], ["Amélie"]),
    PredicateCase("canonical:(title) == 'strasse'", [], ["Straße"]),
    // Arithmetic: integers stay integers, a double makes a double, division always in Double.
    PredicateCase("runtime + 10 > 140", [], ["Heat", "Parasite", "Memories of Murder"]),
    PredicateCase("rating * 2 >= 17", [], ["Parasite"]),
    PredicateCase("abs:(year - 2000) < 3", [], ["Amélie"]),
    PredicateCase("abs:(year - 2000) <= 4", [], ["Amélie", "Memories of Murder", "Collateral"]),
    PredicateCase("year - 2000 < 0", [], ["Heat", "Delicatessen"]),
    PredicateCase("-runtime < -150", [], ["Heat"]),
    PredicateCase("300 < 2 * runtime", [], ["Heat"]),
    PredicateCase("runtime / 4 == 30.5", [], ["Amélie"]),
    PredicateCase("runtime / 2 == 60", [], ["Collateral"]),
    PredicateCase("runtime / 0 == nil", [], allTitles),
    PredicateCase("boxOffice * 10 > 2000000000", [], ["Collateral", "Parasite"]),
    PredicateCase("rating + runtime > 178", [], ["Heat"]),
    PredicateCase("runtime + 0.5 BETWEEN {99, 100}", [], ["Delicatessen"]),
    PredicateCase("runtime + 10 == year - 1815", [], ["Heat"]),
    PredicateCase(
      "releaseDate < now()", [],
      ["Heat", "Collateral", "Amélie", "Delicatessen", "Parasite", "Memories of Murder", "Straße"]),
    // Aggregates through a to-one relationship: nil when the director is nil.
    PredicateCase("director.films.runtime.@sum > 250", [], ["Heat", "Collateral", "Parasite", "Memories of Murder"]),
    // Aggregates over a many-to-many relationship (a join table in SQL); @min/@max of strings by code point.
    PredicateCase("actors.name.@max == 'Robert De Niro'", [], ["Heat", "Straße"]),
    PredicateCase("actors.name.@min == 'Al Pacino'", [], ["Heat"]),
    // SUBQUERY.
    PredicateCase("SUBQUERY(actors, $a, $a.name BEGINSWITH 'Robert').@count > 0", [], ["Heat", "Straße"]),
    PredicateCase("SUBQUERY(actors, $a, $a.name CONTAINS 'o').@count >= 2", [], ["Heat"]),
    PredicateCase("SUBQUERY(actors, $a, $a.imdbID == nil).@count == 1", [], ["Amélie", "Parasite", "Memories of Murder"]),
    PredicateCase(
      "SUBQUERY(actors, $a, lowercase:($a.name) == 'song kang-ho').@count == 1", [],
      ["Parasite", "Memories of Murder"]),
    PredicateCase("SUBQUERY(director.films, $f, $f.year > 2010).@count > 0", [], ["Parasite", "Memories of Murder"]),
    PredicateCase(
      "NOT (SUBQUERY(actors, $a, $a.name BEGINSWITH 'Robert').@count > 0)", [],
      ["Collateral", "Amélie", "Delicatessen", "Parasite", "Memories of Murder", "Untitled Project", "File2", "file10"]),
  ]

  /// Director predicates with `@sum`, `@avg`, `@min`, `@max` and SUBQUERY; expected names by hand.
  static let directorExpressionCases: [PredicateCase] = [
    PredicateCase("films.runtime.@sum > 250", [], ["Michael Mann", "Bong Joon-ho"]),
    PredicateCase("films.runtime.@sum == 0", [], ["Nobody"]),
    PredicateCase("films.rating.@avg >= 8", [], ["Bong Joon-ho"]),
    PredicateCase("films.rating.@avg > 7.92", [], ["Jean-Pierre Jeunet", "Bong Joon-ho"]),
    PredicateCase("films.rating.@avg == nil", [], ["Nobody"]),
    PredicateCase("films.year.@min < 1995", [], ["Jean-Pierre Jeunet"]),
    PredicateCase("films.year.@min <= 1995", [], ["Michael Mann", "Jean-Pierre Jeunet"]),
    PredicateCase("films.year.@max == 2019", [], ["Bong Joon-ho"]),
    PredicateCase("films.year.@max < 2010", [], ["Michael Mann", "Jean-Pierre Jeunet"]),
    PredicateCase("films.title.@min == 'Amélie'", [], ["Jean-Pierre Jeunet"]),
    PredicateCase("films.releaseDate.@max > %@", [SampleData.date("2010-01-01")], ["Bong Joon-ho"]),
    PredicateCase("films.@count + films.runtime.@sum > 260", [], ["Michael Mann", "Bong Joon-ho"]),
    PredicateCase("films.runtime.@avg / 2 > 70", [], ["Michael Mann"]),
    PredicateCase("uppercase:(country) == 'FRANCE'", [], ["Jean-Pierre Jeunet"]),
    PredicateCase(
      "SUBQUERY(films, $f, $f.year > 2000 AND $f.rating > 8).@count > 0", [],
      ["Jean-Pierre Jeunet", "Bong Joon-ho"]),
    PredicateCase("SUBQUERY(films, $f, $f.year > 2000).@count == 2", [], ["Bong Joon-ho"]),
    PredicateCase("SUBQUERY(films, $f, $f.year > 2000).@count == 0", [], ["Nobody"]),
    PredicateCase("SUBQUERY(films, $f, ANY $f.actors.name == 'Song Kang-ho').@count == 2", [], ["Bong Joon-ho"]),
    PredicateCase("SUBQUERY(films, $f, $f.studio.name == 'Warner').@count >= 2", [], ["Michael Mann"]),
  ]

  /// Function expressions (string functions, arithmetic, `abs:`, `now()`), the collection operators
  /// `@sum`, `@avg`, `@min`, `@max`, and `SUBQUERY(…).@count` — identical answers on every backend, and
  /// type errors reported before anything runs.
  public static func expressions(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = try backend.freshContext(container, url)

    for testCase in filmExpressionCases {
      let request = try FetchRequest<Film>(format: testCase.format, argumentArray: testCase.arguments)
      #expect(Set(try context.fetch(request).map(\.title)) == testCase.expected, "\(testCase.format)")
      #expect(try context.count(for: request) == testCase.expected.count, "count of \(testCase.format)")
    }
    for testCase in directorExpressionCases {
      let request = try FetchRequest<Director>(format: testCase.format, argumentArray: testCase.arguments)
      #expect(Set(try context.fetch(request).map(\.name)) == testCase.expected, "\(testCase.format)")
      #expect(try context.count(for: request) == testCase.expected.count, "count of \(testCase.format)")
    }

    func expectError<T: ManagedObject>(_ type: T.Type, _ format: String, _ code: StoreError.Code, key: String? = nil) {
      do {
        _ = try context.fetch(try FetchRequest<T>(format: format))
        Issue.record("expected an error: \(format)")
      } catch let error as StoreError {
        #expect(error.code == code, "\(format): \(error.message)")
        if let key { #expect(error.message.contains(key), "message names '\(key)': \(error.message)") }
      } catch {
        Issue.record("expected a StoreError for \(format), got \(error)")
      }
    }
    expectError(Film.self, "lowercase:(year) == 'x'", .invalidQuery, key: "year")
    expectError(Film.self, "title + 1 > 2", .invalidQuery, key: "title")
    expectError(Film.self, "abs:(genre) > 1", .invalidQuery, key: "genre")
    expectError(Film.self, "lowercase:(title) == 5", .invalidQuery, key: "title")
    expectError(Director.self, "films.title.@sum > 1", .invalidQuery, key: "title")
    expectError(Director.self, "films.poster.@max != nil", .invalidQuery, key: "poster")
    expectError(Film.self, "budget + 1 > 2", .unsupported)
    expectError(Film.self, "random() > 2", .unsupported)
    expectError(Film.self, "sqrt:(title) > 2", .invalidQuery, key: "title")
    expectError(Director.self, "median:(films.title) > 2", .invalidQuery, key: "title")
    expectError(Director.self, "sum:(films) > 2", .invalidQuery, key: "films")
    expectError(Director.self, "average:(films.budget) > 2", .unsupported)
    expectError(Director.self, "films.budget.@sum > 2", .unsupported)
    expectError(Director.self, "SUBQUERY(films, $f, $f.year > 2000 AND name == 'x').@count > 0", .unsupported)
  }
}
