import Foundation

/// A run's ratios against those of a file `--json` wrote earlier (`--baseline FILE`): per scenario, backend
/// and row count found in both, the two ratios and the change, flagged when the ratio rose by more than the
/// tolerance. Ratios, not times, are compared: each cancels most of the machine's drift between the runs.
struct BaselineComparison {
  struct Key: Hashable {
    var scenario: String
    var backend: String
    var rows: Int
  }

  let path: String
  let commit: String?
  let ratios: [Key: Double]
  /// The rise, as a fraction of the baseline's ratio, past which a scenario is a regression.
  let tolerance: Double

  init(path: String, tolerance: Double) throws {
    self.path = path
    self.tolerance = tolerance
    let data: Data
    do {
      data = try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
      throw BenchError.store("cannot read the baseline \(path): \(error.localizedDescription)")
    }
    guard let document = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
      let results = document["results"] as? [[String: Any]]
    else {
      throw BenchError.store("\(path) is no strata-bench --json file (no \"results\" list)")
    }
    var ratios: [Key: Double] = [:]
    for result in results {
      guard let scenario = result["scenario"] as? String, let backend = result["backend"] as? String,
        let rows = result["rows"] as? Int, let ratio = result["ratio"] as? Double
      else { throw BenchError.store("\(path): a result without scenario, backend, rows and ratio") }
      ratios[Key(scenario: scenario, backend: backend, rows: rows)] = ratio
    }
    self.ratios = ratios
    commit = document["commit"] as? String
  }

  /// One line per scenario of `measurements` the baseline also has, then a summary line.
  func report(_ measurements: [Measurement]) -> String {
    var lines = ["\nbaseline \(path)\(commit.map { " (commit \($0.prefix(12)))" } ?? ""): ratio now ÷ ratio then"]
    var regressions: [String] = []
    var missing = 0
    for m in measurements {
      let name = "\(m.scenario)_\(m.rows) \(m.backend)"
      guard let then = ratios[Key(scenario: m.scenario, backend: m.backend, rows: m.rows)], then > 0 else {
        missing += 1
        continue
      }
      let change = m.ratio / then - 1
      let flagged = change > tolerance
      if flagged { regressions.append(name) }
      lines.append(
        String(format: "%@ ratio=%.2f baseline_ratio=%.2f change=%+.1f%%", name, m.ratio, then, change * 100)
          + (flagged ? " REGRESSION" : ""))
    }
    let compared = measurements.count - missing
    var summary = String(
      format: "compared %d scenario(s) with the baseline: %d regression(s) past %.0f %%", compared, regressions.count,
      tolerance * 100)
    if !regressions.isEmpty { summary += " (" + regressions.joined(separator: ", ") + ")" }
    if missing > 0 { summary += "; \(missing) not in the baseline" }
    lines.append(summary)
    return lines.joined(separator: "\n")
  }
}
