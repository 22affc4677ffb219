import Foundation
import Strata
import StrataCore
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
  /// How many log entries one request to the hub pulls.
  public let pullBatchSize: Int
  /// The most changes one pulled save applies (an entry larger than that is one save of its own): what a
  /// save holds is what every lookup of its unique keys looks through, so bounded saves keep a long first
  /// pull linear in its changes.
  public let pulledChangesPerSave: Int
  private let isSyncing = Locked(false)
  /// Whether the hub accepted this replica's model (`MirrorHub.admit(replicaOf:)`), asked once.
  let admitted = Locked(false)
  /// What this mirror last learned of the hub.
  let contact = Locked(HubContact())
  let subscribers = Locked<[UUID: AsyncStream<MirrorEvent>.Continuation]>([:])
  /// How many rounds ended (succeeded or failed), and the tasks waiting for the next end.
  let rounds = Locked(RoundEnds())
  /// The task of ``startAutomaticSync(debounce:maximumBackoff:)``, while it runs.
  let automaticTask = Locked<(id: UUID, task: Task<Void, Never>)?>(nil)
  /// The kill tests' hook, called at each durable step of a sync (`MirrorFailpoint`); when it throws,
  /// the sync stops there and records nothing more, as a killed process would.
  package let failpoint = Locked<(@Sendable (MirrorFailpoint) throws -> Void)?>(nil)

  /// A mirror of `container`'s loaded store with `hub`, pulling `pullBatchSize` log entries per request
  /// and applying them in saves of at most `pulledChangesPerSave` changes.
  ///
  /// ```swift
  /// let mirror = try StoreMirror(container: container, hub: hub, pullBatchSize: 500, pulledChangesPerSave: 2_000)
  /// ```
  ///
  /// - Throws: ``MirrorError/unsupported(_:)`` when the model lacks the mirror's additions (build it with
  ///   ``MirrorModel/adding(to:)``) or cannot be mirrored, or when the store does not track history.
  public init(
    container: PersistentContainer, hub: any MirrorHub, pullBatchSize: Int = 500, pulledChangesPerSave: Int = 2_000
  ) throws {
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
    self.pulledChangesPerSave = max(1, pulledChangesPerSave)
  }

  /// Sets the sync flag to `running`; `false` when it already was (another sync runs).
  func claimSync(_ running: Bool) -> Bool {
    isSyncing.withLock { current in
      if running && current { return false }
      current = running
      return true
    }
  }

  deinit {
    for continuation in subscribers.withLock({ $0.values }) { continuation.finish() }
  }

  /// Pushes every local transaction not yet acknowledged, each applied on the hub once, then pulls and
  /// applies every hub entry after the last pulled position. A transaction the hub refuses goes to the
  /// rejected list (``rejected()``) and the push goes on with the next one.
  ///
  /// ```swift
  /// let report = try await mirror.sync()
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached (nothing local is
  ///   written before the hub answers, and the next sync resumes where this one stopped);
  ///   ``MirrorError/syncInProgress`` when another sync of this mirror is running; a `StoreError` when the
  ///   local store fails.
  public func sync() async throws -> SyncReport {
    try await round { report in try await self.push(into: &report) }
  }

  /// Where this replica stands: local transactions waiting to be pushed, rejected ones, the last positions
  /// pushed and pulled, and what the mirror last learned of the hub (connected, its last position, the lag).
  /// It reads the local store only; ``refreshStatus()`` asks the hub first.
  ///
  /// ```swift
  /// let status = try mirror.status()
  /// if status.pendingTransactions > 0 { print("\(status.pendingTransactions) local transactions to push") }
  /// ```
  ///
  /// - Throws: a `StoreError` when the local store cannot be read.
  public func status() throws -> MirrorStatus {
    let known = contact.withLock { $0 }
    let context = mirrorContext()
    return try context.performAndWait {
      let state = try MirrorState(context)
      let pending = try pendingTransactions(after: state.acknowledged, in: context)
      var status = MirrorStatus(
        replicaID: state.replicaID, pendingTransactions: pending.count, lastPushedPosition: state.pushed,
        lastPulledPosition: state.pulled)
      status.isConnected = known.isConnected
      status.offlineReason = known.offlineReason
      status.hubPosition = known.hubPosition
      status.lag = known.hubPosition.map { max(0, $0 - state.pulled) }
      status.oldestPendingAge = pending.first.map { max(0, Date().timeIntervalSince($0.timestamp)) }
      status.rejectedTransactions = state.rejected.count
      return status
    }
  }

  /// Asks the hub for its last position (so that ``MirrorStatus/isConnected`` and ``MirrorStatus/lag``
  /// are current), then gives ``status()``. An unreachable hub is reported in the status, not thrown.
  ///
  /// ```swift
  /// let status = try await mirror.refreshStatus()
  /// print(status.isConnected ? "lag \(status.lag ?? 0)" : status.offlineReason ?? "offline")
  /// ```
  ///
  /// - Throws: a `StoreError` when the local store cannot be read.
  public func refreshStatus() async throws -> MirrorStatus {
    do {
      _ = try await reachHub()
    } catch is MirrorError {
      // Recorded in `contact` by `reachHub`.
    }
    return try status()
  }

  /// Returns once this replica's own writes saved before the call are acknowledged by the hub and pulled
  /// back: the newest local transaction then is acknowledged, and every pushed position pulled (saves made
  /// while it waits are not waited for). It syncs; while another round runs (an automatic sync, another
  /// caller) it waits for that round's end, and while the hub is unreachable for the next round's end or
  /// `interval`, whichever comes first, then tries again. Rejected transactions are settled (listed by
  /// ``rejected()``), not waited for.
  ///
  /// ```swift
  /// try await mirror.waitUntilSynced()
  /// ```
  ///
  /// - Throws: `CancellationError` when the task is cancelled; a `StoreError` when the local store fails;
  ///   ``MirrorError/hubFailed(_:)`` when the hub fails a request.
  public func waitUntilSynced(retryingEvery interval: Duration = .milliseconds(500)) async throws {
    let target = try newestLocalTransaction()
    while true {
      try Task.checkCancellation()
      let ended = rounds.withLock { $0.ended }
      do {
        _ = try await sync()
      } catch MirrorError.hubUnreachable {
        // This round failed: the next one (automatic sync's retry, another caller's) or the interval.
        await roundEnd(after: ended + 1, orAfter: interval)
      } catch MirrorError.syncInProgress {
        await roundEnd(after: ended, orAfter: interval)
      }
      if try hasSynced(through: target) { return }
    }
  }

  /// The sequence of the newest local transaction of the app's (`nil`: none pending).
  private func newestLocalTransaction() throws -> Int64? {
    let context = mirrorContext()
    return try context.performAndWait {
      try pendingTransactions(after: try MirrorState(context).acknowledged, in: context).last?.token.sequence
    }
  }

  /// Whether the local transactions through `target` are acknowledged and every pushed position pulled.
  private func hasSynced(through target: Int64?) throws -> Bool {
    let context = mirrorContext()
    return try context.performAndWait {
      let state = try MirrorState(context)
      let acknowledged = target.map { target in state.acknowledged.map { $0.sequence >= target } ?? false } ?? true
      return acknowledged && state.pulled >= state.pushed
    }
  }

  /// The mirror's events from now on: each push and pull (with counts, start and end, and the error that
  /// ended it), each batch of conflicts a push resolved, and each rejected transaction. Every call gives a
  /// stream of its own; it ends when the mirror is released, and keeps the newest 256 events unread.
  ///
  /// ```swift
  /// Task {
  ///   for await event in mirror.events() { print(event.kind, event.count, event.error ?? "ok") }
  /// }
  /// ```
  public func events() -> AsyncStream<MirrorEvent> {
    let (stream, continuation) = AsyncStream.makeStream(of: MirrorEvent.self, bufferingPolicy: .bufferingNewest(256))
    let id = UUID()
    subscribers.withLock { $0[id] = continuation }
    continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
    return stream
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

  /// Keeps `location` (how the app names its hub, a URI say) in the local store's mirror state, so that
  /// a later run finds the hub without being told (``rememberedHub(of:)``). The location is stored as
  /// given: a password in it is stored too.
  ///
  /// ```swift
  /// try mirror.rememberHub("postgresql://db.example.com/potatoes?schema=mirror")
  /// ```
  ///
  /// - Throws: a `StoreError` when the local store cannot be written.
  public func rememberHub(_ location: String) throws {
    let context = mirrorContext()
    try context.performAndWait {
      var state = try MirrorState(context)
      guard state.hub != location else { return }
      try state.setHub(location, in: context)
      try context.save()
    }
  }

  /// The hub location last given to ``rememberHub(_:)`` in `container`'s store, `nil` when none was.
  ///
  /// ```swift
  /// if let location = try StoreMirror.rememberedHub(of: container) { print("syncs with \(location)") }
  /// ```
  ///
  /// - Throws: ``MirrorError/unsupported(_:)`` when the model lacks the mirror's additions; a `StoreError`
  ///   when the store cannot be read.
  public static func rememberedHub(of container: PersistentContainer) throws -> String? {
    guard MirrorModel.isAugmented(container.model) else {
      throw MirrorError.unsupported("the container's model lacks the mirror's additions; build it with MirrorModel.adding(to:)")
    }
    let context = container.newBackgroundContext()
    return try context.performAndWait { try MirrorState(context).hub }
  }

  /// Reaches `step`: the process's failpoint (`STRATA_MIRROR_FAILPOINT`), then this mirror's hook.
  func reach(_ step: MirrorFailpoint) throws {
    MirrorFailpoint.reach(step)
    if let hook = failpoint.withLock({ $0 }) { try hook(step) }
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
    try Self.appTransactions(after: token, in: context).transactions
  }

  /// The app's transactions in the local history after `token` (the mirror's own skipped: they are never
  /// pushed), and the last token read, the mirror's own transactions included.
  static func appTransactions(
    after token: HistoryToken?, in context: ObjectContext
  ) throws -> (transactions: [HistoryTransaction], readThrough: HistoryToken?) {
    guard case .transactions(let all) = try context.execute(.fetchHistory(after: token)) else { return ([], token) }
    return (all.filter { $0.author != author }, all.last?.token ?? token)
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
  /// Local transactions the hub refused, now in the rejected list (``StoreMirror/rejected()``).
  public var rejected = 0

  /// A report of counts.
  ///
  /// ```swift
  /// let nothing = SyncReport()
  /// ```
  public init(pushed: Int = 0, pulled: Int = 0, conflicts: Int = 0, rejected: Int = 0) {
    self.pushed = pushed
    self.pulled = pulled
    self.conflicts = conflicts
    self.rejected = rejected
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
  /// Whether the mirror's last request to the hub succeeded (`false` before any).
  public var isConnected = false
  /// Why the last request to the hub failed (one line, starting `offline:` when it was unreachable).
  public var offlineReason: String?
  /// The hub's last position when the mirror last reached it, `nil` before that.
  public var hubPosition: Int64?
  /// How many hub entries this replica has not pulled yet, as of ``hubPosition``.
  public var lag: Int64?
  /// How long ago, in seconds, the oldest pending local transaction was saved; `nil` with none pending.
  public var oldestPendingAge: TimeInterval?
  /// Local transactions the hub refused, kept in the rejected list.
  public var rejectedTransactions = 0

  /// A status; the fields after these four start as before any contact with the hub.
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
