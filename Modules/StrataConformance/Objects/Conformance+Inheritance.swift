import Foundation
import Strata
import StrataStoreKit
import Testing

/// An abstract entity: only its sub-entities have objects. Titles are unique across the whole hierarchy.
class Media: ManagedObject {
  override class var isAbstract: Bool { true }
  @Attribute(.unique) var title: String
  @Attribute var year: Int
  @Relationship(inverse: "items") var shelf: Shelf?
  @Relationship(inverse: "favorites") var fans: Set<Shelf>
}

class Feature: Media {
  @Attribute var runtime: Int
}

final class ShortFeature: Feature {
  @Attribute var festival: String?
}

final class Series: Media {
  @Attribute var seasons: Int
}

final class Shelf: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "shelf") var items: Set<Media>
  @Relationship(inverse: "fans") var favorites: Set<Media>
  @Relationship var pick: Media?
  @Derived("items.@count") var itemCount: Int64
}

enum InheritanceModel {
  static let types: [ManagedObject.Type] = [Media.self, Feature.self, ShortFeature.self, Series.self, Shelf.self]
}

/// The inheritance area's starting store: shelf A (Heat, a Feature; The Wire, a Series; picks The Wire;
/// favours Zidane and The Office), shelf B (Zidane, a ShortFeature; Amélie, a Feature; picks Zidane), and
/// The Office (a Series) on no shelf; saved.
struct InheritanceStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.container(types: InheritanceModel.types)
    let context = container.viewContext
    func add<T: Media>(_ item: T, _ title: String, _ year: Int, on shelf: Shelf?) -> T {
      item.title = title
      item.year = year
      item.shelf = shelf
      return item
    }
    let a = Shelf(context: context)
    a.name = "A"
    let b = Shelf(context: context)
    b.name = "B"
    let heat = add(Feature(context: context), "Heat", 1995, on: a)
    heat.runtime = 170
    let wire = add(Series(context: context), "The Wire", 2002, on: a)
    wire.seasons = 5
    let zidane = add(ShortFeature(context: context), "Zidane", 2006, on: b)
    zidane.runtime = 90
    zidane.festival = "Cannes"
    let amelie = add(Feature(context: context), "Amélie", 2001, on: b)
    amelie.runtime = 122
    let office = add(Series(context: context), "The Office", 2005, on: nil)
    office.seasons = 9
    a.pick = wire
    b.pick = zidane
    a.favorites = [zidane, office]
    try context.save()
    #expect(Set([heat, wire, zidane, amelie, office].map(\.objectID.primaryKey)).count == 5)
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url, types: InheritanceModel.types) }
}

/// Entity inheritance: sub-entities inherit their parent's properties and constraints; a fetch of a
/// parent returns the objects of every sub-entity as their own classes (`includesSubentities = false`
/// opts out); predicates, sorts, counts, aggregates and batches work over a hierarchy; relationships to a
/// parent hold objects of its sub-entities; an abstract entity cannot be inserted.
enum InheritanceCases {
  /// Sub-entities inherit their parent's properties in order; the hierarchy survives JSON and reaches the
  /// store's model.
  static func subentitiesInheritTheirParentsProperties(_ backend: ConformanceBackend) async throws {
    let model = try ObjectModel(types: InheritanceModel.types)
    let feature = try #require(model.entity(named: "Feature"))
    let short = try #require(model.entity(named: "ShortFeature"))
    #expect(feature.parentEntity == "Media")
    #expect(short.parentEntity == "Feature")
    #expect(model.entity(named: "Media")?.isAbstract == true)
    #expect(short.attributes.map(\.name) == ["title", "year", "runtime", "festival"])
    #expect(short.relationships.map(\.name) == ["shelf", "fans"])
    #expect(try ObjectModel.decode(jsonData: model.jsonData()) == model)
    #expect(model.inheritance.fetchedEntities("Media") == ["Feature", "Series", "ShortFeature"])

    let (container, _) = try backend.container(types: InheritanceModel.types)
    #expect(container.persistentStore?.model.entity(named: "Series")?.parentEntity == "Media")
  }

  /// An abstract entity cannot be inserted: the save fails naming it, nothing is written.
  static func abstractEntitiesCannotBeInserted(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.container(types: InheritanceModel.types)
    let context = container.viewContext
    _ = Media(context: context)
    let lone = Series(context: context)
    lone.title = "Lone"
    #expect(expectStoreError(.validation) { try context.save() }?.entity == "Media")
    context.rollback()
    #expect(try context.count(for: FetchRequest<Media>()) == 0)
    #expect(expectStoreError(.validation) { try context.insertObject(entityName: "Media") }?.entity == "Media")
    context.rollback()
  }

  /// A fetch of the parent returns every sub-entity's objects, each as its own class, sorted by an
  /// inherited attribute.
  static func parentFetchesReturnEverySubentity(_ backend: ConformanceBackend) async throws {
    let fresh = try InheritanceStore(backend).fresh()
    let all = try fresh.fetch(FetchRequest<Media>(sortDescriptors: [QuerySort("title")]))
    #expect(all.map(\.title) == ["Amélie", "Heat", "The Office", "The Wire", "Zidane"])
    #expect(all.map { String(describing: type(of: $0)) } == ["Feature", "Feature", "Series", "Series", "ShortFeature"])
    #expect(all.map(\.objectID.entityName) == ["Feature", "Feature", "Series", "Series", "ShortFeature"])
    #expect((all.last as? ShortFeature)?.festival == "Cannes")
    #expect((all.first as? Feature)?.runtime == 122)
    #expect(try fresh.count(for: FetchRequest<Media>()) == 5)
  }

  /// Predicates on inherited and own attributes; a sub-entity's fetch includes its own sub-entities
  /// unless told; paging; a key only a sub-entity has is unknown to the parent.
  static func predicatesSortsAndPagesOverAHierarchy(_ backend: ConformanceBackend) async throws {
    let fresh = try InheritanceStore(backend).fresh()
    let recent = try fresh.fetch(
      FetchRequest<Media>(format: "year >= 2002", sortDescriptors: [QuerySort("year", ascending: false)]))
    #expect(recent.map(\.title) == ["Zidane", "The Office", "The Wire"])
    let long = try fresh.fetch(FetchRequest<Feature>(format: "runtime > 100", sortDescriptors: [QuerySort("title")]))
    #expect(long.map(\.title) == ["Amélie", "Heat"])
    let features = try fresh.fetch(FetchRequest<Feature>(sortDescriptors: [QuerySort("runtime")]))
    #expect(features.map(\.title) == ["Zidane", "Amélie", "Heat"])
    var onlyFeatures = FetchRequest<Feature>(sortDescriptors: [QuerySort("title")])
    onlyFeatures.includesSubentities = false
    #expect(try fresh.fetch(onlyFeatures).map(\.title) == ["Amélie", "Heat"])
    #expect(try fresh.count(for: onlyFeatures) == 2)
    var onlyMedia = FetchRequest<Media>()
    onlyMedia.includesSubentities = false
    #expect(try fresh.fetch(onlyMedia).isEmpty)
    var paged = FetchRequest<Media>(sortDescriptors: [QuerySort("year")])
    paged.fetchOffset = 1
    paged.fetchLimit = 2
    #expect(try fresh.fetch(paged).map(\.title) == ["Amélie", "The Wire"])
    // A key only a sub-entity has is unknown to the parent.
    let unknown = expectStoreError(.invalidQuery) { try fresh.fetch(FetchRequest<Media>(format: "runtime > 100")) }
    #expect(unknown?.key == "runtime")
  }

  /// Relationships to the parent hold objects of its sub-entities, both ways, and predicates follow them.
  static func relationshipsToAParentHoldSubentities(_ backend: ConformanceBackend) async throws {
    let fresh = try InheritanceStore(backend).fresh()
    let shelves = try fresh.fetch(FetchRequest<Shelf>(sortDescriptors: [QuerySort("name")]))
    #expect(shelves.map(\.name) == ["A", "B"])
    let shelfA = shelves[0]
    #expect(shelves.map(\.itemCount) == [2, 2])
    #expect(Set(shelfA.items.map(\.title)) == ["Heat", "The Wire"])
    #expect(shelfA.items.contains { $0 is Series })
    #expect(shelfA.pick is Series)
    #expect(shelfA.pick?.title == "The Wire")
    #expect(shelves[1].pick is ShortFeature)
    #expect(Set(shelfA.favorites.map(\.title)) == ["Zidane", "The Office"])
    let zidaneHere = try #require(try fresh.fetch(FetchRequest<ShortFeature>()).first)
    #expect(zidaneHere.shelf?.name == "B")
    #expect(zidaneHere.fans.map(\.name) == ["A"])
    // Predicates through those relationships.
    let withSeries = try fresh.fetch(FetchRequest<Shelf>(format: "ANY items.year > 2001"))
    #expect(Set(withSeries.map(\.name)) == ["A", "B"])
    let onA = try fresh.fetch(FetchRequest<Media>(format: "shelf.name == 'A'", sortDescriptors: [QuerySort("title")]))
    #expect(onA.map(\.title) == ["Heat", "The Wire"])
    let picked = try fresh.fetch(FetchRequest<Shelf>(format: "pick.title == 'Zidane'"))
    #expect(picked.map(\.name) == ["B"])
    let seriesFans = try fresh.fetch(FetchRequest<Series>(format: "ANY fans.name == 'A'"))
    #expect(seriesFans.map(\.title) == ["The Office"])
  }

  /// Aggregates span the hierarchy; a uniqueness constraint declared on the parent holds across its
  /// sub-entities.
  static func aggregatesAndConstraintsSpanTheHierarchy(_ backend: ConformanceBackend) async throws {
    let fresh = try InheritanceStore(backend).fresh()
    var sum = FetchRequest<Media>()
    sum.propertiesToFetch = [
      .expression(name: "total", expression: try QueryExpression(format: "sum:(year)"), resultType: .int64)
    ]
    let rows = try fresh.fetchDictionaries(sum)
    #expect(rows.first?["total"] == .int(1995 + 2002 + 2006 + 2001 + 2005))

    // A uniqueness constraint declared on the parent holds across its sub-entities.
    let clash = Feature(context: fresh)
    clash.title = "The Wire"
    clash.year = 2020
    expectStoreError(.constraintConflict) { try fresh.save() }
    fresh.rollback()
    #expect(try fresh.count(for: FetchRequest<Media>()) == 5)
  }

  /// Batch update and delete over the hierarchy; a derived count over a relationship to the parent
  /// follows its sub-entities' objects.
  static func batchesSpanTheHierarchy(_ backend: ConformanceBackend) async throws {
    let s = try InheritanceStore(backend)
    let fresh = try s.fresh()
    let updated = try fresh.execute(
      .update(
        entityName: "Media", predicate: try QueryPredicate(format: "year < 2002"),
        propertiesToUpdate: ["year": try QueryExpression(format: "year + 100")]))
    #expect(updated.count == 2)
    let check = try s.fresh()
    let years = try check.fetch(FetchRequest<Media>(sortDescriptors: [QuerySort("title")])).map(\.year)
    #expect(years == [2101, 2095, 2005, 2002, 2006])
    let deleted = try check.execute(.delete(entityName: "Feature", predicate: try QueryPredicate(format: "year > 2050")))
    #expect(deleted.count == 2)
    let left = try s.fresh()
    #expect(
      try left.fetch(FetchRequest<Media>(sortDescriptors: [QuerySort("title")])).map(\.title) == [
        "The Office", "The Wire", "Zidane",
      ])
    // A derived count over a relationship to the parent follows its sub-entities' objects.
    #expect(try left.fetch(FetchRequest<Shelf>(sortDescriptors: [QuerySort("name")])).map(\.itemCount) == [1, 1])
  }

  /// Deleting a picked object clears the reference to it.
  static func deletingAPickedObjectClearsTheReference(_ backend: ConformanceBackend) async throws {
    let s = try InheritanceStore(backend)
    let left = try s.fresh()
    _ = try left.execute(.delete(entityName: "Feature", predicate: try QueryPredicate(format: "year < 2002")))
    let wireLeft = try #require(try left.fetch(FetchRequest<Series>(format: "title == 'The Wire'")).first)
    left.delete(wireLeft)
    try left.save()
    let last = try s.fresh()
    let shelfLast = try #require(try last.fetch(FetchRequest<Shelf>(format: "name == 'A'")).first)
    #expect(shelfLast.pick == nil)
    #expect(shelfLast.items.isEmpty)
    #expect(shelfLast.itemCount == 0)
  }

  /// A copy holds each object once, as its own entity, with its relationships.
  static func aCopyHoldsEachObjectOnce(_ backend: ConformanceBackend) async throws {
    let s = try InheritanceStore(backend)
    let container = s.container
    let left = try s.fresh()
    _ = try left.execute(
      .delete(entityName: "Media", predicate: try QueryPredicate(format: "title IN {'Heat', 'Amélie', 'The Wire'}")))
    let copy = StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation())
    #expect(try container.migratePersistentStore(to: copy) == 4)
    let copied = container.newBackgroundContext()
    let copiedMedia = try copied.performAndWait {
      try copied.fetch(FetchRequest<Media>(sortDescriptors: [QuerySort("title")])).map {
        "\($0.title) \(String(describing: type(of: $0))) \($0.shelf?.name ?? "-") \($0.fans.count)"
      }
    }
    #expect(copiedMedia == ["The Office Series - 1", "Zidane ShortFeature B 1"])
  }

  /// Optimistic locking over a hierarchy (see ``Conformance/versionsInAHierarchy(_:)``).
  static func versionsInAHierarchy(_ backend: ConformanceBackend) async throws {
    try Conformance.versionsInAHierarchy(backend)
  }

  /// Migrations that add a sub-entity (backends with migration).
  static func addingASubentityMigrates(_ backend: ConformanceBackend) async throws {
    guard backend.capabilities.contains(.migration) else { return }
    try Conformance.addingASubentityMigrates(backend)
  }

  /// Migrations of existing hierarchies (backends with migration).
  static func existingHierarchiesMigrate(_ backend: ConformanceBackend) async throws {
    guard backend.capabilities.contains(.migration) else { return }
    try Conformance.existingHierarchiesMigrate(backend)
  }

  /// A sub-entity removed clears the references to its objects (backends with hierarchy migration).
  static func removingASubentityClearsReferences(_ backend: ConformanceBackend) async throws {
    guard backend.capabilities.isSuperset(of: [.migration, .hierarchyMigration]) else { return }
    try Conformance.removingASubentityClearsReferences(backend)
  }
}

extension Conformance {
  /// Optimistic locking over a hierarchy, in one save: a sub-entity's object updated at a stale
  /// version, one another writer deleted, a versioned delete of a changed object, and an ID naming a
  /// sibling entity with another object's key are each listed as a conflict beside a valid update, and
  /// nothing is written (a deletion through such an ID deletes nothing); the right versions then go through.
  static func versionsInAHierarchy(_ backend: ConformanceBackend) throws {
    let model = try ObjectModel(types: InheritanceModel.types)
    let store = try backend.factory.openStore(at: try backend.makeLocation(), model: model, options: StoreOptions())
    defer { store.close() }
    let ids = try filmsAnotherWriterChanged(in: store)
    let (heat, zidane, wire, amelie) = (ids[0], ids[1], ids[2], ids[4])
    let before = try ids.map { try store.snapshot(for: $0, generation: nil) }
    let wireVersion = try #require(before[2]?.version)
    let zidaneVersion = try #require(before[1]?.version)
    let amelieVersion = try #require(before[4]?.version)
    #expect(before[3] == nil && zidaneVersion > 1 && amelieVersion > 1)

    try staleVersionsInAHierarchyWriteNothing(in: store, ids: ids, before: before)

    _ = try store.save(
      ChangeSet(
        updated: [
          ObjectChange(
            objectID: wire, attributes: ["The Wire", 2002, 6], toOne: [nil], expectedVersion: wireVersion,
            changedKeys: ["seasons"]),
          ObjectChange(
            objectID: zidane, attributes: ["Zidane", 2006, 90, "Venice"], toOne: [nil], expectedVersion: zidaneVersion,
            changedKeys: ["runtime", "festival"]),
        ],
        deleted: [ObjectDeletion(objectID: amelie, expectedVersion: amelieVersion)]))
    #expect(try store.snapshot(for: wire, generation: nil)?.attributes == ["The Wire", 2002, 6])
    #expect(try store.snapshot(for: zidane, generation: nil)?.attributes == ["Zidane", 2006, 90, "Venice"])
    #expect(try store.snapshot(for: amelie, generation: nil) == nil)
    #expect(try store.snapshot(for: heat, generation: nil) == before[0])
  }

  /// Heat, Zidane, The Wire, The Office and Amélie across the hierarchy; then another writer changes Zidane
  /// and Amélie and deletes The Office. Their IDs, in that order.
  private static func filmsAnotherWriterChanged(in store: any PersistentStore) throws -> [ObjectID] {
    let rows: [(String, [Value])] = [
      ("Feature", ["Heat", 1995, 170]), ("ShortFeature", ["Zidane", 2006, 90, "Cannes"]),
      ("Series", ["The Wire", 2002, 5]), ("Series", ["The Office", 2005, 9]), ("Feature", ["Amélie", 2001, 122]),
    ]
    let temporary = rows.map { ObjectID.makeTemporary(entityName: $0.0) }
    let saved = try store.save(
      ChangeSet(
        inserted: zip(temporary, rows).map { ObjectChange(objectID: $0, attributes: $1.1, toOne: [nil]) }))
    let ids = try temporary.map { try #require(saved.permanentIDs[$0]) }
    #expect(ids.map(\.entityName) == rows.map(\.0))
    _ = try store.save(
      ChangeSet(
        updated: [
          ObjectChange(
            objectID: ids[1], attributes: ["Zidane", 2006, 91, "Berlin"], toOne: [nil], changedKeys: ["runtime", "festival"]),
          ObjectChange(objectID: ids[4], attributes: ["Amélie", 2001, 123], toOne: [nil], changedKeys: ["runtime"]),
        ],
        deleted: [ObjectDeletion(objectID: ids[3])]))
    return ids
  }

  /// A stale Zidane, a deleted Office, Heat through the sibling entity's ID and a stale deletion of Amélie,
  /// beside a valid update of The Wire: each listed as a conflict, with the stored and the refused values,
  /// and nothing written; nor does a deletion through the sibling's ID delete Heat.
  private static func staleVersionsInAHierarchyWriteNothing(
    in store: any PersistentStore, ids: [ObjectID], before: [Snapshot?]
  ) throws {
    let (heat, zidane, wire, office, amelie) = (ids[0], ids[1], ids[2], ids[3], ids[4])
    let (wireVersion, zidaneVersion, amelieVersion) = (before[2]?.version ?? 0, before[1]?.version ?? 0, before[4]?.version ?? 0)
    let heatAsSeries = ObjectID(entityName: "Series", storeIdentifier: store.identifier, primaryKey: heat.primaryKey ?? 0)
    let refused = expectStoreError(.optimisticLockConflict, "stale versions in a hierarchy") {
      try store.save(
        ChangeSet(
          updated: [
            ObjectChange(
              objectID: wire, attributes: ["The Wire", 2002, 6], toOne: [nil], expectedVersion: wireVersion,
              changedKeys: ["seasons"]),
            ObjectChange(
              objectID: zidane, attributes: ["Zidane", 2006, 90, "Venice"], toOne: [nil], expectedVersion: 1,
              changedKeys: ["festival"]),
            ObjectChange(
              objectID: office, attributes: ["The Office", 2005, 10], toOne: [nil], expectedVersion: 1,
              changedKeys: ["seasons"]),
            ObjectChange(objectID: heatAsSeries, attributes: ["Heat", 1995, 3], toOne: [nil], changedKeys: ["seasons"]),
          ],
          deleted: [ObjectDeletion(objectID: amelie, expectedVersion: 1)]))
    }
    let conflicts = refused?.conflicts ?? []
    #expect(Set(conflicts.compactMap(\.objectID)) == [zidane, office, heatAsSeries, amelie])
    #expect(conflicts.first { $0.objectID == zidane }?.storedValues == ["Berlin"])
    #expect(conflicts.first { $0.objectID == zidane }?.values == ["Venice"])
    #expect(conflicts.first { $0.objectID == office }?.storedValues == [])
    #expect(conflicts.first { $0.objectID == heatAsSeries }?.storedValues == [])
    let message = refused?.message ?? ""
    for expected in [
      "\(zidane) is at version \(zidaneVersion), expected 1", "\(office) no longer exists",
      "\(heatAsSeries) no longer exists", "\(amelie) is at version \(amelieVersion), expected 1",
    ] {
      #expect(message.contains(expected), "\(message)")
    }
    #expect(try ids.map { try store.snapshot(for: $0, generation: nil) } == before, "nothing was written")
    _ = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: heatAsSeries)]))
    #expect(try store.snapshot(for: heat, generation: nil) == before[0])
  }
}
