import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// Version 1: Note (text unique, n indexed, payload) n—m Tag through `tags`, and Draft.
private func version1() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Note",
      attributes: [
        AttributeDescription(name: "text", type: .string),
        AttributeDescription(name: "n", type: .int64, isIndexed: true),
        AttributeDescription(name: "payload", type: .data, isOptional: true),
      ],
      relationships: [RelationshipDescription(name: "tags", destination: "Tag", inverse: "notes", isToMany: true)],
      uniquenessConstraints: [["text"]]),
    EntityDescription(
      name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "notes", destination: "Note", inverse: "tags", isToMany: true)]),
    EntityDescription(name: "Draft", attributes: [AttributeDescription(name: "body", type: .string)]),
  ])
}

/// Version 2: Note.n renamed rank (still indexed), Tag renamed Label, Draft removed, Folder added.
private func version2() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Note",
      attributes: [
        AttributeDescription(name: "text", type: .string),
        AttributeDescription(name: "rank", type: .int64, isIndexed: true, renamingIdentifier: "n"),
        AttributeDescription(name: "payload", type: .data, isOptional: true),
      ],
      relationships: [RelationshipDescription(name: "tags", destination: "Label", inverse: "notes", isToMany: true)],
      uniquenessConstraints: [["text"]]),
    EntityDescription(
      name: "Label", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "notes", destination: "Note", inverse: "tags", isToMany: true)],
      renamingIdentifier: "Tag"),
    EntityDescription(name: "Folder", attributes: [AttributeDescription(name: "title", type: .string)]),
  ])
}

/// A version 1 store holding notes one…three (n 1, 2, 2), tags red (on one and two) and blue (on two),
/// and a draft.
private func version1Store(
  _ dir: TemporaryDirectory, mapSize: Int = LMDBStore.defaultMapSize
) throws
  -> (LMDBStore, [String: ObjectID])
{
  let store = try LMDBStore(url: dir.store, model: try version1(), mapSize: mapSize)
  let notes = ["one": 1, "two": 2, "three": 2].sorted { $0.key < $1.key }.map { text, n in
    (
      text,
      ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: [.string(text), .int(Int64(n)), .null], toOne: [])
    )
  }
  let tags = ["red", "blue"].map { name in
    (name, ObjectChange(objectID: .makeTemporary(entityName: "Tag"), attributes: [.string(name)], toOne: []))
  }
  let all = Dictionary(uniqueKeysWithValues: (notes + tags).map { ($0.0, $0.1.objectID) })
  func link(_ note: String, _ tag: String) -> LinkChange? {
    guard let source = all[note], let target = all[tag] else { return nil }
    return LinkChange(entityName: "Note", relationship: "tags", source: source, target: target, isInsertion: true)
  }
  let result = try store.save(
    ChangeSet(
      inserted: notes.map(\.1) + tags.map(\.1)
        + [ObjectChange(objectID: .makeTemporary(entityName: "Draft"), attributes: [.string("wip")], toOne: [])],
      linkChanges: [link("one", "red"), link("two", "red"), link("two", "blue")].compactMap { $0 }))
  return (store, all.compactMapValues { result.permanentIDs[$0] })
}

/// The named databases `mdb_stat -a` lists.
private func databaseNames(_ dir: TemporaryDirectory) throws -> Set<String>? {
  let text = try mdbStat(["-a", dir.store.path])
  return Set(
    text.split(separator: "\n").compactMap { line in
      line.hasPrefix("Status of ") ? String(line.dropFirst("Status of ".count)) : nil
    })
}

/// The map size `mdb_stat -e` reports (the one the last commit recorded).
private func mapSize(_ dir: TemporaryDirectory) throws -> Int? {
  let text = try mdbStat(["-e", dir.store.path])
  let line = text.split(separator: "\n").first { $0.contains("Map size:") }
  return line.flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
}

private func values(_ store: any PersistentStore, _ entity: String, _ format: String? = nil) throws -> [String: Snapshot] {
  var request = FetchDescription(entityName: entity)
  if let format { request.predicate = try QueryPredicate(format: format) }
  guard case .snapshots(let rows) = try store.fetch(request, generation: nil) else { return [:] }
  return Dictionary(
    rows.compactMap { row in row.attributes.first?.stringValue.map { ($0, row) } }, uniquingKeysWith: { a, _ in a })
}

@Suite("LMDB migration")
struct LMDBMigrationTests {
  @Test func theEnvironmentHoldsTheNewModelsDatabases() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let (store, ids) = try version1Store(dir)
    let before = try store.currentHistoryToken()
    let migrated = try store.migrated(by: try ModelMigration(from: store.model, to: try version2()))
    #expect(migrated.model == (try version2()))
    #expect(migrated.identifier == store.identifier)
    #expect(try migrated.currentHistoryToken() == before)

    // Records, the renamed attribute's index, the unique index and the refilled join table.
    #expect(try values(migrated, "Note", "rank == 2").keys.sorted() == ["three", "two"])
    #expect(try values(migrated, "Label").keys.sorted() == ["blue", "red"])
    let two = try #require(ids["two"])
    let red = try #require(ids["red"])
    let labels = try migrated.relatedObjectIDs(of: two, relationship: "tags", generation: nil)
    #expect(labels.map(\.entityName) == ["Label", "Label"])
    #expect(Set(labels.compactMap(\.primaryKey)) == Set([ids["red"], ids["blue"]].compactMap { $0?.primaryKey }))
    let redLabel = ObjectID(entityName: "Label", storeIdentifier: store.identifier, primaryKey: red.primaryKey ?? -1)
    #expect(
      Set(try migrated.relatedObjectIDs(of: redLabel, relationship: "notes", generation: nil))
        == Set([ids["one"], two].compactMap { $0 }))
    #expect(try migrated.count(FetchDescription(entityName: "Folder")) == 0)
    let duplicate = storeError {
      _ = try migrated.save(
        ChangeSet(inserted: [
          ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: [.string("one"), .int(9), .null], toOne: [])
        ]))
    }
    #expect(duplicate?.code == .constraintConflict)
    // Keys continue after the migrated ones, under the renamed entity's counter too.
    let label = try migrated.save(
      ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Label"), attributes: [.string("green")], toOne: [])]
      ))
    #expect(label.permanentIDs.values.first?.primaryKey == 3)
    migrated.close()

    do {
      let names = try #require(try databaseNames(dir))
      for name in ["strata.meta", "strata.counters", "Note", "Note.text.unique", "Note.rank.index", "Label", "Folder"] {
        #expect(names.contains(name), "\(name) in \(names.sorted())")
      }
      for name in ["Tag", "Draft", "Note.n.index"] { #expect(!names.contains(name), "\(name) in \(names.sorted())") }
      let joinTables = names.filter { $0.hasSuffix(".links") || $0.hasSuffix(".links-reverse") }
      #expect(joinTables.count == 2 && joinTables.allSatisfy { !$0.hasPrefix("Tag.") }, "\(joinTables.sorted())")
    }
    let reopened = try LMDBStore(url: dir.store, model: nil)
    defer { reopened.close() }
    #expect(reopened.model == (try version2()))
    #expect(try values(reopened, "Note").count == 3)
  }

  @Test func aFailedMigrationLeavesTheOldModelAndData() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let (store, _) = try version1Store(dir)
    let namesBefore = try databaseNames(dir)
    var clashing = try version1().entities
    clashing[0] = EntityDescription(
      name: "Note", attributes: clashing[0].attributes, relationships: clashing[0].relationships,
      uniquenessConstraints: [["text"], ["n"]])
    clashing.removeLast()  // Draft removed: its database would be deleted last, had nothing clashed.
    let error = storeError {
      _ = try store.migrated(by: try ModelMigration(from: store.model, to: try ObjectModel(entities: clashing)))
    }
    #expect(error?.code == .constraintConflict)
    #expect(error?.conflicts.first?.keys == ["n"])
    #expect(error?.conflicts.first?.values == [.int(2)])

    // The store is still open with its handles: it reads and writes.
    #expect(try values(store, "Note").keys.sorted() == ["one", "three", "two"])
    _ = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Draft"), attributes: [.string("more")], toOne: [])])
    )
    #expect(try store.count(FetchDescription(entityName: "Draft")) == 2)
    store.close()

    #expect(try databaseNames(dir) == namesBefore)
    let reopened = try LMDBStore(url: dir.store, model: nil)
    defer { reopened.close() }
    #expect(reopened.model == (try version1()))
    #expect(try values(reopened, "Note", "n == 2").keys.sorted() == ["three", "two"])
    #expect(try reopened.count(FetchDescription(entityName: "Draft")) == 2)
  }

  @Test func misuseAndReadOnlyAreRefused() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let (store, _) = try version1Store(dir)
    let migration = try ModelMigration(from: try version1(), to: try version2())
    #expect(
      storeError { _ = try store.migrated(by: try ModelMigration(from: try noteModel(), to: try noteModel())) }?.code == .misuse)
    let second = try LMDBStore(url: dir.store, model: try version1())
    #expect(storeError { _ = try store.migrated(by: migration) }?.code == .misuse, "another store shares the environment")
    second.close()
    store.close()
    #expect(storeError { _ = try store.migrated(by: migration) }?.code == .misuse, "closed")
    let readOnly = try LMDBStore(url: dir.store, model: nil, options: StoreOptions(isReadOnly: true))
    #expect(storeError { _ = try readOnly.migrated(by: migration) }?.code == .readOnly)
    readOnly.close()
  }

  @Test func aMigrationThatFillsTheMapGrowsIt() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), mapSize: 65_536)
    let payload = Data(repeating: 0x5A, count: 200)
    // Saves below LMDBWriteEstimate.threshold, so that the map only doubles as they fill it (a larger
    // save reserves room for itself beforehand, which could leave the migration room enough).
    for start in stride(from: 0, to: 3_000, by: 500) {
      _ = try store.save(ChangeSet(inserted: (start..<start + 500).map { note("note-\($0)", $0, payload: payload) }))
    }
    let before = try mapSize(dir)
    let renamed = try ObjectModel(entities: [
      EntityDescription(
        name: "Memo",
        attributes: [
          AttributeDescription(name: "text", type: .string),
          AttributeDescription(name: "n", type: .int64, isIndexed: true),
          AttributeDescription(name: "payload", type: .data, isOptional: true),
          AttributeDescription(name: "pinned", type: .bool, defaultValue: .bool(false), isIndexed: true),
        ],
        uniquenessConstraints: [["text"]], renamingIdentifier: "Note")
    ])
    let migrated = try store.migrated(by: try ModelMigration(from: store.model, to: renamed))
    defer { migrated.close() }
    let grownFrom = try #require(before)
    let grownTo = try #require(try mapSize(dir))
    #expect(grownTo > grownFrom, "the map grew from \(grownFrom) to \(grownTo)")
    #expect(
      try migrated.count(FetchDescription(entityName: "Memo", predicate: try QueryPredicate(format: "pinned == NO"))) == 3_000)
    #expect(try values(migrated, "Memo", "n == 2999").keys.sorted() == ["note-2999"])
  }

  @Test func anotherProcessOpensTheMigratedStore() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    _ = try store.save(ChangeSet(inserted: [note("one", 1), note("two", 2)]))
    // The shape the worker writes (text, a number, payload) stays; the number is renamed.
    let v2 = try ObjectModel(entities: [
      EntityDescription(
        name: "Note",
        attributes: [
          AttributeDescription(name: "text", type: .string),
          AttributeDescription(name: "rank", type: .int64, isIndexed: true, renamingIdentifier: "n"),
          AttributeDescription(name: "payload", type: .data, isOptional: true),
        ],
        uniquenessConstraints: [["text"]]),
      EntityDescription(name: "Folder", attributes: [AttributeDescription(name: "title", type: .string)]),
    ])
    let migrated = try store.migrated(by: try ModelMigration(from: store.model, to: v2))
    let worker = Worker.finish(try Worker.start(["insert", dir.store.path, "w", "20", "5"]))
    #expect(worker.status == 0, "\(worker.stderr)")
    #expect(try migrated.count(FetchDescription(entityName: "Note")) == 22)
    #expect(try values(migrated, "Note", "rank == 2").keys.sorted() == ["two", "w-2"])
    migrated.close()
  }
}
