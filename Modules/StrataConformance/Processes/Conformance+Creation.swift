import Foundation
import StrataConformanceWorker
import StrataStoreKit
import Testing

extension Conformance {
  /// Creating a store is atomic and race-safe: eight processes (the backend's worker) opening one new
  /// location at once all open the one store that was made, and a process killed at any moment of
  /// creating a store leaves a location the next open completes or makes whole. Needs
  /// ``Capabilities/multiProcess``.
  public static func creation(_ backend: ConformanceBackend) async throws {
    let worker = try #require(backend.worker)
    let type = backend.factory.storeType.rawValue
    let model = try ConformanceWorker.creationModel()
    let item = ObjectChange(objectID: .makeTemporary(entityName: "Item"), attributes: ["test", .int(0)], toOne: [])

    for _ in 0..<5 {
      let url = try #require(try backend.makeLocation(), "a backend with multiProcess gives its stores a location")
      let workers = try (0..<8).map { _ in try WorkerProcess(worker, ["create", type, url.path]) }
      let results = workers.map { $0.finish() }
      for result in results { #expect(result.status == 0, "\(result.stderr)") }
      #expect(Set(results.map(\.stdout)).count == 1, "every process opens the one store that was created")
      let store = try backend.factory.openStore(at: url, model: model, options: StoreOptions())
      defer { store.close() }
      #expect(try store.count(FetchDescription(entityName: "Item")) == 8)
    }

    var outcomes: [String: Int] = [:]
    for iteration in 0..<20 {
      let url = try #require(try backend.makeLocation())
      let process = try WorkerProcess(worker, ["create", type, url.path])
      usleep(UInt32(iteration * 2_500))
      kill(process.process.processIdentifier, SIGKILL)
      _ = process.finish()
      let existed = FileManager.default.fileExists(atPath: url.path)
      let store = try backend.factory.openStore(at: url, model: model, options: StoreOptions())
      let items = try store.count(FetchDescription(entityName: "Item"))
      #expect(items <= 1)
      _ = try store.save(ChangeSet(inserted: [item]))
      store.close()
      let tool = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true))
      #expect(tool.model == model)
      #expect(try tool.count(FetchDescription(entityName: "Item")) == items + 1)
      tool.close()
      outcomes[!existed ? "nothing there" : items == 0 ? "no item" : "saved", default: 0] += 1
    }
    print("kill during creation (\(type)): \(outcomes.sorted { $0.key < $1.key })")
  }
}
