import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// `explain(_:)`: the SQL a fetch compiles to, with its bound values, and SQLite's own plan for it.
@Suite struct SQLiteExplainTests {
  static func model() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "year", type: .int32, isIndexed: true),
        ])
    ])
  }

  @Test func anIndexedComparisonSearchesTheIndexAndAnOtherOneScans() throws {
    let url = FileManager.default.temporaryDirectory.appending(path: "strata-explain-\(UUID().uuidString).sqlite")
    let store = try SQLiteStore(url: url, model: try Self.model())
    defer { store.close() }
    let indexed = try store.explain(
      FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "year == 1995")))
    #expect(indexed.query.hasPrefix("SELECT ") && indexed.query.contains("\n  bound: 1995"), "\(indexed.query)")
    #expect(indexed.steps.contains { $0.contains("SEARCH t0 USING INDEX") && $0.contains("year") }, "\(indexed.steps)")
    let scanned = try store.explain(
      FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "title == 'Heat'")))
    #expect(scanned.steps.contains { $0.contains("SCAN t0") }, "\(scanned.steps)")
    #expect(try store.count(FetchDescription(entityName: "Movie")) == 0, "explaining runs nothing")
  }
}
