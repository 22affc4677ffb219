import Foundation

/// A pinned read snapshot of a store (a query generation). Reads given the same generation see the
/// store as it was when the generation was pinned, whatever commits since.
public struct QueryGeneration: Sendable, Hashable {
  /// The identifier of the store that pinned the generation.
  public let storeIdentifier: String
  /// A number the store chose to tell its pinned generations apart.
  public let id: UInt64

  /// A generation; stores make them in ``PersistentStore/pinGeneration()``.
  public init(storeIdentifier: String, id: UInt64) {
    self.storeIdentifier = storeIdentifier
    self.id = id
  }
}

/// The contract every backend fulfils, in terms of snapshots and IDs — never managed objects.
///
/// A store is `Sendable` and safe to call from any thread: contexts on different queues share one.
/// Every method either completes or throws a `StoreError` and leaves the store as it was.
/// The defaults of the optional capabilities (batch requests, history, query generations) throw
/// `.unsupported`; a backend that passes the conformance suite for an area implements it.
///
/// Backends are created by a ``PersistentStoreFactory`` registered in a `StoreRegistry`; the
/// conformance suite (`StrataConformance`) is the definition of a correct one.
public protocol PersistentStore: AnyObject, Sendable {
  /// The type of the store (`StoreType.sqlite`, `StoreType.memory`, …).
  var storeType: StoreType { get }
  /// A UUID string fixed when the store was created; part of every permanent `ObjectID`.
  var identifier: String { get }
  /// Where the store lives; `nil` for a store without a file.
  var url: URL? { get }
  /// The model the store was opened with (equal to the stored model).
  var model: ObjectModel { get }
  /// The options the store was opened with.
  var options: StoreOptions { get }

  /// Runs a fetch. Predicates and sorts are checked against the model first: an unknown key, a
  /// transient attribute or incompatible types throw `.invalidQuery` naming the entity and key.
  func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult

  /// Runs a fetch of snapshots, handing each one to `body` in result order as it is read instead of
  /// collecting them first: a context makes each object while its row is at hand, and no array of every
  /// snapshot is built and torn down. `remaining` is an upper bound on how many more snapshots follow,
  /// or 0 when the store cannot tell (a caller reserves room with it, nothing more). The request's
  /// result type is ignored (snapshots are what `body` gets). The default runs ``fetch(_:generation:)``
  /// and hands out its snapshots; a store streams where it can.
  ///
  /// ```swift
  /// try store.fetchSnapshots(FetchDescription(entityName: "Movie"), generation: nil) { snapshot, remaining in
  ///   titles.append(snapshot.attributes[0])
  /// }
  /// ```
  ///
  /// `body` may run while the store holds a read transaction or a connection: it must not call the store.
  func fetchSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws

  /// The snapshots of the given objects that exist, in no particular order (missing ones are omitted).
  func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot]

  /// The snapshot of one object, `nil` when it does not exist (deleted, never saved, a temporary ID or
  /// another store's ID): what firing one fault asks. Answers as ``snapshots(for:generation:)`` does for
  /// `[id]`, errors included; the default calls it, and a store answers without the arrays.
  ///
  /// ```swift
  /// if let stored = try store.snapshot(for: heatID, generation: nil) { print(stored.version) }
  /// ```
  func snapshot(for id: ObjectID, generation: QueryGeneration?) throws -> Snapshot?

  /// The IDs of the targets of a to-many relationship of one object: an ordered relationship's
  /// (`RelationshipDescription.isOrdered`) in the order the last ``OrderedListChange`` gave, targets it
  /// did not name after them in primary-key order; an unordered relationship's in primary-key order.
  func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID]

  /// Applies a change set in one transaction, all or nothing: rows, links, and the positions of every
  /// ordered list in ``ChangeSet/orderedLists`` (rewritten for those lists only).
  ///
  /// - Throws: `.constraintConflict` listing every uniqueness clash, `.optimisticLockConflict` listing
  ///   every object whose stored version differs from the expected one, `.readOnly`, `.io`.
  func save(_ changes: ChangeSet) throws -> SaveResult

  /// Runs a batch insert, update or delete in one transaction, recorded in persistent history (when
  /// the store tracks it) under `author` and `contextName`, like a context's save.
  ///
  /// ```swift
  /// try store.execute(.delete(entityName: "Movie", predicate: nil), author: "cleanup", contextName: nil)
  /// ```
  func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult

  /// Fetches persistent history, in token order (see `HistoryRequest`).
  ///
  /// ```swift
  /// if case .transactions(let transactions) = try store.fetchHistory(HistoryRequest(after: .token(last))) { … }
  /// ```
  ///
  /// - Throws: `.historyExpired` when the request's token is older than the retained history or belongs to
  ///   another store (fetch everything again, then continue from ``currentHistoryToken()``);
  ///   `.invalidQuery` for a predicate key other than `author`, `contextName`, `timestamp`, `processID`;
  ///   `.misuse` when the store was opened without `tracksHistory`.
  func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult

  /// Deletes history transactions before a token (not the token's own) or committed before a date;
  /// returns how many were deleted. Tokens older than what is left then throw `.historyExpired`.
  ///
  /// ```swift
  /// let removed = try store.deleteHistory(before: .token(processedToken))
  /// ```
  func deleteHistory(before cutoff: HistoryCutoff) throws -> Int

  /// The token of the newest history transaction, `nil` when none was recorded (or the store does not
  /// track history). After a `.historyExpired` error, refetch everything and continue from here.
  ///
  /// ```swift
  /// let newest = try store.currentHistoryToken()   // nil before the first transaction
  /// ```
  func currentHistoryToken() throws -> HistoryToken?

  /// Pins the store's current state for reads; release with ``unpin(_:)``.
  func pinGeneration() throws -> QueryGeneration

  /// Releases a pinned generation.
  func unpin(_ generation: QueryGeneration)

  /// A stream that yields after every committed transaction. Each call returns a new stream.
  func changes() -> AsyncStream<StoreChange>

  /// Releases files and resources. Further calls throw `.misuse`.
  func close()

  /// Migrates the store's data along `steps` — from its model (the first step's
  /// `ModelMigration.source`) to the last step's `ModelMigration.destination` — in one transaction,
  /// and returns the store to use from then on, open with the destination model; this one is closed.
  ///
  /// For each step in order: its ``MigrationStep/willMigrate`` runs with a store on the step's source
  /// model bound to the transaction, then the structural change, then its ``MigrationStep/didMigrate``
  /// with a store on the step's destination model (see ``MigrationStep``). Every object keeps its primary
  /// key (its entity name follows a rename); each attribute of the new model takes its values through
  /// `AttributeMapping.convert(_:)`; links follow their relationships' renames and a to-one relationship
  /// made to-many keeps its target. Persistent history is kept, so tokens taken before stay valid, and
  /// with `StoreOptions.tracksHistory` the migration is recorded as one transaction by the author
  /// ``MigrationStep/historyAuthor`` listing the objects the stages inserted, updated and deleted (under
  /// the destination model's entity names). `progress`, when given, is called as the work advances.
  ///
  /// All or nothing: when anything fails — a stage that throws, a uniqueness constraint added over values
  /// that clash (`.constraintConflict` listing them), a disk that fills — the store is left exactly as it
  /// was, and this instance stays open with the old model.
  ///
  /// ```swift
  /// let steps = [MigrationStep(try ModelMigration(from: store.model, to: appModel))]
  /// let migrated = try store.migrated(along: steps, reporting: { print($0.fractionCompleted) })
  /// ```
  ///
  /// - Throws: `.misuse` when the first step does not start from this store's model or a step does not
  ///   start where the previous one ended; `.unsupported` from a backend that cannot migrate (the
  ///   default); what a stage throws.
  func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore

  /// What `request` compiles to and how the backend would run it, without running it. The default says
  /// the shared evaluator reads and filters every object of the entity.
  func explain(_ request: FetchDescription) throws -> QueryPlan

  /// What migrating along `migration` would do to the storage of each entity of its destination model,
  /// keyed by entity name, without changing anything (for a dry run). The default says nothing.
  func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange]
}

extension PersistentStore {
  /// ``snapshots(for:generation:)`` of `[id]`, for a store without a path of its own for one object.
  public func snapshot(for id: ObjectID, generation: QueryGeneration?) throws -> Snapshot? {
    try snapshots(for: [id], generation: generation).first
  }

  /// Runs a batch request without an author or context name (see ``execute(_:author:contextName:)``).
  ///
  /// ```swift
  /// let result = try store.execute(.update(entityName: "Venue", predicate: nil, propertiesToUpdate: ["favorite": .constant(true)]))
  /// ```
  public func execute(_ request: BatchRequest) throws -> BatchResult {
    try execute(request, author: nil, contextName: nil)
  }

  public func fetchSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws {
    try fetchCollectedSnapshots(request, generation: generation, body)
  }

  /// ``fetchSnapshots(_:generation:_:)`` through ``fetch(_:generation:)``: every snapshot read first,
  /// then handed out (what a store that cannot stream a request does).
  public func fetchCollectedSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws {
    var request = request
    request.resultType = .snapshots
    guard case .snapshots(var snapshots) = try fetch(request, generation: generation) else { return }
    // Each snapshot moved out to `body` (last first after a reversal), not copied: a copy retained its
    // arrays, and releasing the array released them again.
    snapshots.withUnsafeMutableBufferPointer { $0.reverse() }
    while let snapshot = snapshots.popLast() { try body(snapshot, snapshots.count) }
  }

  public func currentHistoryToken() throws -> HistoryToken? { nil }

  public func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    throw StoreError(.unsupported, "the \(storeType) store does not support persistent history yet")
  }

  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    throw StoreError(.unsupported, "the \(storeType) store does not support persistent history yet")
  }

  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    throw StoreError(.unsupported, "the \(storeType) store cannot migrate its data to another model yet")
  }

  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] { [:] }

  public func explain(_ request: FetchDescription) throws -> QueryPlan {
    var steps = ["read every \(request.entityName) object"]
    if let predicate = request.predicate { steps.append("keep those matching \(predicate) (the shared evaluator)") }
    if !request.sortDescriptors.isEmpty { steps.append("sort them in memory") }
    return QueryPlan(query: "fetch \(request.entityName)\(request.predicate.map { " where \($0)" } ?? "")", steps: steps)
  }

  public func pinGeneration() throws -> QueryGeneration {
    throw StoreError(.unsupported, "the \(storeType) store does not support query generations yet")
  }

  public func unpin(_ generation: QueryGeneration) {}

  /// Counts the objects matching `request` without materializing them.
  public func count(_ request: FetchDescription, generation: QueryGeneration? = nil) throws -> Int {
    var request = request
    request.resultType = .count
    return try fetch(request, generation: generation).count
  }
}

/// Opens stores of one type: what a backend provides and a composition root puts in a `StoreRegistry`.
///
/// ```swift
/// let registry = StoreRegistry([SQLiteStoreFactory()])
/// let store = try registry.storeFactory(for: .sqlite).openStore(at: url, model: model, options: .init())
/// ```
public protocol PersistentStoreFactory: StoreBackend {
  /// Opens the store at `url`, creating it when it does not exist.
  ///
  /// With a `model`, an existing store must hold an equal model (else `.schemaMismatch`); a new store
  /// stores it. With `nil`, the store must exist and its stored model is used (tools that have no app code).
  /// - Throws: `.corrupted` when the location holds something that is not a Strata store of this type,
  ///   `.notFound` when `model` is `nil` and nothing is there, `.io` when it cannot be read or created.
  func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore

  /// Whether what is at `url` looks like a store of this backend — an SQLite file by its header, an LMDB
  /// environment by its `data.mdb` — so that a tool can open an existing store without being told its
  /// type. It only looks (reads a few bytes at most); opening may still refuse the store. The default
  /// recognizes nothing.
  func recognizesStore(at url: URL) -> Bool
}

extension PersistentStoreFactory {
  public func recognizesStore(at url: URL) -> Bool { false }
}

extension StoreRegistry {
  /// The factory registered for `storeType`.
  /// - Throws: `.unknownStoreType` listing the registered names; `.misuse` when what was registered
  ///   under that type is a `StoreBackend` that cannot open stores (not a ``PersistentStoreFactory``).
  public func storeFactory(for storeType: StoreType) throws -> any PersistentStoreFactory {
    let backend = try backend(for: storeType)
    guard let factory = backend as? any PersistentStoreFactory else {
      throw StoreError(
        .misuse, "the backend registered for '\(storeType)' (\(type(of: backend))) is not a PersistentStoreFactory")
    }
    return factory
  }

  /// The registered store types whose factories recognize what is at `url` as one of their stores
  /// (see ``PersistentStoreFactory/recognizesStore(at:)``), sorted by name.
  ///
  /// ```swift
  /// let candidates = registry.storeTypes(recognizing: URL(fileURLWithPath: "Movies.lmdb"))   // [.lmdb]
  /// ```
  public func storeTypes(recognizing url: URL) -> [StoreType] {
    storeTypes.filter { (try? storeFactory(for: $0).recognizesStore(at: url)) == true }
  }

  /// Opens a store of `storeType` at `url` through its registered factory (see
  /// ``PersistentStoreFactory/openStore(at:model:options:)``).
  ///
  /// ```swift
  /// let store = try registry.openStore(.lmdb, at: directory, model: nil, options: StoreOptions(isReadOnly: true))
  /// ```
  public func openStore(
    _ storeType: StoreType, at url: URL?, model: ObjectModel?, options: StoreOptions
  ) throws
    -> any PersistentStore
  {
    try storeFactory(for: storeType).openStore(at: url, model: model, options: options)
  }
}
