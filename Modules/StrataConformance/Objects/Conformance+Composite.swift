import Foundation
import Strata
import StrataStoreKit
import Testing

/// A struct attribute of ``Dish``, stored as JSON.
public struct DishAddress: CodableAttribute, Hashable, Sendable {
  /// The street.
  public var street: String
  /// The city.
  public var city: String
  /// The postal code.
  public var zip: Int
  /// An empty address.
  public static let zero = DishAddress(street: "", city: "", zip: 0)

  /// An address.
  public init(street: String, city: String, zip: Int) {
    self.street = street
    self.city = city
    self.zip = zip
  }
}

/// A `String` enum attribute of ``Dish``.
public enum DishCourse: String, EnumAttribute, CaseIterable, Codable, Sendable {
  /// The courses.
  case starter, main, dessert
}

/// An `Int` enum attribute of ``Dish``, with a fallback for raw values it does not know.
public enum DishSpice: Int, EnumAttribute, CaseIterable, Codable, Sendable {
  /// The spice levels.
  case unknown = 0, mild = 1, medium = 2, hot = 3
  /// A level a newer version wrote reads as `.unknown`.
  public static var unknownCase: DishSpice? { .unknown }
}

/// The entity of the composite-attribute area: every kind of Codable attribute and two enums.
public final class Dish: ManagedObject {
  /// The name.
  @Attribute public var name: String
  /// Tags (`[String]`).
  @Attribute public var tags: [String]
  /// Scores (`[Int]`).
  @Attribute public var scores: [Int]
  /// Labels (`[String: String]`).
  @Attribute public var labels: [String: String]
  /// Allergens (`Set<String>`, stored sorted).
  @Attribute public var allergens: Set<String>
  /// An address (a struct), optional.
  @Attribute public var address: DishAddress?
  /// Where it is served, in order (an array of structs).
  @Attribute public var stops: [DishAddress]
  /// The course (a `String` enum).
  @Attribute public var course: DishCourse
  /// The spice level (an `Int` enum), optional.
  @Attribute public var spice: DishSpice?
}

/// An entity with a `[Double]` attribute, for a value JSON cannot hold.
public final class JSONInvalid: ManagedObject {
  /// Readings (`[Double]`).
  @Attribute public var readings: [Double]
}

extension Conformance {
  struct DishSeed: Encodable {
    var name: String
    var tags: [String]
    var scores: [Int]
    var labels: [String: String]
    var allergens: Set<String>
    var address: DishAddress?
    var stops: [DishAddress]
    var course: DishCourse
    var spice: DishSpice?
  }

  static let dishes: [DishSeed] = [
    DishSeed(
      name: "Crêpe", tags: ["Sweet", "French", "breakfast"], scores: [4, 5, 3], labels: ["lang": "fr"],
      allergens: ["gluten", "milk", "egg"], address: DishAddress(street: "Rue A", city: "Paris", zip: 75001),
      stops: [DishAddress(street: "Rue A", city: "Paris", zip: 75001), DishAddress(street: "Quai", city: "Lyon", zip: 69001)],
      course: .dessert, spice: nil),
    DishSeed(
      name: "Ramen", tags: ["savory", "Japanese", "noodles", "soup"], scores: [5, 5],
      labels: ["lang": "ja", "region": "Tokyo"], allergens: ["gluten", "soy"],
      address: DishAddress(street: "Main", city: "TOKYO", zip: 100),
      stops: [DishAddress(street: "Main", city: "TOKYO", zip: 100)], course: .main, spice: .hot),
    DishSeed(
      name: "Salad", tags: [], scores: [], labels: [:], allergens: [], address: nil, stops: [], course: .starter, spice: .mild),
    DishSeed(
      name: "Café au lait", tags: ["drink", "French"], scores: [2], labels: ["lang": "fr"], allergens: ["milk"],
      address: DishAddress(street: "Quai", city: "paris", zip: 75004),
      stops: [DishAddress(street: "Quai", city: "Lyon", zip: 69001), DishAddress(street: "Quai", city: "paris", zip: 75004)],
      course: .starter, spice: .medium),
    DishSeed(
      name: "Chili", tags: ["savory", "Hot", "Mexican"], scores: [1, 10, 3], labels: [:], allergens: [],
      address: DishAddress(street: "Elm", city: "Austin", zip: 73301),
      stops: [DishAddress(street: "Elm", city: "Austin", zip: 73301)], course: .main, spice: .hot),
  ]

  static let allDishes: Set<String> = Set(dishes.map(\.name))
  static let dishTypes: [ManagedObject.Type] = [Dish.self, JSONInvalid.self]

  /// Predicates over Codable attributes; the expected names worked out by hand from ``dishes`` (enums have
  /// their own area, ``Conformance/Area/enumAttributes``).
  static let compositeCases: [PredicateCase] = [
    // Membership: CONTAINS and IN on an array, a set; with options.
    PredicateCase("tags CONTAINS 'French'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("'French' IN tags", [], ["Crêpe", "Café au lait"]),
    PredicateCase("tags CONTAINS[c] 'french'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("tags CONTAINS 'french'", [], []),
    PredicateCase("%@ IN tags", ["soup"], ["Ramen"]),
    PredicateCase("allergens CONTAINS 'milk'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("NOT (allergens CONTAINS 'gluten')", [], ["Salad", "Café au lait", "Chili"]),
    PredicateCase("scores CONTAINS 5", [], ["Crêpe", "Ramen"]),
    // ANY, ALL, NONE over the elements (ALL over no elements holds).
    PredicateCase("ANY tags BEGINSWITH[c] 's'", [], ["Crêpe", "Ramen", "Chili"]),
    PredicateCase("ANY tags ==[cd] 'FRENCH'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("ANY %K == %@", ["tags", "soup"], ["Ramen"]),
    PredicateCase("ALL tags MATCHES '[a-z]+'", [], ["Salad"]),
    PredicateCase("NONE tags ==[c] 'french'", [], ["Ramen", "Salad", "Chili"]),
    PredicateCase("ANY allergens LIKE 'g*'", [], ["Crêpe", "Ramen"]),
    PredicateCase("ANY scores > 4", [], ["Crêpe", "Ramen", "Chili"]),
    PredicateCase("ALL scores >= 3", [], ["Crêpe", "Ramen", "Salad"]),
    PredicateCase("ANY scores BETWEEN {9, 11}", [], ["Chili"]),
    PredicateCase("ANY scores IN {2, 3}", [], ["Crêpe", "Café au lait", "Chili"]),
    PredicateCase("ANY scores == 'five'", [], []),
    // Sizes and folds.
    PredicateCase("tags.@count > 2", [], ["Crêpe", "Ramen", "Chili"]),
    PredicateCase("tags.@count == 0", [], ["Salad"]),
    PredicateCase("labels.@count == 0", [], ["Salad", "Chili"]),
    PredicateCase("scores.@sum >= 10", [], ["Crêpe", "Ramen", "Chili"]),
    PredicateCase("scores.@max == 10", [], ["Chili"]),
    PredicateCase("scores.@min == 2", [], ["Café au lait"]),
    PredicateCase("scores.@avg > 4", [], ["Ramen", "Chili"]),
    PredicateCase("scores.@avg == nil", [], ["Salad"]),
    // Struct and dictionary members.
    PredicateCase("address.city ==[c] 'paris'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("address.city == 'Paris'", [], ["Crêpe"]),
    PredicateCase("address.zip > 75000", [], ["Crêpe", "Café au lait"]),
    PredicateCase("address.zip BETWEEN {70000, 75002}", [], ["Crêpe", "Chili"]),
    PredicateCase("address.city IN {'Austin', 'TOKYO'}", [], ["Ramen", "Chili"]),
    PredicateCase("address.city BEGINSWITH[c] 'PA'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("address.city != 'Paris'", [], allDishes.subtracting(["Crêpe"])),
    PredicateCase("address == nil", [], ["Salad"]),
    PredicateCase("address != nil", [], allDishes.subtracting(["Salad"])),
    PredicateCase("address.city == nil", [], ["Salad"]),
    PredicateCase("address.floor == nil", [], allDishes),
    PredicateCase("labels.lang == 'fr'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("labels.region BEGINSWITH 'To'", [], ["Ramen"]),
    PredicateCase("address.city ==[c] 'paris' AND tags.@count < 3", [], ["Café au lait"]),
    // Subscripts of arrays (a set is stored sorted), and of an array of structs then a member; past the
    // end, FIRST/LAST of an empty array and any subscript of a non-array are nil; SIZE is @count.
    PredicateCase("tags[FIRST] == 'savory'", [], ["Ramen", "Chili"]),
    PredicateCase("tags[LAST] BEGINSWITH[c] 'f'", [], ["Café au lait"]),
    PredicateCase("tags[SIZE] > 2", [], ["Crêpe", "Ramen", "Chili"]),
    PredicateCase("tags[1] == 'French'", [], ["Crêpe", "Café au lait"]),
    PredicateCase("tags[%d] ==[c] %@", [3, "SOUP"], ["Ramen"]),
    PredicateCase("tags[4] == nil", [], allDishes),
    PredicateCase("tags[FIRST] == nil", [], ["Salad"]),
    PredicateCase("tags[LAST] != nil", [], allDishes.subtracting(["Salad"])),
    PredicateCase("'drink' == tags[0]", [], ["Café au lait"]),
    PredicateCase("tags[0] IN {'Sweet', 'drink'}", [], ["Crêpe", "Café au lait"]),
    PredicateCase("scores[LAST] == 3", [], ["Crêpe", "Chili"]),
    PredicateCase("scores[0] > 4", [], ["Ramen"]),
    PredicateCase("scores[1] BETWEEN {5, 10}", [], ["Crêpe", "Ramen", "Chili"]),
    PredicateCase("allergens[FIRST] == 'egg'", [], ["Crêpe"]),
    PredicateCase("labels[SIZE] == 0", [], ["Salad", "Chili"]),
    PredicateCase("labels[0] == nil", [], allDishes),
    PredicateCase("address[SIZE] == 3", [], allDishes.subtracting(["Salad"])),
    PredicateCase("address.city[SIZE] == nil", [], allDishes),
    PredicateCase("stops[0].city ==[c] 'paris'", [], ["Crêpe"]),
    PredicateCase("stops[LAST].city ==[c] 'paris'", [], ["Café au lait"]),
    PredicateCase("stops[FIRST].zip < 70000", [], ["Ramen", "Café au lait"]),
    PredicateCase("stops[1].city == 'Lyon'", [], ["Crêpe"]),
    PredicateCase("stops[FIRST].city == nil", [], ["Salad"]),
    PredicateCase("stops[SIZE] == 2", [], ["Crêpe", "Café au lait"]),
  ]
}

/// The composite-attributes area's starting store: every dish of ``Conformance/dishes``, saved.
struct DishStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.container(types: Conformance.dishTypes)
    let context = container.viewContext
    for seed in Conformance.dishes {
      let dish = Dish(context: context)
      dish.name = seed.name
      dish.tags = seed.tags
      dish.scores = seed.scores
      dish.labels = seed.labels
      dish.allergens = seed.allergens
      dish.address = seed.address
      dish.stops = seed.stops
      dish.course = seed.course
      dish.spice = seed.spice
    }
    try context.save()
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url, types: Conformance.dishTypes) }
}

/// Codable attributes (arrays, sets, dictionaries, structs): stored values read back equal (with the
/// two enums of ``Dish``); the stored JSON is canonical (sorted keys, sorted sets); predicates on
/// collections and members; errors for unsupported comparisons and sorts; a value that no longer decodes
/// is a `.corrupted` error naming the object and key, and the store stays as it was. Enums are tested in
/// the enum area.
enum CompositeCases {
  static let dishes = Conformance.dishes

  /// Stored values read back equal, field by field.
  static func storedValuesReadBackEqual(_ backend: ConformanceBackend) async throws {
    let fresh = try DishStore(backend).fresh()
    let read = try fresh.fetch(FetchRequest<Dish>(sortDescriptors: [QuerySort("name")]))
    #expect(read.map(\.name) == dishes.map(\.name).sorted())
    for dish in read {
      let seed = try #require(dishes.first { $0.name == dish.name })
      #expect(dish.tags == seed.tags, "\(dish.name)")
      #expect(dish.scores == seed.scores, "\(dish.name)")
      #expect(dish.labels == seed.labels, "\(dish.name)")
      #expect(dish.allergens == seed.allergens, "\(dish.name)")
      #expect(dish.address == seed.address, "\(dish.name)")
      #expect(dish.stops == seed.stops, "\(dish.name)")
      #expect(dish.course == seed.course, "\(dish.name)")
      #expect(dish.spice == seed.spice, "\(dish.name)")
    }
  }

  /// The stored text: keys sorted, a set's elements sorted, so equal values store equal bytes.
  static func storedJSONIsCanonical(_ backend: ConformanceBackend) async throws {
    let fresh = try DishStore(backend).fresh()
    var rowsRequest = try FetchRequest<Dish>(format: "name == 'Crêpe'")
    rowsRequest.propertiesToFetch = [.keyPath("allergens"), .keyPath("address"), .keyPath("course"), .keyPath("spice")]
    let row = try #require(try fresh.fetchDictionaries(rowsRequest).first)
    #expect(row["allergens"] == .string(#"["egg","gluten","milk"]"#))
    #expect(row["address"] == .string(#"{"city":"Paris","street":"Rue A","zip":75001}"#))
    #expect(row["course"] == .string("dessert"))
    #expect(row["spice"] == nil)
  }

  /// Predicates on collections, struct and dictionary members (``Conformance/compositeCases``): fetches
  /// and counts; unsaved changes are matched by the same rules.
  static func predicatesReadCollectionsAndMembers(_ backend: ConformanceBackend) async throws {
    let fresh = try DishStore(backend).fresh()
    let read = try fresh.fetch(FetchRequest<Dish>())
    for testCase in Conformance.compositeCases {
      let request = try FetchRequest<Dish>(format: testCase.format, argumentArray: testCase.arguments)
      #expect(Set(try fresh.fetch(request).map(\.name)) == testCase.expected, "Dish \(testCase.format)")
      #expect(try fresh.count(for: request) == testCase.expected.count, "count of Dish \(testCase.format)")
    }

    // Unsaved changes are matched by the same rules.
    let ramen = try #require(read.first { $0.name == "Ramen" })
    ramen.tags.append("French")
    #expect(
      Set(try fresh.fetch(FetchRequest<Dish>(format: "tags CONTAINS 'French'")).map(\.name)) == [
        "Crêpe", "Ramen", "Café au lait",
      ])
    fresh.rollback()
  }

  /// Comparisons a Codable attribute does not support, subscripts that are not constant indexes, reads
  /// inside one from an expression or a dictionary result, and sorting by one are refused.
  static func unsupportedComparisonsAreRefused(_ backend: ConformanceBackend) async throws {
    let fresh = try DishStore(backend).fresh()
    for format in ["tags == 'French'", "tags > 'a'", "tags BEGINSWITH 'F'", "address LIKE '*'", "ANY tags.@count > 1"] {
      _ = expectStoreError(.invalidQuery, "Dish \(format)") { try fresh.fetch(FetchRequest<Dish>(format: format)) }
    }
    _ = expectStoreError(.unsupported, "a Codable key path compared with a key path") {
      try fresh.fetch(FetchRequest<Dish>(format: "address.city == name"))
    }
    _ = expectStoreError(.unsupported, "an expression reading inside a Codable attribute") {
      try fresh.fetch(FetchRequest<Dish>(format: "lowercase:(address.city) == 'paris'"))
    }
    // Subscripts: an index that is negative or not an integer constant, a subscript of a fold, of a
    // scalar attribute, of a to-many relationship (a set) or inside an expression.
    for (format, arguments) in [
      ("tags[%@] == 'a'", ["1"]), ("tags[%d] == 'a'", [-1]), ("tags[1.5] == 'a'", []), ("tags.@count[0] == 1", []),
      ("name[0] == 'C'", []), ("name[SIZE] == 4", []),
    ] as [(String, [any PredicateArgument & Sendable])] {
      _ = expectStoreError(.invalidQuery, "Dish \(format)") {
        try fresh.fetch(FetchRequest<Dish>(format: format, argumentArray: arguments))
      }
    }
    _ = expectStoreError(.unsupported, "a subscript of a Codable attribute inside an expression") {
      try fresh.fetch(FetchRequest<Dish>(format: "lowercase:(tags[0]) == 'sweet'"))
    }
    var inside = FetchRequest<Dish>()
    inside.propertiesToFetch = [.keyPath("address.city")]
    _ = expectStoreError(.unsupported, "a dictionary result reading inside a Codable attribute") {
      try fresh.fetchDictionaries(inside)
    }
    _ = expectStoreError(.invalidQuery, "sorting by a Codable attribute") {
      try fresh.fetch(FetchRequest<Dish>(sortDescriptors: [QuerySort("tags")]))
    }
  }

  /// A value that no longer decodes (see ``Conformance/undecodableValues(_:_:_:)``).
  static func undecodableValuesAreCorrupted(_ backend: ConformanceBackend) async throws {
    let s = try DishStore(backend)
    try await Conformance.undecodableValues(backend, s.container, s.url)
  }

  /// A value JSON cannot hold (NaN) fails the save with .validation naming the key; nothing is written.
  static func valuesJSONCannotHoldAreRefused(_ backend: ConformanceBackend) async throws {
    let s = try DishStore(backend)
    let writer = try s.fresh()
    let spoilt = try #require(try writer.fetch(FetchRequest<Dish>(format: "name == 'Chili'")).first)
    spoilt.labels = ["heat": "high"]
    let nan = Dish(context: writer)
    nan.name = "NaN"
    nan.address = DishAddress(street: "x", city: "y", zip: 1)
    nan.tags = ["fine"]
    nan.scores = [1]
    let invalid = JSONInvalid(context: writer)
    invalid.readings = [1, .nan]
    let saveError = expectStoreError(.validation, "a NaN in a Codable attribute") { try writer.save() }
    #expect(saveError?.key == "readings" || saveError?.message.contains("readings") == true, "\(saveError?.message ?? "")")
    writer.rollback()
    let after = try s.fresh()
    #expect(try after.count(for: FetchRequest<Dish>(format: "name == 'NaN' OR labels.heat == 'high'")) == 0)
  }

  /// Plain attributes migrated into Codable ones (backends with migration).
  static func scalarsBecomeCodable(_ backend: ConformanceBackend) async throws {
    guard backend.capabilities.contains(.migration) else { return }
    try Conformance.scalarsBecomeCodable(backend)
  }

  /// The predicate cases answered over plain Swift values (see ``Conformance/plainValues()``).
  static func plainValuesAnswerAlike(_ backend: ConformanceBackend) async throws { try Conformance.plainValues() }

  /// Random JSON documents (see ``Conformance/randomDocuments(_:)``).
  static func randomDocumentsAnswerAsTheEvaluator(_ backend: ConformanceBackend) async throws {
    try Conformance.randomDocuments(backend)
  }
}

extension Conformance {
  /// Random JSON documents (mixed kinds, nesting, nulls, missing members) and random comparisons of every
  /// form: the store's answer equals the shared evaluator's over the same stored snapshots.
  static func randomDocuments(_ backend: ConformanceBackend) throws {
    let model = try ObjectModel(entities: [
      EntityDescription(
        name: "Doc",
        attributes: [
          AttributeDescription(name: "label", type: .string), AttributeDescription(name: "doc", type: .json, isOptional: true),
        ])
    ])
    let store = try backend.factory.openStore(at: try backend.makeLocation(), model: model, options: StoreOptions())
    defer { store.close() }
    var random = RandomDocuments()
    let inserted = (0..<120).map { i in
      let doc: Value = i % 15 == 0 ? .null : .string(JSONText.text(of: random.node(0)))
      return ObjectChange(objectID: .makeTemporary(entityName: "Doc"), attributes: [.string("d\(i)"), doc], toOne: [])
    }
    _ = try store.save(ChangeSet(inserted: inserted))
    guard case .snapshots(let all) = try store.fetch(FetchDescription(entityName: "Doc"), generation: nil) else {
      Issue.record("expected snapshots")
      return
    }
    let entity = try model.requireEntity("Doc")
    var checked = 0
    let rounds = Conformance.rounds(500, minimum: 40)
    for _ in 0..<rounds {
      let (format, constant) = random.comparison()
      let predicate: QueryPredicate
      do {
        predicate = try QueryPredicate(format: format, constant)
        _ = try QueryValidator.check(predicate, entity: entity, model: model)
      } catch {
        continue  // a string operator with a number, `ANY` with a fold: refused everywhere alike
      }
      let expected = try PredicateEvaluator(predicate, entity: entity, model: model).filter(all, source: NoRelations())
      guard
        case .snapshots(let found) = try store.fetch(FetchDescription(entityName: "Doc", predicate: predicate), generation: nil)
      else { continue }
      let (foundIDs, expectedIDs) = (Set(found.map(\.objectID)), Set(expected.map(\.objectID)))
      if foundIDs != expectedIDs {
        let differing = all.filter { foundIDs.contains($0.objectID) != expectedIDs.contains($0.objectID) }.prefix(3)
        Issue.record(
          "\(backend.factory.storeType) answers \(format) with \(constant) differently from the evaluator for \(differing.map { $0.attributes[1].description })"
        )
      }
      checked += 1
    }
    #expect(checked > rounds * 2 / 5)
  }

  /// The seeded documents and comparisons of ``randomDocuments(_:)``.
  private struct RandomDocuments {
    var rng = SplitMix64(seed: 2026)
    let scalars: [JSONText.Node] = [
      .scalar("a"), .scalar("B"), .scalar("é"), .scalar("abc"), .scalar(""), .scalar(0), .scalar(1), .scalar(2.5),
      .scalar(-3), .scalar(true), .scalar(false), .scalar(.null),
    ]
    let constants: [Value] = ["a", "b", "é", "ab", "", 0, 1, 2.5, -3, true, false]
    let paths = ["doc", "doc.a", "doc.b", "doc.a.c", "doc[0]", "doc[LAST]", "doc[1].a", "doc.a[FIRST]", "doc[2][0]"]
    let operators = ["==", "!=", "<", ">=", "BEGINSWITH", "CONTAINS", "LIKE", "==[c]", "==[cd]", "CONTAINS[c]"]

    mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }

    /// A scalar, an array or an object of up to three members, nested at most two deep.
    mutating func node(_ depth: Int) -> JSONText.Node {
      switch rng.next() % (depth > 1 ? 2 : 4) {
      case 0, 1: return pick(scalars)
      case 2: return .array((0..<Int(rng.next() % 4)).map { _ in node(depth + 1) })
      default:
        var members: [String: JSONText.Node] = [:]
        for key in ["a", "b", "c"] where rng.next() % 3 != 0 { members[key] = node(depth + 1) }
        return .object(members)
      }
    }

    /// A comparison of a random path in one of ten forms (aggregates, quantifiers, ranges, regular
    /// expressions, sizes, membership), and its constant.
    mutating func comparison() -> (format: String, constant: Value) {
      let path = pick(paths)
      switch rng.next() % 10 {
      case 7: return ("\(path).\(pick(["@sum", "@avg", "@min", "@max"])) \(pick(["==", "<", ">=", "!="])) %@", pick(constants))
      case 8: return ("\(pick(["ANY ", "ALL ", ""]))\(path) BETWEEN %@", [pick(constants), pick(constants)])
      case 9:
        let form = "\(pick(["ANY ", "NONE ", ""]))\(path) MATCHES\(pick(["", "[c]", "[cd]"])) %@"
        return (form, pick(["a.*", "[a-c]+", "É|b", ""]))
      case 0: return ("\(path) CONTAINS %@", pick(constants))
      case 1: return ("ANY \(path) \(pick(operators)) %@", pick(constants))
      case 2: return ("ALL \(path) \(pick(operators)) %@", pick(constants))
      case 3: return ("NONE \(path) \(pick(operators)) %@", pick(constants))
      case 4:
        let size = rng.next() % 2 == 0 ? "\(path).@count" : "\(path)[SIZE]"
        return ("\(size) \(pick(["==", ">", "<=", "!="])) %@", pick(constants))
      case 5: return ("ANY \(path) IN %@", [pick(constants), pick(constants)])
      default: return (path == "doc" ? "\(path) \(pick(["==", "!="])) nil" : "\(path) \(pick(operators)) %@", pick(constants))
      }
    }
  }

  private struct NoRelations: EvaluationSource {
    func snapshot(for id: ObjectID) throws -> Snapshot? { nil }
    func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] { [] }
  }

  /// NSPredicate's cases over plain values (GNUstep's tests among them), answers written out by hand.
  static let plainValueCases: [(format: String, arguments: [any PredicateArgument & Sendable], value: Value, expected: Bool)] = [
    ("SELF == 'Do'", [], "Do", true),
    ("SELF == 'Do'", [], "do", false),
    ("SELF ==[c] 'do'", [], "Do", true),
    ("SELF BETWEEN {1, 3}", [], 2, true),
    ("SELF BETWEEN {1, 3}", [], 4, false),
    ("self IN %@", [["a", "b"]], "b", true),
    ("self IN %@", [["a", "b"]], "c", false),
    ("SELF BEGINSWITH 'aaa'", [], "aaab", true),
    ("SELF LIKE[c] 'A?C*'", [], "abcd", true),
    ("SELF MATCHES '[0-9]+'", [], "1234", true),
    ("SELF MATCHES '[0-9]+'", [], "12a", false),
    ("SELF.@count == 3", [], [1, 2, 3], true),
    ("SELF.@sum == 6", [], [1, 2, 3], true),
    ("SELF.@avg == 2", [], [1, 2, 3], true),
    ("SELF.@max == 'c'", [], ["a", "c", "b"], true),
    ("SELF CONTAINS 2", [], [1, 2, 3], true),
    ("ANY SELF > 2", [], [1, 2, 3], true),
    ("ALL SELF > 2", [], [1, 2, 3], false),
    ("SELF == nil", [], nil, true),
    ("SELF > %@", [SampleData.date("2001-01-02")], .date(SampleData.date("2001-01-03")), true),
    ("SELF[FIRST] == 'a'", [], ["a", "b", "c"], true),
    ("SELF[FIRST] == 'b'", [], ["a", "b", "c"], false),
    ("SELF[LAST] == 'c'", [], ["a", "b", "c"], true),
    ("SELF[SIZE] == 3", [], ["a", "b", "c"], true),
    ("SELF[LAST] == 3", [], [1, 2, 3], true),
    ("SELF[1] == 2", [], [1, 2, 3], true),
    ("SELF[3] == nil", [], [1, 2, 3], true),
    ("SELF[FIRST] == nil", [], [], true),
    ("SELF[LAST] == 1", [], [], false),
    ("SELF[SIZE] == 0", [], [], true),
    ("SELF[SIZE] == nil", [], "abc", true),
    ("SELF[0][1] == 2", [], [[1, 2], [3]], true),
    ("SELF[0] == nil", [], "abc", true),
  ]

  /// Predicates over plain values agree with the store: every composite case over the seeds as Codable
  /// values, NSPredicate's plain-value cases, dictionaries with missing keys.
  static func plainValues() throws {
    // A plain `Set` is encoded in no particular order (a store sorts it), so its subscripts differ.
    for testCase in compositeCases where !testCase.format.hasPrefix("allergens[") {
      let predicate = try QueryPredicate(format: testCase.format, argumentArray: testCase.arguments)
      #expect(Set(try dishes.filter(predicate).map(\.name)) == testCase.expected, "plain \(testCase.format)")
    }
    for testCase in plainValueCases {
      let predicate = try QueryPredicate(format: testCase.format, argumentArray: testCase.arguments)
      #expect(try predicate.evaluate(with: testCase.value) == testCase.expected, "\(testCase.format) with \(testCase.value)")
    }
    let strings = ["aaa1", "b", "aaa2", "ba"]
    #expect(try strings.filter(QueryPredicate(format: "self BEGINSWITH 'aaa'")) == ["aaa1", "aaa2"])
    let record: [String: Value] = ["name": "Heat", "year": 1995, "list": ["a", "b"]]
    #expect(try QueryPredicate(format: "list CONTAINS 'a'").evaluate(with: record))
    #expect(try QueryPredicate(format: "'a' IN list").evaluate(with: record))
    #expect(try QueryPredicate(format: "ANY %K == %@", "list", "b").evaluate(with: record))
    #expect(try QueryPredicate(format: "name ==[c] 'heat' AND year > 1990").evaluate(with: record))
    #expect(try QueryPredicate(format: "list[0] == 'a'").evaluate(with: record))
    #expect(try QueryPredicate(format: "list[LAST] == 'b' AND list[SIZE] == 2").evaluate(with: record))
    #expect(try !QueryPredicate(format: "list[2] != nil").evaluate(with: record))
    #expect(try QueryPredicate(format: "SELF[SIZE] == 3").evaluate(with: record))
    struct Trip: Encodable {
      var name: String
      var stops: [DishAddress]
    }
    let trips = [
      Trip(name: "a", stops: [DishAddress(street: "", city: "Paris", zip: 1)]),
      Trip(name: "b", stops: []),
      Trip(name: "c", stops: [DishAddress(street: "", city: "Rome", zip: 2), DishAddress(street: "", city: "PARIS", zip: 3)]),
    ]
    #expect(try trips.filter(QueryPredicate(format: "stops[0].city ==[c] 'paris'")).map(\.name) == ["a"])
    #expect(try trips.filter(QueryPredicate(format: "stops[LAST].city ==[c] 'paris'")).map(\.name) == ["a", "c"])
    #expect(try trips.filter(QueryPredicate(format: "stops[FIRST] == nil")).map(\.name) == ["b"])
    _ = expectStoreError(.invalidQuery, "a negative subscript of a plain value") {
      try QueryPredicate(format: "SELF[%d] == 1", -1).evaluate(with: [1] as Value)
    }
    #expect(try QueryPredicate(format: "missing == nil").evaluate(with: record))
    #expect(try !QueryPredicate(format: "missing == 'x'").evaluate(with: record))
    #expect(try QueryPredicate(format: "missing != 'x'").evaluate(with: record))
    _ = expectStoreError(.invalidQuery, "a string operator with a number") {
      try QueryPredicate(format: "SELF BEGINSWITH 3").evaluate(with: "3")
    }
    let error = expectStoreError(.unsupported, "two key paths") {
      try QueryPredicate(format: "name == year").evaluate(with: record)
    }
    #expect(error?.message.contains("value.v") == false, "\(error?.message ?? "")")
  }

  /// A migration that changes scalar attributes to Codable ones: each value becomes a one-element array
  /// that decodes as `[T]`, nil stays nil, and the new attributes answer collection predicates.
  static func scalarsBecomeCodable(_ backend: ConformanceBackend) throws {
    let title = AttributeDescription(name: "title", type: .string)
    let v1 = try ObjectModel(entities: [
      EntityDescription(
        name: "Note",
        attributes: [
          title, AttributeDescription(name: "tag", type: .string, isOptional: true),
          AttributeDescription(name: "when", type: .date, isOptional: true), AttributeDescription(name: "count", type: .int64),
        ])
    ])
    let url = try backend.makeLocation()
    let store = try backend.factory.openStore(at: url, model: v1, options: StoreOptions())
    let date = Date(timeIntervalSinceReferenceDate: 86_400.5)
    func note(_ values: [Value]) -> ObjectChange {
      ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: values, toOne: [])
    }
    _ = try store.save(
      ChangeSet(inserted: [
        note([.string("a"), .string("x"), .date(date), .int(3)]), note([.string("b"), .null, .null, .int(0)]),
      ]))
    let v2 = try ObjectModel(entities: [
      EntityDescription(
        name: "Note",
        attributes: [
          title, AttributeDescription(name: "tag", type: .json, isOptional: true),
          AttributeDescription(name: "when", type: .json, isOptional: true), AttributeDescription(name: "count", type: .json),
        ])
    ])
    let migration = try ModelMigration(from: store.model, to: v2)
    let migrated = try store.migrated(by: migration)
    defer { migrated.close() }
    let notes = try rows(migrated, "Note")
    let a = try #require(notes["a"])
    #expect([String](storedValue: a.attributes[1]) == ["x"])
    #expect([Date](storedValue: a.attributes[2]) == [date])
    #expect([Int](storedValue: a.attributes[3]) == [3])
    #expect(notes["b"]?.attributes[1] == .null && notes["b"]?.attributes[2] == .null)
    #expect([Int](storedValue: notes["b"]?.attributes[3] ?? .null) == [0])
    let tagged = try migrated.count(
      FetchDescription(entityName: "Note", predicate: try QueryPredicate(format: "tag CONTAINS 'x'")))
    #expect(tagged == 1)
    let counted = try migrated.count(
      FetchDescription(entityName: "Note", predicate: try QueryPredicate(format: "ANY count == 0 AND count.@count == 1")))
    #expect(counted == 1)
  }

  /// A stored value that no longer decodes as the property's type: a fetch that reads it throws
  /// `.corrupted` naming the entity, object and key; the store is unchanged.
  static func undecodableValues(_ backend: ConformanceBackend, _ container: PersistentContainer, _ url: URL?) async throws {
    let live = container.viewContext
    let before = try live.fetchDictionaries(allDishRows())
    let breakAddress = BatchRequest.update(
      entityName: "Dish", predicate: try QueryPredicate(format: "name == 'Ramen'"),
      propertiesToUpdate: ["address": .constant(.string(#"["not","an","address"]"#))])
    _ = try live.execute(breakAddress)
    let reader = try backend.freshContext(container, url, types: dishTypes)
    let error = expectStoreError(.corrupted, "an address that no longer decodes") {
      try reader.fetch(FetchRequest<Dish>())
    }
    #expect(error?.entity == "Dish")
    #expect(error?.key == "address")
    #expect(error?.message.contains("Dish/p") == true, "\(error?.message ?? "")")
    // The other objects still read, and a count needs no decoding.
    #expect(try reader.fetch(FetchRequest<Dish>(format: "name != 'Ramen'")).count == dishes.count - 1)
    #expect(try reader.count(for: FetchRequest<Dish>()) == dishes.count)

    // Nothing was changed by the failing reads.
    let after = try reader.fetchDictionaries(allDishRows())
    #expect(after.filter { $0["name"] != "Ramen" } == before.filter { $0["name"] != "Ramen" })
  }

  private static func allDishRows() -> FetchRequest<Dish> {
    var request = FetchRequest<Dish>(sortDescriptors: [QuerySort("name")])
    request.propertiesToFetch = ["name", "tags", "scores", "labels", "allergens", "address", "stops", "course", "spice"]
      .map {
        .keyPath($0)
      }
    return request
  }
}
