import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// A seeded convergence property: three replicas (memory, SQLite, LMDB) make random transactions on a
/// shared pool of objects and sync in a random order, and the file replicas are killed at random moments
/// (in this process: the sync is stopped at a random durable step, `MirrorFailpoint`, or its reply lost,
/// or the replica is dropped right after a save, and its store reopened from the file); once every
/// replica has synced twice with no new edits, all of them and the hub hold identical objects, and every
/// local transaction of every replica is on the hub exactly once.
///
/// Each seed is a test case of its own (they run in parallel). `STRATA_MIRROR_SEED=n` reruns one seed;
/// `STRATA_MIRROR_SEEDS=n` runs n seeds (default 6), `STRATA_MIRROR_TRANSACTIONS=n` makes n transactions
/// per replica (default 100), `STRATA_MIRROR_KILLS=0` turns the kills off. Each seed prints one line
/// `mirror-summary seed=… transactions=… kills=… lost=… duplicated=… divergent=…` (scripts/torture mirror
/// adds them up).
@Suite("Mirror convergence")
struct MirrorConvergenceTests {
  static let seeds: [UInt64] = {
    let environment = ProcessInfo.processInfo.environment
    if let seed = environment["STRATA_MIRROR_SEED"].flatMap(UInt64.init) { return [seed] }
    let count = environment["STRATA_MIRROR_SEEDS"].flatMap(Int.init) ?? 6
    return (0..<UInt64(max(1, count))).map { 0x5eed_0000 + $0 }
  }()

  static var transactionsPerReplica: Int {
    ProcessInfo.processInfo.environment["STRATA_MIRROR_TRANSACTIONS"].flatMap(Int.init) ?? 100
  }

  static var kills: Bool { ProcessInfo.processInfo.environment["STRATA_MIRROR_KILLS"] != "0" }

  @Test func replicasConvergeOnAPostgreSQLHub() async throws {
    let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
    let hub = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: String(schema), model: orchardModel)
    let seed = Self.seeds[0]
    let outcome = try await Self.run(seed: seed, transactionsPerReplica: 30, hub: hub, killing: Self.kills)
    print(
      "mirror-summary hub=postgres seed=\(seed) transactions=\(outcome.transactions) kills=\(outcome.kills) "
        + "lost=\(outcome.lost) duplicated=\(outcome.duplicated) divergent=\(outcome.divergent)")
    #expect(outcome.failures.isEmpty, "STRATA_MIRROR_SEED=\(seed): \(outcome.failures.joined(separator: "; "))")
  }

  @Test(arguments: MirrorConvergenceTests.seeds)
  func replicasConvergeAfterRandomTransactionsSyncsAndKills(seed: UInt64) async throws {
    let outcome = try await Self.run(seed: seed, transactionsPerReplica: Self.transactionsPerReplica, killing: Self.kills)
    print(
      "mirror-summary seed=\(seed) transactions=\(outcome.transactions) kills=\(outcome.kills) lost=\(outcome.lost) "
        + "duplicated=\(outcome.duplicated) divergent=\(outcome.divergent)")
    #expect(outcome.failures.isEmpty, "STRATA_MIRROR_SEED=\(seed): \(outcome.failures.joined(separator: "; "))")
  }

  /// What one seed did and what did not hold.
  struct Outcome {
    var transactions = 0
    var kills = 0
    /// Local transactions not on the hub, transactions applied twice, replicas that differ from the hub.
    var lost = 0
    var duplicated = 0
    var divergent = 0
    var failures: [String] = []
  }

  /// Where a random kill stops a file replica.
  enum RandomKill: CaseIterable {
    /// Dropped right after a save (the transaction committed locally, nothing pushed).
    case afterSave
    /// Its sync stopped at a durable step, the `n`-th time it is reached.
    case beforePush, afterPush, afterPullBatch
    /// The hub commits a push and its reply is lost; the replica is dropped after the failed sync.
    case lostReply
  }

  /// Runs one seed.
  static func run(
    seed: UInt64, transactionsPerReplica: Int, hub: any MirrorHub = MemoryHub(model: orchardModel), killing: Bool = true
  ) async throws -> Outcome {
    var random = SeededGenerator(seed: seed)
    var outcome = Outcome()
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    var replicas = try ReplicaStore.allCases.map { try Replica($0, hub: hub, in: directory, name: $0.rawValue) }
    defer { for replica in replicas { replica.container.close() } }
    /// The replica at `index` killed: its container abandoned, its store reopened from its file.
    func reopen(_ index: Int) throws {
      outcome.kills += 1
      replicas[index].container.close()
      let store = ReplicaStore.allCases[index]
      replicas[index] = try Replica(store, hub: hub, in: directory, name: store.rawValue)
    }
    let first = replicas[0]
    for i in 0..<4 {
      let crate = Crate(context: first.context)
      crate.label = "crate \(i)"
      for j in 0..<2 {
        let apple = Apple(context: first.context)
        apple.variety = "apple \(i).\(j)"
        apple.crate = crate
      }
    }
    try first.context.save()
    for replica in replicas { _ = try await replica.mirror.sync() }

    var made = Array(repeating: 0, count: replicas.count)
    while made.contains(where: { $0 < transactionsPerReplica }) {
      let index = Int.random(in: 0..<replicas.count, using: &random)
      guard made[index] < transactionsPerReplica else { continue }
      let replica = replicas[index]
      // Only the file replicas can be reopened after a kill.
      let kill =
        killing && index > 0 && Int.random(in: 0..<100, using: &random) < 25
        ? RandomKill.allCases.randomElement(using: &random) : nil
      if Int.random(in: 0..<100, using: &random) < 15 {
        try await sync(replica, killedBy: kill, nth: Int.random(in: 1...3, using: &random), hub: hub) { try reopen(index) }
        continue
      }
      for _ in 0..<Int.random(in: 1...3, using: &random) { try randomEdit(on: replica, using: &random) }
      try replica.context.save()
      made[index] += 1
      if kill == .afterSave { try reopen(index) }
    }
    for _ in 0..<2 {
      for replica in replicas { _ = try await replica.mirror.sync() }
    }

    outcome.transactions = made.reduce(0, +)
    let expected = try (hub as? PostgresHub)?.liveObjects().mapValues(\.fields) ?? canonicalDump(of: hub)
    let log = try await hub.pull(after: 0, limit: .max)
    var applied: [UUID: [Int64: Int]] = [:]
    for entry in log { applied[entry.replicaID, default: [:]][entry.localSequence, default: 0] += 1 }
    for (store, replica) in zip(ReplicaStore.allCases, replicas) {
      let dump = try replica.canonicalDump()
      if dump != expected {
        outcome.divergent += 1
        let differing =
          Set(dump.keys).symmetricDifference(expected.keys).count
          + dump.keys.filter { expected[$0] != nil && expected[$0] != dump[$0] }.count
        let example = Set(dump.keys).union(expected.keys).sorted { $0.uuidString < $1.uuidString }
          .first { dump[$0] != expected[$0] }
        outcome.failures.append(
          "the \(store) replica differs from the hub in \(differing) objects, such as "
            + "\(example.map { "\($0): replica \(String(describing: dump[$0])), hub \(String(describing: expected[$0]))" } ?? "")"
        )
      }
      let status = try replica.mirror.status()
      if status.pendingTransactions != 0 {
        outcome.failures.append("the \(store) replica still has \(status.pendingTransactions) pending transactions")
      }
      let onHub = status.replicaID.flatMap { applied[$0] } ?? [:]
      let lost = try replica.localTransactions().filter { onHub[$0] == nil }
      let twice = onHub.filter { $0.value > 1 }.keys.sorted()
      outcome.lost += lost.count
      outcome.duplicated += twice.count
      if !lost.isEmpty { outcome.failures.append("the \(store) replica's transactions \(lost) are not on the hub") }
      if !twice.isEmpty { outcome.failures.append("the \(store) replica's transactions \(twice) were applied twice on the hub") }
    }
    return outcome
  }

  /// Syncs `replica`; with a kill, arms it first and calls `reopen` when it struck (the sync then stopped
  /// where a killed process would have, or failed on the lost reply).
  static func sync(
    _ replica: Replica, killedBy kill: RandomKill?, nth: Int, hub: any MirrorHub, reopen: () throws -> Void
  ) async throws {
    let step: MirrorFailpoint? =
      switch kill {
      case .beforePush: .beforePush
      case .afterPush: .afterPush
      case .afterPullBatch: .afterPullBatch
      case .afterSave, .lostReply, nil: nil
      }
    if let step {
      let reached = Locked(0)
      replica.mirror.failpoint.withLock {
        $0 = { reachedStep in
          guard reachedStep == step,
            reached.withLock({ count in
              count += 1
              return count == nth
            })
          else { return }
          throw MirrorFailpoint.Killed(step)
        }
      }
    }
    let losesReply = try kill == .lostReply && replica.mirror.status().pendingTransactions > 0
    if losesReply {
      (hub as? MemoryHub)?.loseReplies(1)
      (hub as? PostgresHub)?.loseReplies(1)
    }
    do {
      _ = try await replica.mirror.sync()
      replica.mirror.failpoint.withLock { $0 = nil }
    } catch is MirrorFailpoint.Killed {
      try reopen()
    } catch MirrorError.hubUnreachable where losesReply {
      try reopen()
    }
  }

  /// `objects` in the order of their IDs' URIs (each URI built once, not at every comparison).
  static func inStableOrder<T: ManagedObject>(_ objects: [T]) -> [T] {
    objects.map { ($0.objectID.uriRepresentation, $0) }.sorted { $0.0 < $1.0 }.map(\.1)
  }

  static func randomEdit(on replica: Replica, using random: inout SeededGenerator) throws {
    let crates = try inStableOrder(replica.crates())
    let apples = try inStableOrder(replica.apples())
    let word = ["red", "green", "tart", "sweet", "old", "new"].randomElement(using: &random) ?? "plain"
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<10:
      let crate = Crate(context: replica.context)
      crate.label = "\(word) crate"
    case 10..<25:
      let apple = Apple(context: replica.context)
      apple.variety = "\(word) apple"
      apple.crate = crates.randomElement(using: &random)
    case 25..<40:
      guard let crate = crates.randomElement(using: &random) else { return }
      crate.label = "\(word) \(crate.label.split(separator: " ").last ?? "crate")"
    case 40..<50:
      guard let crate = crates.randomElement(using: &random) else { return }
      crate.note = Bool.random(using: &random) ? nil : "\(word) note"
    case 50..<65:
      guard let apple = apples.randomElement(using: &random) else { return }
      apple.weight = Int64.random(in: 50...300, using: &random)
    case 65..<75:
      guard let apple = apples.randomElement(using: &random) else { return }
      apple.variety = "\(word) \(apple.variety)".split(separator: " ").suffix(3).joined(separator: " ")
    case 75..<88:
      guard let apple = apples.randomElement(using: &random) else { return }
      apple.crate = crates.randomElement(using: &random)
    case 88..<96:
      guard let apple = apples.randomElement(using: &random) else { return }
      replica.context.delete(apple)
    default:
      guard crates.count > 2, let crate = crates.randomElement(using: &random) else { return }
      replica.context.delete(crate)
    }
  }
}

/// SplitMix64: a small generator whose sequence depends on the seed alone.
struct SeededGenerator: RandomNumberGenerator {
  private var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
