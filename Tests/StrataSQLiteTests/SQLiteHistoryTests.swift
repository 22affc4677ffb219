import Foundation
import StrataConformance
import StrataSQLite
import StrataStoreKit
import Testing

@Suite("SQLite history")
struct SQLiteHistoryTests {
  private let historyTables =
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'strata_history_%' ORDER BY name"

  @Test func historyLivesInTablesTheShellCanRead() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model(), options: StoreOptions(tracksHistory: true))
    defer { store.close() }
    let saved = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat", year: 1995))], author: "me", contextName: "ui"))
    let token = try #require(saved.historyToken)
    #expect(try rawStrings(dir.file(), historyTables) == ["strata_history_change", "strata_history_transaction"])
    #expect(
      try rawStrings(
        dir.file(), "SELECT seq || '|' || author || '|' || context_name || '|' || pid FROM strata_history_transaction")
        == ["\(token.sequence)|me|ui|\(getpid())"])
    #expect(
      try rawStrings(dir.file(), "SELECT entity || '|' || pk || '|' || change_type FROM strata_history_change")
        == ["Movie|\(try #require(saved.permanentIDs.values.first?.primaryKey))|insert"])
  }

  @Test func withoutHistoryThereAreNoTablesAndNoRecords() throws {
    let dir = try TemporaryDirectory()
    let store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    defer { store.close() }
    let saved = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"))]))
    #expect(saved.historyToken == nil)
    #expect(try rawStrings(dir.file(), historyTables).isEmpty)
    expectStoreError(.misuse) { try store.fetchHistory(HistoryRequest()) }
  }

  @Test func openingWithoutHistoryExpiresEveryTokenIssuedBefore() throws {
    let dir = try TemporaryDirectory()
    let tracked = StoreOptions(tracksHistory: true)
    var store = try SQLiteStore(url: dir.file(), model: try Sample.model(), options: tracked)
    let old = try #require(try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"))])).historyToken)
    store.close()
    store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Alien"))]))
    store.close()
    store = try SQLiteStore(url: dir.file(), model: try Sample.model(), options: tracked)
    defer { store.close() }
    let error = #expect(throws: StoreError.self) { try store.fetchHistory(HistoryRequest(after: .token(old))) }
    #expect(error?.code == .historyExpired)
    let current = try #require(try store.currentHistoryToken())
    #expect(current > old)
    let next = try #require(try store.save(ChangeSet(inserted: [movieChange(MovieRow("Ran"))])).historyToken)
    #expect(try store.fetchHistory(HistoryRequest(after: .token(current), resultType: .count)) == .count(1))
    #expect(next > current)
  }
  /// Opening with history on writes nothing: the tables come with the first write that records history,
  /// inside its transaction, so a save that fails or a migration refused right after opening leaves the
  /// file's bytes as they were.
  @Test func openingWithHistoryWritesNothingUntilAWriteRecordsIt() throws {
    let dir = try TemporaryDirectory()
    var store = try SQLiteStore(url: dir.file(), model: try Sample.model())
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"))]))
    store.close()
    let before = try Data(contentsOf: dir.file())
    store = try SQLiteStore(url: dir.file(), model: try Sample.model(), options: StoreOptions(tracksHistory: true))
    #expect(try store.fetchHistory(HistoryRequest()) == .transactions([]))
    #expect(try store.currentHistoryToken() == nil)
    #expect(try store.deleteHistory(before: .date(Date())) == 0)
    store.close()
    #expect(try Data(contentsOf: dir.file()) == before, "opening with history wrote to the file")
    #expect(try rawStrings(dir.file(), historyTables).isEmpty)

    store = try SQLiteStore(url: dir.file(), model: try Sample.model(), options: StoreOptions(tracksHistory: true))
    defer { store.close() }
    let saved = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Alien"))]))
    let token = try #require(saved.historyToken)
    #expect(try store.currentHistoryToken() == token)
    #expect(try store.fetchHistory(HistoryRequest(resultType: .count)) == .count(1))
    #expect(try rawStrings(dir.file(), historyTables) == ["strata_history_change", "strata_history_transaction"])
    let next = try #require(try store.save(ChangeSet(inserted: [movieChange(MovieRow("Ran"))])).historyToken)
    #expect(next > token)
  }
}
