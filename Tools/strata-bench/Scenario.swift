import Foundation
import Strata

/// The scenarios an `--only` value names beside a backend's own (`core`).
enum Group: String, CaseIterable, Sendable {
  case core, queries, history, migration
  case lmdbMigration = "lmdb-migration"
  /// Run once per invocation, after every row count.
  case concurrent
}

/// Which side of a scenario is measured: Strata, or the raw engine it is compared with.
enum Side: String, Sendable {
  case raw, strata
}

/// One scenario: its name, the backends it runs on, and its two sides, each a closure that does the work
/// in one run and returns its time in milliseconds (set-up outside the timing). Adding a scenario is adding
/// one entry to ``table``.
struct Scenario {
  enum Order {
    /// The raw side, then Strata's.
    case rawFirst
    /// The raw side first in even runs, Strata's in odd ones (the later side finds the allocator's memory
    /// mapped, or the page cache warm).
    case alternating
  }

  let name: String
  let group: Group
  let backends: [Backend]
  /// Whether a run without `--only` performs it (without `--only` and `--scenario`: the core, history,
  /// migration and concurrent scenarios on SQLite and LMDB).
  let runsByDefault: Bool
  /// Further scenarios whose times the sides report through ``Run/report(_:_:)``.
  let alsoReports: [String]
  let order: Order
  /// Whether the sides run in this process, so that their peak memory is this process's.
  let inProcess: Bool
  /// Untimed set-up before the sides (shared set-up goes through ``Run/once(_:_:)``).
  let prepare: (Run) throws -> Void
  let raw: (Run) throws -> Double
  /// Runs after the raw side, outside its timing and memory (a further figure, ``Run/note(_:_:)``).
  let afterRaw: (Run) throws -> Void
  let strata: (Run) throws -> Double

  init(
    _ name: String, _ group: Group = .core, on backends: [Backend], runsByDefault: Bool = true, alsoReports: [String] = [],
    order: Order = .rawFirst, inProcess: Bool = true, prepare: @escaping (Run) throws -> Void = { _ in },
    raw: @escaping (Run) throws -> Double, afterRaw: @escaping (Run) throws -> Void = { _ in },
    strata: @escaping (Run) throws -> Double
  ) {
    self.name = name
    self.group = group
    self.backends = backends
    self.runsByDefault = runsByDefault
    self.alsoReports = alsoReports
    self.order = order
    self.inProcess = inProcess
    self.prepare = prepare
    self.raw = raw
    self.afterRaw = afterRaw
    self.strata = strata
  }

  /// Every name `--scenario` accepts: the scenarios' and what they also report.
  static var names: [String] { table.flatMap { [$0.name] + $0.alsoReports } + MirrorBench.scenarios }

  /// Runs both sides once in `run` and records them.
  func perform(_ run: Run, recorder: Recorder) throws {
    try prepare(run)
    let sides: [Side] = order == .alternating && run.index % 2 == 1 ? [.strata, .raw] : [.raw, .strata]
    for side in sides {
      let body = side == .raw ? raw : strata
      if inProcess {
        try recorder.measure(side, name, run.backend) { try body(run) }
      } else {
        recorder.append(side, name, run.backend, try body(run))
      }
      if side == .raw { try afterRaw(run) }
      for (scenario, time) in run.takeReports() { recorder.append(side, scenario, run.backend, time) }
      for (key, value) in run.takeNotes() { recorder.note(name, run.backend, key, value) }
    }
  }
}

/// The rows of one row count and what the scenarios derive from them: made once, untimed.
final class Workload {
  let rows: [Row]

  init(rows count: Int) { rows = (0..<count).map(Row.make) }

  /// The rows as batch-insert dictionaries (ready-made, as the raw loops get their rows).
  lazy var objects = dictionaries(rows)
  lazy var countWhere = rows.filter { $0.category == "category-3" && $0.amount > 1000 }.count
  lazy var amountSum = rows.reduce(0) { $0 + $1.amount }
  /// How many movies the traversals walk: rows/10 directors of ten.
  var movies: Int { max(moviesPerDirector, rows.count / moviesPerDirector * moviesPerDirector) }
  /// How many objects the fetched-results diff changes.
  var changes: Int { max(1, rows.count / 100) }

  // What the queries must find.
  lazy var firstName = rows.first?.name ?? ""
  var pageOffset: Int { max(rows.count - 10, 0) }
  lazy var pageNames = rows[pageOffset..<max(rows.count - 5, 0)].map(\.name)
  lazy var topNames = Array(rows.map(\.name).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.prefix(10))
  lazy var searchCount = rows.filter { $0.name.lowercased().contains(searchNeedle.lowercased()) }.count
  lazy var categoryCount = rows.filter { $0.category == queryCategory }.count
}

/// One run of a group's scenarios on one backend: the raw engine's files or schema, Strata's stores beside
/// them, and what the scenarios set up once for all of them.
final class Run {
  let workload: Workload
  let backend: Backend
  /// Which run of `--runs` this is (from 0).
  let index: Int
  let settings: Settings
  let baseline: any Baseline
  let directory: URL
  private var done: Set<String> = []
  private var reports: [(String, Double)] = []
  private var notes: [(String, Double)] = []
  /// The items the faults scenario reads, in its order (``prepareFaults()``): their raw keys and their IDs.
  private(set) var faultKeys: [Int] = []
  private(set) var faultIDs: [ObjectID] = []

  /// What a run needs of the command line.
  struct Settings {
    var postgresURI: String?
    var seconds: Double
    var processes: Int
  }

  init(_ workload: Workload, backend: Backend, index: Int, settings: Settings) throws {
    self.workload = workload
    self.backend = backend
    self.index = index
    self.settings = settings
    directory = try freshDirectory()
    do {
      baseline = try backend.makeBaseline(in: directory, postgresURI: settings.postgresURI)
    } catch {
      try? FileManager.default.removeItem(at: directory)
      throw error
    }
  }

  /// Removes what the run made.
  func close() {
    baseline.close()
    try? FileManager.default.removeItem(at: directory)
  }

  var rows: [Row] { workload.rows }
  var count: Int { workload.rows.count }

  /// The run's Strata store `name` (`strata`: the one holding the items).
  func store(_ name: String = "strata", options: StoreOptions = StoreOptions()) throws -> StoreDescription {
    try baseline.strataStore(name, options: options)
  }

  /// The raw engine as the type a one-backend scenario needs.
  func engine<B: Baseline>(_ type: B.Type) throws -> B {
    guard let engine = baseline as? B else { throw BenchError.store("no \(type) in a \(backend.rawValue) run") }
    return engine
  }

  /// Runs `body` the first time `key` is asked for in this run.
  func once(_ key: String, _ body: () throws -> Void) rethrows {
    guard done.insert(key).inserted else { return }
    try body()
  }

  /// The items on both sides: written untimed unless the insert scenario wrote them. Returns the workload, for
  /// what the scenario works out of the rows before its timing.
  @discardableResult
  func loadItems() throws -> Workload {
    try once("items") {
      _ = try baseline.insert(rows)
      _ = try strataInsert(rows, store: try store())
    }
    return workload
  }

  /// Records that the insert scenario's sides write the items.
  func itemsAreWritten() { done.insert("items") }

  /// The positions the faults read, the same on both sides: every item in a seeded random order (on
  /// PostgreSQL, where each is a round trip, a seeded sample of 10,000).
  func prepareFaults() throws {
    try loadItems()
    let positions =
      backend == .postgres ? seededSample(Array(0..<count), count: min(10_000, count)) : shuffledPositions(count)
    faultKeys = positions.map { $0 + 1 }
    let stored = try strataItemIDs(store: try store())
    faultIDs = positions.map { stored[$0] }
  }

  /// Reports the time of a further scenario measured by the side running now.
  func report(_ scenario: String, _ milliseconds: Double) { reports.append((scenario, milliseconds)) }

  /// Records a further figure of the scenario running now.
  func note(_ key: String, _ value: Double) { notes.append((key, value)) }

  func takeReports() -> [(String, Double)] {
    defer { reports = [] }
    return reports
  }

  func takeNotes() -> [(String, Double)] {
    defer { notes = [] }
    return notes
  }
}
