import Foundation

struct Options {
  var rows = 100_000
  var runs = 3
  var only: String?
  /// Scenario names (without the row count) to run; `nil` runs all.
  var scenarios: Set<String>?
  var scaling = false
  var levels = [10_000, 100_000, 1_000_000]
  var json: String?
  var seconds = 20.0
  var processes = 4
  /// The PostgreSQL server of the postgres scenarios and the PostgreSQL queries (`--postgres-uri`, else
  /// `STRATA_POSTGRES_URI`).
  var postgresURI = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URI"].flatMap { $0.isEmpty ? nil : $0 }
  /// The arguments of a concurrent-saves worker process (`--concurrent-worker`, not for people).
  var worker: [String]?

  static let help = """
    strata-bench: measures Strata against raw SQLite and LMDB loops in one run (use a release build).
    usage: strata-bench [--rows N] [--runs N] [--only B] [--scenario S,…] [--scaling [--levels A,B,C]]
                        [--seconds N] [--processes N] [--json FILE] [--postgres-uri URI]
      --rows N        rows per scenario (default 100000)
      --runs N        runs per scenario; medians are printed (default 3)
      --only B        one backend's scenarios (sqlite, lmdb), the history comparison (history), the SQLite
                      migration (migration, also part of a full run), lmdb-migration (run only when named)
                      or the concurrent saves (concurrent), the queries people type (queries: query_first,
                      query_page, query_top10, query_search, query_count, also on PostgreSQL when a server is
                      given; run only when named); postgres, postgres-concurrent: Strata against raw
                      libpq on a server (--postgres-uri URI, or STRATA_POSTGRES_URI)
      --scenario S,…  only these scenarios (names as printed, without the row count), e.g. insert,fetch
      --scaling       every scenario at each row count of --levels (default 10000,100000,1000000), then per
                      scenario the ratio at each count and the growth of Strata's time per step (10 = linear)
      --seconds N     how long the concurrent-saves scenario runs (default 20)
      --processes N   how many processes save concurrently (default 4)
      --json FILE     also write every figure to FILE: scenario, backend, rows, strata_ms, raw_ms, ratio, each
                      run's times, each side's peak resident memory (absolute and above its start, MiB),
                      extra figures, and the commit (STRATA_BENCH_COMMIT or `git rev-parse HEAD`) and load
    Scenarios (each against a raw loop over the same library in the same process): insert, fetch, faults
    (one object(with:) per ID in random order), batched_fetch (fetch(_:batchSize: 500), nothing kept),
    frc_initial and frc_diffs (a fetched results controller's first fetch and the diff of rows/100 saved
    changes), traverse_prefetch and traverse_faults (rows/10 directors × 10 movies), count_where (a
    two-term predicate; LMDB's raw side a decoding scan), sum and batch_update (SQLite), batch_insert, batch_insert_history (history on ÷ off: "raw" is history off),
    migrate_add_rename (SQLite), migrate (lmdb-migration), concurrent_saves (processes saving one row
    per transaction for --seconds: times are ms per save, "raw" is raw loops in as many processes; run
    once per invocation, not per --runs or level).
    Times are medians of the runs; a ratio is the median of each run's Strata ÷ raw.
    Prints one line per scenario: SCENARIO_ROWS BACKEND strata_ms=X raw_ms=Y ratio=R
    peak_above_start_mib=S/R [extra=V …]. STRATA_BENCH_PHASES=1 adds phases (and the LMDB migration's
    peak memory) on standard error; STRATA_BENCH_NO_TRIM=1 skips the malloc_trim before each side (faster,
    but peak memory is then under-reported).
    """

  init(_ arguments: [String]) throws {
    var iterator = arguments.dropFirst().makeIterator()
    func value(_ option: String) throws -> String {
      guard let value = iterator.next() else { throw BenchError.usage("\(option) needs a value (try --help)") }
      return value
    }
    func number(_ option: String) throws -> Int {
      guard let number = Int(try value(option)), number > 0 else { throw BenchError.usage("\(option) takes a positive number") }
      return number
    }
    while let argument = iterator.next() {
      switch argument {
      case "--rows": rows = try number(argument)
      case "--runs": runs = try number(argument)
      case "--only": only = try value(argument)
      case "--scenario": scenarios = Set(try value(argument).split(separator: ",").map(String.init))
      case "--scaling": scaling = true
      case "--levels":
        levels = try value(argument).split(separator: ",").map {
          guard let rows = Int($0), rows > 0 else { throw BenchError.usage("--levels takes positive numbers") }
          return rows
        }
      case "--json": json = try value(argument)
      case "--postgres-uri": postgresURI = try value(argument)
      case "--seconds":
        guard let seconds = Double(try value(argument)), seconds > 0 else {
          throw BenchError.usage("--seconds takes a positive number")
        }
        self.seconds = seconds
      case "--processes": processes = try number(argument)
      case "--concurrent-worker":
        worker = Array(arguments.drop { $0 != "--concurrent-worker" }.dropFirst())
        return
      case "--help", "-h":
        print(Self.help)
        exit(0)
      default:
        throw BenchError.usage("unknown argument '\(argument)' (try --help)")
      }
    }
  }

  /// Whether to run `scenario` of `group` (a backend, or history, migration, lmdb-migration, concurrent).
  func wants(_ scenario: String, in group: String) -> Bool {
    let groupWanted = only == group || (only == nil && group != "lmdb-migration")
    return groupWanted && (scenarios?.contains(scenario) ?? true)
  }
}
