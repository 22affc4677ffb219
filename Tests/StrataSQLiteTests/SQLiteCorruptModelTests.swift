import CSQLite
import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// The model stored in `_strata_metadata` replaced by garbage, truncated JSON, JSON of another shape or an
/// invalid model: every open is a one-line `.corrupted` naming the file, and the file stays byte-identical.
@Suite struct SQLiteCorruptModelTests {
  static let blobs: [(name: String, json: @Sendable (String) -> String)] = [
    ("garbage", { _ in "\u{1}\u{2}\u{7F}garbage" }),
    ("truncated", { String($0.prefix($0.count / 2)) }),
    ("empty", { _ in "" }),
    ("another shape", { _ in #"{"entities": 5}"# }),
    ("an array", { _ in "[1, 2, 3]" }),
    ("deeply nested", { _ in String(repeating: "[", count: 100_000) }),
    ("an invalid model", { $0.replacingOccurrences(of: #""name":"Movie""#, with: #""name":"9Movie""#) }),
  ]

  @Test(arguments: blobs.map(\.name))
  func aCorruptStoredModelIsACorruptedErrorAndTheFileIsUnchanged(_ name: String) throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "strata-corrupt-model-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appending(path: "store.sqlite")
    let model = try Sample.model()
    let store = try SQLiteStore(url: url, model: model)
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow("Heat"))]))
    store.close()
    let json = try #require(try rawStrings(url, "SELECT value FROM _strata_metadata WHERE key = 'model'").first)
    let blob = try #require(Self.blobs.first { $0.name == name }).json(json)
    #expect(blob != json)
    try rawUpdateModel(url, blob)
    let before = try Data(contentsOf: url)
    // SQLite's companions of a WAL database (`-wal`, `-shm`) may appear, the log empty.
    func files() throws -> [String] {
      try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
        !$0.hasSuffix("-shm")
          && !($0.hasSuffix("-wal") && (try? Data(contentsOf: directory.appending(path: $0)))?.isEmpty == true)
      }.sorted()
    }
    let filesBefore = try files()

    for (given, options) in [
      (Optional(model), StoreOptions()), (nil, StoreOptions()), (nil, StoreOptions(isReadOnly: true)),
      (model, StoreOptions(isReadOnly: true)),
    ] {
      do {
        let opened = try SQLiteStore(url: url, model: given, options: options)
        opened.close()
        Issue.record("a store with \(name) for its model opened")
      } catch let error as StoreError {
        #expect(error.code == .corrupted, "\(error)")
        #expect(
          error.message.contains(url.path) && !error.message.contains("\n") && error.message.count < 400, "\(error.message)")
      }
    }
    #expect(try Data(contentsOf: url) == before, "the file is byte-identical")
    #expect(try files() == filesBefore, "no file added but SQLite's empty companions")
  }

  private func rawUpdateModel(_ url: URL, _ blob: String) throws {
    var db: OpaquePointer?
    var statement: OpaquePointer?
    defer {
      sqlite3_finalize(statement)
      sqlite3_close(db)
    }
    try #require(sqlite3_open(url.path, &db) == SQLITE_OK)
    try #require(
      sqlite3_prepare_v2(db, "UPDATE _strata_metadata SET value = ? WHERE key = 'model'", -1, &statement, nil) == SQLITE_OK)
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    try #require(sqlite3_bind_text(statement, 1, blob, -1, transient) == SQLITE_OK)
    try #require(sqlite3_step(statement) == SQLITE_DONE)
    try #require(sqlite3_changes(db) == 1)
  }
}
