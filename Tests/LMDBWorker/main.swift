import CLMDB
import Foundation
import StrataLMDB
import StrataStoreKit

// A second process for the LMDB tests, on a store the test created (Note: text unique, n, payload):
//   lmdb-worker insert DIR PREFIX COUNT BATCH     saves COUNT notes "PREFIX-i", BATCH per save
//   lmdb-worker grow DIR BYTES                    saves notes with BYTES of payload in all, 64 KiB each
//   lmdb-worker save-on-request DIR               for each line "save" on standard input saves one note
//                                                 "remote-i" and says "saved"; ends at the end of input
//   lmdb-worker hold-write DIR                    opens a raw write transaction, says "ready", waits to be killed
//   lmdb-worker hold-read DIR                     opens a raw read transaction, says "ready", waits to be killed
//   lmdb-worker read DIR                          opens the store read-only and prints every note, by text
//                                                 and through the index on n: "text n payload-bytes payload-sum"
//   lmdb-worker open-time DIR ROWS               creates DIR with ROWS notes when missing, then prints the
//                                                 median time of 5 read-only opens (with the page walk) in ms
// Exit 0 on success, 1 with one line on standard error otherwise.

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("lmdb-worker: \(message)\n".utf8))
  exit(1)
}

func note(_ text: String, _ n: Int, payload: Data? = nil) -> ObjectChange {
  ObjectChange(
    objectID: .makeTemporary(entityName: "Note"),
    attributes: [.string(text), .int(Int64(n)), payload.map(Value.data) ?? .null], toOne: [])
}

func holdRawTransaction(_ path: String, readOnly: Bool) -> Never {
  var env: OpaquePointer?
  guard mdb_env_create(&env) == MDB_SUCCESS, let env else { fail("mdb_env_create") }
  mdb_env_set_maxdbs(env, 64)
  guard mdb_env_open(env, path, UInt32(MDB_NOTLS), 0o644) == MDB_SUCCESS else { fail("mdb_env_open \(path)") }
  var txn: OpaquePointer?
  guard mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn) == MDB_SUCCESS else { fail("mdb_txn_begin") }
  FileHandle.standardOutput.write(Data("ready\n".utf8))
  while true { sleep(60) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: lmdb-worker insert|grow|hold-write|hold-read DIR …") }
let path = arguments[2]
do {
  switch arguments[1] {
  case "insert":
    guard arguments.count == 6, let count = Int(arguments[4]), let batch = Int(arguments[5]), batch > 0 else {
      fail("usage: lmdb-worker insert DIR PREFIX COUNT BATCH")
    }
    let store = try LMDBStore(url: URL(fileURLWithPath: path), model: nil)
    defer { store.close() }
    var start = 0
    while start < count {
      let end = min(start + batch, count)
      _ = try store.save(ChangeSet(inserted: (start..<end).map { note("\(arguments[3])-\($0)", $0) }))
      start = end
    }
  case "save-on-request":
    let store = try LMDBStore(url: URL(fileURLWithPath: path), model: nil)
    defer { store.close() }
    var saved = 0
    while let line = readLine() {
      guard line == "save" else { fail("unknown request '\(line)'") }
      _ = try store.save(ChangeSet(inserted: [note("remote-\(saved)", saved)]))
      saved += 1
      FileHandle.standardOutput.write(Data("saved\n".utf8))
    }
  case "grow":
    guard arguments.count == 4, let bytes = Int(arguments[3]) else { fail("usage: lmdb-worker grow DIR BYTES") }
    let store = try LMDBStore(url: URL(fileURLWithPath: path), model: nil)
    defer { store.close() }
    let chunk = Data(repeating: 0xAB, count: 64 << 10)
    for i in 0..<max(1, bytes / chunk.count) {
      _ = try store.save(ChangeSet(inserted: [note("grow-\(i)", i, payload: chunk)]))
    }
  case "read":
    let store = try LMDBStore(url: URL(fileURLWithPath: path), model: nil, options: StoreOptions(isReadOnly: true))
    defer { store.close() }
    var byIndex = FetchDescription(entityName: "Note", sortDescriptors: [QuerySort("n")])
    byIndex.predicate = try QueryPredicate(format: "n >= 0")
    for request in [
      FetchDescription(entityName: "Note", sortDescriptors: [QuerySort("text")]),
      byIndex,
    ] {
      guard case .snapshots(let rows) = try store.fetch(request, generation: nil) else { fail("no snapshots") }
      for row in rows {
        var payload = Data()
        if case .data(let data) = row.attributes[2] { payload = data }
        var n: Int64 = -1
        if case .int(let value) = row.attributes[1] { n = value }
        print(row.attributes[0].stringValue ?? "-", n, payload.count, payload.reduce(0) { $0 &+ Int($1) })
      }
    }
  case "open-time":
    guard arguments.count == 4, let rows = Int(arguments[3]) else { fail("usage: lmdb-worker open-time DIR ROWS") }
    let url = URL(fileURLWithPath: path)
    if !FileManager.default.fileExists(atPath: path) {
      let model = try ObjectModel(entities: [
        EntityDescription(
          name: "Note",
          attributes: [
            AttributeDescription(name: "text", type: .string),
            AttributeDescription(name: "n", type: .int64, isIndexed: true),
            AttributeDescription(name: "payload", type: .data, isOptional: true),
          ],
          uniquenessConstraints: [["text"]])
      ])
      let store = try LMDBStore(url: url, model: model)
      var start = 0
      while start < rows {
        let end = min(start + 10_000, rows)
        _ = try store.save(ChangeSet(inserted: (start..<end).map { note("note-\($0)", $0, payload: Data(count: 40)) }))
        start = end
      }
      store.close()
    }
    var times: [Double] = []
    for _ in 0..<5 {
      let clock = ContinuousClock()
      let started = clock.now
      let store = try LMDBStore(url: url, model: nil, options: StoreOptions(isReadOnly: true))
      store.close()
      let elapsed = clock.now - started
      times.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
    }
    print(String(format: "%.1f", times.sorted()[2]))
  case "hold-write": holdRawTransaction(path, readOnly: false)
  case "hold-read": holdRawTransaction(path, readOnly: true)
  default: fail("unknown command '\(arguments[1])'")
  }
} catch {
  fail("\(error)")
}
