import Foundation
import Strata
import StrataStoreKit
import Testing

/// The model versions of ``Conformance/existingHierarchiesMigrate(_:)``: `Movie` with the sub-entity
/// `Series`, changed one step after another.
enum HierarchyVersions {
  static let director = RelationshipDescription(name: "director", destination: "Director", inverse: "movies")

  static func director(born: Bool, country: Bool = false) -> EntityDescription {
    EntityDescription(
      name: "Director",
      attributes: [AttributeDescription(name: "name", type: .string)]
        + (born ? [AttributeDescription(name: "born", type: .int64, isOptional: true)] : [])
        + (country ? [AttributeDescription(name: "country", type: .string, defaultValue: "US")] : []),
      relationships: [RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true)])
  }

  /// Version 1: `Movie` (title, year, director) and `Series: Movie` (seasons).
  static func v1() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [AttributeDescription(name: "title", type: .string), AttributeDescription(name: "year", type: .int64)],
        relationships: [director], uniquenessConstraints: [["title"]]),
      EntityDescription(
        name: "Series", attributes: [AttributeDescription(name: "seasons", type: .int64)], parentEntity: "Movie"),
      director(born: false),
    ])
  }

  static let tagline = AttributeDescription(name: "tagline", type: .string, isOptional: true)
  static let series = EntityDescription(
    name: "Series",
    attributes: [
      AttributeDescription(name: "seasonCount", type: .int64, renamingIdentifier: "seasons"),
      AttributeDescription(name: "network", type: .string, defaultValue: "NBC"),
    ], parentEntity: "Movie")

  /// Version 2: the root gains `tagline`, the sub-entity renames `seasons` and gains `network` (default
  /// "NBC"), a new `Miniseries` below `Series`, and `Director` (outside the hierarchy) gains `born`.
  static func v2(miniseries: Bool = true) throws -> ObjectModel {
    try ObjectModel(
      entities: [
        EntityDescription(
          name: "Movie",
          attributes: [
            AttributeDescription(name: "title", type: .string), AttributeDescription(name: "year", type: .int64), tagline,
          ],
          relationships: [director], uniquenessConstraints: [["title"]]),
        series,
        director(born: true),
      ]
        + (miniseries
          ? [
            EntityDescription(
              name: "Miniseries", attributes: [AttributeDescription(name: "episodes", type: .int64, isOptional: true)],
              parentEntity: "Series")
          ] : []))
  }

  /// Version 4: `Movie` moves under a new abstract root `Media`, which takes `title` and adds `rating`.
  static func v4() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Media",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "rating", type: .double, isOptional: true),
        ], isAbstract: true),
      EntityDescription(
        name: "Movie", attributes: [AttributeDescription(name: "year", type: .int64), tagline], relationships: [director],
        uniquenessConstraints: [["title"]], parentEntity: "Media"),
      series,
      director(born: true),
    ])
  }

  /// Version 5: `Series` leaves the hierarchy (a plain entity with the properties it had, but no director).
  static func v5() throws -> ObjectModel {
    var model = try v4().entities.filter { $0.name != "Series" }
    model.append(
      EntityDescription(
        name: "Series",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "rating", type: .double, isOptional: true),
          AttributeDescription(name: "year", type: .int64), tagline,
        ] + series.attributes))
    return try ObjectModel(entities: model)
  }

  /// Version 6: only `Director`, outside the hierarchy, changes (gains `country`, default "US").
  static func v6() throws -> ObjectModel {
    try ObjectModel(entities: try v5().entities.map { $0.name == "Director" ? director(born: true, country: true) : $0 })
  }
}

/// One run of the hierarchy-migration steps over one store: what it stored, what the test expects of
/// each object after each step (its entity and values, in the entity's attribute order), and the steps.
final class HierarchyMigrationRun {
  var store: any PersistentStore
  var model: ObjectModel
  let mannID: ObjectID
  var keys: [String: Int64] = [:]
  var expected: [String: (entity: String, attributes: [Value])] = [
    "Heat": ("Movie", ["Heat", 1995]), "Thief": ("Movie", ["Thief", 1981]),
    "Miami Vice": ("Series", ["Miami Vice", 1984, 5]),
  ]
  var directed: Set<String> = ["Heat", "Miami Vice"]
  var miniKey: Int64?
  var vice: (entity: String, attributes: [Value])?

  /// A store of ``HierarchyVersions/v1()``: Mann directing Heat (a movie) and Miami Vice (a series), and
  /// Thief without a director.
  init(_ backend: ConformanceBackend) throws {
    let url = try backend.makeLocation()
    model = try HierarchyVersions.v1()
    store = try backend.factory.openStore(at: url, model: model, options: StoreOptions())
    let mann = ObjectID.makeTemporary(entityName: "Director")
    let temporary = [
      "Heat": ObjectID.makeTemporary(entityName: "Movie"), "Thief": ObjectID.makeTemporary(entityName: "Movie"),
      "Miami Vice": ObjectID.makeTemporary(entityName: "Series"),
    ]
    let saved = try store.save(
      ChangeSet(inserted: [
        ObjectChange(objectID: mann, attributes: ["Michael Mann"], toOne: []),
        ObjectChange(objectID: temporary["Heat"]!, attributes: ["Heat", 1995], toOne: [mann]),
        ObjectChange(objectID: temporary["Thief"]!, attributes: ["Thief", 1981], toOne: [nil]),
        ObjectChange(objectID: temporary["Miami Vice"]!, attributes: ["Miami Vice", 1984, 5], toOne: [mann]),
      ]))
    mannID = try #require(saved.permanentIDs[mann])
    for (title, id) in temporary { keys[title] = try #require(saved.permanentIDs[id]?.primaryKey) }
  }

  /// Every object of `root` has its expected entity, key and values; Series alone holds its own; Mann's
  /// movies are the directed ones, with their entities.
  func check(_ step: String, root: String = "Movie", seriesInHierarchy: Bool = true) throws {
    let rows = try Conformance.rows(store, root)
    #expect(Set(rows.keys) == Set(expected.keys), "\(step): the objects of \(root)")
    for (title, object) in expected {
      let row = rows[title]
      #expect(row?.objectID.entityName == object.entity, "\(step): the entity of \(title)")
      #expect(row?.objectID.primaryKey == keys[title], "\(step): the key of \(title)")
      #expect(row.map { Array($0.attributes) } == object.attributes, "\(step): the values of \(title)")
    }
    var own = FetchDescription(entityName: "Series")
    own.includesSubentities = false
    if seriesInHierarchy {
      #expect(
        try store.count(own) == expected.values.count { $0.entity == "Series" }, "\(step): the objects of Series alone")
    }
    let related = try store.relatedObjectIDs(of: mannID, relationship: "movies", generation: nil)
    #expect(Set(related.compactMap(\.primaryKey)) == Set(directed.compactMap { keys[$0] }), "\(step): Mann's movies")
    #expect(
      related.allSatisfy { id in expected.first { keys[$0.key] == id.primaryKey }?.value.entity == id.entityName },
      "\(step): Mann's movies keep their entities")
  }

  /// A backend without the capability refuses the first step, naming an entity, and keeps its data.
  func refuseTheFirstStep() throws {
    let v2 = try HierarchyVersions.v2()
    let refused = expectStoreError(.unsupported) { try store.migrated(by: try ModelMigration(from: model, to: v2)) }
    #expect(refused?.entity != nil)
    try check("refused")
  }

  /// 1. Attributes added to the root and a sub-entity, one renamed, a sub-entity added below another,
  /// an entity outside the hierarchy changed.
  func addAttributesAndASubentity() throws {
    let v2 = try HierarchyVersions.v2()
    store = try store.migrated(by: try ModelMigration(from: model, to: v2))
    model = v2
    expected["Heat"]!.attributes.append(.null)
    expected["Thief"]!.attributes.append(.null)
    expected["Miami Vice"]!.attributes.insert(.null, at: 2)
    expected["Miami Vice"]!.attributes.append("NBC")
    try check("adding and renaming attributes")
    let director = try store.snapshots(for: [mannID], generation: nil)
    #expect(director.map(\.attributes) == [["Michael Mann", nil]])
    let mini = ObjectID.makeTemporary(entityName: "Miniseries")
    let clash = expectStoreError(.constraintConflict) {
      try store.save(
        ChangeSet(inserted: [
          ObjectChange(
            objectID: .makeTemporary(entityName: "Miniseries"), attributes: ["Heat", 2020, nil, 1, "HBO", 6], toOne: [nil])
        ]))
    }
    #expect(clash != nil, "the root's uniqueness constraint holds across the migrated hierarchy")
    let added = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: mini, attributes: ["Mini", 2020, nil, 1, "HBO", 6], toOne: [mannID])]))
    let miniKey = try #require(added.permanentIDs[mini]?.primaryKey)
    self.miniKey = miniKey
    #expect(!keys.values.contains(miniKey), "keys stay unique across the hierarchy")
    keys["Mini"] = miniKey
    expected["Mini"] = ("Miniseries", ["Mini", 2020, nil, 1, "HBO", 6])
    directed.insert("Mini")
    try check("a sub-entity added below a sub-entity")
  }

  /// 2. A sub-entity removed: its objects go, relationships to them too.
  func removeASubentity() throws {
    let v3 = try HierarchyVersions.v2(miniseries: false)
    store = try store.migrated(by: try ModelMigration(from: model, to: v3))
    model = v3
    expected["Mini"] = nil
    directed.remove("Mini")
    try check("a sub-entity removed")
    let gone = ObjectID(entityName: "Movie", storeIdentifier: store.identifier, primaryKey: try #require(miniKey))
    #expect(try store.snapshots(for: [gone], generation: nil).isEmpty)
  }

  /// 3. The root moves under a new abstract parent, which takes `title` and adds `rating`.
  func moveTheRootUnderANewParent() throws {
    let v4 = try HierarchyVersions.v4()
    store = try store.migrated(by: try ModelMigration(from: model, to: v4))
    model = v4
    for title in expected.keys { expected[title]!.attributes.insert(.null, at: 1) }
    try check("a new parent", root: "Media")
    try check("a new parent", root: "Movie")
    let collateral = ObjectID.makeTemporary(entityName: "Movie")
    let inserted = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: collateral, attributes: ["Collateral", nil, 2004, nil], toOne: [mannID])]))
    let collateralKey = try #require(inserted.permanentIDs[collateral]?.primaryKey)
    #expect(!keys.values.contains(collateralKey), "keys keep coming from the hierarchy's counter")
    keys["Collateral"] = collateralKey
    expected["Collateral"] = ("Movie", ["Collateral", nil, 2004, nil])
    directed.insert("Collateral")
    try check("an object added under the new parent", root: "Media")
  }

  /// 4. A sub-entity leaves its hierarchy: its objects become a plain entity's, with their keys.
  func letASubentityLeave() throws {
    let v5 = try HierarchyVersions.v5()
    store = try store.migrated(by: try ModelMigration(from: model, to: v5))
    model = v5
    vice = expected.removeValue(forKey: "Miami Vice")
    directed.remove("Miami Vice")
    try check("a sub-entity leaving", root: "Media", seriesInHierarchy: false)
    let series = try Conformance.rows(store, "Series")
    #expect(series.count == 1)
    #expect(series["Miami Vice"]?.objectID.primaryKey == keys["Miami Vice"])
    #expect(series["Miami Vice"].map { Array($0.attributes) } == vice?.attributes)
  }

  /// 5. An entity outside the hierarchy changes next to it: the hierarchy keeps its storage and objects.
  func changeAnUnrelatedEntity() throws {
    let v6 = try HierarchyVersions.v6()
    store = try store.migrated(by: try ModelMigration(from: model, to: v6))
    model = v6
    try check("an unrelated entity changed", root: "Media", seriesInHierarchy: false)
    #expect(try store.snapshots(for: [mannID], generation: nil).map(\.attributes) == [["Michael Mann", nil, "US"]])
    #expect(try Conformance.rows(store, "Series")["Miami Vice"].map { Array($0.attributes) } == vice?.attributes)
    let heist = ObjectID.makeTemporary(entityName: "Movie")
    let later = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: heist, attributes: ["Heist", nil, 2001, nil], toOne: [mannID])]))
    #expect(later.permanentIDs[heist]?.primaryKey.map { !keys.values.contains($0) } == true)
    let clashing = expectStoreError(.constraintConflict) {
      try store.save(
        ChangeSet(inserted: [
          ObjectChange(objectID: .makeTemporary(entityName: "Movie"), attributes: ["Heat", nil, 2001, nil], toOne: [nil])
        ]))
    }
    #expect(clashing != nil, "the kept hierarchy's uniqueness constraint still holds")
  }

  /// Refused, the store unchanged: two existing tables merged into one hierarchy (Series back under
  /// Movie: their keys could clash), and an entity that has objects becoming abstract.
  func refuseMergesAndAbstractions() throws {
    let v6 = model
    let before = try Conformance.rows(store, "Media")
    let merged = try ObjectModel(
      entities: v6.entities.map { $0.name == "Series" ? HierarchyVersions.series : $0 })
    let merging = expectStoreError(.unsupported) { try store.migrated(by: try ModelMigration(from: v6, to: merged)) }
    #expect(merging?.message.contains("Series") == true, "\(merging?.message ?? "")")
    let abstract = try ObjectModel(
      entities: v6.entities.map { entity in
        guard entity.name == "Movie" else { return entity }
        return EntityDescription(
          name: "Movie", attributes: entity.attributes, relationships: entity.relationships,
          uniquenessConstraints: entity.uniquenessConstraints, parentEntity: "Media", isAbstract: true)
      })
    let abstracting = expectStoreError(.unsupported) { try store.migrated(by: try ModelMigration(from: v6, to: abstract)) }
    #expect(abstracting?.entity == "Movie")
    #expect(try Conformance.rows(store, "Media") == before)
  }
}

extension Conformance {
  /// Models that already have a hierarchy migrate (``Conformance/Capabilities/hierarchyMigration``):
  /// attributes added to a root (inherited) and a sub-entity, one renamed, a sub-entity added below
  /// another and an unrelated entity changed; a sub-entity removed (its objects dropped, relationships to
  /// them gone); an existing root moved under a new abstract parent that takes an attribute; a sub-entity
  /// leaving its hierarchy; an entity outside the hierarchy changing next to it. After each step every
  /// object keeps its primary key and its entity, its values are what the test computes from what it
  /// stored, fetches of a parent include its sub-entities, and relationships hold what they held. A
  /// backend without the capability refuses the first step with `.unsupported` and keeps its data.
  static func existingHierarchiesMigrate(_ backend: ConformanceBackend) throws {
    let run = try HierarchyMigrationRun(backend)
    defer { run.store.close() }
    try run.check("before")
    guard backend.capabilities.contains(.hierarchyMigration) else { return try run.refuseTheFirstStep() }
    try run.addAttributesAndASubentity()
    try run.removeASubentity()
    try run.moveTheRootUnderANewParent()
    try run.letASubentityLeave()
    try run.changeAnUnrelatedEntity()
    try run.refuseMergesAndAbstractions()
  }
}

extension Conformance {
  /// Removing a sub-entity drops its objects, as Core Data's inferred mapping drops an entity that has no
  /// destination, and clears what pointed at them: a to-one from another entity becomes nil, links of a
  /// many-to-many relationship go, and an ordered list keeps its other targets in their order. Part of the
  /// inheritance area for backends with ``Capabilities/hierarchyMigration``.
  static func removingASubentityClearsReferences(_ backend: ConformanceBackend) throws {
    let fans = RelationshipDescription(name: "fans", destination: "Shelf", inverse: "favorites", isToMany: true)
    let queuedOn = RelationshipDescription(name: "queuedOn", destination: "Shelf", inverse: "queue", isToMany: true)
    let movie = EntityDescription(
      name: "Movie", attributes: [AttributeDescription(name: "title", type: .string)], relationships: [fans, queuedOn])
    let shelf = EntityDescription(
      name: "Shelf", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [
        RelationshipDescription(name: "pick", destination: "Movie"),
        RelationshipDescription(name: "favorites", destination: "Movie", inverse: "fans", isToMany: true),
        RelationshipDescription(name: "queue", destination: "Movie", inverse: "queuedOn", isToMany: true, isOrdered: true),
      ], indexes: [["pick"]])
    let remake = EntityDescription(
      name: "Remake", attributes: [AttributeDescription(name: "original", type: .string, isOptional: true)],
      parentEntity: "Movie")
    let v1 = try ObjectModel(entities: [movie, remake, shelf])
    let v2 = try ObjectModel(entities: [movie, shelf])
    let store = try backend.factory.openStore(at: try backend.makeLocation(), model: v1, options: StoreOptions())
    let heat = ObjectID.makeTemporary(entityName: "Movie")
    let heat2 = ObjectID.makeTemporary(entityName: "Remake")
    let a = ObjectID.makeTemporary(entityName: "Shelf")
    let b = ObjectID.makeTemporary(entityName: "Shelf")
    var changes = ChangeSet(
      inserted: [
        ObjectChange(objectID: heat, attributes: ["Heat"], toOne: []),
        ObjectChange(objectID: heat2, attributes: ["Heat 2", "Heat"], toOne: []),
        ObjectChange(objectID: a, attributes: ["A"], toOne: [heat2]),
        ObjectChange(objectID: b, attributes: ["B"], toOne: [heat]),
      ],
      linkChanges: [heat, heat2].flatMap {
        [
          LinkChange(entityName: "Shelf", relationship: "favorites", source: a, target: $0, isInsertion: true),
          LinkChange(entityName: "Shelf", relationship: "queue", source: b, target: $0, isInsertion: true),
        ]
      })
    changes.orderedLists = [OrderedListChange(entityName: "Shelf", relationship: "queue", source: b, targets: [heat2, heat])]
    let saved = try store.save(changes)
    let ids = try [heat, heat2, a, b].map { try #require(saved.permanentIDs[$0]) }
    #expect(Set(try store.relatedObjectIDs(of: ids[2], relationship: "favorites", generation: nil)) == [ids[0], ids[1]])
    #expect(try store.relatedObjectIDs(of: ids[3], relationship: "queue", generation: nil) == [ids[1], ids[0]])

    let migrated = try store.migrated(by: try ModelMigration(from: v1, to: v2))
    defer { migrated.close() }
    #expect(try migrated.count(FetchDescription(entityName: "Movie")) == 1)
    let shelves = try rows(migrated, "Shelf")
    let heatID = ObjectID(entityName: "Movie", storeIdentifier: migrated.identifier, primaryKey: ids[0].primaryKey ?? 0)
    #expect(shelves["A"]?.toOne == [nil], "a to-one to a dropped object is cleared")
    #expect(shelves["B"]?.toOne == [heatID])
    let aID = try #require(shelves["A"]?.objectID)
    #expect(try migrated.relatedObjectIDs(of: aID, relationship: "favorites", generation: nil) == [heatID])
    #expect(try migrated.relatedObjectIDs(of: heatID, relationship: "fans", generation: nil) == [aID])
    let bID = try #require(shelves["B"]?.objectID)
    #expect(try migrated.relatedObjectIDs(of: bID, relationship: "queue", generation: nil) == [heatID])
    #expect(try migrated.relatedObjectIDs(of: heatID, relationship: "queuedOn", generation: nil) == [bID])
    let unpicked = FetchDescription(entityName: "Shelf", predicate: try QueryPredicate(format: "pick == nil"))
    #expect(try migrated.count(unpicked) == 1, "the cleared to-one reads as nil in a query (and its index)")
    let picked = FetchDescription(entityName: "Shelf", predicate: try QueryPredicate(format: "pick != nil"))
    #expect(try migrated.count(picked) == 1)
    let pickedHeat = FetchDescription(
      entityName: "Shelf", predicate: try QueryPredicate(format: "pick == %@", Value.objectID(heatID)))
    #expect(try migrated.count(pickedHeat) == 1)
  }
}
