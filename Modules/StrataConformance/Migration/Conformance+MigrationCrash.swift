import Foundation
import StrataConformanceWorker
import StrataStoreKit
import Testing

extension Conformance {
  /// A migration is all or nothing also when its process dies: the backend's worker migrates a store of
  /// 3,000 items (a renamed and widened attribute, an added one, and a stage that rewrites every item)
  /// and is killed at 12 moments spread over 1.4 times what a whole migration takes (`STRATA_MIGRATION_KILLS`
  /// sets the number of moments; scripts/sanitize runs 4). Every time, the store
  /// opens afterwards either with the old model and every old value, or with the new model and every
  /// migrated value — and a store left old migrates when opened again. Needs ``Capabilities/multiProcess``
  /// and ``Capabilities/migration``.
  public static func migrationCrash(_ backend: ConformanceBackend) async throws {
    let worker = try #require(backend.worker)
    let type = backend.factory.storeType.rawValue
    let crash = try MigrationCrash(backend: backend)
    let timed = try crash.oldStore()
    let started = ContinuousClock.now
    let whole = try WorkerProcess(worker, ["migrate", type, timed.path]).finish()
    let duration = ContinuousClock.now - started
    #expect(whole.status == 0, "\(whole.stderr)")
    #expect(try crash.state(at: timed) == "new")

    let kills = max(2, ProcessInfo.processInfo.environment["STRATA_MIGRATION_KILLS"].flatMap(Int.init) ?? 12)
    var outcomes: [String: Int] = [:]
    for moment in 0..<kills {
      let url = try crash.oldStore()
      let process = try WorkerProcess(worker, ["migrate", type, url.path])
      let delay = duration * (11.0 / 8) * Double(moment) / Double(kills - 1)
      let (seconds, attoseconds) = delay.components
      usleep(UInt32(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
      kill(process.process.processIdentifier, SIGKILL)
      _ = process.finish()
      let found = try crash.state(at: url)
      outcomes[found, default: 0] += 1
      if found == "old" {
        let store = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(tracksHistory: true))
        let migrated = try store.migrated(by: try ModelMigration(from: crash.old, to: crash.new))
        #expect(migrated.model == crash.new, "a store left old by a killed migration migrates when opened again")
        migrated.close()
      }
    }
    print("kill during migration (\(type), a whole migration \(duration)): \(outcomes.sorted { $0.key < $1.key })")
  }
}

/// The stores of ``Conformance/migrationCrash(_:)``: one of 3,000 items on the old model, and the check that a
/// store holds every old value or every migrated one.
private struct MigrationCrash {
  let backend: ConformanceBackend
  let old: ObjectModel
  let new: ObjectModel
  let count = 3_000

  init(backend: ConformanceBackend) throws {
    self.backend = backend
    old = try ConformanceWorker.creationModel()
    new = try ConformanceWorker.migratedModel()
  }

  func oldStore() throws -> URL {
    let url = try #require(try backend.makeLocation(), "a backend with multiProcess gives its stores a location")
    let store = try backend.factory.openStore(at: url, model: old, options: StoreOptions(tracksHistory: true))
    defer { store.close() }
    let items = (0..<count).map { n in
      ObjectChange(objectID: .makeTemporary(entityName: "Item"), attributes: [.string("item-\(n)"), .int(Int64(n))], toOne: [])
    }
    _ = try store.save(ChangeSet(inserted: items))
    return url
  }

  /// "old" or "new", after checking that every value is the old one or the migrated one.
  func state(at url: URL) throws -> String {
    let store = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true))
    defer { store.close() }
    guard case .snapshots(let items) = try store.fetch(FetchDescription(entityName: "Item"), generation: nil) else {
      Issue.record("expected snapshots")
      return "unreadable"
    }
    #expect(items.count == count, "no item lost or added")
    if store.model == old {
      let values = Set(items.map { $0.attributes })
      #expect(values == Set((0..<count).map { [Value.string("item-\($0)"), .int(Int64($0))] }), "every old value intact")
      return "old"
    }
    #expect(store.model == new, "the store has the old model or the new one, nothing else")
    let expected = Set(
      (0..<count).map { n in
        [Value.string("item-\(n)"), .double(Double(n)), .int(ConformanceWorker.migratedRating(Double(n)))]
      })
    #expect(Set(items.map { Array($0.attributes) }) == expected, "every value migrated, the stage's included")
    return "new"
  }
}
