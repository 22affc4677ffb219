import CLMDB
import Foundation
import StrataConformance
import StrataConformanceWorker
import StrataLMDB
import StrataStoreKit
import Testing

/// Creation is one write transaction: an unfinished environment (named databases all empty, no
/// metadata) is completed by the next open, anything else is refused untouched, and processes creating
/// one store at once or killed while creating it leave a whole store.
@Suite struct LMDBCreationTests {
  private func saveAndReadBack(_ url: URL) throws {
    let store = try LMDBStore(url: url, model: try noteModel())
    _ = try store.save(ChangeSet(inserted: [note("first", 1)]))
    store.close()
    let tool = try LMDBStore(url: url, model: nil, options: StoreOptions(isReadOnly: true))
    defer { tool.close() }
    #expect(tool.model == (try noteModel()))
    #expect(try texts(tool) == ["first"])
  }

  @Test func emptyStrataMetaDatabaseBecomesAStore() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    try rawCreate(dir.store.path, databases: ["strata.meta", "Note"])
    try saveAndReadBack(dir.store)
  }

  @Test func environmentWithoutDatabasesOrWithAnEmptyDataFileBecomesAStore() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    try rawCreate(dir.store.path, databases: [])
    try saveAndReadBack(dir.store)

    let empty = dir.url.appending(path: "empty.lmdb")
    try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
    try Data().write(to: empty.appending(path: "data.mdb"))
    try saveAndReadBack(empty)
  }

  @Test func dataFileWithOnlyTheFirstMetaPageOfANewEnvironmentBecomesAStore() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let fresh = dir.url.appending(path: "fresh")
    try rawCreate(fresh.path, databases: [])
    let firstPage = try Data(contentsOf: fresh.appending(path: "data.mdb")).prefix(4096)
    try FileManager.default.createDirectory(at: dir.store, withIntermediateDirectories: true)
    let data = dir.store.appending(path: "data.mdb")
    try Data(firstPage).write(to: data)
    let readOnly = storeError { _ = try LMDBStore(url: dir.store, model: nil, options: StoreOptions(isReadOnly: true)) }
    #expect(readOnly?.code == .notFound, "\(readOnly?.message ?? "")")
    #expect(try Data(contentsOf: data) == firstPage)
    try saveAndReadBack(dir.store)
  }

  @Test func unfinishedEnvironmentOpenedReadOnlyIsNotFoundAndUntouched() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    try rawCreate(dir.store.path, databases: ["strata.meta"])
    let data = dir.store.appending(path: "data.mdb")
    let before = try Data(contentsOf: data)
    let readOnly = storeError {
      _ = try LMDBStore(url: dir.store, model: try noteModel(), options: StoreOptions(isReadOnly: true))
    }
    #expect(readOnly?.code == .notFound, "\(readOnly?.message ?? "")")
    #expect(readOnly?.message.contains("empty LMDB environment") == true)
    #expect(storeError { _ = try LMDBStore(url: dir.store, model: nil) }?.code == .notFound)
    #expect(try Data(contentsOf: data) == before)
  }

  @Test func environmentHoldingDataWithoutMetadataIsRefusedAndByteIdentical() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let withNotes = dir.url.appending(path: "notes")
    try rawCreate(withNotes.path, databases: ["strata.meta"])
    try rawPut(withNotes.path, database: "Note", key: "k", value: "v")
    let plainKeys = dir.url.appending(path: "plain")
    try FileManager.default.createDirectory(at: plainKeys, withIntermediateDirectories: true)
    try rawPutMain(plainKeys.path, key: "hello", value: "world")
    for url in [withNotes, plainKeys] {
      let data = url.appending(path: "data.mdb")
      let before = try Data(contentsOf: data)
      let error = storeError { _ = try LMDBStore(url: url, model: try noteModel()) }
      #expect(error?.code == .corrupted, "\(error?.message ?? "")")
      #expect(error?.message.contains("not a Strata LMDB store") == true)
      #expect(try Data(contentsOf: data) == before)
    }
  }

}

/// A liblmdb result other than `MDB_SUCCESS` from a raw write of a test.
struct RawFailure: Error { let code: Int32 }

/// Makes an LMDB environment in `path` with the given empty named databases, with plain liblmdb.
func rawCreate(_ path: String, databases: [String]) throws {
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  try withRawWrite(path) { txn in
    for name in databases {
      var dbi: MDB_dbi = 0
      let rc = mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi)
      if rc != MDB_SUCCESS { throw RawFailure(code: rc) }
    }
  }
}

/// Puts a plain key into the main database of the environment in `path`.
func rawPutMain(_ path: String, key: String, value: String) throws {
  try rawPut(path, database: nil, key: Data(key.utf8), value: Data(value.utf8))
}
