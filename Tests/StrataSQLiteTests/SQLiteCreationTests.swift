import CSQLite
import Foundation
import StrataConformance
import StrataConformanceWorker
import StrataSQLite
import StrataStoreKit
import Testing

/// Creation is atomic: an unfinished store (an empty database) is completed by the next open, anything
/// else is refused untouched, and processes creating one store at once or killed while creating it
/// leave a whole store.
@Suite struct SQLiteCreationTests {
  /// Runs raw SQL on `file` with the plain sqlite3 API.
  private func rawExecute(_ file: URL, _ sql: String) throws {
    var db: OpaquePointer?
    defer { sqlite3_close(db) }
    try #require(sqlite3_open(file.path, &db) == SQLITE_OK)
    try #require(sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK)
  }

  private func saveAndReadBack(_ url: URL) throws {
    let store = try SQLiteStore(url: url, model: try Sample.model())
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"))]))
    store.close()
    let tool = try SQLiteStore(url: url, model: nil)
    defer { tool.close() }
    #expect(tool.model == (try Sample.model()))
    #expect(try tool.titles() == ["Heat"])
  }

  @Test func databaseWithOnlyAWALHeaderBecomesAStore() throws {
    let dir = try TemporaryDirectory()
    let url = dir.file()
    try rawExecute(url, "PRAGMA journal_mode=WAL")
    #expect(try Data(contentsOf: url).count > 0)
    try saveAndReadBack(url)
  }

  @Test func emptyFileBecomesAStore() throws {
    let dir = try TemporaryDirectory()
    let url = dir.file()
    try Data().write(to: url)
    try saveAndReadBack(url)
  }

  @Test func emptyDatabaseOpenedWithoutAModelIsNotFoundAndUntouched() throws {
    let dir = try TemporaryDirectory()
    let url = dir.file()
    try rawExecute(url, "PRAGMA journal_mode=WAL")
    let before = try Data(contentsOf: url)
    let readOnly = #expect(throws: StoreError.self) {
      try SQLiteStore(url: url, model: try Sample.model(), options: StoreOptions(isReadOnly: true))
    }
    #expect(readOnly?.code == .notFound)
    #expect(readOnly?.message.contains("empty database") == true, "\(readOnly?.message ?? "")")
    let tool = #expect(throws: StoreError.self) { try SQLiteStore(url: url, model: nil) }
    #expect(tool?.code == .notFound)
    #expect(try Data(contentsOf: url) == before)
  }

  @Test func databaseHoldingAnythingElseIsRefusedAndByteIdentical() throws {
    let dir = try TemporaryDirectory()
    let cases = [
      ("table.db", "PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1); PRAGMA wal_checkpoint(TRUNCATE);"),
      ("view.db", "CREATE VIEW v AS SELECT 1;"),
      ("version.db", "PRAGMA user_version = 7;"),
      ("application.db", "PRAGMA application_id = 42;"),
    ]
    for (name, sql) in cases {
      let url = dir.file(name)
      try rawExecute(url, sql)
      let before = try Data(contentsOf: url)
      let error = #expect(throws: StoreError.self, "\(name)") { try SQLiteStore(url: url, model: try Sample.model()) }
      #expect(error?.code == .corrupted, "\(name): \(error?.message ?? "")")
      #expect(try Data(contentsOf: url) == before, "\(name)")
    }
  }

}
