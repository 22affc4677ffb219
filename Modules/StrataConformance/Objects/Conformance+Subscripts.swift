import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Subscripts of constant collections, which the validator folds (docs/QUERY-SEMANTICS.md,
  /// "Subscripts"): an index past the end and `[FIRST]` of an empty collection are nil.
  static let subscriptCases: [EntityCase] = [
    EntityCase(.film, "{3, 1, 2}[LAST] == 2", [], allTitles),
    EntityCase(.film, "{3, 1, 2}[FIRST] == 2", [], []),
    EntityCase(.film, "{1, 2}[SIZE] == 2", [], allTitles),
    EntityCase(.film, "runtime > {100, 144}[LAST]", [], ["Heat"]),
    EntityCase(.film, "year == {2019, 1995}[0]", [], ["Parasite"]),
    EntityCase(.film, "year == {2019, 1995}[%d]", [1], ["Heat"]),
    EntityCase(.film, "{1, 2}[5] == nil", [], allTitles),
    EntityCase(.film, "{1, 2}[5] == 1", [], []),
    EntityCase(.film, "{}[FIRST] == nil", [], allTitles),
    EntityCase(.film, "{}[SIZE] == 0", [], allTitles),
  ]

  /// Subscripts a fetch cannot answer: of an unordered to-many relationship, of an attribute, of SELF, with
  /// a negative or non-constant index — `.invalidQuery` on every backend, before anything is read.
  static func subscriptErrors(_ context: ObjectContext) throws {
    for format in [
      "actors[FIRST].name == 'Al Pacino'", "actors[SIZE] > 1", "title[0] == 'H'", "SELF[FIRST] == nil",
      "{1, 2}[-1] == 1", "{1, 2}[runtime] == 1",
    ] {
      let error = expectStoreError(.invalidQuery, "\(format)") {
        try context.fetch(try FetchRequest<Film>(format: format))
      }
      #expect(error?.entity == "Film", "\(format): \(error?.message ?? "")")
    }
  }
}
