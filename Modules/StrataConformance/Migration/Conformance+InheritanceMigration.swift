import Foundation
import Strata
import StrataStoreKit
import Testing

enum HierarchyMigrationModels {
  static let title = AttributeDescription(name: "title", type: .string)
  static let year = AttributeDescription(name: "year", type: .int64)
  static let director = RelationshipDescription(name: "director", destination: "Director", inverse: "movies")
  static let movies = RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true)

  static func entities(movie: [AttributeDescription] = [title, year]) -> [EntityDescription] {
    [
      EntityDescription(name: "Movie", attributes: movie, relationships: [director], uniquenessConstraints: [["title"]]),
      EntityDescription(
        name: "Director", attributes: [AttributeDescription(name: "name", type: .string)], relationships: [movies]),
    ]
  }

  /// Version 2: `Remake`, a new sub-entity of `Movie`.
  static let remake = EntityDescription(
    name: "Remake", attributes: [AttributeDescription(name: "original", type: .string, isOptional: true)],
    parentEntity: "Movie")
}

extension Conformance {
  /// Adding a sub-entity to an entity that has objects, as a lightweight migration: the entity becomes the
  /// root of a hierarchy, its objects stay its own with their keys, the new sub-entity inherits its
  /// properties and constraints (checked across the hierarchy) and a fetch of the root includes it.
  static func addingASubentityMigrates(_ backend: ConformanceBackend) throws {
    let url = try backend.makeLocation()
    let v1 = try ObjectModel(entities: HierarchyMigrationModels.entities())
    let store = try backend.factory.openStore(at: url, model: v1, options: StoreOptions())
    let mann = ObjectID.makeTemporary(entityName: "Director")
    let saved = try store.save(
      ChangeSet(inserted: [
        ObjectChange(objectID: mann, attributes: ["Michael Mann"], toOne: []),
        ObjectChange(objectID: .makeTemporary(entityName: "Movie"), attributes: ["Heat", 1995], toOne: [mann]),
        ObjectChange(objectID: .makeTemporary(entityName: "Movie"), attributes: ["Thief", 1981], toOne: [mann]),
      ]))
    let mannID = try #require(saved.permanentIDs[mann])
    let before = try rows(store, "Movie")

    let v2 = try ObjectModel(entities: HierarchyMigrationModels.entities() + [HierarchyMigrationModels.remake])
    let migrated = try store.migrated(by: try ModelMigration(from: v1, to: v2))
    defer { migrated.close() }
    #expect(migrated.model == v2)
    #expect(try rows(migrated, "Movie") == before)
    #expect(try migrated.count(FetchDescription(entityName: "Remake")) == 0)

    let remake = ObjectID.makeTemporary(entityName: "Remake")
    let clash = expectStoreError(.constraintConflict) {
      try migrated.save(
        ChangeSet(inserted: [
          ObjectChange(objectID: .makeTemporary(entityName: "Remake"), attributes: ["Heat", 2030, "Heat"], toOne: [nil])
        ]))
    }
    #expect(clash != nil)
    let added = try migrated.save(
      ChangeSet(inserted: [ObjectChange(objectID: remake, attributes: ["Heat 2", 2030, "Heat"], toOne: [mannID])]))
    let remakeID = try #require(added.permanentIDs[remake])
    #expect(remakeID.entityName == "Remake")
    let all = try rows(migrated, "Movie")
    #expect(all.keys.sorted() == ["Heat", "Heat 2", "Thief"])
    #expect(all["Heat 2"]?.objectID == remakeID)
    #expect(all["Heat 2"]?.attributes == ["Heat 2", 2030, "Heat"])
    var own = FetchDescription(entityName: "Movie")
    own.includesSubentities = false
    #expect(try migrated.count(own) == 2)
    #expect(
      Set(try migrated.relatedObjectIDs(of: mannID, relationship: "movies", generation: nil)) == Set(all.values.map(\.objectID)))
  }
}
