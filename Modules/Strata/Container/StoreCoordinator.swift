import Foundation
internal import StrataStoreKit
import Synchronization

/// The link between a container's contexts and its store: the model, the class of each entity, and the
/// loaded store. Shared by every context of a container.
final class StoreCoordinator: @unchecked Sendable {
  let model: ObjectModel
  private let infosByEntity: [String: EntityInfo]
  private let infosByClass: [ObjectIdentifier: EntityInfo]
  /// The loaded store, and what contexts read and save through: the same store, or for one that keeps
  /// values out of its rows its view that leaves them there until an object reads them
  /// (`ExternalDataStore.deferringExternalValues`).
  private let loadedStore = Locked<(store: any PersistentStore, contexts: any PersistentStore)?>(nil)
  /// Moves on each time the store is set, after it is: a context that found the store at one
  /// generation may use it without the lock while the generation is unchanged (``storeGeneration``).
  private let loadedGeneration = Atomic<Int>(0)
  private let contexts = Locked<[WeakContext]>([])
  private let remoteFollower = Locked<Task<Void, Never>?>(nil)
  /// The newest history token whose transaction contexts have merged (see ``changeFromHistory(_:)``).
  private let mergedThrough = Locked<HistoryToken?>(nil)

  private struct WeakContext: @unchecked Sendable {
    weak var context: ObjectContext?
  }

  /// The classes the coordinator was given for the model's entities.
  let types: [ManagedObject.Type]

  init(model: ObjectModel, types: [ManagedObject.Type]) {
    self.model = model
    self.types = types
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

  var store: (any PersistentStore)? { loadedStore.withLock { $0?.store } }

  /// The store contexts read and save through (see ``loadedStore``).
  var contextStore: (any PersistentStore)? { loadedStore.withLock { $0?.contexts } }

  /// The loaded store when it keeps values of attributes allowing external storage out of its rows.
  var externalValues: ExternalDataStore? { loadedStore.withLock { $0?.store as? ExternalDataStore } }

  /// How many times the store has been set: read before ``store``, it tells whether a store found then is
  /// still the coordinator's (see ``ObjectContext/faultingStore()``).
  var storeGeneration: Int { loadedGeneration.load(ordering: .acquiring) }

  func setStore(_ store: (any PersistentStore)?) {
    loadedStore.withLock {
      $0 = store.map { store in (store, (store as? ExternalDataStore)?.deferringExternalValues ?? store) }
    }
    loadedGeneration.add(1, ordering: .releasing)
    remoteFollower.withLock { task in
      task?.cancel()
      task = nil
      guard let store, store.options.postsRemoteChangeNotifications else { return }
      mergedThrough.withLock { $0 = try? store.currentHistoryToken() }
      let changes = store.changes()
      task = Task { [weak self] in
        for await change in changes {
          if change.isRemote {
            self?.storeChangedElsewhere(change)
          } else {
            self?.noteLocalCommit(change.historyToken)
          }
        }
      }
    }
  }

  /// Hands a commit of another process (or another store on the same file) to every context that merges
  /// changes automatically — object by object when the store's history says what changed.
  private func storeChangedElsewhere(_ change: StoreChange) {
    let targets = contexts.withLock { $0.compactMap(\.context) }.filter(\.automaticallyMergesChangesFromParent)
    guard !targets.isEmpty else { return }
    let merged = changeFromHistory(change) ?? change
    for context in targets {
      context.performLater { context.mergeRemoteChange(merged) }
    }
  }

  /// Moves the merged point past a commit of this store object when it directly follows it (its own
  /// contexts merged it already). After a gap — a remote transaction not seen yet — it stays, so the
  /// next remote change reads from before the gap.
  private func noteLocalCommit(_ token: HistoryToken?) {
    guard let token else { return }
    mergedThrough.withLock { merged in
      if token.sequence == (merged?.sequence ?? 0) + 1 { merged = token }
    }
  }

  /// The objects every transaction since the last merge changed, read from persistent history (local
  /// transactions after a gap included: merging them again is harmless); `nil` without history, or when
  /// the history since then has expired (then contexts refresh everything, and merging continues from
  /// the newest token).
  private func changeFromHistory(_ change: StoreChange) -> StoreChange? {
    guard let store, store.options.tracksHistory, change.historyToken != nil else { return nil }
    let after = mergedThrough.withLock { $0 }
    guard case .transactions(let transactions)? = try? store.fetchHistory(HistoryRequest(after: after.map(HistoryCutoff.token))),
      let last = transactions.last
    else {
      mergedThrough.withLock { $0 = change.historyToken }
      return nil
    }
    mergedThrough.withLock { $0 = last.token }
    var save = ContextDidSave(historyToken: last.token)
    for transaction in transactions {
      let one = ContextDidSave(transaction)
      save.insertedObjectIDs.formUnion(one.insertedObjectIDs)
      save.updatedObjectIDs.formUnion(one.updatedObjectIDs)
      save.deletedObjectIDs.formUnion(one.deletedObjectIDs)
    }
    return StoreChange(
      storeIdentifier: change.storeIdentifier, historyToken: last.token, isRemote: true,
      inserted: Array(save.insertedObjectIDs.subtracting(save.deletedObjectIDs)),
      updated: Array(save.updatedObjectIDs.subtracting(save.deletedObjectIDs)), deleted: Array(save.deletedObjectIDs))
  }

  /// The store contexts read and save through (``contextStore``), or `.misuse` when none is loaded.
  func requireStore() throws -> any PersistentStore {
    guard let store = contextStore else {
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
