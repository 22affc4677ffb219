import ArgumentParser
import Foundation
import StrataCLI

/// What `--only` picks: a backend's core scenarios, or a group of scenarios.
enum Selection: String, CaseIterable, ExpressibleByArgument {
  case sqlite, lmdb, postgres, queries, history, migration
  case lmdbMigration = "lmdb-migration"
  case concurrent
  case postgresConcurrent = "postgres-concurrent"
  case mirror
}

/// Row counts separated by commas (`--levels 10000,100000`).
struct RowCounts: ExpressibleByArgument {
  var counts: [Int]

  init(_ counts: [Int]) { self.counts = counts }

  init?(argument: String) {
    let counts = argument.split(separator: ",").compactMap { Int($0) }
    guard !counts.isEmpty, counts.count == argument.split(separator: ",").count, counts.allSatisfy({ $0 > 0 }) else {
      return nil
    }
    self.counts = counts
  }

  var defaultValueDescription: String { counts.map(String.init).joined(separator: ",") }
}

struct StrataBench: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "strata-bench",
    abstract: "Measures Strata against raw SQLite, LMDB and PostgreSQL loops in one run (use a release build).",
    discussion: """
      Each scenario runs its Strata side and a raw loop over the same library (sqlite3, liblmdb, libpq; same \
      schema, same rows, same process) and prints one line: SCENARIO_ROWS BACKEND strata_ms=X raw_ms=Y \
      ratio=R peak_above_start_mib=S/R [extra=V …]. Times are medians of the runs; a ratio is the median of \
      each run's Strata ÷ raw.

      Scenarios: insert, fetch, faults (object(with:) per ID in random order; 10,000 on PostgreSQL), \
      batched_fetch, loaded_reads, loaded_writes, count_where, sum and batch_update (SQLite), frc_initial and \
      frc_diffs, batch_insert, traverse_prefetch and traverse_faults; the queries query_first, query_page, \
      query_top10, query_search, query_count; batch_insert_history (history on ÷ off); migrate_add_rename \
      (SQLite), migrate (LMDB); concurrent_saves (processes saving one row per transaction for --seconds: \
      ms per save, run once per invocation); the mirror's (--only mirror, a PostgreSQL hub): mirror_push \
      (--rows/10 local transactions pushed vs the same rows as pipelined libpq transactions), mirror_pull \
      (--rows changes pulled into a fresh replica vs one binary SELECT of the same rows) and mirror_latency \
      (from a save on one automatically syncing replica to the object visible on another, p50 in strata_ms, \
      p99 beside it, over min(100, max(5, rows/1000)) saves; raw: an INSERT and NOTIFY seen by a LISTENing \
      connection that reads the row). The pull's time grows with the square of a pulled batch's changes, so \
      at the default --rows it runs for hours: pass a few thousand. Without --only: the core, history, \
      migration and concurrent scenarios on SQLite and LMDB. PostgreSQL runs on --postgres-uri or \
      STRATA_POSTGRES_URI, in fresh schemas dropped afterwards.

      STRATA_BENCH_PHASES=1 adds phases (and the LMDB migration's peak memory) on standard error; \
      STRATA_BENCH_NO_TRIM=1 skips the malloc_trim before each side (faster, but peak memory is then \
      under-reported); STRATA_BENCH_COMMIT names the commit in --json (else `git rev-parse HEAD`).

      \(exitStatusHelp)
      """)

  @Option(help: "Rows per scenario.")
  var rows = 100_000

  @Option(help: "Runs per scenario; medians are printed.")
  var runs = 3

  @Option(
    help: ArgumentHelp(
      """
      One backend's scenarios (sqlite, lmdb, postgres) or a group: queries, history, migration (SQLite's, also \
      part of a full run), lmdb-migration, concurrent, postgres-concurrent, mirror. Queries, lmdb-migration, \
      mirror and the postgres ones run only when named.
      """, valueName: "group"))
  var only: Selection?

  @Option(
    name: .customLong("scenario"),
    help: ArgumentHelp("Only these scenarios (names as printed, without the row count), e.g. insert,fetch.", valueName: "names"))
  var scenarioList: String?

  @Flag(help: "Every scenario at each row count of --levels, then per scenario the ratio at each count and the growth.")
  var scaling = false

  @Option(help: ArgumentHelp("The row counts of --scaling.", valueName: "counts"))
  var levels = RowCounts([10_000, 100_000, 1_000_000])

  @Option(help: "How long the concurrent saves run, in seconds.")
  var seconds = 20.0

  @Option(help: "How many processes save concurrently.")
  var processes = 4

  @Option(
    help: ArgumentHelp(
      "Also write every figure to this file: each scenario's times, runs, ratio and peak memory, the commit and the load.",
      valueName: "file"))
  var json: String?

  @Option(
    help: ArgumentHelp(
      "Compare the run with figures an earlier --json wrote: each scenario's ratio against the file's, flagging rises past --tolerance.",
      valueName: "file"))
  var baseline: String?

  @Option(
    help: ArgumentHelp("How far (percent) a ratio may rise above the baseline's before it is flagged.", valueName: "percent"))
  var tolerance = 15.0

  @Option(
    name: .customLong("postgres-uri"),
    help: ArgumentHelp("The PostgreSQL server of the PostgreSQL scenarios (default: STRATA_POSTGRES_URI).", valueName: "uri"))
  var postgresURI: String?

  /// Runs a worker process of the concurrent saves (`--concurrent-worker …`, which people do not pass), or
  /// the command, awaited: no thread waits on the mirror scenarios' asynchronous work.
  static func start() async {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard arguments.first == "--concurrent-worker" else { return await asyncMainReportingUsageErrors() }
    do {
      print(try ConcurrentWorker(Array(arguments.dropFirst())).run())
    } catch {
      printError(tool: "strata-bench", "\(error)")
      Foundation.exit(1)
    }
  }

  /// The names of `--scenario`, or nil for every scenario.
  var scenarios: Set<String>? { scenarioList.map { Set($0.split(separator: ",").map(String.init)) } }

  /// The server of the PostgreSQL scenarios, if any.
  var postgresServer: String? {
    (postgresURI ?? ProcessInfo.processInfo.environment["STRATA_POSTGRES_URI"]).flatMap { $0.isEmpty ? nil : $0 }
  }

  func validate() throws {
    for (name, value) in [("--rows", rows), ("--runs", runs), ("--processes", processes)] where value <= 0 {
      throw ValidationError("\(name) takes a positive number, not \(value)")
    }
    guard seconds > 0 else { throw ValidationError("--seconds takes a positive number, not \(seconds)") }
    guard tolerance >= 0 else { throw ValidationError("--tolerance takes a percentage, not \(tolerance)") }
    let known = Set(Scenario.names)
    if let unknown = scenarios?.sorted().first(where: { !known.contains($0) }) {
      throw ValidationError("unknown scenario '\(unknown)' (scenarios: \(Scenario.names.joined(separator: ", ")))")
    }
  }

  /// Whether to run `scenario` on `backend`.
  func wants(_ scenario: Scenario, on backend: Backend) -> Bool {
    guard scenario.backends.contains(backend) else { return false }
    if let scenarios, !scenarios.contains(scenario.name), !scenario.alsoReports.contains(where: scenarios.contains) {
      return false
    }
    let postgresQueries = scenario.group == .queries && postgresServer != nil
    switch only {
    case nil:
      // A scenario that runs only when named runs when --scenario names it.
      return (scenario.runsByDefault || scenarios != nil) && (backend != .postgres || postgresQueries)
    case .sqlite: return scenario.group == .core && backend == .sqlite
    case .lmdb: return scenario.group == .core && backend == .lmdb
    case .postgres: return scenario.group == .core && backend == .postgres
    case .postgresConcurrent: return scenario.group == .concurrent && backend == .postgres
    case .queries: return scenario.group == .queries && (backend != .postgres || postgresQueries)
    case .history: return scenario.group == .history && backend != .postgres
    case .migration: return scenario.group == .migration && backend != .postgres
    case .lmdbMigration: return scenario.group == .lmdbMigration && backend != .postgres
    case .concurrent: return scenario.group == .concurrent && backend != .postgres
    case .mirror: return false
    }
  }

  /// Whether to run the mirror scenario `name` (`--only mirror`, or named by `--scenario`).
  func wantsMirror(_ name: String) -> Bool {
    if let scenarios, !scenarios.contains(name) { return false }
    return only == .mirror || (only == nil && scenarios != nil)
  }

  func run() async throws {
    do {
      try await BenchRunner(command: self).run()
    } catch {
      // Reported as every other failure: one line, exit 1 (64 for a usage error).
      try runReportingErrors(tool: "strata-bench") { throw error }
    }
  }
}
