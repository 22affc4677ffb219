import Foundation
import StrataStoreKit
import StrataTestSupport
import Testing

@testable import StrataCore

// A hand-built graph: studios, directors, movies and tags, with to-one, to-many and many-to-many links.
private struct Graph: EvaluationSource {
  let model: ObjectModel
  var objects: [ObjectID: Snapshot] = [:]
  var toMany: [ObjectID: [String: [ObjectID]]] = [:]

  func snapshot(for id: ObjectID) throws -> Snapshot? { objects[id] }
  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    toMany[id]?[relationship.name] ?? []
  }

  var movie: EntityDescription { model.entity(named: "Movie")! }
  var director: EntityDescription { model.entity(named: "Director")! }
}

private func id(_ entity: String, _ pk: Int64) -> ObjectID {
  ObjectID(entityName: entity, storeIdentifier: "S", primaryKey: pk)
}

private func makeModel() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Studio", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [
        RelationshipDescription(name: "directors", destination: "Director", inverse: "studio", isToMany: true)
      ]),
    EntityDescription(
      name: "Director",
      attributes: [
        AttributeDescription(name: "name", type: .string),
        AttributeDescription(name: "born", type: .date, isOptional: true),
      ],
      relationships: [
        RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true),
        RelationshipDescription(name: "studio", destination: "Studio", inverse: "directors"),
      ]),
    EntityDescription(
      name: "Movie",
      attributes: [
        AttributeDescription(name: "title", type: .string),
        AttributeDescription(name: "subtitle", type: .string, isOptional: true),
        AttributeDescription(name: "year", type: .int16),
        AttributeDescription(name: "rating", type: .double, isOptional: true),
        AttributeDescription(name: "budget", type: .decimal, isOptional: true),
        AttributeDescription(name: "watched", type: .bool),
        AttributeDescription(name: "code", type: .uuid, isOptional: true),
        AttributeDescription(name: "note", type: .string, isOptional: true, isTransient: true),
      ],
      relationships: [
        RelationshipDescription(name: "director", destination: "Director", inverse: "movies"),
        RelationshipDescription(name: "tags", destination: "Tag", inverse: "movies", isToMany: true),
      ]),
    EntityDescription(
      name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "movies", destination: "Movie", inverse: "tags", isToMany: true)]),
  ])
}

private let heatCode = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!

private func makeGraph() throws -> Graph {
  var g = Graph(model: try makeModel())
  func add(_ entity: String, _ pk: Int64, _ attributes: [Value], _ toOne: [ObjectID?]) {
    g.objects[id(entity, pk)] = Snapshot(objectID: id(entity, pk), version: 1, attributes: attributes, toOne: toOne)
  }
  add("Studio", 1, ["Forward Pass"], [])
  add("Director", 1, ["Michael Mann", .date(Date(timeIntervalSince1970: -830_000_000))], [id("Studio", 1)])
  add("Director", 2, ["Ridley Scott", nil], [nil])
  add("Director", 3, ["Nobody", nil], [nil])
  add("Movie", 1, ["Heat", nil, 1995, 8.3, .decimal(60_000_000), true, .uuid(heatCode), nil], [id("Director", 1), nil])
  add("Movie", 2, ["Alien", "The Eighth Passenger", 1979, 8.5, nil, false, nil, nil], [id("Director", 2), nil])
  add("Movie", 3, ["Café Society", "A Story", 2016, nil, .decimal(Decimal(string: "30000000.5")!), false, nil, nil], [nil, nil])
  add("Movie", 4, ["Thief", nil, 1981, 7.4, nil, true, nil, nil], [id("Director", 1), nil])
  add("Tag", 1, ["crime"], [])
  add("Tag", 2, ["thriller"], [])
  add("Tag", 3, ["scifi"], [])
  g.toMany[id("Director", 1)] = ["movies": [id("Movie", 1), id("Movie", 4)]]
  g.toMany[id("Director", 2)] = ["movies": [id("Movie", 2)]]
  g.toMany[id("Studio", 1)] = ["directors": [id("Director", 1)]]
  g.toMany[id("Movie", 1)] = ["tags": [id("Tag", 1), id("Tag", 2)]]
  g.toMany[id("Movie", 2)] = ["tags": [id("Tag", 3)]]
  g.toMany[id("Movie", 4)] = ["tags": [id("Tag", 1)]]
  g.toMany[id("Tag", 1)] = ["movies": [id("Movie", 1), id("Movie", 4)]]
  g.toMany[id("Tag", 2)] = ["movies": [id("Movie", 1)]]
  g.toMany[id("Tag", 3)] = ["movies": [id("Movie", 2)]]
  return g
}

private func cmp(
  _ key: String, _ op: ComparisonOperator, _ value: Value, _ modifier: ComparisonModifier = .direct,
  _ options: StringOptions = []
) -> QueryPredicate {
  .comparison(Comparison(.keyPath(key), op, .constant(value), modifier: modifier, options: options))
}

/// The titles of the movies matching `predicate`, in primary-key order.
private func titles(_ predicate: QueryPredicate, entity: String = "Movie") throws -> [String] {
  let g = try makeGraph()
  let e = try g.model.requireEntity(entity)
  let evaluator = try PredicateEvaluator(predicate, entity: e, model: g.model)
  let rows = g.objects.values.filter { $0.objectID.entityName == entity }.sorted {
    $0.objectID.primaryKey! < $1.objectID.primaryKey!
  }
  return try evaluator.filter(rows, source: g).map { $0.attributes[0].stringValue ?? "?" }
}

private func queryError(_ predicate: QueryPredicate, entity: String = "Movie") throws -> StoreError {
  let g = try makeGraph()
  do {
    _ = try QueryValidator.check(predicate, entity: try g.model.requireEntity(entity), model: g.model)
  } catch let error as StoreError {
    return error
  }
  Issue.record("expected \(predicate) to be rejected")
  return StoreError(.misuse, "not thrown")
}

@Suite struct ValidatorTests {
  @Test func unknownKeyNamesEntityAndKey() throws {
    let error = try queryError(cmp("titel", .equalTo, "Heat"))
    #expect(error.code == .invalidQuery)
    #expect(error.entity == "Movie")
    #expect(error.key == "titel")
    #expect(error.message.contains("Movie has no attribute or relationship 'titel'"))

    let nested = try queryError(cmp("director.nam", .equalTo, "Mann"))
    #expect(nested.entity == "Director")
    #expect(nested.key == "nam")
  }

  @Test func transientAttributesAreRejected() throws {
    let error = try queryError(cmp("note", .equalTo, "x"))
    #expect(error.code == .invalidQuery)
    #expect(error.key == "note")
    #expect(error.message.contains("transient"))
  }

  @Test func incompatibleConstantsNameTheValue() throws {
    let error = try queryError(cmp("title", .equalTo, 5))
    #expect(error.code == .invalidQuery)
    #expect(error.key == "title")
    #expect(error.value == .int(5))
    #expect(try queryError(cmp("born", .greaterThan, "x"), entity: "Director").code == .invalidQuery)
    #expect(try queryError(cmp("year", .contains, "9")).code == .invalidQuery)
    #expect(try queryError(cmp("director", .lessThan, .objectID(id("Director", 1)))).code == .invalidQuery)
    #expect(try queryError(cmp("director", .equalTo, .objectID(id("Movie", 1)))).code == .invalidQuery)
  }

  @Test func constantsAreConvertedToAttributeTypes() throws {
    let g = try makeGraph()
    let checked = try QueryValidator.check(
      .and([cmp("rating", .greaterThan, 3), cmp("code", .equalTo, .string(heatCode.uuidString)), cmp("year", .equalTo, 1995.0)]),
      entity: g.movie, model: g.model)
    #expect(
      checked
        == .and([
          cmp("rating", .greaterThan, .double(3)), cmp("code", .equalTo, .uuid(heatCode)), cmp("year", .equalTo, .int(1995)),
        ]))
    let aggregate = QueryPredicate.comparison(
      Comparison(.keyPath("rating"), .between, .aggregate([.constant(7), .constant(8)])))
    #expect(
      try QueryValidator.check(aggregate, entity: g.movie, model: g.model)
        == cmp("rating", .between, .array([.double(7), .double(8)])))
  }

  @Test func implicitAnyAndRewrites() throws {
    let g = try makeGraph()
    #expect(
      try QueryValidator.check(cmp("tags.name", .equalTo, "crime"), entity: g.movie, model: g.model)
        == cmp("tags.name", .equalTo, "crime", .any))
    let flipped = QueryPredicate.comparison(Comparison(.constant(1990), .lessThan, .keyPath("year")))
    #expect(try QueryValidator.check(flipped, entity: g.movie, model: g.model) == cmp("year", .greaterThan, 1990))
    let membership = cmp("movies", .contains, .objectID(id("Movie", 1)))
    #expect(
      try QueryValidator.check(membership, entity: g.director, model: g.model)
        == cmp("movies", .equalTo, .objectID(id("Movie", 1)), .any))
  }

  @Test func misuseOfCollectionsIsRejected() throws {
    #expect(try queryError(cmp("movies", .equalTo, .objectID(id("Movie", 1))), entity: "Director").code == .invalidQuery)
    #expect(try queryError(cmp("title", .equalTo, "Heat", .any)).code == .invalidQuery)
    #expect(try queryError(cmp("title.@count", .equalTo, 1)).code == .invalidQuery)
    #expect(try queryError(cmp("director.@count", .equalTo, 1)).code == .invalidQuery)
    #expect(try queryError(cmp("year", .between, [1990, 1995, 2000])).code == .invalidQuery)
    #expect(try queryError(cmp("year", .in, 1995)).code == .invalidQuery)
  }

  @Test func unsupportedConstructsSayUnsupported() throws {
    #expect(
      try queryError(cmp("movies.rating.@distinctUnionOfObjects", .greaterThan, 3), entity: "Director").code
        == .unsupported)
    let function = QueryPredicate.comparison(Comparison(.function("random", []), .greaterThan, .keyPath("year")))
    #expect(try queryError(function).code == .unsupported)
    // now() is a date: comparing it with a number is a type error.
    let now = QueryPredicate.comparison(Comparison(.function("now", []), .greaterThan, .keyPath("year")))
    #expect(try queryError(now).code == .invalidQuery)
    let subquery = QueryPredicate.comparison(
      Comparison(
        .subquery(collection: .keyPath("tags"), variable: "t", predicate: .true), .equalTo, .constant(1)))
    #expect(try queryError(subquery).code == .unsupported)
    let variable = QueryPredicate.comparison(Comparison(.keyPath("title"), .equalTo, .variable("TITLE")))
    let error = try queryError(variable)
    #expect(error.code == .invalidQuery)
    #expect(error.message.contains("$TITLE"))
  }

  @Test func invalidRegularExpressionIsRejectedUpFront() throws {
    #expect(try queryError(cmp("title", .matches, "(unclosed")).code == .invalidQuery)
  }

  @Test func sortKeys() throws {
    let g = try makeGraph()
    try QueryValidator.check([QuerySort("director.name"), QuerySort("year", ascending: false)], entity: g.movie, model: g.model)
    for bad in ["tags.name", "note", "titel", "director", "tags"] {
      expectStoreError(.invalidQuery) { try QueryValidator.check([QuerySort(bad)], entity: g.movie, model: g.model) }
    }
    let path = try QueryValidator.resolveSortKey(QuerySort("director.studio.name"), entity: g.movie, model: g.model)
    #expect(path.hops.map(\.relationship.name) == ["director", "studio"])
    #expect(path.hops.map(\.toOneIndex) == [0, 0])
  }

  @Test func resolvedKeyPaths() throws {
    let g = try makeGraph()
    let count = try ResolvedKeyPath("director.movies.@count", entity: g.movie, model: g.model)
    #expect(count.hops.count == 1)
    #expect(count.valueKind == .count)
    #expect(!count.isCollection)
    let names = try ResolvedKeyPath("tags.name", entity: g.movie, model: g.model)
    #expect(names.isCollection)
    #expect(names.terminalEntity.name == "Tag")
    #expect(names.valueKind == .attribute(.string))
    let me = try ResolvedKeyPath("SELF", entity: g.movie, model: g.model)
    #expect(me.valueKind == .objectID(entity: "Movie"))
  }
}

@Suite struct EvaluatorTests {
  @Test func nilRules() throws {
    #expect(try titles(cmp("rating", .equalTo, nil)) == ["Café Society"])
    #expect(try titles(cmp("rating", .notEqualTo, nil)) == ["Heat", "Alien", "Thief"])
    #expect(try titles(cmp("rating", .notEqualTo, 8.3)) == ["Alien", "Café Society", "Thief"])
    #expect(try titles(cmp("rating", .lessThan, 100)) == ["Heat", "Alien", "Thief"])
    #expect(try titles(.not(cmp("rating", .lessThan, 100))) == ["Café Society"])
    #expect(try titles(cmp("subtitle", .contains, "a")) == ["Alien"])
    #expect(try titles(.not(cmp("subtitle", .contains, "a"))) == ["Heat", "Café Society", "Thief"])
    #expect(try titles(cmp("rating", .between, [0, 10])) == ["Heat", "Alien", "Thief"])
  }

  @Test func numbersCompareByValueAcrossTypes() throws {
    #expect(try titles(cmp("year", .equalTo, 1995.0)) == ["Heat"])
    #expect(try titles(cmp("year", .lessThan, 1980.5)) == ["Alien"])
    #expect(try titles(cmp("rating", .greaterThan, 8)) == ["Heat", "Alien"])
    #expect(try titles(cmp("budget", .greaterThan, 30_000_000)) == ["Heat", "Café Society"])
    #expect(try titles(cmp("budget", .lessThan, 30_000_000.75)) == ["Café Society"])
    #expect(try titles(cmp("watched", .equalTo, 1)) == ["Heat", "Thief"])
    #expect(try titles(cmp("watched", .equalTo, false)) == ["Alien", "Café Society"])
  }

  @Test func inAndBetween() throws {
    #expect(try titles(cmp("year", .in, [1979, 1981, 1900])) == ["Alien", "Thief"])
    #expect(try titles(cmp("year", .between, [1979, 1995])) == ["Heat", "Alien", "Thief"])
    #expect(try titles(cmp("title", .in, ["heat", "ALIEN"], .direct, .caseInsensitive)) == ["Heat", "Alien"])
    #expect(try titles(cmp("title", .in, "The Thief of Bagdad")) == ["Thief"])
    let constantIn = QueryPredicate.comparison(Comparison(.constant("eat"), .in, .keyPath("title")))
    #expect(try titles(constantIn) == ["Heat"])
  }

  @Test func strings() throws {
    #expect(try titles(cmp("title", .equalTo, "HEAT", .direct, .caseInsensitive)) == ["Heat"])
    #expect(try titles(cmp("title", .equalTo, "HEAT")) == [])
    #expect(try titles(cmp("title", .contains, "cafe", .direct, [.caseInsensitive, .diacriticInsensitive])) == ["Café Society"])
    #expect(try titles(cmp("title", .contains, "cafe", .direct, .caseInsensitive)) == [])
    #expect(try titles(cmp("title", .beginsWith, "")) == [])
    #expect(try titles(cmp("title", .like, "?hie*")) == ["Thief"])
    #expect(try titles(cmp("title", .matches, "[A-H].*")) == ["Heat", "Alien", "Café Society"])
    #expect(try titles(cmp("title", .lessThan, "Heat")) == ["Alien", "Café Society"])
  }

  @Test func toOnePaths() throws {
    #expect(try titles(cmp("director.name", .equalTo, "Michael Mann")) == ["Heat", "Thief"])
    #expect(try titles(cmp("director.studio.name", .equalTo, "Forward Pass")) == ["Heat", "Thief"])
    #expect(try titles(cmp("director.studio.name", .equalTo, nil)) == ["Alien", "Café Society"])
    #expect(try titles(cmp("director", .equalTo, nil)) == ["Café Society"])
    #expect(try titles(cmp("director", .equalTo, .objectID(id("Director", 2)))) == ["Alien"])
    #expect(try titles(cmp("director", .in, [.objectID(id("Director", 2)), nil])) == ["Alien", "Café Society"])
    #expect(try titles(cmp("director", .notEqualTo, .string(id("Director", 1).uriRepresentation))) == ["Alien", "Café Society"])
  }

  @Test func toManyModifiers() throws {
    #expect(try titles(cmp("tags.name", .equalTo, "crime", .any)) == ["Heat", "Thief"])
    #expect(try titles(cmp("tags.name", .equalTo, "crime")) == ["Heat", "Thief"])
    #expect(try titles(cmp("tags.name", .equalTo, "crime", .all)) == ["Café Society", "Thief"])
    #expect(try titles(cmp("tags.name", .equalTo, "crime", .none)) == ["Alien", "Café Society"])
    #expect(try titles(cmp("movies.title", .beginsWith, "H", .any), entity: "Director") == ["Michael Mann"])
    #expect(try titles(cmp("movies", .equalTo, .objectID(id("Movie", 2)), .any), entity: "Director") == ["Ridley Scott"])
    #expect(try titles(cmp("movies.tags.name", .equalTo, "scifi", .any), entity: "Director") == ["Ridley Scott"])
  }

  @Test func counts() throws {
    #expect(try titles(cmp("movies.@count", .equalTo, 2), entity: "Director") == ["Michael Mann"])
    #expect(try titles(cmp("movies.@count", .equalTo, 0), entity: "Director") == ["Nobody"])
    #expect(try titles(cmp("tags.@count", .greaterThanOrEqualTo, 1)) == ["Heat", "Alien", "Thief"])
    #expect(try titles(cmp("director.movies.@count", .equalTo, 2)) == ["Heat", "Thief"])
    // A nil director on the way makes the count nil, not 0.
    #expect(try titles(cmp("director.movies.@count", .lessThan, 2)) == ["Alien"])
  }

  @Test func logicAndSelf() throws {
    #expect(try titles(.and([])) == ["Heat", "Alien", "Café Society", "Thief"])
    #expect(try titles(.or([])) == [])
    #expect(try titles(.or([cmp("year", .lessThan, 1980), cmp("title", .equalTo, "Heat")])) == ["Heat", "Alien"])
    #expect(try titles(.and([cmp("watched", .equalTo, true), .not(cmp("year", .greaterThan, 1990))])) == ["Thief"])
    let me = QueryPredicate.comparison(Comparison(.evaluatedObject, .equalTo, .constant(.objectID(id("Movie", 3)))))
    #expect(try titles(me) == ["Café Society"])
  }
}

@Suite struct SorterTests {
  private func sortedTitles(_ sorts: [QuerySort]) throws -> [String] {
    let g = try makeGraph()
    let rows = g.objects.values.filter { $0.objectID.entityName == "Movie" }.sorted {
      $0.objectID.primaryKey! > $1.objectID.primaryKey!
    }
    let sorter = try SnapshotSorter(sorts, entity: g.movie, model: g.model)
    return try sorter.sorted(rows, source: g).map { $0.attributes[0].stringValue ?? "?" }
  }

  @Test func nilFirstAscendingLastDescending() throws {
    #expect(try sortedTitles([QuerySort("rating")]) == ["Café Society", "Thief", "Heat", "Alien"])
    #expect(try sortedTitles([QuerySort("rating", ascending: false)]) == ["Alien", "Heat", "Thief", "Café Society"])
  }

  @Test func tiesKeepPrimaryKeyOrderInBothDirections() throws {
    #expect(try sortedTitles([QuerySort("watched")]) == ["Alien", "Café Society", "Heat", "Thief"])
    #expect(try sortedTitles([QuerySort("watched", ascending: false)]) == ["Heat", "Thief", "Alien", "Café Society"])
    #expect(try sortedTitles([]) == ["Heat", "Alien", "Café Society", "Thief"])
  }

  @Test func toOneKeysAndSecondaryKeys() throws {
    #expect(
      try sortedTitles([QuerySort("director.name", ascending: false), QuerySort("year")])
        == ["Alien", "Thief", "Heat", "Café Society"])
  }

  @Test func valueOrder() {
    #expect(SnapshotSorter.compare("File2", "file10", comparator: .localizedStandard) < 0)
    #expect(SnapshotSorter.compare("File2", "file10", comparator: .default) < 0)
    #expect(SnapshotSorter.compare("file2", "File10", comparator: .default) > 0)
    #expect(SnapshotSorter.compare(nil, .int(-5), comparator: .default) < 0)
    #expect(SnapshotSorter.compare(.int(2), .double(1.5), comparator: .default) > 0)
    #expect(SnapshotSorter.compare(.decimal(2), .int(2), comparator: .default) == 0)
    #expect(SnapshotSorter.compare(.data(Data([1, 2])), .data(Data([1, 2, 0])), comparator: .default) < 0)
  }
}
