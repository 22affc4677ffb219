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

    for testCase in nonFiniteCases {
      let names = try names(context, testCase.entity, testCase.format, testCase.arguments)
      #expect(names.fetched == testCase.expected, "\(testCase.entity) \(testCase.format) \(testCase.arguments)")
      #expect(names.counted == testCase.expected.count, "count of \(testCase.entity) \(testCase.format)")
    }
  }
}
