import Foundation
import Strata
import StrataStoreKit

/// A backend under test: its factory, what it can do, and how to make a fresh location for each store.
///
/// A backend's whole conformance test is one parameterized line over every case of every area:
///
/// ```swift
/// let backend = ConformanceBackend(
///   factory: SQLiteStoreFactory(), capabilities: [.sharedLocation, .multiProcess], worker: "strata-worker"
/// ) { directory in directory.appending(path: "store.sqlite") }
///
/// @Test("SQLite conformance", arguments: Conformance.cases)
/// func conformance(_ check: Conformance.Case) async throws { try await Conformance.run(check, on: backend) }
/// ```
public struct ConformanceBackend: Sendable {
  /// The factory that opens the backend's stores.
  public let factory: any PersistentStoreFactory
  /// What the backend can do beyond what every backend must; areas that need more are skipped, with
  /// the reason, never passed.
  public let capabilities: Conformance.Capabilities
  /// The name of the executable the multi-process areas start as a second process (see
  /// `ConformanceWorker`), built beside the tests; `nil` when the backend has none.
  public let worker: String?
  /// Checks a store's files with the backend's own means after a process writing them was killed (for
  /// SQLite, `PRAGMA integrity_check`), throwing an error that names the damage; `nil` when the store
  /// reading back everything is the only check. The `writeCrash` area calls it after every kill.
  ///
  /// ```swift
  /// ConformanceBackend(
  ///   factory: SQLiteStoreFactory(), capabilities: [.multiProcess], worker: "strata-worker",
  ///   location: { $0.appending(path: "store.sqlite") }, integrityCheck: { url in try checkIntegrity(of: url) })
  /// ```
  public let integrityCheck: (@Sendable (URL) throws -> Void)?
  let location: (@Sendable (URL) -> URL)?

  /// - Parameters:
  ///   - factory: the backend's store factory.
  ///   - capabilities: what the backend offers beyond the common contract.
  ///   - worker: the executable product (one line: `ConformanceWorker.main(...)`) that opens the
  ///     backend's stores in a second process; needed for ``Conformance/Capabilities/multiProcess``.
  ///   - location: for stores with a location, the store URL inside a fresh temporary directory; `nil`
  ///     for stores without one.
  ///   - integrityCheck: checks a store's files after a writer was killed (see ``integrityCheck``).
  public init(
    factory: any PersistentStoreFactory, capabilities: Conformance.Capabilities = [], worker: String? = nil,
    location: (@Sendable (URL) -> URL)? = nil, integrityCheck: (@Sendable (URL) throws -> Void)? = nil
  ) {
    self.factory = factory
    self.capabilities = capabilities
    self.worker = worker
    self.integrityCheck = integrityCheck
    self.location = location
  }

  /// A fresh, empty store location (`nil` for stores without a file).
  func makeLocation() throws -> URL? {
    guard let location else { return nil }
    let directory = FileManager.default.temporaryDirectory.appending(
      path: "strata-conformance-\(UUID().uuidString)", directoryHint: .isDirectory)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return location(directory)
  }

  /// A loaded container over a store at `url`, for the sample model or the model of `types`.
  func container(at url: URL?, types: [ManagedObject.Type] = sampleTypes) throws -> PersistentContainer {
    let registry = StoreRegistry([factory])
    let container = PersistentContainer(
      name: "Conformance", model: try ObjectModel(types: types), types: types, registry: registry)
    container.storeDescriptions = [StoreDescription(type: factory.storeType, url: url)]
    try container.loadPersistentStores()
    return container
  }

  /// A loaded container over a store at `url` (`nil`: a fresh location) for a model of the area's own.
  func container(types: [ManagedObject.Type], at url: URL? = nil) throws -> (PersistentContainer, URL?) {
    let location = try url ?? makeLocation()
    return (try container(at: location, types: types), location)
  }

  /// A loaded container over a fresh store holding the sample data.
  func sampleContainer() throws -> (PersistentContainer, URL?) {
    let url = try makeLocation()
    let container = try self.container(at: url)
    try SampleData.insert(into: container.viewContext)
    return (container, url)
  }

  /// A context that reads the same store afresh: a new container for file stores, else a new context.
  func freshContext(
    _ container: PersistentContainer, _ url: URL?, types: [ManagedObject.Type] = sampleTypes
  ) throws
    -> ObjectContext
  {
    if let url {
      return try self.container(at: url, types: types).viewContext
    }
    return container.newBackgroundContext()
  }

  func sampleModel() throws -> ObjectModel { try ObjectModel(types: sampleTypes) }
}

/// The backend conformance suite: the definition of a correct backend. Each ``Area`` is a list of small
/// named cases (``Case``), each a function over a ``ConformanceBackend``; a backend's test target runs them
/// all with one parameterized `@Test` line over ``cases`` calling `run(_:on:)`. Every case starts from
/// fresh stores and checks answers written out by hand.
public enum Conformance {}
