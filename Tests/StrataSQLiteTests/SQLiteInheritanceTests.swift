import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// Media (abstract, unique title) ← Film (runtime, unique code among films) ← Short; Media ← Series.
enum HierarchySample {
  static func model() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Media", attributes: [AttributeDescription(name: "title", type: .string)],
        uniquenessConstraints: [["title"]], isAbstract: true),
      EntityDescription(
        name: "Film",
        attributes: [
          AttributeDescription(name: "runtime", type: .int32),
          AttributeDescription(name: "code", type: .string, isOptional: true),
        ], uniquenessConstraints: [["code"]], parentEntity: "Media"),
      EntityDescription(
        name: "Short", attributes: [AttributeDescription(name: "festival", type: .string)], parentEntity: "Film"),
      EntityDescription(
        name: "Series", attributes: [AttributeDescription(name: "seasons", type: .int16)], parentEntity: "Media"),
    ])
  }

  static func insert(_ entity: String, _ values: [Value]) -> ObjectChange {
    ObjectChange(objectID: .makeTemporary(entityName: entity), attributes: values, toOne: [])
  }
}

@Suite("SQLite entity hierarchies")
struct SQLiteInheritanceTests {
  @Test func oneTablePerHierarchyAndAViewPerSubEntity() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try SQLiteStore(url: url, model: try HierarchySample.model())
    _ = try store.save(
      ChangeSet(inserted: [
        HierarchySample.insert("Film", ["Heat", 170, "H1"]),
        HierarchySample.insert("Series", ["The Wire", 5]),
        HierarchySample.insert("Short", ["Zidane", 90, .null, "Cannes"]),
      ]))
    store.close()
    let tables = try rawStrings(
      url,
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%' ORDER BY name"
    )
    #expect(tables == ["Media"])
    let views = try rawStrings(url, "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")
    #expect(views == ["Film", "Series", "Short"])
    // The rows read plainly, with the entity each was inserted as.
    #expect(
      try rawStrings(url, "SELECT _entity || ':' || title FROM Media ORDER BY _pk") == [
        "Film:Heat", "Series:The Wire", "Short:Zidane",
      ])
    #expect(try rawStrings(url, "SELECT title FROM Film ORDER BY _pk") == ["Heat", "Zidane"])
    #expect(try rawStrings(url, "SELECT festival FROM Short") == ["Cannes"])
    // The film-only constraint is a partial index over films and shorts; the parent's covers every row.
    let indexes = try rawStrings(url, "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '%UNIQUE%' ORDER BY name")
    #expect(indexes.contains { $0.contains("\"Film_unique_2\"") && $0.contains("WHERE \"_entity\" IN ('Film', 'Short')") })
    #expect(indexes.contains { $0.contains("\"Media_unique_1\"") && !$0.contains("WHERE") })
  }

  @Test func constraintsOfASubEntityHoldAmongItsOwnRowsOnly() throws {
    let directory = try TemporaryDirectory()
    let store = try SQLiteStore(url: directory.file(), model: try HierarchySample.model())
    _ = try store.save(ChangeSet(inserted: [HierarchySample.insert("Film", ["Heat", 170, "X"])]))
    // Another film with code X clashes; a title used by a film clashes for a series too.
    let sameCode = #expect(throws: StoreError.self) {
      try store.save(ChangeSet(inserted: [HierarchySample.insert("Short", ["Zidane", 90, "X", "Cannes"])]))
    }
    #expect(sameCode?.code == .constraintConflict)
    let sameTitle = #expect(throws: StoreError.self) {
      try store.save(ChangeSet(inserted: [HierarchySample.insert("Series", ["Heat", 1])]))
    }
    #expect(sameTitle?.code == .constraintConflict)
    let abstract = #expect(throws: StoreError.self) {
      try store.save(ChangeSet(inserted: [HierarchySample.insert("Media", ["Loose"])]))
    }
    #expect(abstract?.code == .validation)
    #expect(try store.snapshots(FetchDescription(entityName: "Media")).map(\.objectID.entityName) == ["Film"])
  }
}
