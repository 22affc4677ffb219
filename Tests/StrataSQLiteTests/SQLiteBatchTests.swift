import CSQLite
import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// The native batch update (one UPDATE, values checked in SQL). The conformance suite checks its answers
/// and errors on every backend; these tests check that the native path, not the general one, ran.
@Suite struct SQLiteBatchTests {
  /// A store holding Heat (1995) and Alien (1979), where Alien's `code` column was edited by hand into
  /// text that is not a UUID. The general path reads whole objects and reports the file corrupted; the
  /// native path never decodes a row, so an update it runs succeeds.
  private func storeWithACorruptedRow(_ dir: TemporaryDirectory) throws -> (SQLiteStore, [ObjectID]) {
    let heat = ObjectID.makeTemporary(entityName: "Movie")
    let alien = ObjectID.makeTemporary(entityName: "Movie")
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    let saved = try store.save(
      ChangeSet(inserted: [
        movieChange(MovieRow("Heat", rating: 8.3, year: 1995, watched: true), id: heat),
        movieChange(MovieRow("Alien", rating: 8.5, year: 1979), id: alien),
      ]))
    store.close()
    try raw(dir, "UPDATE Movie SET code = 'not-a-uuid' WHERE title = 'Alien'")
    let ids = [try #require(saved.permanentIDs[heat]), try #require(saved.permanentIDs[alien])]
    return (try SQLiteStore(url: dir.file(), model: try Sample.model()), ids)
  }

  private func raw(_ dir: TemporaryDirectory, _ sql: String) throws {
    var db: OpaquePointer?
    defer { sqlite3_close(db) }
    try #require(sqlite3_open(dir.file().path, &db) == SQLITE_OK)
    try #require(sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK)
  }

  /// `title|year|rating|_version` of every movie, in key order, read without the store.
  private func rows(_ dir: TemporaryDirectory) throws -> [String] {
    try rawStrings(
      dir.file(),
      "SELECT title || '|' || ifnull(year, 'nil') || '|' || ifnull(rating, 'nil') || '|' || _version FROM Movie ORDER BY _pk")
  }

  @Test func aValidUpdateRunsNativelyAndAnnouncesItsObjects() async throws {
    let dir = try TemporaryDirectory()
    let (store, ids) = try storeWithACorruptedRow(dir)
    defer { store.close() }
    let before = try rows(dir)
    #expect(before == ["Heat|1995|8.3|1", "Alien|1979|8.5|1"])

    // The premise: an update only the general path runs (a string from a number needs a conversion)
    // reads the corrupted row and fails.
    let general = #expect(throws: StoreError.self) {
      try store.execute(
        .update(entityName: "Movie", predicate: nil, propertiesToUpdate: ["subtitle": try QueryExpression(format: "year")]))
    }
    #expect(general?.code == .corrupted)
    #expect(try rows(dir) == before)

    var changes = store.changes().makeAsyncIterator()
    let result = try store.execute(
      .update(
        entityName: "Movie", predicate: nil,
        propertiesToUpdate: [
          "year": try QueryExpression(format: "year + 1"), "rating": try QueryExpression(format: "rating * 2"),
        ]))
    #expect(result.count == 2)
    #expect(result.objectIDs == ids)
    #expect(try rows(dir) == ["Heat|1996|16.6|2", "Alien|1980|17.0|2"])
    let change = try #require(await changes.next())
    #expect(change.updated == ids && change.inserted.isEmpty && change.deleted.isEmpty)

    // A predicate narrows it; no match updates nothing.
    let one = try store.execute(
      .update(
        entityName: "Movie", predicate: try QueryPredicate(format: "year < 1990"),
        propertiesToUpdate: ["watched": .constant(true)]))
    #expect(one.objectIDs == [ids[1]])
    #expect(try rows(dir) == ["Heat|1996|16.6|2", "Alien|1980|17.0|3"])
    let none = try store.execute(
      .update(
        entityName: "Movie", predicate: try QueryPredicate(format: "year > 3000"), propertiesToUpdate: ["year": .constant(1)]))
    #expect(none.count == 0 && none.objectIDs.isEmpty)
  }

  @Test func aRefusedValueRollsTheNativeUpdateBack() throws {
    let dir = try TemporaryDirectory()
    let (store, _) = try storeWithACorruptedRow(dir)
    defer { store.close() }
    let before = try rows(dir)
    // Each runs natively, is refused by SQL as it writes (Int32 range, NOT NULL), is rolled back, and
    // then goes to the general path — which here stops at the corrupted row, not at the value.
    let refused: [[String: QueryExpression]] = [
      ["year": try QueryExpression(format: "year * 10000000")],
      ["year": try QueryExpression(format: "year - 2147483647 - 2000")],
      ["rating": try QueryExpression(format: "rating + 1"), "title": try QueryExpression(format: "subtitle")],
    ]
    for properties in refused {
      let error = #expect(throws: StoreError.self) {
        try store.execute(.update(entityName: "Movie", predicate: nil, propertiesToUpdate: properties))
      }
      #expect(error?.code == .corrupted, "\(properties)")
      #expect(try rows(dir) == before, "\(properties)")
    }
  }
}
