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

  @Test func concurrentFirstOpensFromSeveralProcessesAllSucceed() throws {
    let dir = try TemporaryDirectory()
    for round in 0..<5 {
      let url = dir.file("race-\(round).sqlite")
      let workers = try (0..<8).map { _ in try WorkerProcess("strata-worker", ["create", "sqlite", url.path]) }
      let results = workers.map { $0.finish() }
      for result in results { #expect(result.status == 0, "\(result.stderr)") }
      #expect(Set(results.map(\.stdout)).count == 1, "every process opens the one store that was created")
      let store = try SQLiteStore(url: url, model: try ConformanceWorker.creationModel())
      defer { store.close() }
      #expect(try store.count(FetchDescription(entityName: "Item")) == 8)
    }
  }

  @Test func processKilledWhileCreatingLeavesAStoreTheNextOpenCompletes() throws {
    let dir = try TemporaryDirectory()
    let model = try ConformanceWorker.creationModel()
    var outcomes: [String: Int] = [:]
    for iteration in 0..<20 {
      let url = dir.file("killed-\(iteration).sqlite")
      let worker = try WorkerProcess("strata-worker", ["create", "sqlite", url.path])
      usleep(UInt32(iteration * 2_500))
      kill(worker.process.processIdentifier, SIGKILL)
      _ = worker.finish()
      let existed = FileManager.default.fileExists(atPath: url.path)
      let store = try SQLiteStore(url: url, model: model)
      let items = try store.count(FetchDescription(entityName: "Item"))
      #expect(items <= 1)
      _ = try store.save(
        ChangeSet(inserted: [
          ObjectChange(objectID: .makeTemporary(entityName: "Item"), attributes: ["test", .int(0)], toOne: [])
        ]))
      store.close()
      let tool = try SQLiteStore(url: url, model: nil, options: StoreOptions(isReadOnly: true))
      #expect(tool.model == model)
      #expect(try tool.count(FetchDescription(entityName: "Item")) == items + 1)
      tool.close()
      outcomes[!existed ? "no file" : items == 0 ? "no item" : "saved", default: 0] += 1
    }
    print("kill during creation (sqlite): \(outcomes.sorted { $0.key < $1.key })")
  }
}
