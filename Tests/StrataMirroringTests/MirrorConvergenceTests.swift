import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// A shelf of the convergence property: jars in an order (an ordered one-to-many).
final class Shelf: ManagedObject {
  @Attribute var label: String
  @Relationship(inverse: "shelf") var jars: [Jar]
}

/// A jar of the convergence property: on at most one shelf, with any number of stickers (many-to-many).
final class Jar: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "jars") var shelf: Shelf?
  @Relationship(inverse: "jars") var stickers: Set<Sticker>
  @Relationship(inverse: "jar") var tags: Set<Tag>
}

/// A tag of the convergence property: one of a few unique codes, so that replicas create and take the same
/// code offline (uniqueness across replicas), on at most one jar.
final class Tag: ManagedObject {
  @Attribute(.unique) var code: String
  @Attribute var color: String
  @Relationship(inverse: "tags") var jar: Jar?
}

/// A sticker of the convergence property, on any number of jars.
final class Sticker: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "stickers") var jars: Set<Jar>
}

/// The convergence property's model: the orchard (a one-to-many under Cascade) and the pantry (an ordered
/// one-to-many under Nullify, a many-to-many), with the mirror's additions.
let pantryModel: ObjectModel = {
  do {
    return try MirrorModel.adding(to: ObjectModel(types: MirrorConvergenceTests.types))
  } catch {
    preconditionFailure("the test model is invalid: \(error)")
  }
}()

/// A seeded convergence property: three replicas (memory, SQLite, LMDB) make random transactions on a
/// shared pool of objects — attributes, to-one references, an ordered list's members and order, a
/// many-to-many's members, creations and deletes, unique codes created and taken on several replicas
/// offline — and sync in a random order, and the file replicas are killed at random moments (in this
/// process: the sync is stopped at a random durable step, `MirrorFailpoint`, or its reply lost, or the
/// replica is dropped right after a save, and its store reopened from the file); once every replica has
/// discarded what the hub refused and synced twice with no new edits, all of them and the hub hold
/// identical objects (attribute values, references, lists in their order), every local transaction of
/// every replica is on the hub exactly once (or was in its rejected list), and at least 30 % of the
/// transactions changed an object another replica created.
///
/// Each seed is a test case of its own (they run in parallel). `STRATA_MIRROR_SEED=n` reruns one seed;
/// `STRATA_MIRROR_SEEDS=n` runs n seeds (default 20), `STRATA_MIRROR_TRANSACTIONS=n` makes n transactions
/// per replica (default 300), `STRATA_MIRROR_KILLS=0` turns the kills off. Each seed prints one line
/// `mirror-summary seed=… transactions=… shared=… kills=… lost=… duplicated=… divergent=…`
/// (scripts/torture mirror adds them up); a failing seed names the command that reruns it.
@Suite("Mirror convergence")
struct MirrorConvergenceTests {
  static let types: [ManagedObject.Type] = [Crate.self, Apple.self, Shelf.self, Jar.self, Sticker.self, Tag.self]

  static let seeds: [UInt64] = {
    let environment = ProcessInfo.processInfo.environment
    if let seed = environment["STRATA_MIRROR_SEED"].flatMap(UInt64.init) { return [seed] }
    let count = environment["STRATA_MIRROR_SEEDS"].flatMap(Int.init) ?? 20
    return (0..<UInt64(max(1, count))).map { 0x5eed_0000 + $0 }
  }()

  static var transactionsPerReplica: Int {
    ProcessInfo.processInfo.environment["STRATA_MIRROR_TRANSACTIONS"].flatMap(Int.init) ?? 300
  }

  static var kills: Bool { ProcessInfo.processInfo.environment["STRATA_MIRROR_KILLS"] != "0" }

  /// The command that runs `seed` again as it ran.
  static func rerun(_ seed: UInt64, transactions: Int, test: String) -> String {
    "STRATA_MIRROR_SEED=\(seed) STRATA_MIRROR_TRANSACTIONS=\(transactions)"
      + (kills ? "" : " STRATA_MIRROR_KILLS=0") + " swift test --skip-build --filter \(test)"
  }

  @Test func replicasConvergeOnAPostgreSQLHub() async throws {
    let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
    // A hub object per replica, as each replica's process has its own: each push after another's reads
    // what the others changed.
    let hubs = try ReplicaStore.allCases.map { _ in
      try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: String(schema), model: pantryModel)
    }
    let seed = Self.seeds[0]
    let outcome = try await Self.run(seed: seed, transactionsPerReplica: 30, hubs: hubs, killing: Self.kills)
    print("mirror-summary hub=postgres seed=\(seed) \(outcome.summary)")
    let rerun = Self.rerun(seed, transactions: 30, test: "replicasConvergeOnAPostgreSQLHub")
    #expect(outcome.failures.isEmpty, "seed \(seed) failed (rerun: \(rerun)): \(outcome.failures.joined(separator: "; "))")
  }

  @Test(arguments: MirrorConvergenceTests.seeds)
  func replicasConvergeAfterRandomTransactionsSyncsAndKills(seed: UInt64) async throws {
    let transactions = Self.transactionsPerReplica
    let rerun = Self.rerun(seed, transactions: transactions, test: "MirrorConvergenceTests")
    let outcome: Outcome
    do {
      outcome = try await Self.run(seed: seed, transactionsPerReplica: transactions, killing: Self.kills)
    } catch {
      Issue.record("seed \(seed) stopped (rerun: \(rerun)): \(error)")
      return
    }
    print("mirror-summary seed=\(seed) \(outcome.summary)")
    #expect(outcome.failures.isEmpty, "seed \(seed) failed (rerun: \(rerun)): \(outcome.failures.joined(separator: "; "))")
  }

  /// What one seed did and what did not hold.
  struct Outcome {
    var transactions = 0
    /// Transactions that changed an object another replica created.
    var shared = 0
    var kills = 0
    /// Local transactions not on the hub, transactions applied twice, replicas that differ from the hub.
    var lost = 0
    var duplicated = 0
    var divergent = 0
    var failures: [String] = []

    var summary: String {
      "transactions=\(transactions) shared=\(transactions == 0 ? 0 : shared * 100 / transactions)% kills=\(kills) "
        + "lost=\(lost) duplicated=\(duplicated) divergent=\(divergent)"
    }
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
    seed: UInt64, transactionsPerReplica: Int, hubs: [any MirrorHub] = [MemoryHub(model: pantryModel)],
    killing: Bool = true
  ) async throws -> Outcome {
    let hub = hubs[0]
    var random = SeededGenerator(seed: seed)
    var outcome = Outcome()
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    func open(_ store: ReplicaStore) throws -> Replica {
      let index = ReplicaStore.allCases.firstIndex(of: store) ?? 0
      let replica = try Replica(
        store, hub: hubs[index % hubs.count], in: directory, name: store.rawValue, model: pantryModel, types: types)
      // As an app's view context: pulled changes merge into the objects it holds.
      replica.context.automaticallyMergesChangesFromParent = true
      return replica
    }
    var replicas = try ReplicaStore.allCases.map(open)
    defer { for replica in replicas { replica.container.close() } }
    // What each replica's view context holds, read again after a sync (which may pull anything).
    var pools: [Pool?] = Array(repeating: nil, count: replicas.count)
    /// The replica at `index` killed: its container abandoned, its store reopened from its file.
    func reopen(_ index: Int) throws {
      outcome.kills += 1
      replicas[index].container.close()
      replicas[index] = try open(ReplicaStore.allCases[index])
      pools[index] = nil
    }
    try seedObjects(in: replicas[0].context)
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
        pools[index] = nil
        try await sync(replica, killedBy: kill, nth: Int.random(in: 1...3, using: &random)) { try reopen(index) }
        continue
      }
      var pool = try pools[index] ?? Pool(replica.context)
      var shared = false
      for _ in 0..<Int.random(in: 1...3, using: &random) {
        shared = try randomEdit(on: replica, pool: &pool, using: &random) || shared
      }
      try replica.context.save()
      pools[index] = pool
      made[index] += 1
      if shared { outcome.shared += 1 }
      if kill == .afterSave { try reopen(index) }
    }
    // A transaction the hub refused (a tag's code another replica's tag took first) stays listed until the
    // person discards it, which brings the hub's values back: every replica does, then syncs.
    var refused: [Set<Int64>] = []
    for replica in replicas {
      _ = try await replica.mirror.sync()
      refused.append(Set(try replica.mirror.rejected().map(\.localSequence)))
      for r in try replica.mirror.rejected() {
        print(
          r.transaction.changes.map { "\($0.kind) \($0.entityName) \($0.globalID) \($0.fields.keys.sorted())" })
      }
      try await replica.mirror.discardRejected()
    }
    for _ in 0..<2 {
      for replica in replicas { _ = try await replica.mirror.sync() }
    }

    outcome.transactions = made.reduce(0, +)
    if transactionsPerReplica >= 30 && outcome.shared * 100 < outcome.transactions * 30 {
      outcome.failures.append(
        "only \(outcome.shared) of \(outcome.transactions) transactions changed an object another replica created")
    }
    let expected = try (hub as? PostgresHub)?.liveObjects().mapValues(\.fields) ?? canonicalDump(of: hub)
    let log = try await hub.pull(after: 0, limit: .max)
    var applied: [UUID: [Int64: Int]] = [:]
    for entry in log { applied[entry.replicaID, default: [:]][entry.localSequence, default: 0] += 1 }
    for (index, (store, replica)) in zip(ReplicaStore.allCases, replicas).enumerated() {
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
      let lost = try replica.localTransactions().filter { onHub[$0] == nil && !refused[index].contains($0) }
      let twice = onHub.filter { $0.value > 1 }.keys.sorted()
      outcome.lost += lost.count
      outcome.duplicated += twice.count
      if !lost.isEmpty { outcome.failures.append("the \(store) replica's transactions \(lost) are not on the hub") }
      if !twice.isEmpty { outcome.failures.append("the \(store) replica's transactions \(twice) were applied twice on the hub") }
    }
    return outcome
  }

  /// The shared pool every replica starts from: four crates of two apples, two shelves of three jars, three
  /// stickers on some of the jars.
  static func seedObjects(in context: ObjectContext) throws {
    for i in 0..<4 {
      let crate = Crate(context: context)
      crate.label = "crate \(i)"
      for j in 0..<2 {
        let apple = Apple(context: context)
        apple.variety = "apple \(i).\(j)"
        apple.crate = crate
      }
    }
    let stickers = (0..<3).map { i in
      let sticker = Sticker(context: context)
      sticker.name = "sticker \(i)"
      return sticker
    }
    for i in 0..<2 {
      let shelf = Shelf(context: context)
      shelf.label = "shelf \(i)"
      shelf.jars = (0..<3).map { j in
        let jar = Jar(context: context)
        jar.name = "jar \(i).\(j)"
        jar.stickers = [stickers[(i + j) % 3]]
        return jar
      }
    }
    try context.save()
  }

  /// Syncs `replica`; with a kill, arms it first and calls `reopen` when it struck (the sync then stopped
  /// where a killed process would have, or failed on the lost reply).
  static func sync(
    _ replica: Replica, killedBy kill: RandomKill?, nth: Int, reopen: () throws -> Void
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
      (replica.mirror.hub as? MemoryHub)?.loseReplies(1)
      (replica.mirror.hub as? PostgresHub)?.loseReplies(1)
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

  /// The live objects of a replica's view context, read once after each sync (in the order of their
  /// primary keys, so that a seed picks the same objects every run) and kept up to date by the edits.
  struct Pool {
    var crates: [Crate]
    var apples: [Apple]
    var shelves: [Shelf]
    var jars: [Jar]
    var stickers: [Sticker]
    var tags: [Tag]

    init(_ context: ObjectContext) throws {
      func read<T: ManagedObject>(_ type: T.Type) throws -> [T] {
        try context.fetch(FetchRequest<T>()).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
      }
      (crates, apples, shelves, jars, stickers, tags) = try (
        read(Crate.self), read(Apple.self), read(Shelf.self), read(Jar.self), read(Sticker.self), read(Tag.self)
      )
    }
  }

  /// Whether `object` was created by another replica (it holds the identity a pull gave it).
  static func isShared(_ object: ManagedObject?) -> Bool {
    guard case .uuid? = object?.primitiveValue(forKey: MirrorModel.identityAttribute) else { return false }
    return true
  }

  /// One random change on `replica`; `true` when it changed an object another replica created.
  static func randomEdit(on replica: Replica, pool: inout Pool, using random: inout SeededGenerator) throws -> Bool {
    let context = replica.context
    let word = ["red", "green", "tart", "sweet", "old", "new"].randomElement(using: &random) ?? "plain"
    if Int.random(in: 0..<100, using: &random) < 15 { return try randomTagEdit(in: context, pool: &pool, word, using: &random) }
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<6:
      let crate = Crate(context: context)
      crate.label = "\(word) crate"
      pool.crates.append(crate)
      return false
    case 6..<15:
      let apple = Apple(context: context)
      apple.variety = "\(word) apple"
      apple.crate = pool.crates.randomElement(using: &random)
      pool.apples.append(apple)
      return isShared(apple.crate)
    case 15..<23:
      guard let crate = pool.crates.randomElement(using: &random) else { return false }
      crate.label = "\(word) \(crate.label.split(separator: " ").last ?? "crate")"
      return isShared(crate)
    case 23..<29:
      guard let crate = pool.crates.randomElement(using: &random) else { return false }
      crate.note = Bool.random(using: &random) ? nil : "\(word) note"
      return isShared(crate)
    case 29..<39:
      guard let apple = pool.apples.randomElement(using: &random) else { return false }
      apple.weight = Int64.random(in: 50...300, using: &random)
      return isShared(apple)
    case 39..<45:
      guard let apple = pool.apples.randomElement(using: &random) else { return false }
      apple.variety = "\(word) \(apple.variety)".split(separator: " ").suffix(3).joined(separator: " ")
      return isShared(apple)
    case 45..<53:
      guard let apple = pool.apples.randomElement(using: &random) else { return false }
      apple.crate = pool.crates.randomElement(using: &random)
      return isShared(apple) || isShared(apple.crate)
    case 53..<58:
      guard let apple = pool.apples.randomElement(using: &random) else { return false }
      pool.apples.removeAll { $0 === apple }
      context.delete(apple)
      return isShared(apple)
    case 58..<60:
      guard pool.crates.count > 2, let crate = pool.crates.randomElement(using: &random) else { return false }
      // Its apples go with it (Cascade).
      pool.crates.removeAll { $0 === crate }
      pool.apples.removeAll { $0.crate === crate }
      context.delete(crate)
      return isShared(crate)
    case 60..<65:
      let jar = Jar(context: context)
      jar.name = "\(word) jar"
      pool.jars.append(jar)
      guard let shelf = pool.shelves.randomElement(using: &random) else { return false }
      shelf.jars.insert(jar, at: Int.random(in: 0...shelf.jars.count, using: &random))
      return isShared(shelf)
    case 65..<74:
      // The order: a jar moved to another place on its shelf.
      guard let shelf = pool.shelves.randomElement(using: &random), shelf.jars.count > 1 else { return false }
      var jars = shelf.jars
      let jar = jars.remove(at: Int.random(in: 0..<jars.count, using: &random))
      jars.insert(jar, at: Int.random(in: 0...jars.count, using: &random))
      shelf.jars = jars
      return isShared(shelf)
    case 74..<80:
      // Membership: a jar moved to another shelf (at a random place), or off every shelf.
      guard let jar = pool.jars.randomElement(using: &random) else { return false }
      let was = jar.shelf
      if Int.random(in: 0..<5, using: &random) == 0 {
        jar.shelf = nil
      } else if let shelf = pool.shelves.randomElement(using: &random), shelf !== jar.shelf {
        jar.shelf = nil
        shelf.jars.insert(jar, at: Int.random(in: 0...shelf.jars.count, using: &random))
      }
      return isShared(jar) || isShared(was) || isShared(jar.shelf)
    case 80..<87:
      guard let jar = pool.jars.randomElement(using: &random), let sticker = pool.stickers.randomElement(using: &random)
      else { return false }
      jar.stickers.insert(sticker)
      return isShared(jar) || isShared(sticker)
    case 87..<92:
      // A set's order changes from run to run: the pool's order picks the sticker.
      guard let jar = pool.jars.randomElement(using: &random),
        let sticker = pool.stickers.filter({ jar.stickers.contains($0) }).randomElement(using: &random)
      else { return false }
      jar.stickers.remove(sticker)
      return isShared(jar) || isShared(sticker)
    case 92..<94:
      let sticker = Sticker(context: context)
      sticker.name = "\(word) sticker"
      pool.stickers.append(sticker)
      return false
    case 94..<97:
      guard let jar = pool.jars.randomElement(using: &random) else { return false }
      pool.jars.removeAll { $0 === jar }
      context.delete(jar)
      return isShared(jar)
    case 97:
      guard pool.stickers.count > 2, let sticker = pool.stickers.randomElement(using: &random) else { return false }
      pool.stickers.removeAll { $0 === sticker }
      context.delete(sticker)
      return isShared(sticker)
    case 98:
      let shelf = Shelf(context: context)
      shelf.label = "\(word) shelf"
      pool.shelves.append(shelf)
      return false
    default:
      guard pool.shelves.count > 2, let shelf = pool.shelves.randomElement(using: &random) else { return false }
      // Its jars stay, on no shelf (Nullify).
      pool.shelves.removeAll { $0 === shelf }
      context.delete(shelf)
      return isShared(shelf)
    }
  }
}

extension MirrorConvergenceTests {
  /// One random change of a tag; `true` when it changed an object another replica created. A code a live
  /// tag of this replica holds is not taken (the local store would refuse the save, and a person picks
  /// another); one another replica took offline is, as people do.
  static func randomTagEdit(
    in context: ObjectContext, pool: inout Pool, _ word: String, using random: inout SeededGenerator
  ) throws -> Bool {
    let code = "tag \(Int.random(in: 0..<8, using: &random))"
    let isFree = try context.fetch(FetchRequest<Tag>(format: "code == %@", code)).allSatisfy(\.isDeleted)
    switch Int.random(in: 0..<5, using: &random) {
    case 0:
      guard isFree else { return false }
      let tag = Tag(context: context)
      tag.code = code
      tag.color = word
      tag.jar = pool.jars.randomElement(using: &random)
      pool.tags.append(tag)
      return isShared(tag.jar)
    case 1:
      guard isFree, let tag = pool.tags.randomElement(using: &random) else { return false }
      tag.code = code
      return isShared(tag)
    case 2:
      guard let tag = pool.tags.randomElement(using: &random) else { return false }
      tag.color = word
      return isShared(tag)
    case 3:
      guard let tag = pool.tags.randomElement(using: &random) else { return false }
      tag.jar = pool.jars.randomElement(using: &random)
      return isShared(tag) || isShared(tag.jar)
    default:
      guard let tag = pool.tags.randomElement(using: &random) else { return false }
      pool.tags.removeAll { $0 === tag }
      context.delete(tag)
      return isShared(tag)
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
