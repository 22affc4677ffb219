import Foundation
import StrataStoreKit
import Testing

@testable import StrataLMDB

/// An LMDB fetch decodes what its answer needs, not the store: counted with ``RecordDecodeCounter``, and
/// checked against the answer computed from every record. Fails if a limit-1 fetch decodes everything.
@Suite("LMDB fetch work")
struct LMDBFetchWorkTests {
  static let total = 3_000

  /// Movies (a hierarchy: some are series), titles in scrambled order, a rating 0–5.
  static func model() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [
          AttributeDescription(name: "title", type: .string), AttributeDescription(name: "genre", type: .string),
          AttributeDescription(name: "rating", type: .int16),
        ]),
      EntityDescription(name: "Series", attributes: [AttributeDescription(name: "seasons", type: .int16)], parentEntity: "Movie"),
      EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
    ])
  }

  static func title(_ i: Int) -> String { "Movie number \((i * 7_919) % total) with a somewhat longer title" }

  static func makeStore(_ directory: TemporaryDirectory) throws -> LMDBStore {
    let store = try LMDBStore(url: directory.store, model: try model())
    var inserted: [ObjectChange] = []
    for i in 0..<total {
      let series = i % 10 == 3
      var values: [Value] = [
        .string(title(i)), .string(i % 100 == 0 ? "Drama, Crime, Ünïcode" : "Drama, Crime"), .int(Int64(i % 6)),
      ]
      if series { values.append(.int(2)) }
      inserted.append(
        ObjectChange(objectID: .makeTemporary(entityName: series ? "Series" : "Movie"), attributes: values, toOne: []))
      inserted.append(ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: [.string("note \(i)")], toOne: []))
    }
    _ = try store.save(ChangeSet(inserted: inserted))
    return store
  }

  /// The snapshots and the number of records decoded for `request`.
  static func fetch(_ store: LMDBStore, _ request: FetchDescription) throws -> (result: FetchResult, decoded: Int) {
    let counter = RecordDecodeCounter()
    let result = try LMDBReader.$decodeCounter.withValue(counter) { try store.fetch(request, generation: nil) }
    return (result, counter.count)
  }

  static func titles(_ result: FetchResult) -> [String] {
    guard case .snapshots(let rows) = result else { return [] }
    return rows.compactMap { $0.attributes[0].stringValue }
  }

  @Test func pagesLimitsAndCountsReadWhatTheAnswerNeeds() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let store = try Self.makeStore(directory)
    defer { store.close() }
    let everything = try Self.fetch(store, FetchDescription(entityName: "Movie"))
    let all = Self.titles(everything.result)
    #expect(all.count == Self.total)
    #expect(everything.decoded == Self.total)

    for entity in ["Movie", "Note"] {
      // A limit without a sort stops at the limit.
      let first = try Self.fetch(store, FetchDescription(entityName: entity, fetchLimit: 1))
      #expect(first.result.count == 1)
      #expect(first.decoded == 1, "\(entity) limit 1 decoded \(first.decoded)")
      // An offset passes over records without decoding them.
      let page = try Self.fetch(store, FetchDescription(entityName: entity, fetchLimit: 5, fetchOffset: Self.total - 10))
      #expect(page.result.count == 5)
      #expect(page.decoded == 5, "\(entity) offset page decoded \(page.decoded)")
    }
    let page = try Self.fetch(store, FetchDescription(entityName: "Movie", fetchLimit: 5, fetchOffset: Self.total - 10))
    #expect(Self.titles(page.result) == Array(all[(Self.total - 10)..<(Self.total - 5)]))

    // A sorted limit keeps a top-N, and decodes only records that enter it.
    let sorted = all.sorted { StringSemantics.codePointCompare($0, $1) < 0 }
    var top = FetchDescription(entityName: "Movie", sortDescriptors: [QuerySort("title")], fetchLimit: 10, fetchOffset: 3)
    let topTen = try Self.fetch(store, top)
    #expect(Self.titles(topTen.result) == Array(sorted[3..<13]))
    #expect(topTen.decoded < Self.total / 5, "sorted top-10 decoded \(topTen.decoded)")
    top.sortDescriptors = [QuerySort("title", ascending: false)]
    let lastTen = try Self.fetch(store, top)
    #expect(Self.titles(lastTen.result) == Array(sorted.reversed()[3..<13]))
    #expect(lastTen.decoded < Self.total / 5, "sorted top-10 descending decoded \(lastTen.decoded)")
    top.sortDescriptors = [QuerySort("rating", ascending: false), QuerySort("title")]
    top.fetchOffset = 0
    let byRating = Self.titles(try Self.fetch(store, top).result)
    let expected = (0..<Self.total).map { (Self.title($0), $0 % 6) }
      .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : StringSemantics.codePointCompare($0.0, $1.0) < 0 }.prefix(10).map(\.0)
    #expect(byRating == Array(expected))

    // A fetch with a predicate of attribute tests decodes the matches only; a count decodes none.
    var matching = FetchDescription(entityName: "Movie")
    matching.predicate = try QueryPredicate(format: "rating == 3")
    let rated = try Self.fetch(store, matching)
    #expect(rated.result.count == Self.total / 6)
    #expect(rated.decoded == Self.total / 6)
    var count = FetchDescription(entityName: "Movie", resultType: .count)
    count.predicate = try QueryPredicate(format: "rating == 3")
    let ratings = try Self.fetch(store, count)
    #expect(ratings.result.count == Self.total / 6)
    #expect(ratings.decoded == 0)
    // Two tests of one attribute read it twice.
    count.predicate = try QueryPredicate(format: "rating > 1 AND rating < 4")
    let range = try Self.fetch(store, count)
    #expect(range.result.count == Self.total / 3)
    #expect(range.decoded == 0)
    count.predicate = try QueryPredicate(format: "genre CONTAINS[cd] 'UNICODE' AND rating == 0")
    let search = try Self.fetch(store, count)
    #expect(search.result.count == Self.total / 300)
    #expect(search.decoded == 0)
    count.predicate = try QueryPredicate(format: "title CONTAINS[cd] 'NUMBER 299 '")
    let one = try Self.fetch(store, count)
    #expect(one.result.count == 1)
    #expect(one.decoded == 0)
    // Plain string comparisons compare the stored bytes in code-point order.
    count.predicate = try QueryPredicate(format: "title == %@ AND genre != 'Drama'", Self.title(7))
    let exact = try Self.fetch(store, count)
    #expect(exact.result.count == 1)
    #expect(exact.decoded == 0)
    count.predicate = try QueryPredicate(format: "genre > 'Drama, Crime' AND rating <= 2")
    let unicode = try Self.fetch(store, count)
    let expectedUnicode = (0..<Self.total).filter { $0 % 100 == 0 && $0 % 6 <= 2 }.count
    #expect(unicode.result.count == expectedUnicode)
    #expect(unicode.decoded == 0)
    // A search with a limit stops at it.
    var limited = FetchDescription(entityName: "Movie", fetchLimit: 2)
    limited.predicate = try QueryPredicate(format: "genre CONTAINS 'Crime'")
    let two = try Self.fetch(store, limited)
    #expect(Self.titles(two.result) == Array(all.prefix(2)))
    #expect(two.decoded == 2)
  }
}
