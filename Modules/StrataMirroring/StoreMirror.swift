import Foundation
import Strata
import Synchronization

/// A local store mirrored with a hub: `sync()` pushes the local transactions the hub has not
/// acknowledged, then pulls and applies what the hub accepted since the last pull.
///
/// The container's store is the app's truth: saves never wait for the hub and succeed offline. Its
/// persistent history is the outbox. Pulled changes are saved by a context whose transaction author is
/// ``author`` (so they are never pushed back) and merge into the container's contexts that
/// automatically merge changes, as any other save does.
///
/// ```swift
/// let mirrored = try MirrorModel.adding(to: ObjectModel(Potato.self, Tasting.self))
/// let potatoes = PersistentContainer(name: "Potatoes", model: mirrored, types: [Potato.self, Tasting.self], registry: registry)
/// potatoes.storeDescriptions = [StoreDescription(type: .sqlite, url: url, options: StoreOptions(tracksHistory: true))]
/// try await potatoes.loadPersistentStores()
/// let replica = try StoreMirror(container: potatoes, hub: MemoryHub(model: mirrored))
/// let report = try await replica.sync()
/// print("pushed \(report.pushed), pulled \(report.pulled), conflicts \(report.conflicts)")
/// ```
public final class StoreMirror: Sendable {
  /// The transaction author of the mirror's own local saves (applied pulls, identities, state).
  public static let author = "strata.mirror"

  /// The mirrored container.
  public let container: PersistentContainer
  /// The hub this replica syncs with.
  public let hub: any MirrorHub
  /// How many log entries one pull applies in one local transaction.
  public let pullBatchSize: Int
  private let isSyncing = Mutex(false)

  /// A mirror of `container`'s loaded store with `hub`.
  ///
  /// - Throws: ``MirrorError/unsupported(_:)`` when the model lacks the mirror's additions (build it with
  ///   ``MirrorModel/adding(to:)``) or cannot be mirrored, or when the store does not track history.
  public init(container: PersistentContainer, hub: any MirrorHub, pullBatchSize: Int = 500) throws {
    guard MirrorModel.isAugmented(container.model) else {
      throw MirrorError.unsupported("the container's model lacks the mirror's additions; build it with MirrorModel.adding(to:)")
    }
    try MirrorModel.requireMirrorable(container.model)
    guard container.storeDescriptions.first?.options.tracksHistory == true else {
      throw MirrorError.unsupported("the local store must track persistent history (StoreOptions.tracksHistory)")
    }
    self.container = container
    self.hub = hub
    self.pullBatchSize = max(1, pullBatchSize)
  }

  /// Pushes every local transaction not yet acknowledged, each applied on the hub once, then pulls and
  /// applies every hub entry after the last pulled position.
  ///
  /// ```swift
  /// let report = try await mirror.sync()
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached (local data is kept and
  ///   the next sync resumes where this one stopped); ``MirrorError/syncInProgress`` when another sync of
  ///   this mirror is running; a `StoreError` when the local store fails.
  public func sync() async throws -> SyncReport {
    let started = isSyncing.withLock { running in
      if running { return false }
      running = true
      return true
    }
    guard started else { throw MirrorError.syncInProgress }
    defer { isSyncing.withLock { $0 = false } }
    var report = SyncReport()
    try await push(into: &report)
    try await pull(into: &report)
    return report
  }

  /// Where this replica stands: local transactions waiting to be pushed and the last positions pushed
  /// and pulled.
  ///
  /// ```swift
  /// let status = try mirror.status()
  /// if status.pendingTransactions > 0 { print("\(status.pendingTransactions) local transactions to push") }
  /// ```
  ///
  /// - Throws: a `StoreError` when the local store cannot be read.
  public func status() throws -> MirrorStatus {
    let context = mirrorContext()
    return try context.performAndWait {
      let state = try MirrorState(context)
      return MirrorStatus(
        replicaID: state.replicaID, pendingTransactions: try pendingTransactions(after: state.acknowledged, in: context).count,
        lastPushedPosition: state.pushed, lastPulledPosition: state.pulled)
    }
  }

  /// Every conflict the hub resolved, from every replica.
  ///
  /// ```swift
  /// for conflict in try await mirror.conflicts() { print(conflict.entityName, conflict.field ?? "delete") }
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached.
  public func conflicts() async throws -> [MirrorConflict] {
    try await hub.conflicts()
  }

  /// The global identity of `object`, `nil` for an object not saved yet or before this replica's first
  /// sync (its identity is part of every identity it creates). Call it on the object's context.
  ///
  /// ```swift
  /// let potato = try context.fetch(FetchRequest<Potato>()).first
  /// let id = try potato.flatMap { try mirror.globalID(of: $0) }
  /// ```
  ///
  /// - Throws: a `StoreError` when the mirror's state cannot be read.
  public func globalID(of object: ManagedObject) throws -> UUID? {
    let stored = object.primitiveValue(forKey: MirrorModel.identityAttribute)
    if case .uuid(let id)? = stored { return id }
    let context = mirrorContext()
    guard let replica = try context.performAndWait({ try MirrorState(context).replicaID }) else { return nil }
    return identity(of: replica).globalID(of: object.objectID, stored: stored)
  }

  func identity(of replica: UUID) -> GlobalIdentity {
    GlobalIdentity(replicaID: replica, storeIdentifier: container.storeIdentifier ?? "", model: container.model)
  }

  func mirrorContext() -> ObjectContext {
    let context = container.newBackgroundContext()
    context.transactionAuthor = Self.author
    context.name = Self.author
    return context
  }

  func pendingTransactions(after token: HistoryToken?, in context: ObjectContext) throws -> [HistoryTransaction] {
    guard case .transactions(let all) = try context.execute(.fetchHistory(after: token)) else { return [] }
    return all.filter { $0.author != Self.author }
  }
}

/// What one ``StoreMirror/sync()`` did.
///
/// ```swift
/// let report = try await mirror.sync()
/// print(report.pushed, report.pulled, report.conflicts)
/// ```
public struct SyncReport: Sendable, Hashable, Codable {
  /// Local transactions the hub acknowledged.
  public var pushed = 0
  /// Hub entries of other replicas applied locally.
  public var pulled = 0
  /// Conflicts the hub resolved while applying this replica's pushes.
  public var conflicts = 0

  /// A report of counts.
  ///
  /// ```swift
  /// let nothing = SyncReport()
  /// ```
  public init(pushed: Int = 0, pulled: Int = 0, conflicts: Int = 0) {
    self.pushed = pushed
    self.pulled = pulled
    self.conflicts = conflicts
  }
}

/// Where a replica stands (see ``StoreMirror/status()``).
///
/// ```swift
/// let status = try mirror.status()
/// print(status.pendingTransactions, status.lastPushedPosition, status.lastPulledPosition)
/// ```
public struct MirrorStatus: Sendable, Hashable, Codable {
  /// The replica's identity, `nil` before its first sync.
  public var replicaID: UUID?
  /// Local transactions not yet acknowledged by the hub.
  public var pendingTransactions: Int
  /// The hub position of the last acknowledged push, 0 before the first.
  public var lastPushedPosition: Int64
  /// The last hub position applied locally, 0 before the first pull.
  public var lastPulledPosition: Int64

  /// A status.
  ///
  /// ```swift
  /// let status = MirrorStatus(replicaID: nil, pendingTransactions: 0, lastPushedPosition: 0, lastPulledPosition: 0)
  /// ```
  public init(replicaID: UUID?, pendingTransactions: Int, lastPushedPosition: Int64, lastPulledPosition: Int64) {
    self.replicaID = replicaID
    self.pendingTransactions = pendingTransactions
    self.lastPushedPosition = lastPushedPosition
    self.lastPulledPosition = lastPulledPosition
  }
}
