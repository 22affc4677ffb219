import CSQLite
import Foundation
import Strata

/// What one worker process of the concurrent-saves scenario does: which side, which backend, where (a path
/// or a `postgresql://` URI), when to start (seconds since 1970, so that every worker starts together) and
/// for how long.
struct ConcurrentWorker {
  var side: Side
  var backend: String
  var location: String
  var start: Double
  var seconds: Double

  var arguments: [String] {
    ["--concurrent-worker", side.rawValue, backend, location, String(start), String(seconds)]
  }

  init(side: Side, backend: String, location: String, start: Double, seconds: Double) {
    (self.side, self.backend, self.location, self.start, self.seconds) = (side, backend, location, start, seconds)
  }

  init(_ arguments: [String]) throws {
    guard arguments.count == 5, let side = Side(rawValue: arguments[0]), let start = Double(arguments[3]),
      let seconds = Double(arguments[4])
    else {
      throw BenchError.store("--concurrent-worker takes SIDE BACKEND LOCATION START SECONDS")
    }
    self.init(side: side, backend: arguments[1], location: arguments[2], start: start, seconds: seconds)
  }

  private func waitForStart() {
    let delay = start - Date().timeIntervalSince1970
    if delay > 0 { Thread.sleep(forTimeInterval: delay) }
  }

  private var end: Double { start + seconds }

  /// Saves one new row per transaction until the time is up; returns how many saves committed.
  func run() throws -> Int {
    var saves = 0
    var row = 0
    let pid = Int(getpid())
    func nextRow() -> Row {
      row += 1
      return Row.make(pid * 1_000_000 + row)
    }
    guard let backend = Backend(rawValue: backend), let url = backend.url(location) else {
      throw BenchError.store("no concurrent worker for \(self.backend) at \(location)")
    }
    switch side {
    case .strata:
      let container = try benchContainer(StoreDescription(type: backend.storeType, url: url))
      defer { container.close() }
      let context = container.newBackgroundContext()
      try context.performAndWait {
        waitForStart()
        while Date().timeIntervalSince1970 < end {
          let values = nextRow()
          let item = BenchItem(context: context)
          item.name = values.name
          item.category = values.category
          item.count = values.count
          item.amount = values.amount
          item.flag = values.flag
          item.created = values.created
          item.code = values.code
          item.score = values.score
          item.note = values.note
          try context.save()
          saves += 1
        }
      }
    case .raw:
      saves = try backend.baselineType.saveConcurrently(at: location, rows: nextRow, waitForStart: waitForStart, end: end)
    }
    return saves
  }
}

/// Binds a row's nine fields to an INSERT's nine parameters.
func bindRow(_ row: Row, to statement: OpaquePointer) {
  sqlite3_bind_text(statement, 1, row.name, -1, strata_sqlite_transient())
  sqlite3_bind_text(statement, 2, row.category, -1, strata_sqlite_transient())
  sqlite3_bind_int64(statement, 3, row.count)
  sqlite3_bind_double(statement, 4, row.amount)
  sqlite3_bind_int(statement, 5, row.flag ? 1 : 0)
  sqlite3_bind_double(statement, 6, row.created.timeIntervalSinceReferenceDate)
  sqlite3_bind_int(statement, 7, row.code)
  sqlite3_bind_double(statement, 8, Double(row.score))
  if let note = row.note {
    sqlite3_bind_text(statement, 9, note, -1, strata_sqlite_transient())
  } else {
    sqlite3_bind_null(statement, 9)
  }
}

/// Runs the run's `processes` workers of one side against one store for its `seconds`, then counts the rows:
/// returns the saves the workers reported, which must all be in the store.
func runConcurrently(_ side: Side, _ run: Run) throws -> Int {
  let backend = run.backend
  // The store and its table exist before the workers start.
  let location: String
  var strataStore: StoreDescription?
  switch side {
  case .raw:
    _ = try run.baseline.insert([])
    location = run.baseline.workerLocation
  case .strata:
    let store = try run.store("concurrent")
    try benchContainer(store).close()
    guard let url = store.url else { throw BenchError.store("no location for the concurrent saves") }
    location = backend.location(url)
    strataStore = store
  }
  let seconds = run.settings.seconds
  let start = Date().timeIntervalSince1970 + 2
  var workers: [(Process, Pipe)] = []
  for _ in 0..<run.settings.processes {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    process.arguments =
      ConcurrentWorker(side: side, backend: backend.rawValue, location: location, start: start, seconds: seconds).arguments
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    workers.append((process, out))
  }
  var saves = 0
  for (process, out) in workers {
    let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0, let count = Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
      throw BenchError.store("a \(side) \(backend) worker failed (status \(process.terminationStatus)): \(output)")
    }
    saves += count
  }
  let stored: Int
  if let strataStore {
    let container = try benchContainer(strataStore)
    defer { container.close() }
    let context = container.newBackgroundContext()
    stored = try context.performAndWait { try context.count(for: FetchRequest<BenchItem>()) }
  } else {
    stored = try run.baseline.storedRows()
  }
  guard stored == saves else {
    throw BenchError.store("\(side) \(backend): workers saved \(saves) rows, the store holds \(stored)")
  }
  return saves
}
