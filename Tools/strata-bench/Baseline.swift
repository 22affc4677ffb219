import Foundation
import Strata
import StrataCLI

/// A backend strata-bench measures: the name `--only` and the report give it, and its store type.
enum Backend: String, CaseIterable, Sendable {
  case sqlite, lmdb, postgres

  var storeType: StoreType {
    switch self {
    case .sqlite: .sqlite
    case .lmdb: .lmdb
    case .postgres: .postgres
    }
  }

  /// A store location as a worker process receives it: a path, or a `postgresql://` URI.
  func url(_ location: String) -> URL? {
    self == .postgres ? URL(string: location) : URL(fileURLWithPath: location)
  }

  /// The location of `url` as a worker process receives it.
  func location(_ url: URL) -> String { self == .postgres ? url.absoluteString : url.path }

  /// The raw engine of one run, owning what it makes in `directory` (or, for PostgreSQL, a fresh schema on
  /// the server at `postgresURI`).
  func makeBaseline(in directory: URL, postgresURI: String?) throws -> any Baseline {
    switch self {
    case .sqlite: return SQLiteBaseline(directory: directory)
    case .lmdb: return LMDBBaseline(directory: directory)
    case .postgres:
      guard let uri = postgresURI, !uri.isEmpty else {
        throw UsageError(
          "PostgreSQL needs a server: pass --postgres-uri URI or set STRATA_POSTGRES_URI (scripts/postgres-server start DIR)")
      }
      return try PostgresBaseline(uri: uri)
    }
  }
}

/// The raw engine a scenario's Strata side is measured against: the library the backend itself uses
/// (sqlite3, liblmdb, libpq), the same schema and rows, driven through its C API in this process. One value
/// per run owns that run's raw files, environment or schema and says where the run's Strata stores live
/// beside them. Each timed requirement returns milliseconds and checks what it read, so that a raw side
/// never wins by doing less. An engine without a raw side for a scenario keeps the default, which throws;
/// the scenario table names the backends each scenario runs on.
protocol Baseline: AnyObject {
  var backend: Backend { get }
  /// Where the run's Strata store `name` lives: a file or environment beside the raw data, or a schema.
  func strataStore(_ name: String, options: StoreOptions) throws -> StoreDescription
  /// Removes what the run made on a server (the run's directory is removed by the run).
  func close()

  /// Creates the item table and writes every row in one transaction (`insert`).
  func insert(_ rows: [Row]) throws -> Double
  /// Reads every item, decoding every field; keeps the rows (`fetch`) or only sums them (`batched_fetch`).
  func scan(expecting count: Int, keeps: Bool) throws -> Double
  /// Reads the items with `keys` one lookup by key each (`faults`); every item table is new in its run, so
  /// an item's key is 1 + its position in insertion order.
  func gets(keys: [Int]) throws -> Double
  /// Counts the items with `category == 'category-3' AND amount > 1000` (`count_where`).
  func countWhere(expecting count: Int) throws -> Double
  /// Inserts or updates every row by its unique name, in a table of its own (`batch_insert`).
  func upsert(_ rows: [Row]) throws -> Double
  /// Every item ordered by `count`, then `changes` of them changed and moved (`frc_initial`, `frc_diffs`).
  func fetchedResults(expecting count: Int, changes: Int) throws -> (initial: Double, diffs: Double)
  /// Writes `movies / 10` directors with ten movies each (untimed set-up of the traversals).
  func insertDirectors(movies: Int) throws
  /// Reads every director with its movies, by one join (`joining`) or per director (`traverse_*`).
  func traverse(movies: Int, joining: Bool) throws -> Double
  /// Brings the loaded items to how a server holds them after a while (statistics, visibility), untimed.
  func settle() throws

  /// The names of `taking` items after `skipping`, in key order, opening the engine inside the timing.
  func names(skipping: Int, taking: Int, expecting: [String]) throws -> Double
  /// The ten first names in code-point order, opening the engine inside the timing (`query_top10`).
  func topNames(expecting: [String]) throws -> Double
  /// How many names contain `needle` ignoring case, opening the engine inside the timing (`query_search`).
  func countNames(containing needle: String, expecting: Int) throws -> Double
  /// How many items are in `category`, opening the engine inside the timing (`query_count`).
  func countCategory(_ category: String, expecting: Int) throws -> Double

  /// The item table as a worker process of the concurrent saves receives it.
  var workerLocation: String { get }
  /// How many items the table holds (the concurrent saves' check that no save was lost).
  func storedRows() throws -> Int
  /// One worker of the concurrent saves: waits for the start, then saves one new row per transaction
  /// until `end` (seconds since 1970); returns how many committed.
  static func saveConcurrently(at location: String, rows: () -> Row, waitForStart: () -> Void, end: Double) throws -> Int
}

extension Baseline {
  private func unsupported(_ what: String) -> BenchError { .store("no raw \(what) on \(backend.rawValue)") }

  func fetchedResults(expecting count: Int, changes: Int) throws -> (initial: Double, diffs: Double) {
    throw unsupported("fetched results")
  }
  func insertDirectors(movies: Int) throws { throw unsupported("traversal") }
  func traverse(movies: Int, joining: Bool) throws -> Double { throw unsupported("traversal") }
  func settle() throws {}
}

/// An engine whose run lives in files of the run's directory, Strata's stores beside them (`NAME.sqlite`,
/// `NAME.lmdb`): SQLite and LMDB.
protocol FileBaseline: Baseline {
  var directory: URL { get }
}

extension FileBaseline {
  /// The file (or environment) `name` of the run: `raw` holds the items.
  func file(_ name: String) -> URL { directory.appending(path: "\(name).\(backend.rawValue)") }

  func strataStore(_ name: String, options: StoreOptions) throws -> StoreDescription {
    StoreDescription(type: backend.storeType, url: file(name), options: options)
  }

  func close() {}
}

/// What the two SQL engines share: the queries are the same SQL on their item table.
protocol SQLBaseline: Baseline {
  /// The item table as a query names it.
  var itemTable: String { get }
  /// The name column as sorted and searched: in code-point order, as Strata's text columns are.
  var sortedName: String { get }
  /// The engine's case-insensitive `LIKE` (SQLite's `LIKE` folds ASCII; PostgreSQL's is `ILIKE`).
  var likeIgnoringCase: String { get }
  /// Opens the engine and runs `sql`, whose rows' first column (as text) must be `expected`.
  func texts(_ sql: String, expecting expected: [String]) throws -> Double
}

extension SQLBaseline {
  func names(skipping: Int, taking: Int, expecting expected: [String]) throws -> Double {
    let offset = skipping > 0 ? " OFFSET \(skipping)" : ""
    return try texts("SELECT name FROM \(itemTable) ORDER BY _pk LIMIT \(taking)\(offset)", expecting: expected)
  }

  func topNames(expecting expected: [String]) throws -> Double {
    try texts("SELECT name FROM \(itemTable) ORDER BY \(sortedName) LIMIT 10", expecting: expected)
  }

  func countNames(containing needle: String, expecting count: Int) throws -> Double {
    try texts(
      "SELECT COUNT(*) FROM \(itemTable) WHERE \(sortedName) \(likeIgnoringCase) '%\(needle)%'", expecting: ["\(count)"])
  }

  func countCategory(_ category: String, expecting count: Int) throws -> Double {
    try texts("SELECT COUNT(*) FROM \(itemTable) WHERE category = '\(category)'", expecting: ["\(count)"])
  }
}

/// Times `run` (which opens what it reads), whose rows must be `expected`.
func timedTexts(_ sql: String, expecting expected: [String], _ run: () throws -> [String]) throws -> Double {
  var found: [String] = []
  let time = try milliseconds { found = try run() }
  guard found == expected else { throw BenchError.store("raw \(sql): \(found.prefix(3)), expected \(expected.prefix(3))") }
  return time
}

extension Backend {
  /// The raw engine's type (its worker loop of the concurrent saves).
  var baselineType: any Baseline.Type {
    switch self {
    case .sqlite: SQLiteBaseline.self
    case .lmdb: LMDBBaseline.self
    case .postgres: PostgresBaseline.self
    }
  }
}
