import FaveFlicks
import Foundation
import Strata
import StrataLMDB
import StrataSQLite
import StrataStoreKit
import Testing

/// A FaveFlicks version 3 store (series a sub-entity of movies) migrates to a model that changes the
/// hierarchy: movies gain a tagline (inherited by series), series a network.
@Suite("FaveFlicks version 3 stores migrate with their hierarchy")
struct VersionThreeHierarchyMigrationTests {
  /// Version 3 with `Movie.tagline` (optional) and `Series.network` (default "HBO").
  static func changed(_ v3: ObjectModel) throws -> ObjectModel {
    try ObjectModel(
      entities: v3.entities.map { entity in
        // A sub-entity's inherited properties are redeclared unchanged; the model merges them.
        var added: [AttributeDescription] = []
        switch entity.name {
        case "Movie": added = [AttributeDescription(name: "tagline", type: .string, isOptional: true)]
        case "Series": added = [AttributeDescription(name: "network", type: .string, defaultValue: "HBO")]
        default: break
        }
        return EntityDescription(
          name: entity.name, attributes: entity.attributes + added, relationships: entity.relationships,
          uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes,
          renamingIdentifier: entity.renamingIdentifier, parentEntity: entity.parentEntity, isAbstract: entity.isAbstract)
      })
  }

  @Test(arguments: [
    (StoreType.sqlite, "FaveFlicks-v2.sqlite"), (.lmdb, "FaveFlicks-v2.lmdb"),
  ])
  func aVersionThreeStoreWithSeriesMigrates(_ type: StoreType, _ fixture: String) throws {
    let url = try VersionTwoStoreTests.copy(fixture)
    let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory()])
    let description = StoreDescription(type: type, url: url)
    let library = MovieLibrary(container: try MovieLibrary.makeContainer(store: description, registry: registry))
    _ = try library.add(title: "Twin Peaks", genre: "Mystery", releaseDate: try ReleaseDate.parse("1990-04-08"), seasons: 3)
    try library.watched(title: "Twin Peaks", on: try ReleaseDate.parse("2024-02-01"))
    let listed = try library.list()
    library.container.close()

    let v3 = try MovieLibrary.makeModel()
    let store = try registry.openStore(type, at: url, model: v3, options: StoreOptions())
    guard case .snapshots(let before) = try store.fetch(FetchDescription(entityName: "Movie"), generation: nil) else {
      Issue.record("expected snapshots")
      return
    }
    let v4 = try Self.changed(v3)
    #expect(v4.entity(named: "Series")?.attributes.last?.name == "network")
    #expect(v4.entity(named: "Series")?.attribute(named: "tagline") != nil)
    let migrated = try store.migrated(by: try ModelMigration(from: v3, to: v4))
    defer { migrated.close() }
    guard case .snapshots(let after) = try migrated.fetch(FetchDescription(entityName: "Movie"), generation: nil) else {
      Issue.record("expected snapshots")
      return
    }
    #expect(after.map(\.objectID.primaryKey) == before.map(\.objectID.primaryKey))
    #expect(after.map(\.objectID.entityName) == before.map(\.objectID.entityName))
    #expect(after.filter { $0.objectID.entityName == "Series" }.count == 1)
    let movie = try #require(v4.entity(named: "Movie"))
    let series = try #require(v4.entity(named: "Series"))
    let titleIndex = try #require(movie.attributeIndex(named: "title"))
    let ratingIndex = try #require(movie.attributeIndex(named: "rating"))
    for (old, new) in zip(before, after) {
      let entity = new.objectID.entityName == "Series" ? series : movie
      #expect(new.attributes[titleIndex] == old.attributes[titleIndex])
      #expect(new.attributes[ratingIndex] == old.attributes[ratingIndex])
      #expect(new.attributes[try #require(entity.attributeIndex(named: "tagline"))] == .null)
      if entity.name == "Series" {
        #expect(new.attributes[try #require(entity.attributeIndex(named: "network"))] == "HBO")
        #expect(new.attributes[try #require(entity.attributeIndex(named: "seasons"))] == 3)
      }
    }
    // What the app listed before, read back from the migrated store: titles, ratings and watch counts.
    var read: [String: (rating: Int, watches: Int)] = [:]
    for snapshot in after {
      guard case .string(let title) = snapshot.attributes[titleIndex], case .int(let rating) = snapshot.attributes[ratingIndex]
      else { continue }
      let watches = try migrated.relatedObjectIDs(of: snapshot.objectID, relationship: "watches", generation: nil)
      read[title] = (Int(rating), watches.count)
    }
    #expect(read.count == listed.count)
    for record in listed {
      #expect(read[record.title]?.rating == record.rating, "\(record.title)")
      #expect(read[record.title]?.watches == record.watchCount, "\(record.title)")
    }
  }
}
