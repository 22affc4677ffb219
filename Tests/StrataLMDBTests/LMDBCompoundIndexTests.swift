import Foundation
import StrataConformance
import StrataLMDB
import StrataStoreKit
import Testing

/// Compound indexes in LMDB's planner: `[genre, year]` serves equalities on its leading keys and a range on
/// the next, a uniqueness constraint over two attributes serves only when both are pinned, and every plan
/// answers what a scan answers.
@Suite struct LMDBCompoundIndexTests {
  static let genres: [Value] = ["Crime", "Drama", "Noir", "", "Crime\u{0}Noir", .null]

  static func model() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "genre", type: .string, isOptional: true),
          AttributeDescription(name: "year", type: .int32, isOptional: true),
          AttributeDescription(name: "rating", type: .double, isOptional: true),
          AttributeDescription(name: "code", type: .string, isOptional: true),
          AttributeDescription(name: "region", type: .int16, isOptional: true),
        ],
        uniquenessConstraints: [["code", "region"]], indexes: [["genre", "year", "rating"]])
    ])
  }

  /// A store of `count` movies with random values (nil among them), and a copy of its rows.
  static func store(count: Int, seed: UInt64) throws -> (store: any PersistentStore, rows: [Snapshot]) {
    let url = FileManager.default.temporaryDirectory.appending(path: "strata-compound-\(UUID().uuidString).lmdb")
    let store = try LMDBStoreFactory().openStore(at: url, model: try model(), options: StoreOptions())
    var random = SplitMix64(seed: seed)
    func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
    let movies = (0..<count).map { n in
      let year: Value = random.next() % 10 == 0 ? .null : .int(Int64(1985 + Int(random.next() % 10)))
      let rating: Value = random.next() % 8 == 0 ? .null : .double(Double(random.next() % 9) / 2)
      let code: Value = random.next() % 6 == 0 ? .null : .string("c\(n % 40)")
      return ObjectChange(
        objectID: .makeTemporary(entityName: "Movie"),
        attributes: [.string("m\(n)"), pick(genres), year, rating, code, .int(Int64(n / 40))], toOne: [])
    }
    _ = try store.save(ChangeSet(inserted: movies))
    guard case .snapshots(let rows) = try store.fetch(FetchDescription(entityName: "Movie"), generation: nil) else {
      throw StoreError(.io, "expected snapshots")
    }
    return (store, rows)
  }

  @Test func leadingEqualitiesAndARangeUseTheCompoundIndex() throws {
    let (store, _) = try Self.store(count: 10, seed: 1)
    defer { store.close() }
    func steps(_ format: String) throws -> [String] {
      try store.explain(FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: format))).steps
    }
    let compound = "index Movie.genre+year+rating.index: 1 key range"
    #expect(try steps("genre == 'Crime'").first == compound)
    #expect(try steps("genre == 'Crime' AND year >= 1990").first == compound)
    #expect(try steps("year < 1990 AND genre == 'Crime' AND title BEGINSWITH 'm'").first == compound)
    #expect(try steps("genre == nil AND year == 1990 AND rating > 2").first == compound)
    #expect(try steps("genre > 'C'").first == compound)
    #expect(try steps("code == 'c1' AND region == 0").first == "index Movie.code+region.unique: 1 key range")
    let scan = "scan of every Movie record, each checked by the evaluator"
    #expect(try steps("year == 1990").first == scan, "year is not a leading key")
    #expect(try steps("genre ==[c] 'crime'").first == scan, "a folded comparison does not follow the index's order")
    #expect(try steps("code == 'c1'").first == scan, "the unique index leaves out objects whose region is nil")
    #expect(try steps("code == 'c1' AND region == nil").first == scan)
  }

  @Test(arguments: [UInt64(7), 2026, 0x5EED])
  func everyPlanAnswersWhatAScanAnswers(seed: UInt64) throws {
    let (store, rows) = try Self.store(count: 400, seed: seed)
    defer { store.close() }
    let model = try Self.model()
    let entity = try model.requireEntity("Movie")
    var random = SplitMix64(seed: seed &+ 1)
    func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
    let genres = ["'Crime'", "'Drama'", "''", "nil", "'Crime\\u0000Noir'", "'D'", "'Zz'"]
    let years = ["1984", "1985", "1989", "1990", "1994", "2000", "nil"]
    let ratings = ["0", "0.5", "2", "2.25", "4", "nil"]
    let ranges = ["<", "<=", ">", ">=", "==", "!="]
    var planned = 0
    let rounds = Conformance.rounds(300, minimum: 30)
    for _ in 0..<rounds {
      var parts = ["genre \(pick(["==", "==", ">", "<="])) \(pick(genres))"]
      if random.next() % 4 != 0 { parts.append("year \(pick(ranges)) \(pick(years))") }
      if random.next() % 3 == 0 { parts.append("rating \(pick(ranges)) \(pick(ratings))") }
      if random.next() % 5 == 0 { parts.append("year BETWEEN {\(pick(years.dropLast())), \(pick(years.dropLast()))}") }
      if random.next() % 4 == 0 {
        parts = ["code == 'c\(random.next() % 45)'", "region \(pick(["==", ">="])) \(random.next() % 12)"]
      }
      parts.shuffle(using: &random)
      let format = parts.joined(separator: " AND ")
      let predicate: QueryPredicate
      do {
        predicate = try QueryPredicate(format: format)
        _ = try QueryValidator.check(predicate, entity: entity, model: model)
      } catch {
        continue
      }
      let request = FetchDescription(entityName: "Movie", predicate: predicate)
      if try store.explain(request).steps.first?.hasPrefix("index") == true { planned += 1 }
      let expected = try PredicateEvaluator(predicate, entity: entity, model: model).filter(rows, source: NoRelations())
      guard case .snapshots(let found) = try store.fetch(request, generation: nil) else {
        Issue.record("expected snapshots")
        return
      }
      let answersAlike = Set(found.map(\.objectID)) == Set(expected.map(\.objectID))
      #expect(answersAlike, "\(format): \(found.count) found, \(expected.count) expected (seed \(seed))")
      var counting = request
      counting.resultType = .count
      if case .count(let count) = try store.fetch(counting, generation: nil) {
        #expect(count == expected.count, "count of \(format) (seed \(seed))")
      }
    }
    #expect(planned > rounds / 3, "most predicates are planned on an index")
  }

  private struct NoRelations: EvaluationSource {
    func snapshot(for id: ObjectID) throws -> Snapshot? { nil }
    func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] { [] }
  }
}
