import CLMDB
import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// Several processes on one environment, and processes that die holding it.
@Suite("LMDB across processes", .serialized)
struct LMDBMultiProcessTests {
  @Test func twoProcessesWriteWhileThisOneWritesAndReads() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), mapSize: 1 << 20)
    defer { store.close() }
    let workers = try ["a", "b"].map { try Worker.start(["insert", dir.store.path, $0, "300", "10"]) }
    var last = 0
    var decreased = false
    var wholeSaves = true
    for i in 0..<30 {
      _ = try store.save(ChangeSet(inserted: (0..<10).map { note("here-\(i)-\($0)", $0) }))
      let seen = try count(store)
      if seen < last { decreased = true }
      if seen % 10 != 0 { wholeSaves = false }
      last = seen
    }
    for worker in workers {
      let (status, stderr) = Worker.finish(worker)
      #expect(status == 0, "\(stderr)")
    }
    #expect(!decreased)
    #expect(wholeSaves, "every process sees whole saves")
    #expect(try count(store) == 900)
    #expect(try count(store, "text BEGINSWITH 'a-'") == 300)
    #expect(try count(store, "text BEGINSWITH 'b-'") == 300)
    guard
      case .objectIDs(let ids) = try store.fetch(FetchDescription(entityName: "Note", resultType: .objectIDs), generation: nil)
    else { return }
    #expect(ids.compactMap(\.primaryKey) == Array(1...900), "keys are assigned once across processes")
  }

  @Test func aReadRightAfterAnotherProcessCommitsSeesTheCommit() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), mapSize: 1 << 20)
    defer { store.close() }
    _ = try store.save(ChangeSet(inserted: [note("here", 1)]))
    let input = Pipe()
    let worker = try Worker.start(["save-on-request", dir.store.path], input: input)
    // A read leaves its transaction open for the next one: the read right after each remote commit must
    // not be answered from the snapshot before it.
    for saved in 1...20 {
      #expect(try count(store) == saved)
      input.fileHandleForWriting.write(Data("save\n".utf8))
      #expect(worker.1.fileHandleForReading.availableDataLine() == "saved")
      #expect(try count(store) == saved + 1)
    }
    try input.fileHandleForWriting.close()
    let (status, stderr) = Worker.finish(worker)
    #expect(status == 0, "\(stderr)")
    #expect(try texts(store, "text BEGINSWITH 'remote-'").count == 20)
  }

  @Test func anotherProcessGrowingTheMapIsAdopted() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), mapSize: 1 << 20)
    defer { store.close() }
    _ = try store.save(ChangeSet(inserted: [note("before", 1)]))
    let generation = try store.pinGeneration()
    let (status, stderr) = Worker.finish(try Worker.start(["grow", dir.store.path, "\(6 << 20)"]))
    #expect(status == 0, "\(stderr)")
    // This process's map is still 1 MiB: reading and writing adopt the size the worker gave the file.
    #expect(try count(store) == 97)
    _ = try store.save(ChangeSet(inserted: [note("after", -2, payload: Data(repeating: 1, count: 1 << 20))]))
    #expect(try count(store) == 98)
    #expect(try texts(store, "n == -2") == ["after"])
    #expect(try texts(store, generation: generation) == ["before"])
    store.unpin(generation)
  }

  @Test func aWriterKilledMidTransactionLeavesNoLock() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    _ = try store.save(ChangeSet(inserted: [note("before", 1)]))
    store.close()
    try Worker.killWhileHolding("hold-write", dir.store.path)
    let reopened = try LMDBStore(url: dir.store, model: nil)
    defer { reopened.close() }
    _ = try reopened.save(ChangeSet(inserted: [note("after", 2)]))
    #expect(try texts(reopened) == ["after", "before"])
  }

  @Test func aReaderKilledMidTransactionIsClearedOnOpen() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    store.close()
    try Worker.killWhileHolding("hold-read", dir.store.path)
    let reopened = try LMDBStore(url: dir.store, model: nil)
    defer { reopened.close() }
    #expect(try staleReaders(dir.store.path) == 0, "opening the store cleared the dead reader's slot")
    _ = try reopened.save(ChangeSet(inserted: [note("after", 2)]))
    #expect(try count(reopened) == 1)
  }

  @Test func remoteCommitsAreAnnounced() async throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try LMDBStore(url: dir.store, model: try noteModel(), options: .init(postsRemoteChangeNotifications: true))
    defer { store.close() }
    var changes = store.changes().makeAsyncIterator()
    let (status, stderr) = Worker.finish(try Worker.start(["insert", dir.store.path, "remote", "3", "3"]))
    #expect(status == 0, "\(stderr)")
    let remote = await changes.next()
    #expect(remote?.isRemote == true)
    #expect(remote?.storeIdentifier == store.identifier)
    _ = try store.save(ChangeSet(inserted: [note("local", 1)]))
    let local = await changes.next()
    #expect(local?.isRemote == false)
    #expect(local?.inserted.count == 1)
  }
}

/// The reader slots of dead processes `mdb_stat -rr` finds (and clears) now.
private func staleReaders(_ path: String) throws -> Int? {
  let text = try mdbStat(["-rr", path], checksStatus: false)
  guard let line = text.split(separator: "\n").first(where: { $0.contains("stale readers cleared") }) else { return nil }
  return Int(line.split(separator: " ").first ?? "")
}
