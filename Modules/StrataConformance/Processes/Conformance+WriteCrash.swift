import Foundation
import StrataConformanceWorker
import StrataStoreKit
import Testing

extension Conformance {
  /// What one kill campaign (``writeCrash(_:)``) found.
  struct KillCampaignSummary: Sendable, CustomStringConvertible {
    /// Writers killed (runs that finished before their kill are not counted).
    var kills = 0
    /// Checks made: one after every run of the writer, killed or not.
    var storesChecked = 0
    /// Stores that failed the backend's integrity check, did not open, or held a record that did not read.
    var corrupt = 0
    /// Writes found partly: a save or batch with some of its items and not others.
    var partial = 0
    /// Writes the writer acknowledged (printed) that the store does not hold.
    var lost = 0
    /// Saves acknowledged across all runs.
    var acknowledged = 0
    /// Seconds the campaign took.
    var seconds = 0.0

    /// The summary as one line, `kill-summary kills=… checked=… corrupt=… partial=… lost=…`, which
    /// `scripts/torture kill` reads.
    var description: String {
      "kill-summary kills=\(kills) checked=\(storesChecked) corrupt=\(corrupt) partial=\(partial) lost=\(lost) "
        + "acknowledged=\(acknowledged) seconds=\(String(format: "%.1f", seconds))"
    }
  }

  /// Writes are atomic and durable when their process dies: the backend's worker makes numbered saves and
  /// batch inserts of 20 items each (`ConformanceWorker`'s `write` command, printing a line after each),
  /// and is SIGKILLed at a random moment of its run, again and again on the same store (a fresh store
  /// every 25 kills). After each kill the store must pass the backend's ``ConformanceBackend/integrityCheck``,
  /// open, and read back whole: every write present with all its items or absent, present writes
  /// numbered without a gap, every acknowledged write present, the index and the uniqueness lookups
  /// agreeing with a scan, and one history transaction per write. `STRATA_KILL_ITERATIONS` sets the
  /// number of kills (default 12); the summary line it prints starts `kill-summary`. Needs
  /// ``Capabilities/multiProcess``.
  public static func writeCrash(_ backend: ConformanceBackend) async throws {
    let summary = try runKillCampaign(backend)
    print("kill campaign (\(backend.factory.storeType)): \(summary)")
    #expect(summary.corrupt == 0 && summary.partial == 0 && summary.lost == 0, "\(summary)")
  }

  static func runKillCampaign(_ backend: ConformanceBackend) throws -> KillCampaignSummary {
    let environment = ProcessInfo.processInfo.environment
    let kills = environment["STRATA_KILL_ITERATIONS"].flatMap(Int.init) ?? 12
    var random = SplitMix64(seed: environment["STRATA_KILL_SEED"].flatMap(UInt64.init) ?? 0x5EED_C0DE)
    let campaign = WriteKills(backend: backend, worker: try #require(backend.worker))
    let started = ContinuousClock.now
    let durations = try campaign.wholeRunDurations()
    var summary = KillCampaignSummary()
    var url = try campaign.freshStore()
    var written = 0
    var runs = 0
    while summary.kills < kills && runs < kills * 4 {
      runs += 1
      if summary.kills % campaign.killsPerStore == 0 && summary.kills > 0 && written > 0 {
        url = try campaign.freshStore()
        written = 0
      }
      let mode = random.next() % 2 == 0 ? "save" : "batch"
      let fraction = Double(random.next() % 1_000_001) / 1_000_000
      let state = try campaign.killOnce(
        mode, url, first: written, after: (durations[mode] ?? .seconds(1)) * fraction, into: &summary)
      if state.corrupt || !state.problems.isEmpty {
        url = try campaign.freshStore()
        written = 0
      } else {
        written = state.written
      }
    }
    summary.seconds = (ContinuousClock.now - started) / .seconds(1)
    return summary
  }

  /// One backend's kill campaign: its worker's `write` runs, each of `writesPerRun` writes of `size` objects.
  private struct WriteKills {
    let backend: ConformanceBackend
    let worker: String
    let writesPerRun = 30
    let size = 20
    let killsPerStore = 25
    var type: String { backend.factory.storeType.rawValue }

    func freshStore() throws -> URL {
      let url = try #require(try backend.makeLocation(), "a backend with multiProcess gives its stores a location")
      let store = try backend.factory.openStore(
        at: url, model: try ConformanceWorker.creationModel(), options: StoreOptions(tracksHistory: true))
      store.close()
      return url
    }

    func run(_ mode: String, _ url: URL, first: Int) throws -> WorkerProcess {
      try WorkerProcess(worker, ["write", type, url.path, mode, String(first), String(writesPerRun), String(size)])
    }

    /// How long a whole run of each mode takes, so kills spread over all of it; each whole run is checked.
    func wholeRunDurations() throws -> [String: Duration] {
      var durations: [String: Duration] = [:]
      for mode in ["save", "batch"] {
        let url = try freshStore()
        let clock = ContinuousClock.now
        let whole = try run(mode, url, first: 0).finish()
        durations[mode] = ContinuousClock.now - clock
        #expect(whole.status == 0, "\(whole.stderr)")
        let state = try Conformance.checkWrittenStore(
          backend, url, size: size, acknowledged: Set(0..<writesPerRun), runStart: 0)
        #expect(state.written == writesPerRun && state.problems.isEmpty, "\(state.problems)")
      }
      return durations
    }

    /// Starts a run, kills it after `delay`, and checks the store against the writes it acknowledged.
    func killOnce(
      _ mode: String, _ url: URL, first: Int, after delay: Duration, into summary: inout KillCampaignSummary
    ) throws -> WrittenState {
      let process = try run(mode, url, first: first)
      usleep(UInt32(clamping: Int(delay / .microseconds(1))))
      kill(process.process.processIdentifier, SIGKILL)
      let result = process.finish()
      // A run that finished before the kill came is checked all the same, not counted as a kill.
      if result.status != 0 || process.process.terminationReason != .exit { summary.kills += 1 }
      let acknowledged = Set(
        result.stdout.split(separator: "\n").compactMap { line in
          line.hasPrefix("saved ") ? Int(line.dropFirst(6)) : nil
        })
      summary.acknowledged += acknowledged.count
      summary.storesChecked += 1
      let state = try Conformance.checkWrittenStore(backend, url, size: size, acknowledged: acknowledged, runStart: first)
      summary.corrupt += state.corrupt ? 1 : 0
      summary.partial += state.partial
      summary.lost += state.lost
      for problem in state.problems { Issue.record("after a kill during \(mode)s (\(type), \(url.path)): \(problem)") }
      return state
    }
  }

  /// What the store the `write` command wrote holds, and what is wrong with it.
  struct WrittenState {
    var written = 0
    var corrupt = false
    var partial = 0
    var lost = 0
    var problems: [String] = []
  }

  /// Checks a store that `write` commands wrote from write 0 on; the last run started at write
  /// `runStart` and acknowledged `acknowledged`.
  static func checkWrittenStore(
    _ backend: ConformanceBackend, _ url: URL, size: Int, acknowledged: Set<Int>, runStart: Int
  ) throws -> WrittenState {
    var state = WrittenState()
    if let integrityCheck = backend.integrityCheck {
      do {
        try integrityCheck(url)
      } catch {
        state.corrupt = true
        state.problems.append("the integrity check failed: \(error)")
        return state
      }
    }
    let store: any PersistentStore
    do {
      store = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true, tracksHistory: true))
    } catch {
      state.corrupt = true
      state.problems.append("the store does not open: \(error)")
      return state
    }
    defer { store.close() }
    do {
      if store.model != (try ConformanceWorker.creationModel()) { state.problems.append("the stored model changed") }
      guard case .snapshots(let items) = try store.fetch(FetchDescription(entityName: "Item"), generation: nil) else {
        state.problems.append("a fetch of every item gave no snapshots")
        return state
      }
      var names: [Int: Set<String>] = [:]
      for item in items {
        guard case .string(let name) = item.attributes[0], case .int(let number) = item.attributes[1] else {
          state.problems.append("an item holds values of the wrong types: \(item.attributes)")
          continue
        }
        names[Int(number), default: []].insert(name)
      }
      for (number, found) in names {
        let expected = Set((0..<size).map { ConformanceWorker.writtenItemName(write: number, index: $0) })
        if found != expected {
          state.partial += 1
          state.problems.append("write \(number) holds \(found.count) of its \(size) items")
        }
      }
      state.written = names.count
      if Set(names.keys) != Set(0..<names.count) {
        state.problems.append("the writes present are not 0..<\(names.count): \(names.keys.sorted())")
      }
      let lost = acknowledged.subtracting(names.keys)
      state.lost = lost.count
      if !lost.isEmpty { state.problems.append("acknowledged writes missing: \(lost.sorted())") }
      let unacknowledged = Set(names.keys.filter { $0 >= runStart }).subtracting(acknowledged)
      if unacknowledged.count > 1 {
        state.problems.append("more than the one write in flight unacknowledged: \(unacknowledged.sorted())")
      }
      // The index on n and the uniqueness of name agree with the scan, at the last write and the next.
      for number in [names.count - 1, names.count] where number >= 0 {
        let expected = number < names.count ? size : 0
        let byIndex = try store.count(
          FetchDescription(entityName: "Item", predicate: try QueryPredicate(format: "n == %d", number)))
        let byName = try store.count(
          FetchDescription(
            entityName: "Item",
            predicate: try QueryPredicate(format: "name == %@", ConformanceWorker.writtenItemName(write: number, index: 0))))
        if byIndex != expected || byName != (expected > 0 ? 1 : 0) {
          state.problems.append("write \(number): \(byIndex) items by n and \(byName) by name, expected \(expected)")
        }
      }
      guard case .transactions(let transactions) = try store.fetchHistory(HistoryRequest()) else {
        state.problems.append("the history request gave no transactions")
        return state
      }
      let writes = transactions.filter { $0.author == "worker" }
      if writes.count != names.count {
        state.problems.append("\(writes.count) history transactions by the writer for \(names.count) writes")
      }
    } catch {
      state.corrupt = true
      state.problems.append("the store cannot be read whole: \(error)")
    }
    return state
  }
}
