import Foundation
import Testing

/// Runs the built strata-bench with tiny row counts: the figures' shape, never their values.
@Suite("strata-bench")
struct StrataBenchTests {
  static let everyBackend = [
    "insert", "fetch", "faults", "batched_fetch", "frc_initial", "frc_diffs", "batch_insert", "traverse_prefetch",
    "traverse_faults", "batch_insert_history", "concurrent_saves", "count_where", "loaded_reads", "loaded_writes",
  ]
  static let sqliteOnly = ["sum", "batch_update", "migrate_add_rename"]

  static func results(ofJSONAt path: String) throws -> [[String: Any]] {
    let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
    return try #require(document?["results"] as? [[String: Any]])
  }

  @Test func jsonHoldsEveryScenarioWithBothSides() throws {
    let json = FileManager.default.temporaryDirectory.appending(path: "strata-bench-\(UUID().uuidString).json").path
    defer { try? FileManager.default.removeItem(atPath: json) }
    let run = try Executables.run(
      "strata-bench", ["--rows", "200", "--runs", "1", "--seconds", "0.5", "--processes", "2", "--json", json])
    #expect(run.status == 0, "\(run.stderr)")
    let results = try Self.results(ofJSONAt: json)
    var expected = Set<String>()
    for backend in ["sqlite", "lmdb"] {
      for scenario in Self.everyBackend { expected.insert("\(scenario) \(backend)") }
    }
    for scenario in Self.sqliteOnly { expected.insert("\(scenario) sqlite") }
    let found = results.map { "\($0["scenario"] as? String ?? "?") \($0["backend"] as? String ?? "?")" }
    #expect(Set(found) == expected)
    #expect(found.count == expected.count, "a scenario was reported twice")
    for result in results {
      let name = "\(result["scenario"] ?? "?") \(result["backend"] ?? "?")"
      let strata = try #require(result["strata_ms"] as? Double, "\(name) has no Strata time")
      let raw = try #require(result["raw_ms"] as? Double, "\(name) has no raw time")
      let ratio = try #require(result["ratio"] as? Double, "\(name) has no ratio")
      #expect(strata >= 0 && raw >= 0)
      let strataRuns = try #require(result["strata_runs_ms"] as? [Double], "\(name) has no runs")
      let rawRuns = try #require(result["raw_runs_ms"] as? [Double], "\(name) has no raw runs")
      #expect(strataRuns.count == 1 && rawRuns.count == 1, "\(name): one run each")
      if raw > 0.01 {
        #expect(abs(ratio - strata / raw) <= 0.01 * max(1, ratio), "\(name): ratio \(ratio) is not \(strata) ÷ \(raw)")
      }
      let rows = try #require(result["rows"] as? Int)
      #expect(rows == (result["scenario"] as? String == "concurrent_saves" ? 0 : 200))
      for key in ["strata_peak_rss_mib", "raw_peak_rss_mib"] { #expect(result.keys.contains(key), "\(name) lacks \(key)") }
    }
    let fetch = try #require(results.first { $0["scenario"] as? String == "fetch" && $0["backend"] as? String == "lmdb" })
    #expect((fetch["strata_peak_rss_mib"] as? Double ?? 0) > 0)
    let saves = try #require(
      results.first { $0["scenario"] as? String == "concurrent_saves" && $0["backend"] as? String == "sqlite" })
    #expect((saves["strata_saves_per_s"] as? Double ?? 0) > 0 && (saves["raw_saves_per_s"] as? Double ?? 0) > 0)
    #expect(saves["lost"] as? Double == 0)
    let lines = run.stdout.split(separator: "\n").filter { $0.contains(" strata_ms=") }
    #expect(lines.count == results.count)
  }

  @Test func scalingPrintsEachRatioAndTheGrowth() throws {
    let run = try Executables.run(
      "strata-bench", ["--scaling", "--levels", "100,300", "--runs", "1", "--only", "lmdb", "--scenario", "insert,fetch"])
    #expect(run.status == 0, "\(run.stderr)")
    for scenario in ["insert", "fetch"] {
      let line = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("\(scenario) lmdb ratio_100=") })
      #expect(line.contains(" ratio_300=") && line.contains(" growth_100_300="), "\(line)")
    }
    #expect(!run.stdout.contains("sqlite"))
  }

  @Test func anUnknownArgumentIsAUsageError() throws {
    let run = try Executables.run("strata-bench", ["--rowz", "5"])
    #expect(run.status == 2)
    #expect(run.stderr.contains("unknown argument '--rowz'"))
  }
}
