import Foundation
import StrataConformanceWorker
import StrataStoreKit
import Testing

extension Conformance {
  /// A migration is all or nothing also when its process dies: the backend's worker migrates a store of
  /// 3,000 items (a renamed and widened attribute, an added one, and a stage that rewrites every item)
  /// and is killed at 12 moments spread over 1.4 times what a whole migration takes. Every time, the store
  /// opens afterwards either with the old model and every old value, or with the new model and every
  /// migrated value — and a store left old migrates when opened again. Needs ``Capabilities/multiProcess``
  /// and ``Capabilities/migration``.
  public static func migrationCrash(_ backend: ConformanceBackend) async throws {
    let worker = try #require(backend.worker)
    let type = backend.factory.storeType.rawValue
    let old = try ConformanceWorker.creationModel()
    let new = try ConformanceWorker.migratedModel()
    let count = 3_000

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
      #expect(Set(items.map { $0.attributes }) == expected, "every value migrated, the stage's included")
      return "new"
    }

    let timed = try oldStore()
    let started = ContinuousClock.now
    let whole = try WorkerProcess(worker, ["migrate", type, timed.path]).finish()
    let duration = ContinuousClock.now - started
    #expect(whole.status == 0, "\(whole.stderr)")
    #expect(try state(at: timed) == "new")

    var outcomes: [String: Int] = [:]
    for moment in 0..<12 {
      let url = try oldStore()
      let process = try WorkerProcess(worker, ["migrate", type, url.path])
      let delay = duration * Double(moment) / 8
      let (seconds, attoseconds) = delay.components
      usleep(UInt32(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
      kill(process.process.processIdentifier, SIGKILL)
      _ = process.finish()
      let found = try state(at: url)
      outcomes[found, default: 0] += 1
      if found == "old" {
        let store = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(tracksHistory: true))
        let migrated = try store.migrated(by: try ModelMigration(from: old, to: new))
        #expect(migrated.model == new, "a store left old by a killed migration migrates when opened again")
        migrated.close()
      }
    }
    print("kill during migration (\(type), a whole migration \(duration)): \(outcomes.sorted { $0.key < $1.key })")
  }
}
