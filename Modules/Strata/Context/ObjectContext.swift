import Foundation
internal import StrataStoreKit
import Synchronization

/// A scratchpad of managed objects: fetch them, change them, then ``save()`` the changes to the store
/// in one transaction — or ``rollback()`` them.
///
/// A context holds at most one object per `ObjectID`, tracks inserted, updated and deleted objects,
/// keeps both sides of relationships in step, and applies delete rules. It does its work on its own
/// serial queue: call it from that queue (``perform(_:)``, ``performAndWait(_:)``, a ``ContextActor``),
/// or, for the ``PersistentContainer/viewContext``, from the main actor (``PersistentContainer/mainContext``).
/// Objects are not `Sendable`; pass their `ObjectID`s between contexts. `STRATA_CONCURRENCY_DEBUG=1` stops
/// the process at the first use off the queue (see <doc:CheckedIsolation>).
///
/// ```swift
/// let context = container.viewContext
/// let movie = Movie(context: context)
/// movie.title = "Heat"
/// try context.save()
///
/// let dramas = try context.fetch(FetchRequest<Movie>(format: "genre CONTAINS[c] %@", "drama"))
/// ```
// Safe because of a contract the concurrency debug mode checks (`STRATA_CONCURRENCY_DEBUG=1`): the
// context's state and its objects are used on its queue only — from ``perform(_:)``,
// ``performAndWait(_:)``, a ``ContextActor`` on it, or the main actor for the view context. What other
// threads may use is `Sendable` on its own or synchronized: the constants, the queue, `configuration` (a
// mutex), the saves' stream (a broadcaster behind a lock) and `perform`/`performAndWait` themselves.
public final class ObjectContext: @unchecked Sendable {
  /// Where a context does its work.
  public enum ConcurrencyType: Sendable {
    /// On the main thread (the view context).
    case mainQueue
    /// On a private serial queue of its own.
    case privateQueue
  }

  /// Where the context does its work: the main queue or a private one.
  public let concurrencyType: ConcurrencyType
  /// A name recorded in persistent history and shown in debugging output. May be set from any thread.
  public var name: String? {
    get { configuration.withLock { $0.name } }
    set { configuration.withLock { $0.name = newValue } }
  }
  /// The author recorded in persistent history for this context's saves. May be set from any thread.
  public var transactionAuthor: String? {
    get { configuration.withLock { $0.transactionAuthor } }
    set { configuration.withLock { $0.transactionAuthor = newValue } }
  }
  /// Whether saves of the container's other contexts are merged into this one as they happen. May be set
  /// from any thread.
  public var automaticallyMergesChangesFromParent: Bool {
    get { configuration.withLock { $0.automaticallyMergesChangesFromParent } }
    set { configuration.withLock { $0.automaticallyMergesChangesFromParent = newValue } }
  }
  /// How ``save()`` resolves conflicts with the store; `.error` (the default) throws them. May be set
  /// from any thread.
  public var mergePolicy: MergePolicy {
    get { configuration.withLock { $0.mergePolicy } }
    set { configuration.withLock { $0.mergePolicy = newValue } }
  }

  /// The settings above: read by other contexts' saves (whether to merge) and set from any thread.
  private struct Configuration: Sendable {
    var name: String?
    var transactionAuthor: String?
    var automaticallyMergesChangesFromParent = false
    var mergePolicy: MergePolicy = .error
  }
  private let configuration = Locked(Configuration())
  /// Records unsaved changes for undo and redo; `nil` (the default) records nothing.
  public var undoManager: ContextUndoManager? {
    didSet {
      undoManager?.context = self
      changeLog.signals.recordsUndo = undoManager != nil
    }
  }

  let coordinator: StoreCoordinator
  private let queue: DispatchQueue
  private let queueKey = DispatchSpecificKey<ObjectIdentifier>()

  /// One entry per object handed out; objects nothing else holds are swept out as objects are registered.
  let registry = ObjectRegistry()
  /// Set while a batch of objects is registered (``registeringBatch(of:_:)``).
  var sweepsPaused = false
  /// The binding of the entity last materialized (``entityBinding(of:)``).
  var lastEntityBinding: LastEntityBinding?
  /// The binding of the class last inserted (code inserting many objects inserts many of one class).
  var lastClassBinding: EntityBinding?
  /// What the context's objects of each entity share, by entity info (``binding(for:)``).
  var bindings: [ObjectIdentifier: EntityBinding] = [:]
  /// Snapshots fetched ahead of their objects (prefetched relationship targets), used when the object is
  /// made or its fault fires; kept until the object is refreshed, saved or merged, or the context reset.
  /// Tested for emptiness by every `object(with:)` and fault: checked exclusivity cost ~75 instructions each.
  @exclusivity(unchecked) var rowCache: [ObjectID: Snapshot] = [:]
  /// Prefetched to-many targets of objects not made yet, by object and relationship name.
  @exclusivity(unchecked) var toManyCache: [ObjectID: [String: [ObjectID]]] = [:]
  /// The objects inserted, updated and deleted since the last save (see `Unsafe.swift` for the
  /// unchecked exclusivity).
  @exclusivity(unchecked) var tracker = ChangeTracker()
  /// The permanent IDs of objects this context saved under temporary IDs a child may still use.
  let formerTemporaryIDs = TemporaryIDMap()
  /// The generation this context reads, when pinned (see ``setQueryGenerationFrom(_:)``).
  var pinnedGeneration: QueryGenerationToken?
  let saveBroadcaster = Broadcaster<ContextDidSave>()
  let changeLog = ObjectChangeLog()

  /// The context whose objects this child context reads and whose objects its saves change, instead of
  /// the store; `nil` for a context of the store.
  public let parent: ObjectContext?
  /// For a child context, its parent seen as a store.
  let parentStore: ParentContextStore?
  /// The coordinator's store as ``faultingStore()`` last found it, with the coordinator's
  /// ``StoreCoordinator/storeGeneration`` read before it. Used on the context's queue only.
  @exclusivity(unchecked) private var foundStore: (generation: Int, store: any PersistentStore)?

  init(coordinator: StoreCoordinator, concurrencyType: ConcurrencyType, parent: ObjectContext? = nil) {
    self.coordinator = coordinator
    self.concurrencyType = concurrencyType
    self.parent = parent
    self.parentStore = parent.map(ParentContextStore.init)
    switch concurrencyType {
    case .mainQueue:
      queue = DispatchQueue.main
    case .privateQueue:
      queue = DispatchQueue(label: "strata.context")
      queue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
    }
    changeLog.signals.context = self
    changeLog.signals.unretainedContext = .passUnretained(self)
  }

  // MARK: Running work

  /// Marks the main queue, whichever thread runs it: once an async `main` has awaited, Linux's libdispatch
  /// runs main-queue blocks on a thread other than the main thread, so `Thread.isMainThread` alone would
  /// send a context already on the main queue into `DispatchQueue.main.sync` (a crash).
  private static let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
  }()

  var isOnOwnQueue: Bool {
    switch concurrencyType {
    case .mainQueue: Thread.isMainThread || DispatchQueue.getSpecific(key: Self.mainQueueKey) == true
    case .privateQueue: DispatchQueue.getSpecific(key: queueKey) == ObjectIdentifier(self)
    }
  }

  /// Runs `body` on the context's queue and waits for it; runs it directly when already there.
  public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
    if isOnOwnQueue { return try running(body) }
    return try queue.sync { try running(body) }
  }

  /// Runs `body` on the context's queue without blocking the caller.
  ///
  /// ```swift
  /// let count = try await background.perform { try background.count(for: FetchRequest<Movie>()) }
  /// ```
  public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    if isOnOwnQueue { return try running(body) }
    return try await withCheckedThrowingContinuation { continuation in
      queue.async { continuation.resume(with: Result { try self.running(body) }) }
    }
  }

  /// Runs `body` on the context's queue later, without waiting (also when called from that queue).
  func performLater(_ body: @escaping @Sendable () -> Void) {
    // Not kept alive for the block: a context let go before it runs still runs it, as it did.
    queue.async { [weak self] in
      guard let self else { return body() }
      self.running(body)
    }
  }

  /// Runs `body` on the context's queue later, as the context's work: what a ``ContextExecutor`` does with
  /// each job of its actor. The block keeps the context alive until it has run.
  func enqueue(_ body: @escaping @Sendable () -> Void) {
    queue.async { self.running(body) }
  }

  // MARK: Objects

  /// Every object the context holds in memory.
  public var registeredObjects: Set<ManagedObject> {
    checkQueue()
    sweepRegistry()
    return Set(registry.objects).union(tracker.liveInsertions)
  }
  /// Objects inserted and not saved yet.
  public var insertedObjects: Set<ManagedObject> {
    checkQueue()
    return Set(tracker.liveInsertions)
  }
  /// Saved objects with unsaved changes.
  public var updatedObjects: Set<ManagedObject> {
    checkQueue()
    return Set(tracker.updated.values.filter(\.isUpdated))
  }
  /// Objects deleted and not saved yet.
  public var deletedObjects: Set<ManagedObject> {
    checkQueue()
    return Set(tracker.deleted.values)
  }
  /// Whether anything was inserted, changed or deleted since the last save.
  public var hasChanges: Bool {
    checkQueue()
    return tracker.hasChanges
  }

  // MARK: The store

  /// The store this context reads and saves to: the coordinator's, or for a child context its parent
  /// (after whose answers the child calls ``takePermanentIDsFromParent()``).
  func requireStore() throws -> any PersistentStore {
    if let parentStore { return parentStore }
    return try coordinator.requireStore()
  }

  /// The store a fault reads from (`nil` when none is loaded), on the context's queue: ``requireStore()``
  /// without the coordinator's lock while the coordinator's store is the one found last (its generation
  /// is unchanged), one atomic load instead of a lock and a closure on every fault.
  func faultingStore() -> (any PersistentStore)? {
    if let parentStore { return parentStore }
    let generation = coordinator.storeGeneration
    if let foundStore, foundStore.generation == generation { return foundStore.store }
    let store = coordinator.contextStore
    foundStore = store.map { (generation, $0) }
    return store
  }
}
