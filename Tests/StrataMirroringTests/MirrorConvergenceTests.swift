import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// A seeded convergence property: three replicas (memory, SQLite, LMDB) make random transactions on a
/// shared pool of objects and sync in a random order; once every replica has synced twice with no new
/// edits, all of them and the hub hold identical objects, and the hub applied each local transaction once.
///
/// `STRATA_MIRROR_SEED=n` reruns one seed; `STRATA_MIRROR_SEEDS=n` runs n seeds (default 2) and
/// `STRATA_MIRROR_TRANSACTIONS=n` makes n transactions per replica (default 100).
@Suite("Mirror convergence")
struct MirrorConvergenceTests {
  static var seeds: [UInt64] {
    let environment = ProcessInfo.processInfo.environment
    if let seed = environment["STRATA_MIRROR_SEED"].flatMap(UInt64.init) { return [seed] }
    let count = environment["STRATA_MIRROR_SEEDS"].flatMap(Int.init) ?? 2
    return (0..<UInt64(max(1, count))).map { 0x5eed_0000 + $0 }
  }

  static var transactionsPerReplica: Int {
    ProcessInfo.processInfo.environment["STRATA_MIRROR_TRANSACTIONS"].flatMap(Int.init) ?? 100
  }

  @Test func replicasConvergeOnAPostgreSQLHub() async throws {
    let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
    let hub = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: String(schema), model: orchardModel)
    let seed = Self.seeds[0]
    let failures = try await Self.run(seed: seed, transactionsPerReplica: 30, hub: hub) { hub in
      try (hub as? PostgresHub)?.liveObjects().mapValues(\.fields) ?? [:]
    }
    #expect(failures.isEmpty, "seed \(seed) (rerun with STRATA_MIRROR_SEED=\(seed)): \(failures.joined(separator: "; "))")
  }

  @Test func replicasConvergeAfterRandomTransactionsAndSyncs() async throws {
    for seed in Self.seeds {
      let failures = try await Self.run(seed: seed, transactionsPerReplica: Self.transactionsPerReplica)
      #expect(failures.isEmpty, "seed \(seed) (rerun with STRATA_MIRROR_SEED=\(seed)): \(failures.joined(separator: "; "))")
    }
  }

  /// Runs one seed; returns what did not hold.
  static func run(
    seed: UInt64, transactionsPerReplica: Int, hub: any MirrorHub = MemoryHub(model: orchardModel),
    hubDump: (any MirrorHub) throws -> [UUID: [String: MirrorField]] = { canonicalDump(of: $0) }
  ) async throws -> [String] {
    var random = SeededGenerator(seed: seed)
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let replicas = try ReplicaStore.allCases.map { try Replica($0, hub: hub, in: directory, name: $0.rawValue) }
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
      if Int.random(in: 0..<100, using: &random) < 15 {
        _ = try await replica.mirror.sync()
        continue
      }
      for _ in 0..<Int.random(in: 1...3, using: &random) { try randomEdit(on: replica, using: &random) }
      try replica.context.save()
      made[index] += 1
    }
    for _ in 0..<2 {
      for replica in replicas { _ = try await replica.mirror.sync() }
    }

    var failures: [String] = []
    let expected = try hubDump(hub)
    for (store, replica) in zip(ReplicaStore.allCases, replicas) {
      let dump = try replica.canonicalDump()
      if dump != expected {
        let differing =
          Set(dump.keys).symmetricDifference(expected.keys).count
          + dump.keys.filter { expected[$0] != nil && expected[$0] != dump[$0] }.count
        let example = Set(dump.keys).union(expected.keys).sorted { $0.uuidString < $1.uuidString }
          .first { dump[$0] != expected[$0] }
        failures.append(
          "the \(store) replica differs from the hub in \(differing) objects, such as "
            + "\(example.map { "\($0): replica \(String(describing: dump[$0])), hub \(String(describing: expected[$0]))" } ?? "")"
        )
      }
      let pending = try replica.mirror.status().pendingTransactions
      if pending != 0 { failures.append("the \(store) replica still has \(pending) pending transactions") }
    }
    let keys = try await hub.pull(after: 0, limit: .max).map { "\($0.replicaID)/\($0.localSequence)" }
    if Set(keys).count != keys.count { failures.append("a local transaction was applied twice on the hub") }
    return failures
  }

  static func randomEdit(on replica: Replica, using random: inout SeededGenerator) throws {
    let crates = try replica.crates().sorted { $0.objectID.uriRepresentation < $1.objectID.uriRepresentation }
    let apples = try replica.apples().sorted { $0.objectID.uriRepresentation < $1.objectID.uriRepresentation }
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
