import Foundation
import StrataStoreKit

/// What the shared entry points read of an SQL backend's public store: where it is, whether it is open
/// or bound to a migration, and where it announces changes. `SQLiteStore` and `PostgresStore` conform.
package protocol SQLStoreBase: PersistentStore {
  /// The store's file or URI, as messages name it.
  var location: String { get }
  /// Whether this is the store a migration hands its custom stages.
  var isBoundToMigration: Bool { get }
  var broadcaster: ChangeBroadcaster { get }
  var isClosed: Bool { get }
  /// Polls for other connections' commits while a change stream is open (``changeStream()``).
  var remoteWatcher: RemoteCommitWatcher { get }
  /// Throws `.misuse` when the store is closed.
  func checkOpen() throws
  /// Readies the look for other connections' commits, before a stream is handed out.
  func startWatching()
  /// Ends what ``startWatching()`` began, once no stream is open.
  func stopWatching()
  /// Yields one remote change when another connection committed since the last look.
  func announceRemoteCommits()
}

extension SQLStoreBase {
  package func stopWatching() {}

  /// The stream of `changes()`: finished at once in a closed store or one bound to a migration; with
  /// remote notifications on, other connections' commits are looked for every 50 ms while one is open.
  package func changeStream() -> AsyncStream<StoreChange> {
    let stream = broadcaster.stream()
    if isClosed || isBoundToMigration {
      // close() may have finished the broadcaster before this stream registered.
      broadcaster.finish()
      return stream
    }
    if options.postsRemoteChangeNotifications {
      startWatching()
      remoteWatcher.start(while: { [weak self] in
        guard let store = self else { return false }
        let keepGoing = !store.isClosed && store.broadcaster.hasSubscribers
        if !keepGoing { store.stopWatching() }
        return keepGoing
      }) { [weak self] in self?.announceRemoteCommits() }
    }
    return stream
  }
}

/// An SQL backend's store as the shared entry points (save, history, migration) use it: its layout,
/// connections, history tables and save operation. Each backend has one over its store
/// (`SQLiteStoreCore`, `PostgresStoreCore`: internal types, as the layouts and connections are); the
/// store keeps how it opens, its connections, and what its database does its own way (SQLite's WAL
/// file and lazily made history tables; PostgreSQL's schema, LISTEN/NOTIFY and pinned snapshots).
package protocol SQLStore {
  associatedtype Store: SQLStoreBase
  associatedtype Schema: SQLSchemaDescription
  associatedtype Connection: SQLConnection where Connection.Binding == Schema.Binding
  associatedtype HistoryTables: SQLHistoryTables where HistoryTables.Connection == Connection
  associatedtype Operation: SQLSaveOperation
  where Operation.Schema == Schema, Operation.Connection == Connection, Operation.HistoryTables == HistoryTables
  associatedtype Run: SQLMigrationRun
  associatedtype BoundStore: PersistentStore

  var store: Store { get }
  var schema: Schema { get }
  /// Where the history of a write goes: the history tables, the log of the migration a bound store
  /// writes in, or nowhere (`nil`).
  var historyRecorder: SQLHistoryRecorder<HistoryTables>? { get }
  var historyTables: HistoryTables { get }

  /// Runs `body` in one write transaction (a savepoint in a store bound to a migration) and, once it
  /// committed, announces the change `body` returns, in commit order (telling other stores too, where
  /// the database lets them listen); `nil` announces nothing.
  func commit<R: Sendable>(_ body: (Connection) throws -> (R, StoreChange?)) throws -> R
  /// Runs `body` on a connection reading the latest committed state, in one read transaction.
  func readSnapshot<R: Sendable>(_ body: (Connection) throws -> R) throws -> R
  /// Throws `StoreError.storeNotEmpty(_:)` when one of `entities` holds an object, read inside the write
  /// transaction so that no other writer can insert meanwhile.
  func checkEmpty(_ entities: [String], on connection: Connection) throws

  /// The store's layout of `model`.
  func layout(of model: ObjectModel) throws -> Schema
  /// The structural change of one migration step, from `old` to `new`, run on `connection`.
  func migrationRun(_ migration: ModelMigration, old: Schema, new: Schema, on connection: Connection) -> Run
  /// The store a custom stage is handed: `model` laid out as `schema` over the migration's `connection`,
  /// the history of its writes going to `log`.
  func boundStore(
    _ connection: Connection, model: ObjectModel, schema: Schema, log: Locked<MigrationChangeLog>?
  ) -> BoundStore
  /// Throws when the migration's transaction cannot go on after a custom stage.
  func checkAfterStage(_ connection: Connection) throws
  /// The `_entity` of the rows of the hierarchy table `root` with primary keys among `keys`.
  func entityTags(of keys: [Int64], in root: String, on connection: Connection) throws -> [Int64: String]
}

extension SQLStore {
  package var identifier: String { store.identifier }
  package var options: StoreOptions { store.options }
  package var location: String { store.location }

  /// Applies a change set in one transaction, all or nothing (see ``SQLSaveOperation/apply()``).
  package func save(_ changes: ChangeSet) throws -> SaveResult {
    try store.checkOpen()
    if changes.isEmpty { return SaveResult() }
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    let (schema, identifier, history) = (self.schema, self.identifier, historyRecorder)
    return try commit { connection -> (SaveResult, StoreChange?) in
      try checkEmpty(changes.requiredEmptyEntities, on: connection)
      var operation = Operation(
        connection: connection, schema: schema, storeIdentifier: identifier, changes: changes, history: history,
        state: SQLSaveState(reservingFor: changes))
      let (result, change) = try operation.apply()
      return (result, change)
    }
  }

  /// `snapshots` with every to-one target whose destination has sub-entities named by the entity it was
  /// inserted as.
  package func resolvingReferences(_ snapshots: [Snapshot], on connection: Connection) throws -> [Snapshot] {
    try SQLHierarchyReferences.resolvingReferences(snapshots, model: schema.model) {
      try entityTags(of: $1, in: $0, on: connection)
    }
  }

  /// The IDs among `ids` (of entities with sub-entities) named by the entity each object was inserted as.
  package func concreteIDs(_ ids: [ObjectID], on connection: Connection) throws -> [ObjectID: ObjectID] {
    try SQLHierarchyReferences.concreteIDs(ids, model: schema.model) { try entityTags(of: $1, in: $0, on: connection) }
  }

  /// The error for what a store bound to a migration's transaction does not do.
  package func unsupportedInMigration(_ what: String) -> StoreError {
    StoreError(
      .unsupported,
      "the store a migration stage is handed (on \(location)) has no \(what); use the store the migration returns")
  }
}
