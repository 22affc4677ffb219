import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// Kill campaigns at each durable step of a sync, with real processes and a real PostgreSQL hub: the
/// `mirror-worker` program (Tests/MirrorWorker) saves and syncs a SQLite or LMDB replica and is stopped by
/// `STRATA_MIRROR_FAILPOINT` exactly at one step; this process then reopens the replica, syncs, and checks
/// that no acknowledged write was lost, none applied twice, and every replica and the hub hold the same
/// objects. The server restart pauses the worker inside its push, restarts a PostgreSQL server of its own,
/// and lets the push go on against the restarted server.
@Suite("Mirror kill campaigns")
struct MirrorKillTests {
  /// Where a replica process dies.
  enum Kill: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Its saves committed, nothing pushed.
    case afterLocalCommit
    /// The hub acknowledged 5 of its 12 transactions; the replica recorded none.
    case duringPush
    /// Inside the hub's transaction of its 5th transaction, before the `COMMIT`.
    case insideHubTransaction
    /// The hub committed its 5th transaction; the reply never reached the replica.
    case afterHubCommit
    /// Its push done, 2 of the 4 pulled batches applied.
    case duringPull

    var failpoint: String {
      switch self {
      case .afterLocalCommit: "beforePush"
      case .duringPush: "afterPush:5"
      case .insideHubTransaction: "beforeHubCommit:5"
      case .afterHubCommit: "afterHubCommit:5"
      case .duringPull: "afterPullBatch:2"
      }
    }

    /// How many of the killed replica's transactions the hub holds after the kill.
    var onTheHub: Int {
      switch self {
      case .afterLocalCommit: 0
      case .insideHubTransaction: 4
      case .duringPush, .afterHubCommit: 5
      case .duringPull: transactions
      }
    }

    var testDescription: String { rawValue }
  }

  static let transactions = 12

  /// Every kill on SQLite and on LMDB, in an order where the first five take each kill once, alternating
  /// the stores; `STRATA_MIRROR_KILL_CASES=n` runs the first n (scripts/sanitize runs 5).
  static let cases: [(Kill, ReplicaStore)] = {
    let all = Kill.allCases.enumerated().map { ($1, $0 % 2 == 0 ? ReplicaStore.sqlite : .lmdb) }
    let others = all.map { ($0.0, $0.1 == .sqlite ? ReplicaStore.lmdb : .sqlite) }
    let count = ProcessInfo.processInfo.environment["STRATA_MIRROR_KILL_CASES"].flatMap(Int.init) ?? all.count * 2
    return Array((all + others).prefix(max(1, count)))
  }()

  @Test(arguments: MirrorKillTests.cases)
  func aReplicaKilledAtADurableStepLosesAndDuplicatesNothing(kill: Kill, store: ReplicaStore) async throws {
    let uri = try PostgresHubTests.serverURI()
    let schema = Self.freshSchema()
    let hub = try PostgresHub(uri: uri, schema: schema, model: orchardModel)
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    // Another replica's entries, for the killed one to pull in batches of 3.
    let other = try Replica(.memory, hub: hub, in: directory, name: "other")
    for i in 0..<Self.transactions {
      Crate(context: other.context).label = "other \(i)"
      try other.context.save()
    }
    _ = try await other.mirror.sync()

    let path = directory.appending(path: "killed.\(store.rawValue)").path
    let run = try await MirrorWorker.run(
      [store.rawValue, path, uri, schema, "killed", String(Self.transactions), "3"], failpoint: kill.failpoint)
    #expect(
      run.status == MirrorWorker.killedStatus,
      "the worker was to die at \(kill.failpoint) (exit \(MirrorWorker.killedStatus)); exit \(run.status): \(run.output) \(run.errors)"
    )
    #expect(run.output.contains("saved \(Self.transactions)"))
    let before = try await hub.pull(after: 0, limit: 10_000)
    #expect(before.count - Self.transactions == kill.onTheHub, "the hub's log after the kill at \(kill.failpoint)")

    let killed = try Replica(store, hub: hub, in: directory, name: "killed")
    defer { killed.container.close() }
    for replica in [killed, other, killed] { _ = try await replica.mirror.sync() }
    let failures = try await Self.ledgerFailures(of: [killed, other], hub: hub)
    #expect(failures.isEmpty, "\(kill) on \(store): \(failures.joined(separator: "; "))")
    let labels = try hub.liveObjects().values.compactMap { object -> String? in
      guard case .value(.string(let label))? = object.fields["label"] else { return nil }
      return label
    }
    let expected = (0..<Self.transactions).flatMap { ["killed \($0)", "other \($0)"] }
    #expect(labels.sorted() == expected.sorted(), "every saved crate on the hub once")
  }

  /// The PostgreSQL server restarts (a fast shutdown: open transactions rolled back, connections dropped)
  /// while a replica's push is paused inside a hub transaction, after a hub commit whose reply is not read
  /// yet, and between two transactions; each push then goes on against the restarted server, the hub
  /// connecting again, and completes in the same sync. Then a restart while the hub's connection is idle.
  @Test func aServerRestartDuringAPushLosesAndDuplicatesNothing() async throws {
    let server = try await PrivateServer.start()
    do {
      try await Self.restartDuringPushes(on: server)
      try await Self.restartBetweenSyncs(on: server)
    } catch {
      await server.stop()
      throw error
    }
    await server.stop()
  }

  static func restartDuringPushes(on server: PrivateServer) async throws {
    for pause in ["beforeHubCommit:10", "afterHubCommit:10", "afterPush:10"] {
      let schema = Self.freshSchema()
      let hub = try PostgresHub(uri: server.uri, schema: schema, model: orchardModel)
      let directory = try temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let path = directory.appending(path: "pushing.sqlite").path
      let run = try await MirrorWorker.run(
        ["sqlite", path, server.uri, schema, "pushing", "30", "100"], failpoint: pause + ":pause",
        whenPaused: { try server.restart() })
      #expect(run.output.contains("paused"), "the worker never reached \(pause): \(run.output) \(run.errors)")
      // The hub connects again and repeats the request that met the dropped connection: the sync goes on.
      #expect(
        run.status == 0 && run.output.contains("synced pushed 30"), "after the restart at \(pause): \(run.output) \(run.errors)")
      let pushing = try Replica(.sqlite, hub: hub, in: directory, name: "pushing")
      defer { pushing.container.close() }
      _ = try await pushing.mirror.sync()
      let failures = try await Self.ledgerFailures(of: [pushing], hub: hub)
      #expect(failures.isEmpty, "restart at \(pause): \(failures.joined(separator: "; "))")
      #expect(try hub.liveObjects().count == 60, "30 crates and 30 apples on the hub after the restart at \(pause)")
    }
  }

  /// A server restart while the hub's connection is idle: the next sync connects again and succeeds (the
  /// kept connection is dropped; a push is safe to repeat on a new one).
  static func restartBetweenSyncs(on server: PrivateServer) async throws {
    let hub = try PostgresHub(uri: server.uri, schema: freshSchema(), model: orchardModel)
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let replica = try Replica(.sqlite, hub: hub, in: directory, name: "idle")
    defer { replica.container.close() }
    Crate(context: replica.context).label = "before"
    try replica.context.save()
    _ = try await replica.mirror.sync()
    try await offThePool { try server.restart() }
    Crate(context: replica.context).label = "after"
    try replica.context.save()
    await #expect(throws: Never.self, "the first sync after the restart") { _ = try await replica.mirror.sync() }
    _ = try await replica.mirror.sync()
    let failures = try await ledgerFailures(of: [replica], hub: hub)
    #expect(failures.isEmpty, "restart between syncs: \(failures.joined(separator: "; "))")
  }

  static func freshSchema() -> String {
    "mirror_" + String(UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20))
  }

  /// What does not hold of `replicas` (each synced after its last edit) and `hub`: every local transaction
  /// of a replica is on the hub exactly once, no replica has pending transactions, and each holds the
  /// hub's objects.
  static func ledgerFailures(of replicas: [Replica], hub: any MirrorHub) async throws -> [String] {
    var failures: [String] = []
    let log = try await hub.pull(after: 0, limit: .max)
    var applied: [UUID: [Int64: Int]] = [:]
    for entry in log { applied[entry.replicaID, default: [:]][entry.localSequence, default: 0] += 1 }
    let expected =
      try (hub as? PostgresHub)?.liveObjects().mapValues(\.fields) ?? canonicalDump(of: hub)
    for replica in replicas {
      let status = try replica.mirror.status()
      if status.pendingTransactions != 0 {
        failures.append("\(replica.container.name) has \(status.pendingTransactions) pending transactions")
      }
      let local = try replica.localTransactions()
      if !local.isEmpty, status.replicaID == nil { failures.append("\(replica.container.name) has no replica identity") }
      let onHub = status.replicaID.flatMap { applied[$0] } ?? [:]
      let lost = local.filter { onHub[$0] == nil }
      let twice = onHub.filter { $0.value > 1 }.keys.sorted()
      if !lost.isEmpty { failures.append("\(replica.container.name)'s transactions \(lost) are not on the hub (lost)") }
      if !twice.isEmpty { failures.append("\(replica.container.name)'s transactions \(twice) were applied twice") }
      if try replica.canonicalDump() != expected {
        failures.append("\(replica.container.name) holds other objects than the hub")
      }
    }
    return failures
  }
}

extension Replica {
  /// The local sequences of the app's transactions (the mirror's own excluded): what the hub must hold.
  func localTransactions() throws -> [Int64] {
    let context = container.newBackgroundContext()
    return try context.performAndWait {
      guard case .transactions(let all) = try context.execute(.fetchHistory(after: nil)) else { return [] }
      return all.filter { $0.author != StoreMirror.author }.map(\.token.sequence)
    }
  }
}

/// The `mirror-worker` program built next to the tests.
enum MirrorWorker {
  /// The exit status of a worker its failpoint stopped (`MirrorFailpoint.exitStatus`).
  static let killedStatus: Int32 = 86

  static var url: URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
      let candidate = directory.appending(path: "mirror-worker")
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
      directory = directory.deletingLastPathComponent()
    }
    return packageRoot.appending(path: ".build/debug/mirror-worker")
  }

  /// Runs the worker with `STRATA_MIRROR_FAILPOINT=failpoint` to its end, on a thread of its own (the waits
  /// block). When it pauses, `whenPaused` runs and the worker is told to go on. A worker still running when
  /// something throws is killed with SIGKILL.
  static func run(
    _ arguments: [String], failpoint: String, whenPaused: @escaping @Sendable () throws -> Void = {}
  ) async throws -> (status: Int32, output: String, errors: String) {
    try await offThePool {
      let process = Process()
      process.executableURL = url
      process.arguments = arguments
      var environment = ProcessInfo.processInfo.environment
      environment["STRATA_MIRROR_FAILPOINT"] = failpoint
      process.environment = environment
      let (input, output, errors) = (Pipe(), Pipe(), Pipe())
      process.standardInput = input
      process.standardOutput = output
      process.standardError = errors
      try process.run()
      defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
      var lines: [String] = []
      while let line = output.fileHandleForReading.readLine() {
        lines.append(line)
        if line.hasPrefix("paused ") {
          try whenPaused()
          input.fileHandleForWriting.write(Data("go on\n".utf8))
        }
      }
      let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      return (process.terminationStatus, lines.joined(separator: "\n"), stderr)
    }
  }
}

/// A PostgreSQL server of one test's own (scripts/postgres-server), which it may restart.
struct PrivateServer: Sendable {
  let directory: String
  let uri: String

  static func start() async throws -> PrivateServer {
    let directory = FileManager.default.temporaryDirectory.appending(path: "strata-pg-\(UUID().uuidString)").path
    let uri = try await offThePool { try script(["start", directory]) }
    return PrivateServer(directory: directory, uri: uri.split(separator: "\n").last.map(String.init) ?? uri)
  }

  /// A fast restart: open transactions are rolled back and every connection is dropped.
  func restart() throws { _ = try Self.script(["restart", directory]) }

  /// Stops the server and deletes its folder.
  func stop() async {
    let directory = directory
    _ = try? await offThePool { try Self.script(["stop", directory]) }
  }

  /// Runs scripts/postgres-server with `posix_spawn` and `waitpid` (Foundation's `Process` was seen never to
  /// notice this script's end, its `waitUntilExit` hanging on a reaped-by-nobody child), its standard output
  /// in a file.
  private static func script(_ arguments: [String]) throws -> String {
    let output = FileManager.default.temporaryDirectory.appending(path: "strata-pg-\(UUID().uuidString).out").path
    defer { try? FileManager.default.removeItem(atPath: output) }
    let executable = packageRoot.appending(path: "scripts/postgres-server").path
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard spawned == 0 else { throw MirrorError.hubFailed("cannot start scripts/postgres-server: error \(spawned)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    // WIFEXITED and WEXITSTATUS, spelled out (the C macros are not imported).
    guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
      throw MirrorError.hubFailed("scripts/postgres-server \(arguments.joined(separator: " ")) failed (wait status \(status))")
    }
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
  }
}

/// The package's root folder.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent()

/// Runs `body`, which blocks (on a process or a pipe), on a thread of its own rather than on the
/// cooperative pool.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread { continuation.resume(with: Result { try body() }) }.start()
  }
}

extension FileHandle {
  /// The next line (without its newline), `nil` at the end.
  func readLine() -> String? {
    var bytes: [UInt8] = []
    while true {
      let data = readData(ofLength: 1)
      guard let byte = data.first else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
      if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
      bytes.append(byte)
    }
  }
}
