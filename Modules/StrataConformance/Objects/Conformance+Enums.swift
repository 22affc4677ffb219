import Foundation
import Strata
import StrataStoreKit
import Testing

/// A `String` enum attribute of ``Cup``.
enum CupSize: String, EnumAttribute, CaseIterable, Codable, Sendable {
  case small, medium, large
}

/// An `Int` enum attribute of ``Cup``, with a fallback for raw values it does not know.
enum CupStrength: Int, EnumAttribute, CaseIterable, Codable, Sendable {
  case unknown = 0, light = 1, regular = 2, strong = 3
  static var unknownCase: CupStrength? { .unknown }
}

/// The entity of the enum-attribute area.
final class Cup: ManagedObject {
  @Attribute var name: String
  @Attribute var size: CupSize
  @Attribute var strength: CupStrength?
}

/// `Cup` before its attributes were enums: a plain `String` and a narrower integer.
final class PlainCup: ManagedObject {
  override class var entityName: String { "Cup" }
  @Attribute var name: String
  @Attribute var size: String
  @Attribute var strength: Int16?
}

extension Conformance {
  struct CupSeed {
    var name: String
    var size: CupSize
    var strength: CupStrength?
  }

  static let cups: [CupSeed] = [
    CupSeed(name: "Espresso", size: .small, strength: .strong), CupSeed(name: "Latte", size: .large, strength: .light),
    CupSeed(name: "Americano", size: .medium, strength: .regular), CupSeed(name: "Cortado", size: .small, strength: nil),
    CupSeed(name: "Mocha", size: .large, strength: .regular),
  ]

  /// Predicates over enum attributes, each with the rule the expected cups are picked by from ``cups``.
  static let enumCases: [(format: String, arguments: [any PredicateArgument & Sendable], matches: @Sendable (CupSeed) -> Bool)] =
    [
      ("size == %@", [CupSize.small], { $0.size == .small }),
      ("size == 'large'", [], { $0.size == .large }),
      ("size != %@", [CupSize.large], { $0.size != .large }),
      ("size IN %@", [[CupSize.small, CupSize.medium]], { $0.size != .large }),
      ("size IN {'medium', 'large'}", [], { $0.size != .small }),
      ("size == %@", ["medium"], { $0.size == .medium }),
      ("strength == %@", [CupStrength.strong], { $0.strength == .strong }),
      ("strength == 2", [], { $0.strength == .regular }),
      ("strength >= 2", [], { ($0.strength?.rawValue ?? -1) >= 2 }),
      ("strength < %@", [CupStrength.regular], { $0.strength.map { $0.rawValue < 2 } ?? false }),
      ("strength == nil", [], { $0.strength == nil }),
      ("strength IN %@", [[CupStrength.light, CupStrength.strong]], { $0.strength == .light || $0.strength == .strong }),
      ("strength != %@ AND size == %@", [CupStrength.regular, CupSize.large], { $0.strength != .regular && $0.size == .large }),
    ]

  // Enum attributes (`String` and `Int` raw values): stored as their raw values, matched by predicates
  // against a case or a raw value, sorted by raw value; a raw value the enum does not know is
  // `.corrupted` naming the entity, object and key, or reads as the enum's fallback (`unknownCase`);
  // a migration that turns a `String` or integer attribute into an enum keeps every value.

  /// A store of ``cups`` and a fresh context reading it.
  static func cupStore(_ backend: ConformanceBackend) throws -> (PersistentContainer, URL?, ObjectContext) {
    let (container, url) = try backend.container(types: [Cup.self])
    let context = container.viewContext
    for seed in cups {
      let cup = Cup(context: context)
      cup.name = seed.name
      cup.size = seed.size
      cup.strength = seed.strength
    }
    try context.save()
    return (container, url, try backend.freshContext(container, url, types: [Cup.self]))
  }

  /// Enum attributes read back as stored, and are stored as their raw values.
  static func enumsAreStoredAsRawValues(_ backend: ConformanceBackend) async throws {
    let (_, _, fresh) = try cupStore(backend)
    let read = try fresh.fetch(FetchRequest<Cup>(sortDescriptors: [QuerySort("name")]))
    #expect(read.map(\.name) == cups.map(\.name).sorted())
    for cup in read {
      let seed = cups.first { $0.name == cup.name }
      #expect(cup.size == seed?.size && cup.strength == seed?.strength, "\(cup.name)")
    }
    var raw = try FetchRequest<Cup>(format: "name == 'Espresso'")
    raw.propertiesToFetch = [.keyPath("size"), .keyPath("strength")]
    let row = try fresh.fetchDictionaries(raw).first
    #expect(row?["size"] == .string("small") && row?["strength"] == .int(3), "stored as raw values")
  }

  /// Predicates match enums against a case or a raw value (``enumCases``).
  static func predicatesMatchCasesAndRawValues(_ backend: ConformanceBackend) async throws {
    let (_, _, fresh) = try cupStore(backend)
    for testCase in enumCases {
      let request = try FetchRequest<Cup>(format: testCase.format, argumentArray: testCase.arguments)
      let expected = Set(cups.filter(testCase.matches).map(\.name))
      #expect(Set(try fresh.fetch(request).map(\.name)) == expected, "Cup \(testCase.format)")
      #expect(try fresh.count(for: request) == expected.count, "count of Cup \(testCase.format)")
    }
  }

  /// Sorted by raw value: the String's order, the integer's order, either way round.
  static func enumsSortByRawValue(_ backend: ConformanceBackend) async throws {
    let (_, _, fresh) = try cupStore(backend)
    let bySize = try fresh.fetch(FetchRequest<Cup>(sortDescriptors: [QuerySort("size"), QuerySort("name")]))
    #expect(bySize.map(\.name) == cups.sorted { ($0.size.rawValue, $0.name) < ($1.size.rawValue, $1.name) }.map(\.name))
    var byStrength = try FetchRequest<Cup>(format: "strength != nil")
    byStrength.sortDescriptors = [QuerySort("strength", ascending: false), QuerySort("name")]
    let strengths = cups.compactMap { seed in seed.strength.map { (seed.name, $0.rawValue) } }
    #expect(
      try fresh.fetch(byStrength).map(\.name) == strengths.sorted { ($1.1, $0.0) < ($0.1, $1.0) }.map(\.0),
      "strongest first, then by name")
  }

  /// A raw value the enum does not know: an error naming the object and key, or the fallback.
  static func unknownRawValuesAreCorruptedOrTheFallback(_ backend: ConformanceBackend) async throws {
    let (container, url, _) = try cupStore(backend)
    let context = container.viewContext
    _ = try context.execute(
      BatchRequest.update(
        entityName: "Cup", predicate: try QueryPredicate(format: "name == 'Latte'"),
        propertiesToUpdate: ["size": .constant("venti")]))
    _ = try context.execute(
      BatchRequest.update(
        entityName: "Cup", predicate: try QueryPredicate(format: "name == 'Mocha'"),
        propertiesToUpdate: ["strength": .constant(9)]))
    let reader = try backend.freshContext(container, url, types: [Cup.self])
    let unknown = expectStoreError(.corrupted, "an unknown String raw value") {
      try reader.fetch(FetchRequest<Cup>(format: "name == 'Latte'"))
    }
    #expect(unknown?.entity == "Cup")
    #expect(unknown?.key == "size")
    #expect(unknown?.message.contains("Cup/p") == true, "\(unknown?.message ?? "")")
    let mocha = try reader.fetch(FetchRequest<Cup>(format: "name == 'Mocha'")).first
    #expect(mocha?.strength == .unknown, "an Int raw value the enum does not know reads as its fallback")
    var stored = try FetchRequest<Cup>(format: "name == 'Mocha'")
    stored.propertiesToFetch = [.keyPath("strength")]
    #expect(try reader.fetchDictionaries(stored).first?["strength"] == .int(9), "the stored value is untouched")
    #expect(try reader.fetch(FetchRequest<Cup>(format: "name != 'Latte'")).count == cups.count - 1)
  }

  /// Plain attributes migrated into enums (backends with migration).
  static func plainAttributesBecomeEnumsCase(_ backend: ConformanceBackend) async throws {
    guard backend.capabilities.contains(.migration) else { return }
    try plainAttributesBecomeEnums(backend)
  }

  /// A store whose `Cup` holds a `String` and an `Int16` migrates to the model where they are a `String`
  /// enum and an `Int` enum: every object keeps its values, read back as the cases they name.
  static func plainAttributesBecomeEnums(_ backend: ConformanceBackend) throws {
    let url = try backend.makeLocation()
    let plain = try ObjectModel(types: [PlainCup.self])
    let store = try backend.factory.openStore(at: url, model: plain, options: StoreOptions())
    _ = try store.save(
      ChangeSet(
        inserted: cups.map { seed in
          ObjectChange(
            objectID: .makeTemporary(entityName: "Cup"),
            attributes: [
              .string(seed.name), .string(seed.size.rawValue), seed.strength.map { .int(Int64($0.rawValue)) } ?? .null,
            ],
            toOne: [])
        }))
    let typed = try ObjectModel(types: [Cup.self])
    #expect(typed.entity(named: "Cup")?.attribute(named: "strength")?.type == .int64)
    let migrated = try store.migrated(by: try ModelMigration(from: plain, to: typed))
    defer { migrated.close() }
    let rows = try rows(migrated, "Cup")
    #expect(rows.count == cups.count)
    for seed in cups {
      let attributes = rows[seed.name]?.attributes ?? []
      #expect(attributes.count == 3, "\(seed.name)")
      guard attributes.count == 3 else { continue }
      #expect(CupSize(storedValue: attributes[1]) == seed.size, "\(seed.name)")
      #expect(
        attributes[2].isNull ? seed.strength == nil : CupStrength(storedValue: attributes[2]) == seed.strength, "\(seed.name)")
    }
  }
}
