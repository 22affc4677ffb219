import CLibPQ
import Foundation
import Strata
import StrataCLI
import StrataLMDB
import StrataMirroring
import StrataPostgresHub
import StrataSQLite

/// The mirror scenarios (`--only mirror`): replicas on local SQLite and LMDB stores syncing with a
/// `PostgresHub` on the server of `--postgres-uri`, each scenario beside a raw libpq loop in the same run.
/// Everything here is awaited from the command's asynchronous `run()`; the replicas' work goes through
/// background contexts, and no thread waits on a task.
///
/// - `mirror_push`: `--rows`/10 local transactions (one new object each, saved beforehand) pushed by
///   `sync()` (the push phase's time; the whole round, which pulls them back, as `sync_ms`), against the
///   same rows written as that many transactions by a pipelined libpq loop.
/// - `mirror_pull`: `--rows` changes (hub entries of 100 inserts, pushed once per invocation) pulled by a
///   fresh replica's `sync()` (the pull phase; `sync_ms` the round), against one binary `SELECT` of the same
///   rows decoded into structs.
/// - `mirror_latency`: a save on replica A (SQLite) until the object is visible in a background context on
///   replica B (LMDB), both syncing automatically (default debounce): `strata_ms` is the p50 of the saves,
///   `strata_p99_ms` beside it; raw: an `INSERT` and `NOTIFY` on one connection until a `LISTEN`ing
///   connection hears it and reads the row.
struct MirrorBench {
  /// The scenarios' names, as `--scenario` takes them.
  static let scenarios = ["mirror_push", "mirror_pull", "mirror_latency"]
  /// How many inserts each hub entry of the pull holds.
  static let changesPerEntry = 100

  let command: StrataBench

  var pullChanges: Int { command.rows }
  var pushTransactions: Int { max(1, command.rows / 10) }
  var latencySaves: Int { min(100, max(5, command.rows / 1000)) }

  /// Runs the wanted mirror scenarios `--runs` times each and returns their figures.
  func perform() async throws -> [Measurement] {
    guard let uri = command.postgresServer else {
      throw UsageError(
        "the mirror scenarios need a PostgreSQL server: pass --postgres-uri URI or set STRATA_POSTGRES_URI "
          + "(scripts/postgres-server start DIR)")
    }
    let bench = try MirrorRun(uri: uri)
    defer { bench.close() }
    var measurements: [Measurement] = []
    if command.wantsMirror("mirror_push") {
      let recorder = Recorder(rows: pushTransactions)
      let rows = (0..<pushTransactions).map(Row.make)
      for index in 0..<command.runs { try await bench.push(rows, run: index, recorder: recorder) }
      measurements += recorder.measurements
    }
    if command.wantsMirror("mirror_pull") {
      let recorder = Recorder(rows: pullChanges)
      let rows = (0..<pullChanges).map(Row.make)
      try await bench.preparePull(rows)
      for index in 0..<command.runs { try await bench.pull(rows, run: index, recorder: recorder) }
      measurements += recorder.measurements
    }
    if command.wantsMirror("mirror_latency") {
      let recorder = Recorder(rows: latencySaves)
      for index in 0..<command.runs { try await bench.latency(saves: latencySaves, run: index, recorder: recorder) }
      measurements += recorder.measurements
    }
    return measurements
  }
}

/// The mirrored model of the mirror scenarios: BenchItem and the mirror's additions.
func mirrorBenchModel() throws -> ObjectModel {
  try MirrorModel.adding(to: ObjectModel(types: [BenchItem.self]))
}

/// A replica: a container on a local store tracking history.
func mirrorReplica(
  _ type: StoreType, at url: URL, model: ObjectModel, notifying: Bool = false
) throws -> PersistentContainer {
  let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory()])
  let container = PersistentContainer(name: "MirrorBench", model: model, types: [BenchItem.self], registry: registry)
  let options = StoreOptions(tracksHistory: true, postsRemoteChangeNotifications: notifying)
  container.storeDescriptions = [StoreDescription(type: type, url: url, options: options)]
  try container.loadPersistentStores()
  return container
}

extension BenchItem {
  /// A new item with `row`'s values in `context`.
  @discardableResult
  static func make(_ row: Row, in context: ObjectContext) -> BenchItem {
    let item = BenchItem(context: context)
    item.name = row.name
    item.category = row.category
    item.count = row.count
    item.amount = row.amount
    item.flag = row.flag
    item.created = row.created
    item.code = row.code
    item.score = row.score
    item.note = row.note
    return item
  }
}

/// How many BenchItems a fresh background context of `container` counts.
func storedItems(_ container: PersistentContainer) throws -> Int {
  let context = container.newBackgroundContext()
  return try context.performAndWait { try context.count(for: FetchRequest<BenchItem>()) }
}

/// The milliseconds between a mirror event's start and end.
func milliseconds(of event: MirrorEvent) -> Double { event.endedAt.timeIntervalSince(event.startedAt) * 1000 }

/// One `sync()` of `mirror`: the time of its `kind` phase, from the mirror's events, and of the whole round.
func timedSync(_ mirror: StoreMirror, phase kind: MirrorEvent.Kind) async throws -> (phase: Double, round: Double, SyncReport) {
  let events = mirror.events()
  let started = ContinuousClock.now
  let report = try await mirror.sync()
  let round = (ContinuousClock.now - started) / .milliseconds(1)
  // Both phases' events are in the stream's buffer once the round has returned.
  for await event in events where event.kind == kind { return (milliseconds(of: event), round, report) }
  throw BenchError.store("no \(kind) event after a sync")
}

/// One invocation's mirror scenarios on one server: a schema for the raw tables and one per hub, all
/// dropped at the end, and a directory for the replicas' stores.
final class MirrorRun {
  let uri: String
  let connection: RawPG
  let directory: URL
  let model: ObjectModel
  /// The raw tables' schema; the hubs' are named after it.
  let schema: String
  private var schemas: [String] = []
  private var pullHub: String?

  init(uri: String) throws {
    self.uri = uri
    connection = try RawPG(uri)
    model = try mirrorBenchModel()
    schema = "bench_" + UUID().uuidString.lowercased().filter(\.isHexDigit).prefix(12)
    try connection.exec("CREATE SCHEMA \(schema)")
    schemas.append(schema)
    directory = try freshDirectory()
  }

  func close() {
    for name in schemas { try? connection.exec("DROP SCHEMA IF EXISTS \(name) CASCADE") }
    try? FileManager.default.removeItem(at: directory)
  }

  /// A hub schema of its own (created by the hub on first use), dropped at the end.
  private func hubSchema(_ name: String) -> String {
    let hub = "\(schema)_\(name)"
    schemas.append(hub)
    return hub
  }

  /// A hub in `schema` whose tables exist (made untimed).
  private func hub(in schema: String) async throws -> PostgresHub {
    let hub = try PostgresHub(uri: uri, schema: schema, model: model)
    _ = try await hub.lastPosition()
    return hub
  }

  // MARK: Push

  func push(_ rows: [Row], run index: Int, recorder: Recorder) async throws {
    let replica = try mirrorReplica(.sqlite, at: directory.appending(path: "push-\(index).sqlite"), model: model)
    defer { replica.close() }
    let context = replica.newBackgroundContext()
    try context.performAndWait {
      for row in rows {
        BenchItem.make(row, in: context)
        try context.save()
      }
    }
    let mirror = try StoreMirror(container: replica, hub: try await hub(in: hubSchema("push\(index)")))
    let table = "\(schema).push_\(index)"
    try connection.exec("CREATE TABLE \(table) (\(rawPGTable))")
    try recorder.measure(.raw, "mirror_push", .postgres) { try rawPostgresTransactions(rows, connection, table: table) }
    try await recorder.measureAsync(.strata, "mirror_push", .postgres) {
      let (push, round, report) = try await timedSync(mirror, phase: .push)
      guard report.pushed == rows.count else {
        throw BenchError.store("pushed \(report.pushed) transactions, expected \(rows.count)")
      }
      recorder.note("mirror_push", .postgres, "sync_ms", round)
      return push
    }
  }

  // MARK: Pull

  /// The hub the pulls read (`rows` as inserts, `MirrorBench.changesPerEntry` per entry) and the raw table of
  /// the same rows, made once per invocation.
  func preparePull(_ rows: [Row]) async throws {
    let schema = hubSchema("pull")
    let hub = try await hub(in: schema)
    let producer = UUID()
    let objects = dictionaries(rows)
    var sequence: Int64 = 0
    for start in stride(from: 0, to: objects.count, by: MirrorBench.changesPerEntry) {
      sequence += 1
      let changes = objects[start..<min(start + MirrorBench.changesPerEntry, objects.count)].map { fields in
        MirrorChange(globalID: UUID(), entityName: "BenchItem", kind: .insert, fields: fields.mapValues { .value($0) })
      }
      _ = try await hub.push(
        MirrorTransaction(replicaID: producer, localSequence: sequence, basePosition: 0, changes: changes))
    }
    pullHub = schema
    _ = try rawPostgresInsert(rows, connection, schema: self.schema)
  }

  func pull(_ rows: [Row], run index: Int, recorder: Recorder) async throws {
    guard let pullHub else { throw BenchError.store("the pull's hub is not prepared") }
    let replica = try mirrorReplica(.sqlite, at: directory.appending(path: "pull-\(index).sqlite"), model: model)
    defer { replica.close() }
    let mirror = try StoreMirror(container: replica, hub: try await hub(in: pullHub))
    let entries = (rows.count + MirrorBench.changesPerEntry - 1) / MirrorBench.changesPerEntry
    try recorder.measure(.raw, "mirror_pull", .postgres) {
      try rawPostgresFetch(expecting: rows.count, connection, table: "\(schema).raw_insert")
    }
    try await recorder.measureAsync(.strata, "mirror_pull", .postgres) {
      let (pull, round, report) = try await timedSync(mirror, phase: .pull)
      guard report.pulled == entries else { throw BenchError.store("pulled \(report.pulled) entries, expected \(entries)") }
      recorder.note("mirror_pull", .postgres, "sync_ms", round)
      return pull
    }
    let stored = try storedItems(replica)
    guard stored == rows.count else { throw BenchError.store("the pull stored \(stored) objects, expected \(rows.count)") }
  }

  // MARK: Latency

  func latency(saves: Int, run index: Int, recorder: Recorder) async throws {
    try recorder.measure(.raw, "mirror_latency", .postgres) {
      let latencies = try rawNotifyLatencies(saves: saves, run: index)
      recorder.note("mirror_latency", .postgres, "raw_p99_ms", percentile(latencies, 99))
      return percentile(latencies, 50)
    }
    let hub = try await hub(in: hubSchema("latency\(index)"))
    let a = try mirrorReplica(.sqlite, at: directory.appending(path: "a-\(index).sqlite"), model: model, notifying: true)
    defer { a.close() }
    let b = try mirrorReplica(.lmdb, at: directory.appending(path: "b-\(index).lmdb"), model: model)
    defer { b.close() }
    let mirrors = [try StoreMirror(container: a, hub: hub), try StoreMirror(container: b, hub: hub)]
    for mirror in mirrors { mirror.startAutomaticSync() }
    let writer = a.newBackgroundContext()
    let reader = b.newBackgroundContext()
    /// Saves a row on A and returns once B's reader counts it.
    func saveAndWait(_ row: Row) async throws {
      try writer.performAndWait {
        BenchItem.make(row, in: writer)
        try writer.save()
      }
      let request = FetchRequest<BenchItem>(where: \.name == row.name)
      let deadline = ContinuousClock.now + .seconds(60)
      while try reader.performAndWait({ try reader.count(for: request) }) == 0 {
        guard ContinuousClock.now < deadline else {
          throw BenchError.store("\(row.name) saved on replica A never reached replica B within 60 s")
        }
        try await Task.sleep(for: .milliseconds(2))
      }
    }
    do {
      try await saveAndWait(Row.make(-1))
      try await recorder.measureAsync(.strata, "mirror_latency", .postgres) {
        var latencies: [Double] = []
        for save in 0..<saves {
          let started = ContinuousClock.now
          try await saveAndWait(Row.make(save))
          latencies.append((ContinuousClock.now - started) / .milliseconds(1))
        }
        recorder.note("mirror_latency", .postgres, "strata_p99_ms", percentile(latencies, 99))
        return percentile(latencies, 50)
      }
    } catch {
      for mirror in mirrors { await mirror.stopAutomaticSync() }
      throw error
    }
    for mirror in mirrors { await mirror.stopAutomaticSync() }
  }

  /// The raw side of the latency: `saves` times, an `INSERT` and a `NOTIFY` in one transaction on one
  /// connection, then waiting on another (`LISTEN`ing, its socket polled) for the notification and reading
  /// the row by name; the milliseconds of each.
  private func rawNotifyLatencies(saves: Int, run index: Int) throws -> [Double] {
    let table = "\(schema).latency_\(index)"
    let channel = "\(schema)_latency_\(index)"
    try connection.exec("CREATE TABLE \(table) (\(rawPGTable))")
    let listener = try RawPG(uri)
    try listener.exec("LISTEN \(channel)")
    var latencies: [Double] = []
    for save in -1..<saves {
      let row = Row.make(save)
      let values = rawPGTexts(row).map { $0.map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" } ?? "NULL" }
      let started = ContinuousClock.now
      try connection.exec(
        "BEGIN; INSERT INTO \(table) (name, category, count, amount, flag, created, code, score, note) "
          + "VALUES (\(values.joined(separator: ", "))); NOTIFY \(channel), '\(row.name)'; COMMIT")
      try listener.awaitNotification(within: .seconds(60))
      guard try listener.scalar("SELECT count(*) FROM \(table) WHERE name = '\(row.name)'") == "1" else {
        throw BenchError.store("the raw listener did not find \(row.name)")
      }
      // The first save warms both connections up, as the Strata side's first does.
      if save >= 0 { latencies.append((ContinuousClock.now - started) / .milliseconds(1)) }
    }
    return latencies
  }
}

extension RawPG {
  /// Waits for a notification on this connection (which `LISTEN`s), polling its socket.
  func awaitNotification(within limit: Duration) throws {
    let deadline = ContinuousClock.now + limit
    while true {
      guard PQconsumeInput(handle) == 1 else { throw BenchError.store("listen: \(String(cString: PQerrorMessage(handle)))") }
      if let notification = PQnotifies(handle) {
        PQfreemem(notification)
        return
      }
      guard ContinuousClock.now < deadline else { throw BenchError.store("no notification within \(limit)") }
      var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
      _ = poll(&descriptor, 1, 100)
    }
  }
}

/// The `p`-th percentile of `values` (nearest rank below: the median of an even count is its upper middle).
func percentile(_ values: [Double], _ p: Int) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return 0 }
  return sorted[min(sorted.count - 1, sorted.count * p / 100)]
}

/// The raw side of the push: each row in a transaction of its own (`BEGIN`, `INSERT`, `COMMIT`), pipelined,
/// synchronised every 1,000 rows to keep the socket buffers from filling.
func rawPostgresTransactions(_ rows: [Row], _ connection: RawPG, table: String) throws -> Double {
  let sql =
    "INSERT INTO \(table) (name, category, count, amount, flag, created, code, score, note) "
    + "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
  let handle = connection.handle
  return try milliseconds {
    guard PQenterPipelineMode(handle) == 1 else { throw BenchError.store("no pipeline mode") }
    func drain() throws {
      while true {
        guard let result = PQgetResult(handle) else { continue }
        let status = PQresultStatus(result)
        PQclear(result)
        if status == PGRES_PIPELINE_SYNC { return }
        guard status == PGRES_COMMAND_OK else {
          throw BenchError.store("pipelined transactions: \(String(cString: PQerrorMessage(handle)))")
        }
      }
    }
    for (index, row) in rows.enumerated() {
      let begun = PQsendQueryParams(handle, "BEGIN", 0, nil, nil, nil, nil, 0)
      let inserted = withCStrings(rawPGTexts(row)) { values in PQsendQueryParams(handle, sql, 9, nil, values, nil, nil, 0) }
      let committed = PQsendQueryParams(handle, "COMMIT", 0, nil, nil, nil, nil, 0)
      guard begun == 1, inserted == 1, committed == 1 else {
        throw BenchError.store("send: \(String(cString: PQerrorMessage(handle)))")
      }
      if index % 1_000 == 999 || index == rows.count - 1 {
        _ = PQpipelineSync(handle)
        try drain()
      }
    }
    guard PQexitPipelineMode(handle) == 1 else { throw BenchError.store("pipeline not drained") }
  }
}
