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

  @Test func anUnsortedRangeOnAnIndexSearchesTheIndexAndReturnsKeyOrder() throws {
    let url = FileManager.default.temporaryDirectory.appending(path: "strata-explain-\(UUID().uuidString).sqlite")
    let store = try SQLiteStore(url: url, model: try Self.model())
    defer { store.close() }
    let years: [Int64] = [2001, 1995, 2019, 1988, 2004]
    let inserted = years.enumerated().map { offset, year in
      ObjectChange(
        objectID: .makeTemporary(entityName: "Movie"), attributes: [.string("Film \(offset)"), .int(year)], toOne: [])
    }
    _ = try store.save(ChangeSet(inserted: inserted))
    let request = FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "year > 1990"))
    let plan = try store.explain(request)
    #expect(!plan.query.contains("ORDER BY"), "\(plan.query)")
    #expect(plan.steps.contains { $0.contains("SEARCH t0 USING INDEX") && $0.contains("year") }, "\(plan.steps)")
    guard case .snapshots(let found) = try store.fetch(request, generation: nil) else {
      Issue.record("a snapshot fetch returned another kind of result")
      return
    }
    let expected = years.enumerated().filter { $0.element > 1990 }.map { Value.string("Film \($0.offset)") }
    #expect(found.map { $0.attributes[0] } == expected, "key order, not the index's")
    guard case .objectIDs(let ids) = try store.fetch(withResultType(request, .objectIDs), generation: nil) else {
      Issue.record("an ID fetch returned another kind of result")
      return
    }
    #expect(ids == found.map(\.objectID))
    var paged = request
    paged.fetchLimit = 2
    #expect(try store.explain(paged).query.contains("ORDER BY t0.\"_pk\""), "a page is cut from ordered rows")
  }

  private func withResultType(_ request: FetchDescription, _ type: FetchResultType) -> FetchDescription {
    var request = request
    request.resultType = type
    return request
  }
}
