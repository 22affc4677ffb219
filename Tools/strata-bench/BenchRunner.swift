import Foundation

/// Runs what the command line selects: for each row count, each group's scenarios on each backend, `--runs`
/// times (a fresh ``Run`` each time), then the concurrent saves once; prints every scenario's line, and the
/// scaling table, JSON file and baseline comparison asked for.
struct BenchRunner {
  let command: StrataBench

  private var settings: Run.Settings {
    Run.Settings(postgresURI: command.postgresServer, seconds: command.seconds, processes: command.processes)
  }

  func run() async throws {
    let wantsQueries = Scenario.table.contains { $0.group == .queries && command.wants($0, on: .sqlite) }
    if wantsQueries && command.postgresServer == nil {
      let note = "strata-bench: no PostgreSQL server (--postgres-uri URI): the queries on SQLite and LMDB only\n"
      FileHandle.standardError.write(Data(note.utf8))
    }
    var measurements: [Measurement] = []
    let levels = command.scaling ? command.levels.counts : [command.rows]
    for rows in levels {
      measurements += try perform(Group.allCases.filter { $0 != .concurrent }, workload: Workload(rows: rows), runs: command.runs)
    }
    measurements += try perform([.concurrent], workload: Workload(rows: 0), runs: 1)
    if MirrorBench.scenarios.contains(where: command.wantsMirror) {
      let mirror = try await MirrorBench(command: command).perform()
      for measurement in mirror { print(measurement.line) }
      measurements += mirror
    }
    if command.scaling { printScaling(measurements, levels: levels) }
    if let path = command.json { try writeJSON(measurements, runs: command.runs, to: path) }
    if let path = command.baseline {
      print(try BaselineComparison(path: path, tolerance: command.tolerance / 100).report(measurements))
    }
  }

  /// The scenarios of `groups` wanted at the workload's row count; prints and returns their figures.
  private func perform(_ groups: [Group], workload: Workload, runs: Int) throws -> [Measurement] {
    let recorder = Recorder(rows: workload.rows.count)
    for group in groups {
      for backend in Backend.allCases {
        let scenarios = Scenario.table.filter { $0.group == group && command.wants($0, on: backend) }
        guard !scenarios.isEmpty else { continue }
        for index in 0..<runs {
          let run = try Run(workload, backend: backend, index: index, settings: settings)
          defer { run.close() }
          for scenario in scenarios { try scenario.perform(run, recorder: recorder) }
        }
      }
    }
    let measurements = recorder.measurements
    for measurement in measurements { print(measurement.line) }
    return measurements
  }
}
