import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// `explain(_:)`: the index range or scan an LMDB fetch uses, and what it does in memory.
@Suite struct LMDBExplainTests {
  @Test func anIndexedComparisonUsesItsIndexAndAnOtherOneScans() throws {
    let model = try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "year", type: .int32, isIndexed: true),
        ])
    ])
    let url = FileManager.default.temporaryDirectory.appending(path: "strata-explain-\(UUID().uuidString).lmdb")
    let store = try LMDBStoreFactory().openStore(at: url, model: model, options: StoreOptions())
    defer { store.close() }
    var request = FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "year >= 1990"))
    request.sortDescriptors = [QuerySort("title")]
    let indexed = try store.explain(request)
    #expect(indexed.query == "fetch Movie where year >= 1990 sorted by title", "\(indexed.query)")
    #expect(indexed.steps.first?.hasPrefix("index Movie.year") == true, "\(indexed.steps)")
    #expect(indexed.steps.last == "sort in memory")
    request.resultType = .count
    request.sortDescriptors = []
    #expect(try store.explain(request).steps.contains("counted from the index keys alone"))
    let scanned = try store.explain(
      FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "title == 'Heat'")))
    #expect(scanned.steps == ["scan of every Movie record, each checked by the evaluator"])
  }
}
