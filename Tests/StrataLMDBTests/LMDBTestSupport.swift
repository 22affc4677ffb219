import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// Note: `text` unique, `n` indexed, `payload` optional data; Tag n—m Note through `tags`.
func noteModel() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Note",
      attributes: [
        AttributeDescription(name: "text", type: .string),
        AttributeDescription(name: "n", type: .int64, isIndexed: true),
        AttributeDescription(name: "payload", type: .data, isOptional: true),
      ],
      uniquenessConstraints: [["text"]])
  ])
}

func note(_ text: String, _ n: Int, payload: Data? = nil) -> ObjectChange {
  ObjectChange(
    objectID: .makeTemporary(entityName: "Note"),
    attributes: [.string(text), .int(Int64(n)), payload.map(Value.data) ?? .null], toOne: [])
}

/// A fresh directory under the temporary directory, removed when the test's `defer` calls `remove()`.
struct TemporaryDirectory {
  let url = FileManager.default.temporaryDirectory.appending(path: "strata-lmdb-\(UUID().uuidString)")
  var store: URL { url.appending(path: "store.lmdb") }
  func remove() { try? FileManager.default.removeItem(at: url) }
}

func storeError(_ body: () throws -> Void) -> StoreError? {
  do {
    try body()
    return nil
  } catch let error as StoreError {
    return error
  } catch {
    return StoreError(.io, "unexpected \(error)")
  }
}

func texts(_ store: LMDBStore, _ format: String? = nil, generation: QueryGeneration? = nil) throws -> [String] {
  var request = FetchDescription(entityName: "Note", sortDescriptors: [QuerySort("text")])
  if let format { request.predicate = try QueryPredicate(format: format) }
  guard case .snapshots(let rows) = try store.fetch(request, generation: generation) else { return [] }
  return rows.compactMap { $0.attributes[0].stringValue }
}

func count(_ store: any PersistentStore, _ format: String? = nil) throws -> Int {
  var request = FetchDescription(entityName: "Note")
  if let format { request.predicate = try QueryPredicate(format: format) }
  return try store.count(request)
}

/// Runs the `lmdb-worker` executable built next to the tests.
enum Worker {
  static var url: URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
      let candidate = directory.appending(path: "lmdb-worker")
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
      directory = directory.deletingLastPathComponent()
    }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    return root.appending(path: ".build/debug/lmdb-worker")
  }

  /// Starts the worker; its standard output and error are pipes, and so is its standard input when
  /// `input` is given.
  static func start(_ arguments: [String], input: Pipe? = nil) throws -> (Process, Pipe, Pipe) {
    let process = Process()
    process.executableURL = url
    process.arguments = arguments
    if let input { process.standardInput = input }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    return (process, out, err)
  }

  /// Waits for the worker to end; returns its exit status and standard error.
  static func finish(_ started: (Process, Pipe, Pipe)) -> (status: Int32, stderr: String) {
    let (process, _, err) = started
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: errData, as: UTF8.self))
  }

  /// Starts a worker that holds a transaction, waits for its "ready", then kills it with SIGKILL.
  static func killWhileHolding(_ command: String, _ path: String) throws {
    let (process, out, _) = try start([command, path])
    let line = out.fileHandleForReading.availableDataLine()
    #expect(line == "ready")
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }
}

extension FileHandle {
  /// Reads up to the first newline (or the end).
  func availableDataLine() -> String {
    var bytes: [UInt8] = []
    while true {
      let data = readData(ofLength: 1)
      guard let byte = data.first, byte != UInt8(ascii: "\n") else { break }
      bytes.append(byte)
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}
