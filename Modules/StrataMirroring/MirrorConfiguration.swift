import Foundation
import Strata
import StrataCore

/// Makes the hubs of one kind from the locations a `MirroringOptions` names, as a `StoreFactory` makes
/// stores: the composition root lists the factories it links (`PostgresHubFactory(defaultSchema:)`, ``MemoryHubFactory``).
///
/// ```swift
/// let mirror = try container.startMirroring(hubs: [PostgresHubFactory(defaultSchema: "potatoes_hub")])
/// ```
public protocol MirrorHubFactory: Sendable {
  /// Whether this factory makes the hub at `location` (for example by its URI scheme).
  func accepts(_ location: String) -> Bool
  /// The hub at `location` for replicas of `model`. Nothing needs to connect yet.
  func makeHub(at location: String, model: ObjectModel) throws -> any MirrorHub
}

/// Hands out one shared ``MemoryHub`` for every location under `memory:` (tests, previews).
///
/// ```swift
/// let hubs = MemoryHubFactory(hub: MemoryHub(model: model))
/// ```
public struct MemoryHubFactory: MirrorHubFactory {
  /// The hub every accepted location names.
  public let hub: MemoryHub

  /// A factory of `hub`.
  public init(hub: MemoryHub) { self.hub = hub }

  public func accepts(_ location: String) -> Bool { location.hasPrefix("memory:") }
  public func makeHub(at location: String, model: ObjectModel) throws -> any MirrorHub { hub }
}

extension PersistentContainer {
  /// Starts mirroring the container's store as its description asks (`MirroringOptions`), as Core Data's
  /// `NSPersistentCloudKitContainer` does once its stores are loaded: builds the hub with the first factory
  /// that accepts its location, remembers the hub in the store, and starts automatic sync unless the
  /// options turn it off. `nil` when the description asks for no mirroring. Call it after
  /// `loadPersistentStores()`; saves never wait for the hub.
  ///
  /// ```swift
  /// var local = StoreDescription(type: .sqlite, url: url, options: StoreOptions(tracksHistory: true))
  /// local.mirroring = MirroringOptions(hub: "postgresql://db.example.com/potatoes/hub")
  /// container.storeDescriptions = [local]
  /// try container.loadPersistentStores()
  /// let mirror = try container.startMirroring(hubs: [PostgresHubFactory(defaultSchema: "potatoes_hub")])
  /// ```
  ///
  /// - Throws: `MirrorError.unsupported` when no factory accepts the hub's location, or the model or the
  ///   store cannot be mirrored (see ``StoreMirror/init(container:hub:pullBatchSize:pulledChangesPerSave:)``); what the factory
  ///   throws for a malformed location.
  public func startMirroring(hubs: [any MirrorHubFactory]) throws -> StoreMirror? {
    guard let options = storeDescriptions.first?.mirroring else { return nil }
    guard let factory = hubs.first(where: { $0.accepts(options.hub) }) else {
      throw MirrorError.unsupported("no hub factory accepts the mirroring hub's location (give one that does)")
    }
    let mirror = try StoreMirror(container: self, hub: try factory.makeHub(at: options.hub, model: model))
    try mirror.rememberHub(options.hub)
    if options.automaticallySyncs { mirror.startAutomaticSync(debounce: options.debounce) }
    return mirror
  }
}
