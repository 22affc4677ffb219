import Foundation

/// Every scenario at `rows` rows, `options.runs` times each.
func runScenarios(rows count: Int, options: Options, recorder: Recorder) throws {
  let rows = (0..<count).map(Row.make)
  for backend in ["sqlite", "lmdb"] {
    for _ in 0..<options.runs { try runBackendScenarios(backend, rows: rows, options: options, recorder: recorder) }
  }
  if options.only == "queries" || options.scenarios?.contains(where: { $0.hasPrefix("query_") }) == true {
    if options.postgresURI == nil {
      let note = "strata-bench: no PostgreSQL server (--postgres-uri URI): the queries on SQLite and LMDB only\n"
      FileHandle.standardError.write(Data(note.utf8))
    }
    for backend in ["sqlite", "lmdb"] + (options.postgresURI == nil ? [] : ["postgres"]) {
      for _ in 0..<options.runs { try runQueryScenarios(backend, rows: rows, options: options, recorder: recorder) }
    }
  }
  if options.wants("batch_insert_history", in: "history") {
    let objects = dictionaries(rows)
    for backend in ["sqlite", "lmdb"] {
      for run in 0..<options.runs { try runHistoryScenario(backend, objects: objects, run: run, recorder: recorder) }
    }
  }
  if options.wants("migrate_add_rename", in: "migration") {
    for _ in 0..<options.runs { try runSQLiteMigrationScenario(rows: rows, recorder: recorder) }
  }
  if options.wants("migrate", in: "lmdb-migration") {
    for run in 0..<options.runs { try runLMDBMigrationScenario(rows: rows, run: run, recorder: recorder) }
  }
}

do {
  let options = try Options(CommandLine.arguments)
  if let worker = options.worker {
    print(try ConcurrentWorker(worker).run())
    exit(0)
  }
  switch options.only {
  case "postgres":
    let rows = (0..<options.rows).map(Row.make)
    try runPostgresBench(rows, dictionaries(rows), runs: options.runs, uri: options.postgresURI)
    exit(0)
  case "postgres-concurrent":
    try runPostgresConcurrent(uri: options.postgresURI)
    exit(0)
  case "postgres-saver":
    try runPostgresSaver(uri: options.postgresURI)
    exit(0)
  default: break
  }
  var measurements: [Measurement] = []
  for rows in options.scaling ? options.levels : [options.rows] {
    let recorder = Recorder(rows: rows)
    try runScenarios(rows: rows, options: options, recorder: recorder)
    for measurement in recorder.measurements { print(measurement.line) }
    measurements += recorder.measurements
  }
  if options.wants("concurrent_saves", in: "concurrent") {
    let recorder = Recorder(rows: 0)
    try runConcurrentScenario(options: options, recorder: recorder)
    for measurement in recorder.measurements { print(measurement.line) }
    measurements += recorder.measurements
  }
  if options.scaling { printScaling(measurements, levels: options.levels) }
  if let path = options.json { try writeJSON(measurements, runs: options.runs, to: path) }
} catch {
  FileHandle.standardError.write(Data("strata-bench: error: \(error)\n".utf8))
  if case .usage = error as? BenchError { exit(2) }
  exit(1)
}
