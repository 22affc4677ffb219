import Foundation
import StrataCore

/// The link between a container's contexts and its store: the model, the class of each entity, and the
/// loaded store. Shared by every context of a container.
final class StoreCoordinator: @unchecked Sendable {
  let model: ObjectModel
  private let infosByEntity: [String: EntityInfo]
  private let infosByClass: [ObjectIdentifier: EntityInfo]
  private let loadedStore = Locked<(any PersistentStore)?>(nil)
  private let contexts = Locked<[WeakContext]>([])
  private let remoteFollower = Locked<Task<Void, Never>?>(nil)

  private struct WeakContext: @unchecked Sendable {
    weak var context: ObjectContext?
  }

  init(model: ObjectModel, types: [ManagedObject.Type]) {
    self.model = model
    let classesByEntity = Dictionary(types.map { ($0.entityName, $0) }, uniquingKeysWith: { first, _ in first })
    var byEntity: [String: EntityInfo] = [:]
    var byClass: [ObjectIdentifier: EntityInfo] = [:]
    for entity in model.entities {
      let objectClass = classesByEntity[entity.name] ?? ManagedObject.self
      let info = EntityInfo(entity: entity, objectClass: objectClass)
      byEntity[entity.name] = info
      if objectClass != ManagedObject.self { byClass[ObjectIdentifier(objectClass)] = info }
    }
    infosByEntity = byEntity
    infosByClass = byClass
  }

  func info(forEntity name: String) -> EntityInfo? { infosByEntity[name] }
  func info(forClass type: ManagedObject.Type) -> EntityInfo? { infosByClass[ObjectIdentifier(type)] }

  var store: (any PersistentStore)? { loadedStore.withLock { $0 } }

  func setStore(_ store: (any PersistentStore)?) {
    loadedStore.withLock { $0 = store }
    remoteFollower.withLock { task in
      task?.cancel()
      task = nil
      guard let store, store.options.postsRemoteChangeNotifications else { return }
      let changes = store.changes()
      task = Task { [weak self] in
        for await change in changes where change.isRemote {
          self?.storeChangedElsewhere(change)
        }
      }
    }
  }

  /// Hands a commit of another process (or another store on the same file) to every context that merges
  /// changes automatically.
  private func storeChangedElsewhere(_ change: StoreChange) {
    let targets = contexts.withLock { $0.compactMap(\.context) }.filter(\.automaticallyMergesChangesFromParent)
    for context in targets {
      context.performLater { context.mergeRemoteChange(change) }
    }
  }

  func requireStore() throws -> any PersistentStore {
    guard let store else {
      throw StoreError(.misuse, "no store is loaded: call loadPersistentStores() on the container first")
    }
    return store
  }

  func register(_ context: ObjectContext) {
    contexts.withLock { list in
      list.removeAll { $0.context == nil }
      list.append(WeakContext(context: context))
    }
  }

  /// Whether any context other than `source` merges saves automatically.
  func hasMergingContexts(besides source: ObjectContext) -> Bool {
    contexts.withLock { $0.contains { $0.context !== source && $0.context?.automaticallyMergesChangesFromParent == true } }
  }

  /// Hands a save to every other context that merges changes automatically.
  func contextDidSave(_ save: ContextDidSave, from source: ObjectContext) {
    let targets = contexts.withLock { $0.compactMap(\.context) }.filter {
      $0 !== source && $0.automaticallyMergesChangesFromParent
    }
    for context in targets {
      Task { try? await context.perform { context.mergeChanges(fromContextDidSave: save) } }
    }
  }
}
