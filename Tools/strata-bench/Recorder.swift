import Foundation

/// One scenario's figures on one backend at one row count: the medians of its runs, each side's peak
/// resident memory, and what else the scenario reports (`extra`, such as saves per second).
struct Measurement {
  var scenario: String
  var backend: String
  var rows: Int
  var strataMilliseconds: Double
  var rawMilliseconds: Double
  /// The highest resident size while the side ran (`VmHWM`), and how far above the size it started from.
  var strataPeakMiB: Double?
  var strataPeakAboveStartMiB: Double?
  var rawPeakMiB: Double?
  var rawPeakAboveStartMiB: Double?
  var extra: [(String, Double)] = []
  /// Each run's times, paired by run.
  var strataRuns: [Double] = []
  var rawRuns: [Double] = []

  /// The median of each run's Strata ÷ raw (both sides of one run ran back to back, so a run's ratio
  /// cancels most of the machine's drift); the ratio of the medians when the runs do not pair up.
  var ratio: Double {
    guard strataRuns.count == rawRuns.count, !strataRuns.isEmpty, rawRuns.allSatisfy({ $0 > 0 }) else {
      return rawMilliseconds > 0 ? strataMilliseconds / rawMilliseconds : 0
    }
    return median(zip(strataRuns, rawRuns).map { $0 / $1 })
  }

  /// `SCENARIO_ROWS BACKEND strata_ms=X raw_ms=Y ratio=R …`, as strata-bench has always printed.
  var line: String {
    var line = String(
      format: "%@_%d %@ strata_ms=%.2f raw_ms=%.2f ratio=%.2f", scenario, rows, backend, strataMilliseconds, rawMilliseconds,
      ratio)
    if let s = strataPeakAboveStartMiB, let r = rawPeakAboveStartMiB {
      line += String(format: " peak_above_start_mib=%.1f/%.1f", s, r)
    }
    for (key, value) in extra { line += String(format: " %@=%.2f", key, value) }
    return line
  }
}

/// Collects the runs of every scenario: each side of a run is timed by the scenario and recorded here with
/// the peak memory around it (the peak is reset before each side and read after it).
final class Recorder {
  private struct Key: Hashable {
    var scenario: String
    var backend: String
  }

  private struct Runs {
    var strata: [Double] = []
    var raw: [Double] = []
    var strataPeak: (peak: Double, above: Double)?
    var rawPeak: (peak: Double, above: Double)?
    var extra: [String: [Double]] = [:]
    var extraOrder: [String] = []
  }

  let rows: Int
  private var order: [Key] = []
  private var runs: [Key: Runs] = [:]

  init(rows: Int) { self.rows = rows }

  private func update(_ scenario: String, _ backend: String, _ change: (inout Runs) -> Void) {
    let key = Key(scenario: scenario, backend: backend)
    if runs[key] == nil {
      order.append(key)
      runs[key] = Runs()
    }
    change(&runs[key, default: Runs()])
  }

  private func measured(_ body: () throws -> Double) rethrows -> (time: Double, peak: (peak: Double, above: Double)?) {
    resetPeakMemory()
    let start = residentMemory()
    let time = try body()
    guard let start, let end = residentMemory() else { return (time, nil) }
    return (time, (end.peak, max(0, end.peak - start.current)))
  }

  private static func higher(
    _ a: (peak: Double, above: Double)?, _ b: (peak: Double, above: Double)?
  ) -> (peak: Double, above: Double)? {
    guard let a else { return b }
    guard let b else { return a }
    return (max(a.peak, b.peak), max(a.above, b.above))
  }

  /// Runs `body` (which returns the time of one side of `scenario`, in ms) and records it with the peak
  /// memory around it.
  func measure(_ side: Side, _ scenario: String, _ backend: Backend, _ body: () throws -> Double) throws {
    let (time, peak) = try measured(body)
    record(side, scenario, backend, time, peak)
  }

  private func record(
    _ side: Side, _ scenario: String, _ backend: Backend, _ time: Double, _ peak: (peak: Double, above: Double)?
  ) {
    update(scenario, backend.rawValue) {
      switch side {
      case .strata:
        $0.strata.append(time)
        $0.strataPeak = Self.higher($0.strataPeak, peak)
      case .raw:
        $0.raw.append(time)
        $0.rawPeak = Self.higher($0.rawPeak, peak)
      }
    }
  }

  /// As ``measure(_:_:_:_:)``, for a side that awaits its work (the mirror scenarios).
  func measureAsync(_ side: Side, _ scenario: String, _ backend: Backend, _ body: () async throws -> Double) async throws {
    resetPeakMemory()
    let start = residentMemory()
    let time = try await body()
    let peak = start.flatMap { start in residentMemory().map { ($0.peak, max(0, $0.peak - start.current)) } }
    record(side, scenario, backend, time, peak)
  }

  /// Records one side's time measured elsewhere (by another scenario's side, or in worker processes), without
  /// memory.
  func append(_ side: Side, _ scenario: String, _ backend: Backend, _ time: Double) {
    update(scenario, backend.rawValue) {
      switch side {
      case .strata: $0.strata.append(time)
      case .raw: $0.raw.append(time)
      }
    }
  }

  /// Records a further figure of a scenario (its median over runs is reported).
  func note(_ scenario: String, _ backend: Backend, _ key: String, _ value: Double) {
    update(scenario, backend.rawValue) {
      if $0.extra[key] == nil { $0.extraOrder.append(key) }
      $0.extra[key, default: []].append(value)
    }
  }

  /// Every scenario recorded so far, in the order it first ran.
  var measurements: [Measurement] {
    order.compactMap { key in
      guard let r = runs[key] else { return nil }
      return Measurement(
        scenario: key.scenario, backend: key.backend, rows: rows, strataMilliseconds: median(r.strata),
        rawMilliseconds: median(r.raw), strataPeakMiB: r.strataPeak?.peak, strataPeakAboveStartMiB: r.strataPeak?.above,
        rawPeakMiB: r.rawPeak?.peak, rawPeakAboveStartMiB: r.rawPeak?.above,
        extra: r.extraOrder.map { ($0, median(r.extra[$0] ?? [])) }, strataRuns: r.strata, rawRuns: r.raw)
    }
  }
}

/// The commit being measured: `STRATA_BENCH_COMMIT`, else `git rev-parse HEAD` in the current directory.
func currentCommit() -> String? {
  if let commit = ProcessInfo.processInfo.environment["STRATA_BENCH_COMMIT"], !commit.isEmpty { return commit }
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = ["git", "rev-parse", "HEAD"]
  let out = Pipe()
  process.standardOutput = out
  process.standardError = FileHandle.nullDevice
  guard (try? process.run()) != nil else { return nil }
  let data = out.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  guard process.terminationStatus == 0 else { return nil }
  let commit = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
  return commit.isEmpty ? nil : commit
}

/// Writes every measurement as JSON: `{"commit", "runs", "load_average", "results": [{scenario, backend, rows,
/// strata_ms, raw_ms (medians), ratio (median of the runs' ratios), strata_runs_ms, raw_runs_ms,
/// strata_peak_rss_mib, …}]}`.
func writeJSON(_ measurements: [Measurement], runs: Int, to path: String) throws {
  func number(_ value: Double?) -> Any { value.map { ($0 * 1_000_000).rounded() / 1_000_000 } ?? NSNull() }
  let results: [[String: Any]] = measurements.map { m in
    var entry: [String: Any] = [
      "scenario": m.scenario, "backend": m.backend, "rows": m.rows, "strata_ms": number(m.strataMilliseconds),
      "raw_ms": number(m.rawMilliseconds), "ratio": number(m.ratio), "strata_peak_rss_mib": number(m.strataPeakMiB),
      "strata_peak_above_start_mib": number(m.strataPeakAboveStartMiB), "raw_peak_rss_mib": number(m.rawPeakMiB),
      "raw_peak_above_start_mib": number(m.rawPeakAboveStartMiB), "strata_runs_ms": m.strataRuns.map { number($0) },
      "raw_runs_ms": m.rawRuns.map { number($0) },
    ]
    for (key, value) in m.extra { entry[key] = number(value) }
    return entry
  }
  let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).compactMap {
    Double($0)
  }
  let document: [String: Any] = [
    "commit": currentCommit() ?? NSNull(), "runs": runs, "load_average": load ?? NSNull(),
    "processors": ProcessInfo.processInfo.activeProcessorCount, "results": results,
  ]
  let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
  try data.write(to: URL(fileURLWithPath: path))
}

/// Per scenario and backend, the ratio at each row count and how much Strata's time grew per step of rows
/// (10 for linear growth over a tenfold step).
func printScaling(_ measurements: [Measurement], levels: [Int]) {
  struct Key: Hashable {
    var scenario: String
    var backend: String
  }
  var order: [Key] = []
  var byKey: [Key: [Int: Measurement]] = [:]
  for m in measurements {
    let key = Key(scenario: m.scenario, backend: m.backend)
    if byKey[key] == nil { order.append(key) }
    byKey[key, default: [:]][m.rows] = m
  }
  print("\nscaling: ratio (Strata ÷ raw) per row count; growth = Strata's time ÷ its time at the previous count")
  for key in order {
    guard let figures = byKey[key] else { continue }
    var line = "\(key.scenario) \(key.backend)"
    for rows in levels {
      line += figures[rows].map { String(format: " ratio_%d=%.2f", rows, $0.ratio) } ?? " ratio_\(rows)=-"
    }
    for (previous, rows) in zip(levels, levels.dropFirst()) {
      if let a = figures[previous], let b = figures[rows], a.strataMilliseconds > 0 {
        line += String(format: " growth_%d_%d=%.2f", previous, rows, b.strataMilliseconds / a.strataMilliseconds)
      }
    }
    if let top = levels.last.flatMap({ figures[$0] }), let peak = top.strataPeakAboveStartMiB {
      line += String(format: " strata_peak_above_start_mib_%d=%.1f", top.rows, peak)
    }
    print(line)
  }
}
