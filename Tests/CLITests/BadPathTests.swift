import Foundation
import Testing

/// A store path that can hold no store — a FIFO, a Unix socket, a symbolic-link loop, a link to nothing —
/// or holds the wrong kind of thing: every app and `strata` refuse it in one line naming the path and
/// why, exit 1, never block (opening a FIFO would), and leave what is there as it was.
@Suite("bad store paths")
struct BadPathTests {
  enum Oddity: String, CaseIterable, CustomTestStringConvertible {
    case fifo, socket, symbolicLinkLoop, danglingLink

    var testDescription: String { rawValue }

    /// A word the one-line error must hold.
    var reason: String {
      switch self {
      case .fifo: "FIFO"
      case .socket: "socket"
      case .symbolicLinkLoop: "symbolic link loop"
      case .danglingLink: "does not exist"
      }
    }

    func make(at path: String) throws {
      switch self {
      case .fifo: try #require(mkfifo(path, 0o644) == 0)
      case .socket: try makeSocket(at: path)
      case .symbolicLinkLoop: try #require(symlink(path, path) == 0)
      case .danglingLink: try #require(symlink(path + "-missing-target", path) == 0)
      }
    }
  }

  /// Every command taking a store path, with `PATH` where it goes.
  static func commands(_ store: String) -> [(String, [String])] {
    [
      ("fave-flicks", ["list", "--store", store, "--path", "PATH"]),
      (
        "fave-flicks",
        ["add", "--title", "T", "--genre", "g", "--release-date", "2020-01-01", "--store", store, "--path", "PATH"]
      ),
      ("bubble-tea-finder", ["list", "--store", store, "--path", "PATH"]),
      ("bubble-tea-finder", ["seed", "--store", store, "--path", "PATH"]),
      ("tater-rater", ["list", "--store", store, "--path", "PATH"]),
      ("tater-rater", ["import", "--store", store, "--path", "PATH"]),
      ("fireball-watch", ["list", "--store", store, "--path", "PATH"]),
      ("fireball-watch", ["group", "create", "G", "--store", store, "--path", "PATH"]),
      ("strata", ["info", "PATH", "--store", store]),
      ("strata", ["info", "PATH"]),
      ("strata", ["history", "PATH", "--store", store]),
    ]
  }

  @Test(arguments: Oddity.allCases)
  func aPathThatCanHoldNoStoreIsRefusedInOneLine(_ oddity: Oddity) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/store"
    try oddity.make(at: path)
    let before = try listing(directory)
    for store in ["sqlite", "lmdb"] {
      for (tool, template) in Self.commands(store) {
        let arguments = template.map { $0 == "PATH" ? path : $0 }
        let result = try runBounded(tool, arguments)
        #expect(result.status == 1, "\(tool) \(arguments): \(result.stderr)")
        #expect(isOneLineError(result.stderr, tool: tool), "\(tool) \(arguments): \(result.stderr)")
        #expect(result.stderr.contains(path) && result.stderr.contains(oddity.reason), "\(tool) \(arguments): \(result.stderr)")
        #expect(try listing(directory) == before, "\(tool) \(arguments) changed nothing")
      }
    }
    let source = directory + "/source.sqlite"
    #expect(
      try runBounded("fave-flicks", ["add", "--title", "T", "--genre", "g", "--release-date", "2020-01-01", "--path", source])
        .status == 0)
    let sourceBytes = try Data(contentsOf: URL(fileURLWithPath: source))
    let copy = try runBounded("strata", ["copy", source, path, "--to", "sqlite"])
    #expect(copy.status == 1 && copy.stderr.contains(path) && copy.stderr.contains(oddity.reason), "\(copy.stderr)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: source)) == sourceBytes)
    #expect(try listing(directory).filter { !$0.hasPrefix("source.sqlite") } == before, "strata copy changed nothing")
  }

  @Test func aDirectoryWhereAFileIsExpectedAndAFileWhereADirectoryIsExpectedAreRefusedUnchanged() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let folder = directory + "/folder"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
    try Data("notes".utf8).write(to: URL(fileURLWithPath: folder + "/notes.txt"))
    let file = directory + "/file"
    try Data("not a store".utf8).write(to: URL(fileURLWithPath: file))
    // An LMDB store whose data.mdb is a FIFO: reading it to check its meta pages would block.
    let environment = directory + "/env"
    try FileManager.default.createDirectory(atPath: environment, withIntermediateDirectories: false)
    try #require(mkfifo(environment + "/data.mdb", 0o644) == 0)
    let before = try snapshot(directory)

    let cases: [(store: String, path: String, reason: String)] = [
      ("sqlite", folder, "directory"), ("lmdb", file, "it is a file"), ("lmdb", environment, "FIFO"),
    ]
    for (store, path, reason) in cases {
      for (tool, template) in Self.commands(store) {
        let arguments = template.map { $0 == "PATH" ? path : $0 }
        let result = try runBounded(tool, arguments)
        #expect(result.status == 1, "\(tool) \(arguments): \(result.stderr)")
        #expect(isOneLineError(result.stderr, tool: tool), "\(tool) \(arguments): \(result.stderr)")
        #expect(result.stderr.contains(path), "\(tool) \(arguments): \(result.stderr)")
        if !(tool == "strata" && !arguments.contains("--store")) {
          #expect(result.stderr.contains(reason), "\(tool) \(arguments): \(result.stderr)")
        }
        #expect(try snapshot(directory) == before, "\(tool) \(arguments) changed nothing")
      }
    }
  }

  @Test func readingAnEmptyDirectoryAsAnLMDBStoreCreatesNothing() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    for tool in ["fave-flicks", "bubble-tea-finder", "tater-rater", "fireball-watch"] {
      let result = try runBounded(tool, ["list", "--store", "lmdb", "--path", directory])
      #expect(result.status == 0, "\(tool): \(result.stderr)")
      #expect(try listing(directory).isEmpty, "\(tool) list created a store")
    }
  }
}

/// Whether `stderr` is exactly one line `tool: error: …`.
func isOneLineError(_ stderr: String, tool: String) -> Bool {
  stderr.hasPrefix("\(tool): error: ") && stderr.hasSuffix("\n") && stderr.dropLast().allSatisfy { $0 != "\n" }
}

func makeDirectory() throws -> String {
  let directory = FileManager.default.temporaryDirectory.appending(path: "bad-path-\(UUID().uuidString)").path
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  return directory
}

/// The names in `directory`, with the kind of each (read with `lstat`, which never blocks).
func listing(_ directory: String) throws -> [String] {
  try FileManager.default.contentsOfDirectory(atPath: directory).sorted().map { name in
    var status = stat()
    lstat(directory + "/" + name, &status)
    return "\(name) \(status.st_mode & S_IFMT) \(status.st_size)"
  }
}

/// Every path under `directory` with its kind, and the bytes of each regular file — but for SQLite's
/// `-shm` and LMDB's `lock.mdb`, the shared lock tables every reader writes its place into by design,
/// and an empty `-wal` (a reader of an SQLite store at rest may leave one; it holds nothing).
func snapshot(_ directory: String) throws -> [String: String] {
  var result: [String: String] = [:]
  let files = FileManager.default
  for relative in files.subpaths(atPath: directory) ?? [] where !relative.hasSuffix("-shm") && !relative.hasSuffix("lock.mdb") {
    let path = directory + "/" + relative
    var status = stat()
    lstat(path, &status)
    let kind = status.st_mode & S_IFMT
    if relative.hasSuffix("-wal") && kind == S_IFREG && status.st_size == 0 { continue }
    result[relative] = kind == S_IFREG ? (try Data(contentsOf: URL(fileURLWithPath: path))).base64EncodedString() : "kind \(kind)"
  }
  return result
}

func makeSocket(at path: String) throws {
  let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
  try #require(descriptor >= 0)
  defer { close(descriptor) }
  var address = sockaddr_un()
  address.sun_family = sa_family_t(AF_UNIX)
  let bytes = Array(path.utf8)
  try #require(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
  withUnsafeMutableBytes(of: &address.sun_path) { buffer in
    for (index, byte) in bytes.enumerated() { buffer[index] = byte }
  }
  let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
  }
  try #require(bound == 0, "bind \(path): \(String(cString: strerror(errno)))")
}

/// Runs a built tool as ``Executables/run(_:_:environment:)`` does, but stops one that is still running
/// after two minutes (a blocked open of a FIFO never returns) and records that it hung.
func runBounded(_ name: String, _ arguments: [String]) throws -> CommandResult {
  let process = Process()
  process.executableURL = Executables.url(name)
  process.arguments = arguments
  let output = FileManager.default.temporaryDirectory.appending(path: "bounded-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: output) }
  let (out, err) = (output.appending(path: "out"), output.appending(path: "err"))
  _ = FileManager.default.createFile(atPath: out.path, contents: nil)
  _ = FileManager.default.createFile(atPath: err.path, contents: nil)
  process.standardOutput = try FileHandle(forWritingTo: out)
  process.standardError = try FileHandle(forWritingTo: err)
  let finished = DispatchSemaphore(value: 0)
  process.terminationHandler = { _ in finished.signal() }
  try process.run()
  if finished.wait(timeout: .now() + 120) == .timedOut {
    kill(process.processIdentifier, SIGKILL)
    finished.wait()
    Issue.record("\(name) \(arguments) hung")
  }
  return CommandResult(
    status: process.terminationStatus, stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self),
    stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
}
