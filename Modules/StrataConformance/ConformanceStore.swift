import Foundation
import Strata
import StrataCore

/// A backend under test: its factory and a way to make a fresh location for each store.
///
/// ```swift
/// let backend = ConformanceStore(factory: SQLiteStoreFactory()) { directory in
///   directory.appending(path: "store.sqlite")
/// }
/// @Test func crud() async throws { try await Conformance.crud(backend) }
/// ```
public struct ConformanceStore: Sendable {
  public let factory: any PersistentStoreFactory
  let location: (@Sendable (URL) -> URL)?

  /// - Parameters:
  ///   - factory: the backend's store factory.
  ///   - location: for file stores, the store URL inside a fresh temporary directory; `nil` for stores
  ///     without a file.
  public init(factory: any PersistentStoreFactory, location: (@Sendable (URL) -> URL)? = nil) {
    self.factory = factory
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
    let registry = StoreRegistry()
    registry.register(factory)
    let container = PersistentContainer(name: "Conformance", model: try ObjectModel(types: types), types: types, registry: registry)
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
  func freshContext(_ container: PersistentContainer, _ url: URL?, types: [ManagedObject.Type] = sampleTypes) throws
    -> ObjectContext
  {
    if let url {
      return try self.container(at: url, types: types).viewContext
    }
    return container.newBackgroundContext()
  }

  func sampleModel() throws -> ObjectModel { try ObjectModel(types: sampleTypes) }
}

/// The backend conformance suite: each area is a function that a backend's test target calls from one
/// `@Test` line. Every area starts from fresh stores and checks answers written out by hand.
public enum Conformance {}
