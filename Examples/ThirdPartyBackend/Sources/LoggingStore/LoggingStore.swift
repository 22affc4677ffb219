import Foundation
import StrataStoreKit
import Synchronization

/// Where a ``LoggingStore`` writes its lines.
public struct LogSink: Sendable {
  let write: @Sendable (String) -> Void

  /// A sink that hands each line to `write`.
  public init(_ write: @escaping @Sendable (String) -> Void) { self.write = write }

  /// Standard error, one line per call.
  public static let standardError = LogSink { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }
  /// Nowhere (the calls are still counted by ``LoggingStore/callCount``).
  public static let discard = LogSink { _ in }
}

/// A backend written outside Strata: a store that wraps another backend's store and logs every call of
/// the store contract (what was asked, how long it took, what came back or what was thrown).
///
/// ```swift
/// let registry = StoreRegistry([LoggingStoreFactory(wrapping: SQLiteStoreFactory(), log: .standardError)])
/// let container = PersistentContainer(name: "Movies", model: model, registry: registry)
/// container.storeDescriptions = [StoreDescription(type: .logging, url: url)]
/// ```
public final class LoggingStore: PersistentStore {
  let inner: any PersistentStore
  let log: LogSink
  private let calls = Atomic<Int>(0)

  init(_ inner: any PersistentStore, log: LogSink) {
    self.inner = inner
    self.log = log
  }

  /// How many calls of the store contract this store has answered.
  public var callCount: Int { calls.load(ordering: .relaxed) }

  public var storeType: StoreType { .logging }
  public var identifier: String { inner.identifier }
  public var url: URL? { inner.url }
  public var model: ObjectModel { inner.model }
  public var options: StoreOptions { inner.options }

  /// Runs `body`, logging `call` with its duration and outcome.
  private func logged<T>(_ call: @autoclosure () -> String, _ body: () throws -> T) rethrows -> T {
    calls.add(1, ordering: .relaxed)
    let clock = ContinuousClock()
    let start = clock.now
    do {
      let result = try body()
      log.write("\(inner.storeType) \(call()) ok in \(clock.now - start)")
      return result
    } catch {
      log.write("\(inner.storeType) \(call()) threw after \(clock.now - start): \(error)")
      throw error
    }
  }

  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    try logged("fetch \(request.entityName) as \(request.resultType)") { try inner.fetch(request, generation: generation) }
  }

  public func fetchSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws {
    try logged("fetchSnapshots \(request.entityName)") {
      try inner.fetchSnapshots(request, generation: generation, body)
    }
  }

  public func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    try logged("snapshots of \(ids.count) objects") { try inner.snapshots(for: ids, generation: generation) }
  }

  public func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    try logged("relatedObjectIDs \(id).\(relationship)") {
      try inner.relatedObjectIDs(of: id, relationship: relationship, generation: generation)
    }
  }

  public func save(_ changes: ChangeSet) throws -> SaveResult {
    try logged("save +\(changes.inserted.count) ~\(changes.updated.count) -\(changes.deleted.count)") {
      try inner.save(changes)
    }
  }

  public func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    try logged("execute \(request)") { try inner.execute(request, author: author, contextName: contextName) }
  }

  public func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult {
    try logged("fetchHistory") { try inner.fetchHistory(request) }
  }

  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int {
    try logged("deleteHistory before \(cutoff)") { try inner.deleteHistory(before: cutoff) }
  }

  public func currentHistoryToken() throws -> HistoryToken? {
    try logged("currentHistoryToken") { try inner.currentHistoryToken() }
  }

  public func pinGeneration() throws -> QueryGeneration {
    try logged("pinGeneration") { try inner.pinGeneration() }
  }

  public func unpin(_ generation: QueryGeneration) {
    logged("unpin \(generation.id)") { inner.unpin(generation) }
  }

  public func changes() -> AsyncStream<StoreChange> {
    logged("changes") { inner.changes() }
  }

  public func close() {
    logged("close") { inner.close() }
  }

  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    let log = self.log
    func wrapped(
      _ work: (@Sendable (any PersistentStore) throws -> Void)?
    ) -> (@Sendable (any PersistentStore) throws -> Void)? {
      guard let work else { return nil }
      return { store in try work(LoggingStore(store, log: log)) }
    }
    let logged = steps.map { step -> MigrationStep in
      MigrationStep(step.migration, willMigrate: wrapped(step.willMigrate), didMigrate: wrapped(step.didMigrate))
    }
    let changes = steps.reduce(0) { $0 + $1.migration.changes.count }
    return LoggingStore(
      try self.logged("migrated along \(steps.count) steps, \(changes) changes") {
        try inner.migrated(along: logged, reporting: progress)
      }, log: log)
  }

  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    try logged("storage changes of \(migration.changes.count) changes") { try inner.storageChanges(for: migration) }
  }
}

extension StoreType {
  /// Stores that log every call and pass it on to another backend's store (``LoggingStoreFactory``).
  public static let logging = StoreType("logging")
}

/// Makes ``LoggingStore``s over the stores of another backend's factory.
public struct LoggingStoreFactory: PersistentStoreFactory {
  let inner: any PersistentStoreFactory
  let log: LogSink

  /// A factory whose stores wrap those `inner` opens and write their lines to `log`.
  public init(wrapping inner: any PersistentStoreFactory, log: LogSink) {
    self.inner = inner
    self.log = log
  }

  public var storeType: StoreType { .logging }
  public var requiresLocation: Bool { inner.requiresLocation }

  public func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    let inner = try self.inner.openStore(at: url, model: model, options: options)
    log.write("\(inner.storeType) opened \(url?.path ?? "(no location)")")
    return LoggingStore(inner, log: log)
  }

  public func destroyStore(at url: URL) throws {
    try inner.destroyStore(at: url)
  }
}
