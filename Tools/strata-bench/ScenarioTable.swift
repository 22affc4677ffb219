import Foundation
import Strata

/// The batch size of the batched-fetch scenario.
let benchBatchSize = 500

/// What `query_search` looks for, ignoring case and diacritics.
let searchNeedle = "ITEM 99"
/// What `query_count` counts.
let queryCategory = "category-3"

extension Scenario {
  /// Every scenario, in the order a run performs those of its group. Each side does the same work on the
  /// same rows: Strata through a container, the raw engine through the library's C API (``Baseline``).
  static var table: [Scenario] {
    let all = Backend.allCases
    let files: [Backend] = [.sqlite, .lmdb]
    let load: (Run) throws -> Void = { _ = try $0.loadItems() }
    return [
      // The core scenarios: `--only sqlite|lmdb|postgres`.
      Scenario(
        "insert", on: all, prepare: { $0.itemsAreWritten() }, raw: { try $0.baseline.insert($0.rows) },
        strata: { try strataInsert($0.rows, store: try $0.store()) }),
      Scenario(
        "fetch", on: all, prepare: load, raw: { try $0.baseline.scan(expecting: $0.count, keeps: true) },
        strata: { try strataFetch(expecting: $0.count, store: try $0.store()) }),
      Scenario(
        "faults", on: all, prepare: { try $0.prepareFaults() }, raw: { try $0.baseline.gets(keys: $0.faultKeys) },
        strata: { try strataFaults($0.faultIDs, store: try $0.store()) }),
      Scenario(
        "loaded_reads", on: files, prepare: load, raw: { try rawLoadedReads($0.rows, passes: loadedReadPasses) },
        strata: { try strataLoadedReads(expecting: $0.count, passes: loadedReadPasses, store: try $0.store()) }),
      Scenario(
        "loaded_writes", on: files, prepare: load, raw: { try rawLoadedWrites($0.rows) },
        strata: { try strataLoadedWrites(expecting: $0.count, store: try $0.store()) }),
      Scenario(
        "batched_fetch", on: files, prepare: load, raw: { try $0.baseline.scan(expecting: $0.count, keeps: false) },
        strata: { try strataBatchedFetch(expecting: $0.count, batchSize: benchBatchSize, store: try $0.store()) }),
      Scenario(
        "count_where", on: all, prepare: { _ = try $0.loadItems().countWhere },
        raw: { try $0.baseline.countWhere(expecting: $0.workload.countWhere) },
        strata: { try strataCountWhere($0.rows, store: try $0.store()) }),
      Scenario(
        "sum", on: [.sqlite], prepare: load,
        raw: {
          try $0.engine(SQLiteBaseline.self).statement("SELECT SUM(amount) FROM BenchItem", expecting: $0.workload.amountSum)
        },
        strata: { try strataSum($0.rows, store: try $0.store()) }),
      Scenario(
        "batch_update", on: [.sqlite], prepare: load,
        raw: { try $0.engine(SQLiteBaseline.self).statement("UPDATE BenchItem SET count = count + 1", expecting: nil) },
        strata: { try strataBatchUpdate($0.rows, store: try $0.store()) }),
      Scenario(
        "frc_initial", on: files, alsoReports: ["frc_diffs"], prepare: load,
        raw: { run in
          let figures = try run.baseline.fetchedResults(expecting: run.count, changes: run.workload.changes)
          run.report("frc_diffs", figures.diffs)
          return figures.initial
        },
        strata: { run in
          let figures = try strataFetchedResults(expecting: run.count, changes: run.workload.changes, store: try run.store())
          run.report("frc_diffs", figures.diffs)
          return figures.initial
        }),
      Scenario(
        "batch_insert", on: all, prepare: { _ = $0.workload.objects }, raw: { try $0.baseline.upsert($0.rows) },
        strata: { try strataBatchInsert($0.workload.objects, store: try $0.store("upsert")) }),
      Scenario(
        "traverse_prefetch", on: files, prepare: prepareTraversal,
        raw: { try $0.baseline.traverse(movies: $0.workload.movies, joining: true) },
        strata: { try strataTraversal(movies: $0.workload.movies, prefetching: true, store: try $0.store("traversal")) }),
      Scenario(
        "traverse_faults", on: files, prepare: prepareTraversal,
        raw: { try $0.baseline.traverse(movies: $0.workload.movies, joining: false) },
        strata: { try strataTraversal(movies: $0.workload.movies, prefetching: false, store: try $0.store("traversal")) }),

      // The queries people type (`--only queries`): each side opens its container or connection inside the timing.
      Scenario(
        "query_first", .queries, on: all, runsByDefault: false, prepare: prepareQueries,
        raw: { try $0.baseline.names(skipping: 0, taking: 1, expecting: [$0.workload.firstName]) },
        strata: { try strataNames(FetchRequest(fetchLimit: 1), expecting: [$0.workload.firstName], store: try $0.store()) }),
      Scenario(
        "query_page", .queries, on: all, runsByDefault: false, prepare: prepareQueries,
        raw: { try $0.baseline.names(skipping: $0.workload.pageOffset, taking: 5, expecting: $0.workload.pageNames) },
        strata: { run in
          try strataNames(
            FetchRequest(fetchLimit: 5, fetchOffset: run.workload.pageOffset), expecting: run.workload.pageNames,
            store: try run.store())
        }),
      Scenario(
        "query_top10", .queries, on: all, runsByDefault: false, prepare: prepareQueries,
        raw: { try $0.baseline.topNames(expecting: $0.workload.topNames) },
        strata: { run in
          try strataNames(
            FetchRequest(sortDescriptors: [QuerySort("name")], fetchLimit: 10), expecting: run.workload.topNames,
            store: try run.store())
        }),
      Scenario(
        "query_search", .queries, on: all, runsByDefault: false, prepare: prepareQueries,
        raw: { try $0.baseline.countNames(containing: searchNeedle, expecting: $0.workload.searchCount) },
        strata: {
          try strataCount("name CONTAINS[cd] '\(searchNeedle)'", expecting: $0.workload.searchCount, store: try $0.store())
        }
      ),
      Scenario(
        "query_count", .queries, on: all, runsByDefault: false, prepare: prepareQueries,
        raw: { try $0.baseline.countCategory(queryCategory, expecting: $0.workload.categoryCount) },
        strata: { try strataCount("category == '\(queryCategory)'", expecting: $0.workload.categoryCount, store: try $0.store()) }
      ),

      // Persistent history's cost: the batch insert with history on ("strata") and off ("raw").
      Scenario(
        "batch_insert_history", .history, on: files, order: .alternating, prepare: { _ = $0.workload.objects },
        raw: { try strataBatchInsert($0.workload.objects, store: try $0.store("history-false")) },
        strata: {
          try strataBatchInsert(
            $0.workload.objects, store: try $0.store("history-true", options: StoreOptions(tracksHistory: true)))
        }),

      // Migration: a column added with a default and one renamed, against the engine doing the same.
      Scenario(
        "migrate_add_rename", .migration, on: [.sqlite], raw: { try $0.engine(SQLiteBaseline.self).migration($0.rows) },
        strata: { try strataMigration($0.rows, store: try $0.store("migration")) }),
      Scenario(
        "migrate", .lmdbMigration, on: [.lmdb], runsByDefault: false, order: .alternating,
        prepare: { run in
          let url = try lmdbMigrationStore(run)
          _ = try strataInsert(run.rows, store: StoreDescription(type: .lmdb, url: url))
          try run.engine(LMDBBaseline.self).copyForMigration(url)
        },
        raw: { try $0.engine(LMDBBaseline.self).migrate(expecting: $0.count, reencodes: true) },
        afterRaw: { $0.note("raw_copy_ms", try $0.engine(LMDBBaseline.self).migrate(expecting: $0.count, reencodes: false)) },
        strata: { try strataMigrate(expecting: $0.count, at: try lmdbMigrationStore($0)) }),

      // Processes saving one new object per transaction for --seconds: times are ms per save.
      Scenario(
        "concurrent_saves", .concurrent, on: all, inProcess: false,
        raw: { run in
          let saves = try runConcurrently(.raw, run)
          run.note("raw_saves_per_s", Double(saves) / run.settings.seconds)
          return run.settings.seconds * 1000 / Double(max(saves, 1))
        },
        strata: { run in
          let saves = try runConcurrently(.strata, run)
          run.note("strata_saves_per_s", Double(saves) / run.settings.seconds)
          run.note("processes", Double(run.settings.processes))
          run.note("lost", 0)
          return run.settings.seconds * 1000 / Double(max(saves, 1))
        }),
    ]
  }
}

/// The directors and movies of the traversals on both sides, once per run.
private func prepareTraversal(_ run: Run) throws {
  try run.once("traversal") {
    try run.baseline.insertDirectors(movies: run.workload.movies)
    try strataInsertDirectors(movies: run.workload.movies, store: try run.store("traversal"))
  }
}

/// The items on both sides, settled as a server holds them after a while, once per run; what the queries
/// must find, worked out before any timing.
private func prepareQueries(_ run: Run) throws {
  let workload = try run.loadItems()
  _ = (workload.firstName, workload.pageNames, workload.topNames, workload.searchCount, workload.categoryCount)
  try run.once("settled") { try run.baseline.settle() }
}

private func lmdbMigrationStore(_ run: Run) throws -> URL {
  guard let url = try run.store("migrate").url else { throw BenchError.store("no location for the migration") }
  return url
}
