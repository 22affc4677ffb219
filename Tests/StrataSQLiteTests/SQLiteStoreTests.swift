import CSQLite
import Foundation
import StrataConformance
import StrataSQLite
import StrataStoreKit
import Testing

@Suite struct SQLiteStoreFileTests {
  @Test func createAndReopenKeepsData() throws {
    let dir = try TemporaryDirectory()
    let url = dir.url.appendingPathComponent("nested/deeper/movies.sqlite")
    let model = try Sample.model()
    let store = try SQLiteStore(url: url, model: model)
    let identifier = store.identifier
    let heat = ObjectID.makeTemporary(entityName: "Movie")
    let result = try store.save(
      ChangeSet(inserted: [
        movieChange(
          MovieRow("Heat", rating: 8.3, year: 1995, budget: Decimal(string: "60000000.5"), code: UUID(), watched: true), id: heat)
      ]))
    let permanent = try #require(result.permanentIDs[heat])
    #expect(permanent.storeIdentifier == identifier)
    // Inserted objects are at version 1, listed in order rather than in `versions`.
    #expect(result.insertedIDs == [permanent])
    #expect(try store.snapshots(for: [permanent], generation: nil).map(\.version) == [1])
    store.close()

    let reopened = try SQLiteStore(url: url, model: model)
    #expect(reopened.identifier == identifier)
    let snapshots = try reopened.snapshots(FetchDescription(entityName: "Movie"))
    #expect(snapshots.count == 1)
    let snapshot = try #require(snapshots.first)
    #expect(snapshot.objectID == permanent)
    #expect(snapshot.attributes[0] == "Heat")
    #expect(snapshot.attributes[1] == .double(8.3))
    #expect(snapshot.attributes[2] == .int(1995))
    #expect(snapshot.attributes[3] == .decimal(try #require(Decimal(string: "60000000.5"))))
    #expect(snapshot.attributes[5] == .bool(true))
    #expect(snapshot.attributes[6] == .null, "transient attributes are never stored")
    reopened.close()

    let tool = try SQLiteStore(url: url, model: nil)
    #expect(tool.model == model)
    #expect(try tool.titles() == ["Heat"])
    tool.close()
    expectStoreError(.misuse) { try tool.titles() }
  }

  @Test func fileIsReadableByTheSQLiteShell() throws {
    let dir = try TemporaryDirectory()
    let url = dir.file()
    let store = try SQLiteStore(url: url, model: try Sample.model())
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat")), movieChange(MovieRow("Collateral"))]))
    store.close()

    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = [
      url.path, "SELECT title FROM Movie ORDER BY _pk; SELECT value FROM _strata_metadata WHERE key = 'format';",
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    process.waitUntilExit()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 0)
    #expect(output == "Heat\nCollateral\nstrata-sqlite-1\n")
  }

  @Test func foreignFileIsCorruptedAndUntouched() throws {
    let dir = try TemporaryDirectory()
    let text = dir.file("notes.txt")
    let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    try bytes.write(to: text)
    let error = #expect(throws: StoreError.self) { try SQLiteStore(url: text, model: try Sample.model()) }
    #expect(error?.code == .corrupted)
    #expect(error?.message.contains("is not a Strata SQLite store") == true)
    #expect(try Data(contentsOf: text) == bytes)

    // An SQLite database that is not a Strata store.
    let foreign = dir.file("other.db")
    var db: OpaquePointer?
    #expect(sqlite3_open(foreign.path, &db) == SQLITE_OK)
    #expect(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nil, nil, nil) == SQLITE_OK)
    sqlite3_close(db)
    let before = try Data(contentsOf: foreign)
    let error2 = #expect(throws: StoreError.self) { try SQLiteStore(url: foreign, model: try Sample.model()) }
    #expect(error2?.code == .corrupted)
    #expect(try Data(contentsOf: foreign) == before)
    #expect(!FileManager.default.fileExists(atPath: foreign.path + "-wal"))
  }

  @Test func missingStoreWithoutModelIsNotFound() throws {
    let dir = try TemporaryDirectory()
    let error = #expect(throws: StoreError.self) { try SQLiteStore(url: dir.file(), model: nil) }
    #expect(error?.code == .notFound)
    #expect(!FileManager.default.fileExists(atPath: dir.file().path))
  }

  @Test func differentModelIsASchemaMismatch() throws {
    let dir = try TemporaryDirectory()
    let model = try Sample.model()
    try SQLiteStore(url: dir.file(), model: model).close()
    let changedMovie = EntityDescription(
      name: "Movie", attributes: Sample.movie.attributes + [AttributeDescription(name: "extra", type: .string)],
      relationships: Sample.movie.relationships, uniquenessConstraints: Sample.movie.uniquenessConstraints)
    let other = try ObjectModel(entities: [Sample.director, changedMovie, Sample.actor, Sample.tag])
    let error = #expect(throws: StoreError.self) { try SQLiteStore(url: dir.file(), model: other) }
    #expect(error?.code == .schemaMismatch)
    #expect(error?.message.contains(model.fingerprint) == true)
    #expect(error?.message.contains(other.fingerprint) == true)
    #expect(error?.message.contains("Movie") == true)
    #expect(error?.entity == "Movie")
  }

  @Test func readOnlyStoreReadsButRefusesWrites() throws {
    let dir = try TemporaryDirectory()
    let model = try Sample.model()
    let writer = try SQLiteStore(url: dir.file(), model: model)
    _ = try writer.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"))]))
    writer.close()
    let reader = try SQLiteStore(url: dir.file(), model: model, options: StoreOptions(isReadOnly: true))
    #expect(try reader.titles() == ["Heat"])
    let error = #expect(throws: StoreError.self) {
      try reader.save(ChangeSet(inserted: [movieChange(MovieRow("Ronin"))]))
    }
    #expect(error?.code == .readOnly)
    #expect(try reader.titles() == ["Heat"])
    let missing = #expect(throws: StoreError.self) {
      try SQLiteStore(url: dir.file("none.sqlite"), model: model, options: StoreOptions(isReadOnly: true))
    }
    #expect(missing?.code == .notFound)
  }

  @Test func factoryIsRegisteredAndDestroysFiles() throws {
    let dir = try TemporaryDirectory()
    let registry = StoreRegistry([SQLiteStoreFactory()])
    let factory = try registry.storeFactory(for: .sqlite)
    #expect(factory.requiresLocation)
    let store = try factory.openStore(at: dir.file(), model: try Sample.model(), options: StoreOptions())
    #expect(store.storeType == .sqlite)
    store.close()
    try factory.destroyStore(at: dir.file())
    #expect(!FileManager.default.fileExists(atPath: dir.file().path))
    expectStoreError(.misuse) { try factory.openStore(at: nil, model: try Sample.model(), options: StoreOptions()) }
  }
}

@Suite struct SQLiteStoreSaveTests {
  @Test func uniquenessConflictsAreAllReportedAndNothingIsWritten() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let saved = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat")), movieChange(MovieRow("Ronin"))]))
    let heatID = try #require(store.snapshots(FetchDescription(entityName: "Movie")).first?.objectID)
    let first = ObjectID.makeTemporary(entityName: "Movie")
    let second = ObjectID.makeTemporary(entityName: "Movie")
    let third = ObjectID.makeTemporary(entityName: "Movie")
    let error = #expect(throws: StoreError.self) {
      try store.save(
        ChangeSet(inserted: [
          movieChange(MovieRow("Collateral"), id: first), movieChange(MovieRow("Heat"), id: second),
          movieChange(MovieRow("Ronin"), id: third),
        ]))
    }
    #expect(error?.code == .constraintConflict)
    #expect(error?.conflicts.count == 2)
    let heatConflict = error?.conflicts.first { $0.objectID == second }
    #expect(heatConflict?.conflictingObjectID == heatID)
    #expect(heatConflict?.keys == ["title"])
    #expect(heatConflict?.values == ["Heat"])
    #expect(heatConflict?.storedValues == ["Heat"])
    #expect(error?.conflicts.contains { $0.objectID == third } == true)
    #expect(error?.message.contains("Movie title = \"Heat\"") == true)
    #expect(try store.titles() == ["Heat", "Ronin"], "the whole save was rolled back")
    #expect(saved.permanentIDs.count == 2)

    // Two new objects clashing with each other.
    let a = ObjectID.makeTemporary(entityName: "Movie")
    let b = ObjectID.makeTemporary(entityName: "Movie")
    let twin = #expect(throws: StoreError.self) {
      try store.save(ChangeSet(inserted: [movieChange(MovieRow("Thief"), id: a), movieChange(MovieRow("Thief"), id: b)]))
    }
    #expect(twin?.conflicts.count == 1)
    #expect(twin?.conflicts.first?.objectID == a, "the object written first is named first, as the memory store does")
    #expect(twin?.conflicts.first?.conflictingObjectID == b)
  }

  @Test func uniqueValuesCanMoveWithinOneSave() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat")), movieChange(MovieRow("Ronin"))]))
    let rows = try store.snapshots(FetchDescription(entityName: "Movie"))
    // Swap the two titles, and insert a third object taking a title freed by a delete.
    _ = try store.save(
      ChangeSet(updated: [
        movieChange(MovieRow("Ronin"), id: rows[0].objectID, expectedVersion: 1),
        movieChange(MovieRow("Heat"), id: rows[1].objectID, expectedVersion: 1),
      ]))
    #expect(try store.titles() == ["Ronin", "Heat"])
    let result = try store.save(
      ChangeSet(inserted: [movieChange(MovieRow("Heat"))], deleted: [ObjectDeletion(objectID: rows[1].objectID)]))
    #expect(result.permanentIDs.count == 1)
    #expect(try store.titles() == ["Ronin", "Heat"])
    let versions = try store.snapshots(FetchDescription(entityName: "Movie")).map(\.version)
    #expect(versions == [2, 1])
  }

  @Test func optimisticLockingRefusesStaleWrites() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat")), movieChange(MovieRow("Ronin"))]))
    let rows = try store.snapshots(FetchDescription(entityName: "Movie"))
    let heat = rows[0].objectID
    var update = movieChange(MovieRow("Heat", rating: 9), id: heat, expectedVersion: 1)
    let first = try store.save(ChangeSet(updated: [update]))
    #expect(first.versions[heat] == 2)

    update = movieChange(MovieRow("Heat", rating: 1), id: heat, expectedVersion: 1)
    update.changedKeys = ["rating"]
    let error = #expect(throws: StoreError.self) {
      try store.save(
        ChangeSet(
          updated: [update, movieChange(MovieRow("Ronin 2"), id: rows[1].objectID, expectedVersion: 1)],
          deleted: []))
    }
    #expect(error?.code == .optimisticLockConflict)
    #expect(error?.conflicts.count == 1)
    #expect(error?.conflicts.first?.objectID == heat)
    #expect(error?.conflicts.first?.keys == ["rating"])
    #expect(error?.conflicts.first?.values == [.double(1)])
    #expect(error?.conflicts.first?.storedValues == [.double(9)])
    let after = try store.snapshots(FetchDescription(entityName: "Movie"))
    #expect(after.map(\.attributes[1]) == [.double(9), .null])
    #expect(after.map(\.version) == [2, 1], "Ronin's update was rolled back with the rest")

    let staleDelete = #expect(throws: StoreError.self) {
      try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: heat, expectedVersion: 1)]))
    }
    #expect(staleDelete?.code == .optimisticLockConflict)
    _ = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: heat, expectedVersion: 2)]))
    #expect(try store.titles() == ["Ronin"])
  }

  @Test func temporaryIDsResolveAcrossRelatedInserts() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let mann = ObjectID.makeTemporary(entityName: "Director")
    let heat = ObjectID.makeTemporary(entityName: "Movie")
    let pacino = ObjectID.makeTemporary(entityName: "Actor")
    let tag = ObjectID.makeTemporary(entityName: "Tag")
    // The movie comes before its director in the change set.
    let result = try store.save(
      ChangeSet(
        inserted: [
          movieChange(MovieRow("Heat"), id: heat, director: mann), namedChange("Director", "Michael Mann", id: mann),
          namedChange("Actor", "Al Pacino", id: pacino), namedChange("Tag", "crime", id: tag),
        ],
        linkChanges: [
          LinkChange(entityName: "Actor", relationship: "movies", source: pacino, target: heat, isInsertion: true),
          LinkChange(entityName: "Movie", relationship: "tags", source: heat, target: tag, isInsertion: true),
        ]))
    let movie = try #require(result.permanentIDs[heat])
    let director = try #require(result.permanentIDs[mann])
    let actor = try #require(result.permanentIDs[pacino])
    #expect(try store.snapshots(for: [movie], generation: nil).first?.toOne == [director])
    #expect(try store.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == [movie])
    #expect(try store.relatedObjectIDs(of: movie, relationship: "actors", generation: nil) == [actor])
    #expect(try store.relatedObjectIDs(of: actor, relationship: "movies", generation: nil) == [movie])
    #expect(try store.relatedObjectIDs(of: movie, relationship: "tags", generation: nil).count == 1)

    // Deleting the actor removes its links; unlinking a tag removes the row.
    _ = try store.save(
      ChangeSet(
        deleted: [ObjectDeletion(objectID: actor)],
        linkChanges: [
          LinkChange(
            entityName: "Movie", relationship: "tags", source: movie, target: try #require(result.permanentIDs[tag]),
            isInsertion: false)
        ]))
    #expect(try store.relatedObjectIDs(of: movie, relationship: "actors", generation: nil).isEmpty)
    #expect(try store.relatedObjectIDs(of: movie, relationship: "tags", generation: nil).isEmpty)
  }

  @Test func unknownTemporaryTargetAndWrongTypesAreRefused() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let dangling = #expect(throws: StoreError.self) {
      try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"), director: .makeTemporary(entityName: "Director"))]))
    }
    #expect(dangling?.code == .misuse)
    var bad = movieChange(MovieRow("Heat"))
    bad.attributes[0] = .null
    let missing = #expect(throws: StoreError.self) { try store.save(ChangeSet(inserted: [bad])) }
    #expect(missing?.code == .validation)
    #expect(missing?.key == "title")
    bad.attributes[0] = .int(5)
    let wrongType = #expect(throws: StoreError.self) { try store.save(ChangeSet(inserted: [bad])) }
    #expect(wrongType?.code == .validation)
    #expect(try store.titles().isEmpty)
  }

  @Test func deletesClearReferencesAndReportStoredState() async throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let mann = ObjectID.makeTemporary(entityName: "Director")
    let heat = ObjectID.makeTemporary(entityName: "Movie")
    var heatChange = movieChange(MovieRow("Heat"), id: heat, director: mann)
    heatChange.attributes[1] = .int(8)  // an integer for a Double attribute is stored as a Double
    let first = try store.save(ChangeSet(inserted: [namedChange("Director", "Michael Mann", id: mann), heatChange]))
    let movie = try #require(first.permanentIDs[heat])
    let director = try #require(first.permanentIDs[mann])
    #expect(first.storedSnapshots[movie]?.attributes[1] == .double(8))
    #expect(first.storedSnapshots[director] == nil, "stored exactly as sent")

    let stream = store.changes()
    // The director is deleted without the movie being updated: the store clears the dangling reference.
    let second = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: director)]))
    #expect(second.versions.isEmpty)
    #expect(try store.snapshots(for: [movie], generation: nil).first?.toOne == [nil])
    #expect(try store.snapshots(for: [movie], generation: nil).first?.version == 1)
    var iterator = stream.makeAsyncIterator()
    store.close()
    let change = try #require(await iterator.next())
    #expect(change.deleted == [director])
    #expect(change.updated == [movie], "objects whose references were cleared are announced as updated")
    var closedIterator = store.changes().makeAsyncIterator()
    #expect(await closedIterator.next() == nil, "streams of a closed store are finished")
  }

  @Test func linksToMissingObjectsAreDroppedAndPermanentInsertsKeepTheirKey() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let movie = ObjectID(entityName: "Movie", storeIdentifier: store.identifier, primaryKey: 42)
    let ghost = ObjectID(entityName: "Actor", storeIdentifier: store.identifier, primaryKey: 7)
    let result = try store.save(
      ChangeSet(
        inserted: [movieChange(MovieRow("Heat"), id: movie)],
        linkChanges: [LinkChange(entityName: "Movie", relationship: "actors", source: movie, target: ghost, isInsertion: true)]))
    #expect(result.permanentIDs.isEmpty)
    #expect(result.insertedIDs == [movie])
    #expect(try store.snapshots(for: [movie], generation: nil).map(\.version) == [1])
    #expect(try store.relatedObjectIDs(of: movie, relationship: "actors", generation: nil).isEmpty)
    let again = #expect(throws: StoreError.self) {
      try store.save(ChangeSet(inserted: [movieChange(MovieRow("Ronin"), id: movie)]))
    }
    #expect(again?.code == .misuse)
    let unknown = #expect(throws: StoreError.self) {
      try store.relatedObjectIDs(of: movie, relationship: "nope", generation: nil)
    }
    #expect(unknown?.code == .notFound)
    let next = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Thief"))]))
    #expect(next.permanentIDs.values.first?.primaryKey == 43)
  }

  @Test func savesAreAnnouncedOnTheChangeStream() async throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let stream = store.changes()
    let heat = ObjectID.makeTemporary(entityName: "Movie")
    let result = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"), id: heat)]))
    var iterator = stream.makeAsyncIterator()
    let change = await iterator.next()
    #expect(change?.inserted == [try #require(result.permanentIDs[heat])])
    #expect(change?.storeIdentifier == store.identifier)
    store.close()
    #expect(await iterator.next() == nil)
  }

  @Test func pinnedGenerationsIgnoreLaterCommits() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"))]))
    let generation = try store.pinGeneration()
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Ronin"))]))
    let pinned = try store.fetch(FetchDescription(entityName: "Movie", resultType: .count), generation: generation)
    #expect(pinned.count == 1)
    #expect(try store.titles() == ["Heat", "Ronin"])
    store.unpin(generation)
    expectStoreError(.misuse) { try store.fetch(FetchDescription(entityName: "Movie"), generation: generation) }
  }

  @Test func concurrentReadsAndWrites() async throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    try await withThrowingTaskGroup(of: Void.self) { group in
      for writer in 0..<4 {
        group.addTask {
          for n in 0..<25 {
            _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("w\(writer)-\(n)"))]))
          }
        }
      }
      for _ in 0..<4 {
        group.addTask {
          for _ in 0..<25 { _ = try store.fetch(FetchDescription(entityName: "Movie", resultType: .count), generation: nil) }
        }
      }
      try await group.waitForAll()
    }
    #expect(try store.count(FetchDescription(entityName: "Movie")) == 100)
  }
}
