import CSQLite
import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// How the SQLite store migrates its file: what the file looks like afterwards, which changes alter a
/// table in place, and that a failed migration leaves every byte as it was.
@Suite struct SQLiteMigrationTests {
  static let title = AttributeDescription(name: "title", type: .string)
  static let year = AttributeDescription(name: "year", type: .int32)
  static let seen = AttributeDescription(name: "seen", type: .bool)

  static func model(_ movie: [AttributeDescription] = [title, year, seen], constraints: [[String]] = []) throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Movie", attributes: movie,
        relationships: [RelationshipDescription(name: "director", destination: "Director", inverse: "movies")],
        uniquenessConstraints: constraints),
      EntityDescription(
        name: "Director", attributes: [AttributeDescription(name: "name", type: .string)],
        relationships: [RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true)]),
    ])
  }

  /// Version 2: `year` renamed to `released`, `rating` added with a default.
  static func renamedAndAdded() throws -> ObjectModel {
    try model([
      title, AttributeDescription(name: "released", type: .int32, renamingIdentifier: "year"), seen,
      AttributeDescription(name: "rating", type: .int16, defaultValue: 3),
    ])
  }

  /// A store of version 1 with `count` movies (every other one seen), history on.
  static func store(_ url: URL, count: Int = 3) throws -> SQLiteStore {
    let store = try SQLiteStore(url: url, model: try model(), options: StoreOptions(tracksHistory: true))
    let movies = (0..<count).map { n in
      ObjectChange(
        objectID: .makeTemporary(entityName: "Movie"),
        attributes: [.string("Movie \(n)"), .int(Int64(1990 + n)), .bool(n % 2 == 0)], toOne: [nil])
    }
    _ = try store.save(ChangeSet(inserted: movies))
    return store
  }

  static func columns(_ url: URL, _ table: String) throws -> [String] {
    try rawStrings(url, "SELECT name || ' ' || type || ' ' || \"notnull\" FROM pragma_table_info('\(table)')")
  }

  @Test func theMigratedFileIsReadableWithThePlainSQLiteAPI() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try Self.store(url)
    let migrated = try store.migrated(by: try ModelMigration(from: store.model, to: try Self.renamedAndAdded()))
    migrated.close()
    #expect(
      try Self.columns(url, "Movie").sorted() == [
        "_pk INTEGER 0", "_version INTEGER 1", "director INTEGER 0", "rating INTEGER 1", "released INTEGER 1",
        "seen INTEGER 1", "title TEXT 1",
      ])
    #expect(try rawStrings(url, "SELECT released || '/' || rating FROM Movie ORDER BY _pk") == ["1990/3", "1991/3", "1992/3"])
    let fingerprint = try Self.renamedAndAdded().fingerprint
    #expect(try rawStrings(url, "SELECT value FROM _strata_metadata WHERE key = 'model_fingerprint'") == [fingerprint])
    let reopened = try SQLiteStore(url: url, model: try Self.renamedAndAdded())
    defer { reopened.close() }
    #expect(try reopened.snapshots(FetchDescription(entityName: "Movie")).map(\.attributes[3]) == [.int(3), .int(3), .int(3)])
  }

  @Test func addingAndRenamingAltersTheTableInPlace() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try Self.store(url)
    store.close()
    let rootpage = "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'Movie'"
    let before = try rawStrings(url, rootpage)
    let reopened = try SQLiteStore(url: url, model: try Self.model(), options: StoreOptions(tracksHistory: true))
    let migrated = try reopened.migrated(by: try ModelMigration(from: reopened.model, to: try Self.renamedAndAdded()))
    migrated.close()
    #expect(try rawStrings(url, rootpage) == before, "the table was not copied")
    #expect(try rawStrings(url, "SELECT count(*) FROM sqlite_master WHERE name LIKE '_strata_migrating%'") == ["0"])

    // A change of a column's declared type rebuilds the table, keys and versions kept.
    let widened = try Self.model([
      Self.title, AttributeDescription(name: "released", type: .double), Self.seen,
      AttributeDescription(name: "rating", type: .int16, defaultValue: 3),
    ])
    let again = try SQLiteStore(url: url, model: try Self.renamedAndAdded())
    let rebuilt = try again.migrated(by: try ModelMigration(from: again.model, to: widened))
    rebuilt.close()
    #expect(try rawStrings(url, rootpage) != before)
    #expect(try Self.columns(url, "Movie").contains("released REAL 1"))
    #expect(
      try rawStrings(url, "SELECT typeof(released) || ' ' || _pk || ' ' || _version FROM Movie ORDER BY _pk") == [
        "real 1 1", "real 2 1", "real 3 1",
      ])
    #expect(
      try rawStrings(url, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Movie'") == ["Movie_fk_director"])
  }

  @Test func aFailedMigrationLeavesTheFileByteIdentical() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    try Self.store(url).close()
    let before = try Data(contentsOf: url)
    let store = try SQLiteStore(url: url, model: try Self.model(), options: StoreOptions(tracksHistory: true))
    // Movies 0 and 2 are both seen: the constraint cannot be added.
    let clashing = try Self.model(constraints: [["seen"]])
    #expect(throws: StoreError.self) { try store.migrated(by: try ModelMigration(from: store.model, to: clashing)) }
    #expect(try store.snapshots(FetchDescription(entityName: "Movie")).count == 3)
    store.close()
    #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
    #expect(try Data(contentsOf: url) == before)
  }

  @Test func historyTokensStayValid() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.store(directory.file())
    let token = try #require(try store.currentHistoryToken())
    let migrated = try store.migrated(by: try ModelMigration(from: store.model, to: try Self.renamedAndAdded()))
    defer { migrated.close() }
    guard case .transactions(let all) = try migrated.fetchHistory(HistoryRequest(after: nil)) else {
      Issue.record("expected transactions")
      return
    }
    // The save before, then the migration's own (empty) transaction.
    #expect(all.map(\.author) == [nil, MigrationStep.historyAuthor])
    #expect(all.map(\.changes.count) == [3, 0])
    #expect(all.first?.token == token)
    #expect(try migrated.currentHistoryToken() == all.last?.token)
    _ = try migrated.save(
      ChangeSet(inserted: [
        ObjectChange(
          objectID: .makeTemporary(entityName: "Movie"), attributes: [.string("New"), .int(2000), .bool(false), .int(1)],
          toOne: [nil])
      ]))
    guard case .transactions(let later) = try migrated.fetchHistory(HistoryRequest(after: .token(token))) else {
      Issue.record("expected transactions")
      return
    }
    #expect(later.map(\.author) == [MigrationStep.historyAuthor, nil])
  }

  @Test func renamedEntitiesAndRelationshipsMoveTheirTablesColumnsAndIndexes() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try SQLiteStore(url: url, model: try Sample.model())
    let mann = ObjectID.makeTemporary(entityName: "Director")
    let heat = ObjectID.makeTemporary(entityName: "Movie")
    let pacino = ObjectID.makeTemporary(entityName: "Actor")
    let tag = ObjectID.makeTemporary(entityName: "Tag")
    let saved = try store.save(
      ChangeSet(
        inserted: [
          movieChange(MovieRow("Heat", rating: 8.3, budget: Decimal(string: "60000000.5")), id: heat, director: mann),
          namedChange("Director", "Michael Mann", id: mann), namedChange("Actor", "Al Pacino", id: pacino),
          namedChange("Tag", "crime", id: tag),
        ],
        linkChanges: [
          LinkChange(entityName: "Actor", relationship: "movies", source: pacino, target: heat, isInsertion: true),
          LinkChange(entityName: "Movie", relationship: "tags", source: heat, target: tag, isInsertion: true),
        ]))
    store.close()
    let rootpage = try rawStrings(url, "SELECT rootpage FROM sqlite_master WHERE name = 'Movie'")

    // Movie becomes Film, director becomes maker, tags becomes labels, budget becomes a string.
    let film = EntityDescription(
      name: "Film",
      attributes: Sample.movie.attributes.map { attribute in
        guard attribute.name == "budget" else { return attribute }
        return AttributeDescription(name: "budget", type: .string, isOptional: true)
      },
      relationships: [
        RelationshipDescription(name: "maker", destination: "Director", inverse: "movies", renamingIdentifier: "director"),
        RelationshipDescription(name: "actors", destination: "Actor", inverse: "movies", isToMany: true),
        RelationshipDescription(name: "labels", destination: "Tag", isToMany: true, renamingIdentifier: "tags"),
      ],
      uniquenessConstraints: [["title"]], renamingIdentifier: "Movie")
    let v2 = try ObjectModel(entities: [
      EntityDescription(
        name: "Director", attributes: Sample.director.attributes,
        relationships: [RelationshipDescription(name: "movies", destination: "Film", inverse: "maker", isToMany: true)]),
      film,
      EntityDescription(
        name: "Actor", attributes: Sample.actor.attributes,
        relationships: [RelationshipDescription(name: "movies", destination: "Film", inverse: "actors", isToMany: true)]),
      Sample.tag,
    ])
    let reopened = try SQLiteStore(url: url, model: try Sample.model())
    let migrated = try reopened.migrated(by: try ModelMigration(from: reopened.model, to: v2))
    defer { migrated.close() }
    #expect(try rawStrings(url, "SELECT rootpage FROM sqlite_master WHERE name = 'Film'") == rootpage, "renamed, not copied")
    #expect(
      try rawStrings(url, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY name") == [
        "Actor", "Actor_movies", "Director", "Film", "Film_labels", "Tag", "_strata_metadata",
      ])
    #expect(
      try rawStrings(url, "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite%' ORDER BY name") == [
        "Actor_movies_target", "Film_fk_maker", "Film_labels_target", "Film_unique_1",
      ])
    #expect(try rawStrings(url, "SELECT name FROM sqlite_sequence WHERE name = 'Film'") == ["Film"])
    let movie = try #require(saved.permanentIDs[heat])
    let filmID = ObjectID(entityName: "Film", storeIdentifier: migrated.identifier, primaryKey: try #require(movie.primaryKey))
    let director = try #require(saved.permanentIDs[mann])
    let snapshot = try #require(try migrated.snapshots(for: [filmID], generation: nil).first)
    #expect(snapshot.toOne.first == director)
    #expect(snapshot.attributes[3] == .string("60000000.5"))
    #expect(try migrated.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == [filmID])
    #expect(try migrated.relatedObjectIDs(of: filmID, relationship: "actors", generation: nil) == [saved.permanentIDs[pacino]])
    #expect(try migrated.relatedObjectIDs(of: filmID, relationship: "labels", generation: nil).count == 1)
  }

  @Test func readOnlyStoresDoNotMigrate() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    try Self.store(url).close()
    let store = try SQLiteStore(url: url, model: try Self.model(), options: StoreOptions(isReadOnly: true))
    defer { store.close() }
    #expect {
      try store.migrated(by: try ModelMigration(from: store.model, to: try Self.renamedAndAdded()))
    } throws: { ($0 as? StoreError)?.code == .readOnly }
    #expect {
      try store.migrated(by: try ModelMigration(from: try Self.model(constraints: [["title"]]), to: try Self.model()))
    } throws: { ($0 as? StoreError)?.code == .misuse }
  }
}
