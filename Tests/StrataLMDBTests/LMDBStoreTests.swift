import CLMDB
import Foundation
import StrataLMDB
import StrataMemory
import StrataStoreKit
import Testing

@Suite("LMDB store")
struct LMDBStoreTests {
  @Test func pinnedGenerationsKeepTheirState() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    defer { store.close() }
    let first = note("one", 1)
    let id = try #require(try store.save(ChangeSet(inserted: [first])).permanentIDs[first.objectID])
    let generation = try store.pinGeneration()
    var update = note("one v2", 1)
    update.objectID = id
    _ = try store.save(ChangeSet(inserted: [note("two", 2)], updated: [update]))
    #expect(try texts(store, generation: generation) == ["one"])
    #expect(try texts(store) == ["one v2", "two"])
    #expect(try store.snapshots(for: [id], generation: generation).first?.version == 1)
    #expect(try store.snapshots(for: [id], generation: nil).first?.version == 2)
    store.unpin(generation)
    #expect(storeError { _ = try texts(store, generation: generation) }?.code == .misuse)
  }

  @Test func insertsGetTheirKeysInAnyOrder() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    defer { store.close() }
    // Made in order and sent in order (the result lists the IDs and builds its dictionary when read), then
    // sent out of order (the store keeps a dictionary from the start).
    let made = (0..<6).map { note("note \($0)", $0) }
    for inserted in [Array(made[0..<3]), [made[5], made[3], made[4]]] {
      let result = try store.save(ChangeSet(inserted: inserted))
      #expect(result.insertedIDs.count == inserted.count)
      #expect(Set(result.insertedIDs).count == inserted.count)
      #expect(result.permanentIDs.count == inserted.count)
      for (change, id) in zip(inserted, result.insertedIDs) {
        #expect(result.permanentIDs[change.objectID] == id)
        #expect(try store.snapshots(for: [id], generation: nil).first?.attributes[0] == change.attributes[0])
      }
      var spelledOut = SaveResult(permanentIDs: result.permanentIDs, versions: result.versions)
      spelledOut.insertedIDs = result.insertedIDs
      spelledOut.storedSnapshots = result.storedSnapshots
      spelledOut.historyToken = result.historyToken
      #expect(spelledOut == result)
      #expect(spelledOut.hashValue == result.hashValue)
    }
    #expect(try texts(store) == made.compactMap { $0.attributes[0].stringValue })
  }

  @Test func changesAreAnnouncedAfterEachSave() async throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    var changes = store.changes().makeAsyncIterator()
    let first = note("one", 1)
    let id = try #require(try store.save(ChangeSet(inserted: [first])).permanentIDs[first.objectID])
    let inserted = await changes.next()
    #expect(inserted?.inserted == [id])
    #expect(inserted?.storeIdentifier == store.identifier)
    #expect(inserted?.isRemote == false)
    _ = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: id)]))
    #expect(await changes.next()?.deleted == [id])
    store.close()
    #expect(await changes.next() == nil)
  }

  @Test func theMapGrowsWhenAWriteFillsIt() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), mapSize: 1 << 20)
    let chunk = Data(repeating: 7, count: 64 << 10)
    // One save of 4 MiB into a 1 MiB map, then many small saves past it.
    _ = try store.save(ChangeSet(inserted: (0..<64).map { note("big-\($0)", $0, payload: chunk) }))
    for i in 0..<40 { _ = try store.save(ChangeSet(inserted: [note("more-\(i)", 100 + i, payload: chunk)])) }
    #expect(try count(store) == 104)
    #expect(try count(store, "n >= 100") == 40)
    store.close()
    let size = try FileManager.default.attributesOfItem(atPath: dir.store.appending(path: "data.mdb").path)[.size] as? Int
    #expect((size ?? 0) > 1 << 20)
    let reopened = try LMDBStore(url: dir.store, model: nil, mapSize: 1 << 20)
    defer { reopened.close() }
    #expect(try count(reopened) == 104)
  }

  @Test func aBatchInsertThatFillsTheMapCallsItsHandlerOncePerRow() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), mapSize: 1 << 20)
    defer { store.close() }
    _ = try store.save(ChangeSet(inserted: [note("row-3", 0), note("kept", 1)]))
    let chunk = Data(repeating: 7, count: 32 << 10)
    let calls = Locked(0)
    // 80 rows of 32 KiB into a 1 MiB map; "row-3" exists and "row-5" comes twice (the later merges over it).
    let request = BatchInsertDescription(entityName: "Note", resultType: .objectIDs) { row in
      let call = calls.withLock { n -> Int in
        n += 1
        return n
      }
      guard call <= 81 else { return true }
      let i = call == 81 ? 5 : call - 1
      row = ["text": .string("row-\(i)"), "n": .int(Int64(call)), "payload": .data(chunk)]
      return false
    }
    let result = try store.execute(.insert(request))
    #expect(calls.withLock { $0 } == 82, "the handler runs once per row, and once more to stop")
    #expect(result.count == 80)
    #expect(result.updatedObjectIDs.count == 1)
    #expect(try count(store) == 81)
    #expect(try count(store, "text == 'row-5' AND n == 81") == 1)
    #expect(try count(store, "text == 'row-3' AND n == 4") == 1)
    #expect(try count(store, "text == 'kept' AND n == 1") == 1)
    let size = try FileManager.default.attributesOfItem(atPath: dir.store.appending(path: "data.mdb").path)[.size] as? Int
    #expect((size ?? 0) > 1 << 20)
  }

  @Test func indexesGiveTheSameAnswersAsTheMemoryStore() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let model = try noteModel()
    let lmdb = try LMDBStore(url: dir.store, model: model)
    defer { lmdb.close() }
    let memory = MemoryStore(model: model)
    let long = String(repeating: "x", count: 700)
    var notes = (0..<60).map { note("note \($0 % 7)-\($0)", ($0 * 37) % 50 - 10) }
    notes += [note(long + "a", 5), note(long + "b", 5), note("", 0), note("\u{0}zero", -1_000_000)]
    for store in [lmdb, memory] as [any PersistentStore] { _ = try store.save(ChangeSet(inserted: notes)) }
    let predicates = [
      "n == 5", "n < 0", "n <= 0", "n > 30", "n >= 30", "n BETWEEN {-5, 5}", "n IN {1, 2, 3, 39}", "n == nil",
      "text == 'note 3-3'", "text < 'note 2'", "text >= 'note 5'", "text == %@", "text > %@", "text BEGINSWITH 'note 1'",
      "n > 10 AND text < 'note 3'", "n == 5 OR n == 6", "text IN {'', 'note 0-0'}", "n < 10.5", "n == 5.5",
    ]
    for format in predicates {
      let predicate = format.contains("%@") ? try QueryPredicate(format: format, long + "a") : try QueryPredicate(format: format)
      var request = FetchDescription(entityName: "Note", predicate: predicate, resultType: .objectIDs)
      let expected = try keys(memory.fetch(request, generation: nil))
      #expect(try keys(lmdb.fetch(request, generation: nil)) == expected, "\(format)")
      #expect(!expected.isEmpty || format.contains("5.5") || format.contains("nil"), "\(format) matches something")
      request.resultType = .count
      #expect(try lmdb.fetch(request, generation: nil) == .count(expected.count), "count of \(format)")
      request.fetchOffset = 2
      request.fetchLimit = 3
      #expect(try lmdb.fetch(request, generation: nil) == (try memory.fetch(request, generation: nil)), "page of \(format)")
      request.resultType = .objectIDs
      #expect(try keys(lmdb.fetch(request, generation: nil)) == keys(memory.fetch(request, generation: nil)), "\(format)")
    }
    // Long unique values that share the part liblmdb keys can hold are told apart; equal ones clash.
    let clash = storeError { _ = try lmdb.save(ChangeSet(inserted: [note(long + "a", 1)])) }
    #expect(clash?.code == .constraintConflict)
    #expect(clash?.conflicts.first?.values == [.string(long + "a")])
    _ = try lmdb.save(ChangeSet(inserted: [note(long + "c", 1)]))
    #expect(try count(lmdb, "text BEGINSWITH 'xxx'") == 3)
  }

  /// Inserts go through the store's fast path (values checked while encoded) or its general one
  /// (values converted, transient ones cleared, wrong kinds refused); both must store and report what the
  /// memory store does, with and without index entries to write.
  @Test func insertsStoreWhatTheMemoryStoreStores() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let model = try ObjectModel(entities: [
      EntityDescription(
        name: "Reading",
        attributes: [
          AttributeDescription(name: "label", type: .string),
          AttributeDescription(name: "small", type: .int16),
          AttributeDescription(name: "ratio", type: .float),
          AttributeDescription(name: "weight", type: .double, isOptional: true),
          AttributeDescription(name: "scratch", type: .string, isOptional: true, isTransient: true),
        ]),
      EntityDescription(
        name: "Tagged",
        attributes: [
          AttributeDescription(name: "label", type: .string, isIndexed: true),
          AttributeDescription(name: "weight", type: .double),
        ]),
    ])
    let lmdb = try LMDBStore(url: dir.store, model: model)
    defer { lmdb.close() }
    let memory = MemoryStore(model: model)
    func count(_ store: any PersistentStore, _ format: String, entity: String) throws -> Int {
      try store.count(FetchDescription(entityName: entity, predicate: try QueryPredicate(format: format)))
    }
    func reading(_ values: [Value]) -> ObjectChange {
      ObjectChange(objectID: .makeTemporary(entityName: "Reading"), attributes: values, toOne: [])
    }
    func tagged(_ values: [Value]) -> ObjectChange {
      ObjectChange(objectID: .makeTemporary(entityName: "Tagged"), attributes: values, toOne: [])
    }
    let inserted = [
      reading([.string("as sent"), .int(7), .double(0.5), .double(2), .null]),
      reading([.string("int into double"), .int(-3), .double(1), .int(4), .null]),
      reading([.string("transient set"), .int(0), .double(0), .null, .string("dropped")]),
      tagged([.string("as sent"), .double(1.5)]),
      tagged([.string("int into double"), .int(9)]),
      reading([.string("after a run of Tagged"), .int(1), .double(0.25), .null, .null]),
    ]
    let results = try [lmdb, memory].map { (store: any PersistentStore) in
      let result = try store.save(ChangeSet(inserted: inserted))
      let ids = inserted.compactMap { result.permanentIDs[$0.objectID] }
      return (ids.map { result.storedSnapshots[$0] != nil }, try store.snapshots(for: ids, generation: nil))
    }
    let (lmdbReported, lmdbStored) = results[0]
    let (memoryReported, memoryStored) = results[1]
    #expect(lmdbStored.map(\.attributes) == memoryStored.map(\.attributes))
    #expect(lmdbStored.count == inserted.count)
    // The converted objects are reported with their stored snapshots, the others not.
    #expect(lmdbReported == memoryReported)
    #expect(lmdbReported.contains(true))
    #expect(try count(lmdb, "label == 'int into double'", entity: "Tagged") == 1)
    // Wrong kinds and shapes are refused as before, the store unchanged.
    for bad in [
      reading([.string("text into int16"), .string("x"), .double(0), .null, .null]),
      reading([.string("too big for int16"), .int(70_000), .double(0), .null, .null]),
      reading([.string("short")]),
      tagged([.string("bool into double"), .bool(true)]),
    ] {
      let lmdbError = storeError {
        _ = try lmdb.save(ChangeSet(inserted: [reading([.string("ok"), .int(1), .double(1), .null, .null]), bad]))
      }
      let memoryError = storeError { _ = try memory.save(ChangeSet(inserted: [bad])) }
      #expect(lmdbError != nil)
      #expect(lmdbError?.code == memoryError?.code, "\(bad.attributes)")
      #expect(lmdbError?.key == memoryError?.key, "\(bad.attributes)")
    }
    #expect(try count(lmdb, "label != nil", entity: "Reading") + count(lmdb, "label != nil", entity: "Tagged") == inserted.count)
    #expect(try count(lmdb, "label == 'ok'", entity: "Reading") == 0)
  }

  @Test func badLocationsAreRefusedAndLeftAlone() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let model = try noteModel()
    try FileManager.default.createDirectory(at: dir.url, withIntermediateDirectories: true)

    let file = dir.url.appending(path: "file")
    try Data("hello".utf8).write(to: file)
    let asFile = storeError { _ = try LMDBStore(url: file, model: model) }
    #expect(asFile?.code == .corrupted)
    #expect(asFile?.message.contains("not a Strata LMDB store") == true)

    let other = dir.url.appending(path: "other")
    try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
    try Data("notes".utf8).write(to: other.appending(path: "notes.txt"))
    #expect(storeError { _ = try LMDBStore(url: other, model: model) }?.code == .corrupted)
    #expect(try FileManager.default.contentsOfDirectory(atPath: other.path) == ["notes.txt"])

    let garbage = dir.url.appending(path: "garbage")
    try FileManager.default.createDirectory(at: garbage, withIntermediateDirectories: true)
    try Data(repeating: 0x42, count: 8192).write(to: garbage.appending(path: "data.mdb"))
    #expect(storeError { _ = try LMDBStore(url: garbage, model: model) }?.code == .corrupted)
    #expect(try FileManager.default.contentsOfDirectory(atPath: garbage.path) == ["data.mdb"])

    // A plain LMDB environment of someone else's.
    let foreign = dir.url.appending(path: "foreign")
    try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
    try rawPut(foreign.path, database: "other", key: "k", value: "v")
    let notOurs = storeError { _ = try LMDBStore(url: foreign, model: model) }
    #expect(notOurs?.code == .corrupted)
    #expect(notOurs?.message.contains("not a Strata LMDB store") == true)

    let missing = dir.url.appending(path: "missing")
    #expect(storeError { _ = try LMDBStore(url: missing, model: nil) }?.code == .notFound)
    #expect(storeError { _ = try LMDBStore(url: missing, model: model, options: .init(isReadOnly: true)) }?.code == .notFound)
    #expect(!FileManager.default.fileExists(atPath: missing.path))
    #expect(storeError { _ = try LMDBStore(url: dir.store, model: model, mapSize: 4096) }?.code == .misuse)
  }

  @Test func openingChecksTheModelAndTheMode() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    _ = try store.save(ChangeSet(inserted: [note("one", 1)]))
    store.close()
    #expect(storeError { _ = try texts(store) }?.code == .misuse)
    let other = try ObjectModel(entities: [
      EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
    ])
    let mismatch = storeError { _ = try LMDBStore(url: dir.store, model: other) }
    #expect(mismatch?.code == .schemaMismatch)
    let tool = try LMDBStore(url: dir.store, model: nil, options: .init(isReadOnly: true))
    defer { tool.close() }
    #expect(tool.model == (try noteModel()))
    #expect(try texts(tool) == ["one"])
    #expect(storeError { _ = try tool.save(ChangeSet(inserted: [note("two", 2)])) }?.code == .readOnly)
  }

  /// Records of Note (text, n, payload): a text longer than the record, and an `n` tagged as a string.
  @Test(arguments: [([UInt8]([1, 2, 4, 200]), "text"), ([1, 2, 4, 1, 0x61, 4, 1, 0x62, 0], "n")])
  func aDamagedRecordIsAnErrorNamingTheObject(record: [UInt8], damagedKey: String) throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    _ = try store.save(ChangeSet(inserted: [note("one", 1)]))
    store.close()
    var key = (UInt64(1) ^ (1 << 63)).bigEndian
    try withUnsafeBytes(of: &key) { try rawPut(dir.store.path, database: "Note", key: Data($0), value: Data(record)) }
    let reopened = try LMDBStore(url: dir.store, model: nil)
    defer { reopened.close() }
    let damaged = storeError { _ = try texts(reopened) }
    #expect(damaged?.code == .corrupted)
    #expect(damaged?.entity == "Note")
    #expect(damaged?.key == damagedKey)
    #expect(damaged?.message.contains("Note/p1") == true)
  }

  @Test func mdbStatOpensTheEnvironment() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    _ = try store.save(ChangeSet(inserted: [note("one", 1), note("two", 2)]))
    store.close()
    let text = try mdbStat(["-a", dir.store.path])
    for name in ["strata.meta", "strata.counters", "Note", "Note.text.unique", "Note.n.index"] {
      #expect(text.contains("Status of \(name)\n"), "\(name) in:\n\(text)")
    }
  }
}

/// The primary keys of an object-ID result (IDs of different stores differ by store identifier).
private func keys(_ result: FetchResult) -> [Int64] {
  guard case .objectIDs(let ids) = result else { return [] }
  return ids.compactMap(\.primaryKey)
}

/// What `mdb_stat` (lmdb-utils, which `scripts/install-deps` installs) prints with `arguments`.
/// `mdb_stat -rr` exits 1 after clearing readers even when it succeeds, so `checksStatus` can be off.
/// - Throws: when the tool is missing or fails: a test that needs it fails rather than passing unchecked.
func mdbStat(_ arguments: [String], checksStatus: Bool = true) throws -> String {
  let tool = try #require(
    ["/usr/bin/mdb_stat", "/usr/local/bin/mdb_stat"].first { FileManager.default.isExecutableFile(atPath: $0) },
    "mdb_stat is missing: install lmdb-utils (scripts/install-deps)")
  let process = Process()
  process.executableURL = URL(fileURLWithPath: tool)
  process.arguments = arguments
  let out = Pipe()
  process.standardOutput = out
  try process.run()
  let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  try #require(
    !checksStatus || process.terminationStatus == 0,
    "mdb_stat \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
  return text
}

/// Writes one entry into a named database with liblmdb directly (creating the environment).
func rawPut(_ path: String, database: String, key: String, value: String) throws {
  try rawPut(path, database: database, key: Data(key.utf8), value: Data(value.utf8))
}

func rawPut(_ path: String, database: String?, key: Data, value: Data) throws {
  try withRawWrite(path) { txn in
    var dbi: MDB_dbi = 0
    try checkRaw(mdb_dbi_open(txn, database, database == nil ? 0 : UInt32(MDB_CREATE), &dbi))
    var key = key
    var value = value
    try key.withUnsafeMutableBytes { k in
      try value.withUnsafeMutableBytes { v in
        var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
        var vv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
        try checkRaw(mdb_put(txn, dbi, &kv, &vv, 0))
      }
    }
  }
}

/// Throws ``RawFailure`` for a liblmdb result other than `MDB_SUCCESS`.
func checkRaw(_ rc: Int32) throws { if rc != MDB_SUCCESS { throw RawFailure(code: rc) } }

/// Runs `body` in a write transaction of the environment in `path` opened with liblmdb directly (created
/// when missing), and commits it.
func withRawWrite(_ path: String, _ body: (OpaquePointer) throws -> Void) throws {
  var env: OpaquePointer?
  try checkRaw(mdb_env_create(&env))
  defer { mdb_env_close(env) }
  try checkRaw(mdb_env_set_maxdbs(env, 64))
  try checkRaw(mdb_env_open(env, path, 0, 0o644))
  var txn: OpaquePointer?
  try checkRaw(mdb_txn_begin(env, nil, 0, &txn))
  guard let txn else { throw RawFailure(code: EINVAL) }
  do {
    try body(txn)
  } catch {
    mdb_txn_abort(txn)
    throw error
  }
  try checkRaw(mdb_txn_commit(txn))
}
