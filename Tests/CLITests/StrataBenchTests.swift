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
  static let postgres = ["insert", "fetch", "faults", "count_where", "batch_insert"]

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

  @Test func anUnknownArgumentOrScenarioIsAUsageError() throws {
    let unknown = try Executables.run("strata-bench", ["--rowz", "5"])
    #expect(unknown.status == 64)
    #expect(unknown.stderr.contains("strata-bench: error:") && unknown.stderr.contains("'--rowz'"), "\(unknown.stderr)")
    let scenario = try Executables.run("strata-bench", ["--scenario", "insert,fetsh"])
    #expect(scenario.status == 64)
    #expect(scenario.stderr.contains("unknown scenario 'fetsh'"), "\(scenario.stderr)")
    let levels = try Executables.run("strata-bench", ["--scaling", "--levels", "100,x"])
    #expect(levels.status == 64 && levels.stderr.contains("--levels"), "\(levels.stderr)")
  }

  /// `--baseline FILE` sets each ratio beside the file's: a file whose ratios are far below any real one
  /// flags every scenario, one far above flags none.
  @Test func aBaselineComparesEachRatio() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "strata-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let arguments = ["--rows", "200", "--runs", "1", "--only", "sqlite", "--scenario", "count_where,sum"]
    for (name, ratio) in [("low", 1e-9), ("high", 1e9)] {
      let results = ["count_where", "sum"].map {
        #"{"scenario": "\#($0)", "backend": "sqlite", "rows": 200, "ratio": \#(ratio)}"#
      }
      try Data(#"{"commit": "abc", "results": [\#(results.joined(separator: ", "))]}"#.utf8)
        .write(to: directory.appending(path: "\(name).json"))
    }
    let low = try Executables.run("strata-bench", arguments + ["--baseline", directory.appending(path: "low.json").path])
    #expect(low.status == 0, "\(low.stderr)")
    for scenario in ["count_where", "sum"] {
      let line = try #require(low.stdout.split(separator: "\n").first { $0.hasPrefix("\(scenario)_200 sqlite ratio=") })
      #expect(line.contains(" baseline_ratio=0.00 ") && line.hasSuffix(" REGRESSION"), "\(line)")
    }
    #expect(low.stdout.contains("compared 2 scenario(s) with the baseline: 2 regression(s)"), "\(low.stdout)")
    let high = try Executables.run("strata-bench", arguments + ["--baseline", directory.appending(path: "high.json").path])
    #expect(high.status == 0, "\(high.stderr)")
    #expect(!high.stdout.contains("REGRESSION") && high.stdout.contains("0 regression(s)"), "\(high.stdout)")

    let notJSON = directory.appending(path: "notes.txt")
    try Data("not figures".utf8).write(to: notJSON)
    let bad = try Executables.run("strata-bench", arguments + ["--baseline", notJSON.path])
    #expect(bad.status == 1)
    #expect(bad.stderr.contains("notes.txt is no strata-bench --json file"), "\(bad.stderr)")
  }

  /// PostgreSQL's scenarios go through the same report as the others: a line each and the same JSON fields.
  @Test func postgresReportsLikeTheOtherBackends() throws {
    guard let uri = ProcessInfo.processInfo.environment[PostgresServer.variable], !uri.isEmpty else {
      Issue.record(Comment(rawValue: PostgresServer.Missing().description))
      return
    }
    let json = FileManager.default.temporaryDirectory.appending(path: "strata-bench-\(UUID().uuidString).json").path
    defer { try? FileManager.default.removeItem(atPath: json) }
    let run = try Executables.run(
      "strata-bench", ["--only", "postgres", "--rows", "200", "--runs", "1", "--postgres-uri", uri, "--json", json])
    #expect(run.status == 0, "\(run.stderr)")
    let results = try Self.results(ofJSONAt: json)
    let found = results.map { "\($0["scenario"] as? String ?? "?") \($0["backend"] as? String ?? "?")" }
    #expect(Set(found) == Set(Self.postgres.map { "\($0) postgres" }) && found.count == Self.postgres.count, "\(found)")
    for scenario in Self.postgres {
      #expect(
        run.stdout.contains("\n\(scenario)_200 postgres strata_ms=")
          || run.stdout.hasPrefix("\(scenario)_200 postgres strata_ms="))
    }
    for result in results {
      #expect(result["ratio"] is Double && result["strata_runs_ms"] is [Double] && result["raw_runs_ms"] is [Double])
    }
  }

  /// `--only mirror` with tiny counts: the push, the pull and the latency, each a line and a JSON entry with
  /// both sides (their values are not judged).
  @Test func mirrorReportsThePushThePullAndTheLatency() throws {
    guard let uri = ProcessInfo.processInfo.environment[PostgresServer.variable], !uri.isEmpty else {
      Issue.record(Comment(rawValue: PostgresServer.Missing().description))
      return
    }
    let json = FileManager.default.temporaryDirectory.appending(path: "strata-bench-\(UUID().uuidString).json").path
    defer { try? FileManager.default.removeItem(atPath: json) }
    let run = try Executables.run(
      "strata-bench", ["--only", "mirror", "--rows", "200", "--runs", "1", "--postgres-uri", uri, "--json", json])
    #expect(run.status == 0, "\(run.stderr)")
    let expected = ["mirror_push_20", "mirror_pull_200", "mirror_latency_5"]
    let lines = run.stdout.split(separator: "\n").filter { $0.contains(" strata_ms=") }
    #expect(lines.map { String($0.prefix { $0 != " " }) } == expected, "\(run.stdout)")
    #expect(lines.allSatisfy { $0.contains(" postgres strata_ms=") && $0.contains(" raw_ms=") })
    let results = try Self.results(ofJSONAt: json)
    #expect(results.map { "\($0["scenario"] as? String ?? "?")_\($0["rows"] as? Int ?? 0)" } == expected)
    for result in results {
      #expect(result["strata_runs_ms"] as? [Double] != nil && result["raw_runs_ms"] as? [Double] != nil)
    }
    let latency = try #require(results.last)
    #expect(latency["strata_p99_ms"] is Double && latency["raw_p99_ms"] is Double, "\(latency)")
  }
}
