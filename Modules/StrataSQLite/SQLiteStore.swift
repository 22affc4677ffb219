import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit
import Synchronization

/// The embedded default backend: one SQLite file in WAL mode, one table per entity.
///
/// The file stays readable with the `sqlite3` shell: a table per entity named like the entity
/// (`_pk`, `_version`, one column per stored attribute, one per to-one relationship), join tables
/// `Owner_relationship` for many-to-many relationships, and `_strata_metadata` holding the model. With
/// `tracksHistory`, `strata_history_transaction` and `strata_history_change` hold persistent history.
///
/// ```swift
/// let store = try SQLiteStore(url: URL(fileURLWithPath: "/tmp/movies.sqlite"), model: model)
/// let result = try store.save(ChangeSet(inserted: [change]))
/// let movies = try store.fetch(FetchDescription(entityName: "Movie"), generation: nil)
/// store.close()
/// ```
///
/// A store is `Sendable`: saves go through one writer connection, fetches through a small pool of
/// reader connections that WAL lets run while a save is in progress.
public final class SQLiteStore: SQLStoreBase {
  /// Always ``StoreType/sqlite``.
  public let storeType = StoreType.sqlite
  /// The `store_id` written into `_strata_metadata` when the store was created; part of every object ID.
  public let identifier: String
  /// The database file (standardized).
  public let url: URL?
  /// The model the store was opened with, equal to the model stored in the file.
  public let model: ObjectModel
  public let options: StoreOptions
  /// How the store's connections are set up (busy timeout, durability).
  public let configuration: SQLiteStoreConfiguration
  /// The database file's path.
  let path: String
  /// The database file's path, as messages name it.
  package var location: String { path }
  let schema: SQLiteSchema
  /// Each table with its IDs, for ``snapshot(for:generation:)``; empty when the model has sub-entities.
  let keyedTables: [KeyedTable]
  let writer: ConnectionSlot?
  let readers: [ConnectionSlot]
  let pinned = Locked<[UInt64: ConnectionSlot]>([:])
  let nextGeneration = Atomic<UInt64>(0)
  let nextReader = Atomic<Int>(0)
  let closed = Atomic<Bool>(false)
  /// Whether the file has its history tables; until it does, a write that records history makes them.
  let historyTablesExist: Atomic<Bool>
  package let broadcaster = ChangeBroadcaster()
  package let remoteWatcher = RemoteCommitWatcher(name: "strata-sqlite-watch")
  /// The last `PRAGMA data_version` the remote-change watcher read.
  let lastDataVersion = Locked<Int64?>(nil)
  /// The thread running a migration of this store (holding the writer for it), while it runs.
  let migratingThread = Locked<pthread_t?>(nil)
  /// Whether this is the store a migration hands its custom stages (``init(boundTo:of:model:schema:log:)``).
  package let isBoundToMigration: Bool
  /// Where a store bound to a migration collects the history of its writes (shared with the migrating
  /// thread and the other stages' stores); `nil` for other stores and when the migrated store does not
  /// track history.
  let migrationLog: Locked<MigrationChangeLog>?

  static let readerCount = 4

  /// Opens the store at `url`, creating it (and its directory) when there is no file yet.
  ///
  /// ```swift
  /// let store = try SQLiteStore(url: url, model: model)                 // create or open
  /// let tool = try SQLiteStore(url: url, model: nil)                    // use the stored model
  /// let viewer = try SQLiteStore(url: url, model: model, options: .init(isReadOnly: true))
  /// ```
  ///
  /// - Parameter model: the app's model; an existing store must have been created with an equal one.
  ///   `nil` opens an existing store with the model stored inside it.
  /// An empty database (a new file, or one whose creator died before its creation committed) is made
  /// into the store; when several processes open a new store at once, one creates it and the others
  /// open it.
  ///
  /// - Throws: `.corrupted` when the file is not a Strata SQLite store (the file is left untouched),
  ///   `.schemaMismatch` when the stored model differs, `.notFound` when `model` is `nil` (or the store
  ///   is read-only) and there is no file or only an empty database, `.io` when the file or its directory
  ///   cannot be read or created.
  public init(
    url: URL, model: ObjectModel?, options: StoreOptions = StoreOptions(),
    configuration: SQLiteStoreConfiguration = SQLiteStoreConfiguration()
  ) throws {
    guard url.isFileURL else {
      throw StoreError(.unsupported, "the sqlite store needs a file URL, not \(url.absoluteString)")
    }
    let path = url.standardizedFileURL.path
    let opened = try Self.openOrCreate(path: path, model: model, options: options, configuration: configuration)
    var historyTables = false
    if let writer = opened.writer {
      do {
        historyTables = try SQLiteHistoryTables(storeIdentifier: opened.identifier).prepare(
          writer, tracksHistory: options.tracksHistory)
      } catch let error as SQLiteError {
        writer.close()
        throw error.storeError(path: path)
      }
    }
    historyTablesExist = Atomic(historyTables)
    self.url = url.standardizedFileURL
    self.path = path
    self.options = options
    self.configuration = configuration
    self.identifier = opened.identifier
    self.model = opened.model
    self.schema = opened.schema
    keyedTables = KeyedTable.all(opened.schema, storeIdentifier: opened.identifier)
    self.writer = opened.writer.map { ConnectionSlot(connection: $0) }
    let readerFlags = options.isReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    self.readers = (0..<Self.readerCount).map { _ in
      ConnectionSlot(opener: { try SQLiteStore.openReader(path: path, flags: readerFlags, configuration: configuration) })
    }
    isBoundToMigration = false
    migrationLog = nil
  }

  /// The store a migration of `store` hands a custom stage (``MigrationStep``): `model` (the step's source
  /// or destination, laid out as `schema`) over the writer `connection`, inside the migration's open
  /// transaction. It runs the same fetch, save and batch code as any store, through that one connection:
  /// reads see the migration's writes, each save or batch runs in a savepoint, and the history of its
  /// writes goes to `log` (the migration records it as one transaction). It has no readers, query
  /// generations, history or change streams, and ``close()`` gives the connection back open.
  init(
    boundTo connection: SQLiteConnection, of store: SQLiteStore, model: ObjectModel, schema: SQLiteSchema,
    log: Locked<MigrationChangeLog>?
  ) {
    url = store.url
    path = store.path
    options = store.options
    configuration = store.configuration
    identifier = store.identifier
    self.model = model
    self.schema = schema
    keyedTables = KeyedTable.all(schema, storeIdentifier: store.identifier)
    writer = ConnectionSlot(borrowing: connection)
    readers = []
    isBoundToMigration = true
    migrationLog = log
    // Its writes' history goes to the migration's log, which makes the tables when it is recorded.
    historyTablesExist = Atomic(true)
  }

  deinit {
    broadcaster.finish()
  }

  // MARK: Opening

  private struct Opened {
    var identifier: String
    var model: ObjectModel
    var schema: SQLiteSchema
    var writer: SQLiteConnection?
  }

  /// Opens the file (creating it when it is missing and a model is given), completes the store when the
  /// database is empty, and reads what the file holds.
  ///
  /// Creation is one `BEGIN IMMEDIATE` transaction (schema, metadata, model) that checks the database is
  /// still empty once it holds the write lock, so a store is either whole or an empty database; the WAL
  /// header is written only after it commits. An empty database — a new file, or one whose creator died
  /// or ran out of space before committing — is completed by whichever process opens it first with a
  /// model; the others wait for the lock and find the store made.
  private static func openOrCreate(
    path: String, model: ObjectModel?, options: StoreOptions, configuration: SQLiteStoreConfiguration
  ) throws -> Opened {
    let files = FileManager.default
    // Before any open: opening a FIFO blocks, and SQLite would create a file through a dangling link.
    let exists = try StorePath.check(path, expecting: .file, storeName: "a Strata SQLite store")
    let creatingModel = options.isReadOnly ? nil : model
    if !exists {
      guard model != nil else {
        throw StoreError(.notFound, "there is no store at \(path) (open it with a model to create one)")
      }
      guard !options.isReadOnly else {
        throw StoreError(.notFound, "there is no store at \(path) to open read-only")
      }
      let directory = (path as NSString).deletingLastPathComponent
      if !directory.isEmpty && !files.fileExists(atPath: directory) {
        do {
          try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
          throw StoreError(.io, "cannot create the directory \(directory) for the store \(path): \(error.localizedDescription)")
        }
      }
    }
    var flags = options.isReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    if creatingModel != nil { flags |= SQLITE_OPEN_CREATE }
    let connection: SQLiteConnection
    do {
      connection = try SQLiteConnection(path: path, flags: flags, busyTimeout: configuration.busyTimeout)
    } catch let error as SQLiteError {
      if error.isDiskFull { throw error.storeError(path: path) }
      throw StoreError(.io, "cannot open \(path): \(error.message)")
    }
    do {
      if let creatingModel {
        try createIfEmpty(connection, path: path, model: creatingModel, tracksHistory: options.tracksHistory)
      }
      return try openExisting(connection, path: path, model: model, options: options, configuration: configuration)
    } catch {
      connection.close()
      throw error
    }
  }

  static func openReader(
    path: String, flags: Int32, configuration: SQLiteStoreConfiguration
  ) throws
    -> SQLiteConnection
  {
    do {
      let connection = try SQLiteConnection(path: path, flags: flags, busyTimeout: configuration.busyTimeout)
      if flags & SQLITE_OPEN_READONLY == 0 { try connection.execute("PRAGMA query_only = ON") }
      return connection
    } catch let error as SQLiteError {
      throw error.storeError(path: path)
    }
  }

  /// Whether the database holds nothing at all: no schema object, no user version, no application ID.
  /// Reads only, so a foreign file stays as it was.
  private static func isEmpty(_ connection: SQLiteConnection) throws -> Bool {
    try connection.scalar("SELECT count(*) FROM sqlite_master") == .integer(0)
      && connection.scalar("PRAGMA user_version") == .integer(0)
      && connection.scalar("PRAGMA application_id") == .integer(0)
  }

  /// Creates the schema and metadata in an empty database, in one `BEGIN IMMEDIATE` transaction that
  /// checks the emptiness again under the write lock (another process may have created the store first);
  /// with `tracksHistory`, the history tables too.
  private static func createIfEmpty(
    _ connection: SQLiteConnection, path: String, model: ObjectModel, tracksHistory: Bool
  ) throws {
    let schema = try SQLiteSchema(model: model)
    let json = String(decoding: try model.jsonData(), as: UTF8.self)
    do {
      guard try isEmpty(connection) else { return }
      try connection.execute("PRAGMA synchronous = FULL")
      try connection.transaction {
        guard try isEmpty(connection) else { return }
        for statement in schema.createStatements() { try connection.execute(statement) }
        let identifier = UUID().uuidString
        if tracksHistory { try SQLiteHistoryTables(storeIdentifier: identifier).createTables(on: connection) }
        let metadata: [(String, String)] = [
          ("format", SQLiteSchema.format), ("store_id", identifier), ("model", json),
          ("model_fingerprint", model.fingerprint), ("created_at", ISO8601DateFormatter().string(from: Date())),
        ]
        for (key, value) in metadata {
          try connection.run(
            "INSERT INTO \(quote(SQLiteSchema.metadataTable)) (\"key\", \"value\") VALUES (?, ?)", [.text(key), .text(value)])
        }
      }
    } catch let error as SQLiteError {
      switch error.primaryCode {
      case SQLITE_NOTADB, SQLITE_CORRUPT:
        throw StoreError(.corrupted, "\(path) is not a Strata SQLite store (it is not an SQLite database)")
      case _ where error.isDiskFull:
        throw error.storeError(path: path)
      default:
        throw StoreError(.io, "cannot create the store \(path): \(error.message)")
      }
    }
  }

  private static func configureWriter(_ connection: SQLiteConnection, _ configuration: SQLiteStoreConfiguration) throws {
    try enableWAL(connection, waitingUpTo: configuration.busyTimeout)
    try connection.execute("PRAGMA synchronous = \(configuration.synchronous.pragmaValue)")
    try connection.execute("PRAGMA foreign_keys = OFF")
  }

  /// Switches a new store from its creation's rollback journal to WAL. The switch reads the header and
  /// then upgrades to a write lock, and SQLite refuses that upgrade at once, without its busy handler,
  /// while another process holds the write lock (it would deadlock otherwise); so several processes
  /// opening a just-created store at once retry here, for as long as the busy timeout allows.
  private static func enableWAL(_ connection: SQLiteConnection, waitingUpTo timeout: Duration) throws {
    if try connection.scalar("PRAGMA journal_mode") == .text("wal") { return }
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    var pauseMicroseconds: UInt32 = 1_000
    while true {
      do {
        try connection.execute("PRAGMA journal_mode = WAL")
        return
      } catch let error as SQLiteError where error.primaryCode == SQLITE_BUSY && clock.now < deadline {
        usleep(pauseMicroseconds)
        pauseMicroseconds = min(pauseMicroseconds * 2, 50_000)
      }
    }
  }

  private static func openExisting(
    _ connection: SQLiteConnection, path: String, model: ObjectModel?, options: StoreOptions,
    configuration: SQLiteStoreConfiguration
  ) throws -> Opened {
    let (identifier, model) = try SQLLayout.identity(
      try readMetadata(connection, path: path), of: path, kind: "Strata SQLite store", opening: model)
    if !options.isReadOnly {
      guard !connection.isDatabaseReadOnly else {
        throw StoreError(.io, "\(path) is not writable (open it with isReadOnly to read it)")
      }
      do {
        try configureWriter(connection, configuration)
      } catch let error as SQLiteError {
        throw error.storeError(path: path)
      }
    }
    return Opened(
      identifier: identifier, model: model, schema: try SQLiteSchema(model: model),
      writer: options.isReadOnly ? nil : connection)
  }

  /// Reads `_strata_metadata` without writing anything, so a foreign file stays as it was.
  private static func readMetadata(_ connection: SQLiteConnection, path: String) throws -> [String: String] {
    let notStrata = "\(path) is not a Strata SQLite store"
    do {
      let hasTable = try connection.scalar(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(SQLiteSchema.metadataTable)])
      guard hasTable == .integer(1) else {
        if try isEmpty(connection) {
          throw StoreError(
            .notFound, "there is no store at \(path) yet (it is an empty database; open it with a model to create the store)")
        }
        throw StoreError(.corrupted, "\(notStrata) (it has no \(SQLiteSchema.metadataTable) table)")
      }
      let rows = try connection.query("SELECT \"key\", \"value\" FROM \(quote(SQLiteSchema.metadataTable))") {
        ($0.text(0), $0.text(1))
      }
      let metadata = Dictionary(rows, uniquingKeysWith: { first, _ in first })
      guard metadata["format"] == SQLiteSchema.format else {
        let found = metadata["format"].map { "format '\($0)'" } ?? "no format"
        throw StoreError(.corrupted, "\(notStrata) (its metadata has \(found), expected '\(SQLiteSchema.format)')")
      }
      return metadata
    } catch let error as SQLiteError {
      switch error.primaryCode {
      case SQLITE_NOTADB, SQLITE_CORRUPT:
        throw StoreError(.corrupted, "\(notStrata) (it is not an SQLite database)")
      default:
        throw StoreError(.io, "cannot read \(path): \(error.message)")
      }
    }
  }

  // MARK: Using connections

  package func checkOpen() throws {
    if closed.load(ordering: .acquiring) {
      throw StoreError(.misuse, "the store \(path) is closed")
    }
  }

  /// Runs `body` on the writer connection, holding the write lock.
  ///
  /// - Throws: `.misuse` on the thread migrating the store, which holds the lock already (a custom stage
  ///   writing through the store being migrated instead of the one it is handed).
  func write<R: Sendable>(_ body: (SQLiteConnection) throws -> R) throws -> R {
    try checkOpen()
    guard let writer else { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    if migratingThread.withLock({ thread in thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }) {
      throw StoreError(
        .misuse, "the store \(path) is being migrated: a migration stage writes through the store it is handed")
    }
    guard options.tracksHistory, !historyTablesExist.load(ordering: .relaxed) else {
      return try writer.withConnection(path: path, body)
    }
    return try writer.withConnection(path: path) { connection in
      let result = try body(connection)
      if try SQLiteHistoryTables(storeIdentifier: identifier).exist(on: connection) {
        historyTablesExist.store(true, ordering: .relaxed)
      }
      return result
    }
  }

  /// Runs `body` on a reader connection, or on the pinned connection of `generation` (a store bound to a
  /// migration reads through its one connection).
  func read<R: Sendable>(generation: QueryGeneration?, _ body: (SQLiteConnection) throws -> R) throws -> R {
    try checkOpen()
    if isBoundToMigration {
      guard generation == nil else { throw unsupportedInMigration("query generations") }
      return try write(body)
    }
    if let generation { return try pinnedSlot(generation).withConnection(path: path, body) }
    let start = Int(nextReader.add(1, ordering: .relaxed).oldValue.magnitude % UInt(readers.count))
    for offset in 0..<readers.count {
      if let result = try readers[(start + offset) % readers.count].withConnectionIfAvailable(path: path, body) {
        return result
      }
    }
    return try readers[start].withConnection(path: path, body)
  }

  /// The error for what a store bound to a migration's transaction does not do.
  func unsupportedInMigration(_ what: String) -> StoreError { SQLiteStoreCore(store: self).unsupportedInMigration(what) }

  /// Where the history of a write goes: the file's history tables, the log of the migration a bound store
  /// writes in, or nowhere (`nil`).
  var historyRecorder: SQLHistoryRecorder<SQLiteHistoryTables>? {
    if isBoundToMigration { return migrationLog.map { .migration($0, model: model) } }
    guard options.tracksHistory else { return nil }
    return .tables(
      SQLiteHistoryTables(storeIdentifier: identifier), createsTables: !historyTablesExist.load(ordering: .relaxed))
  }

  /// Releases the store's connections. Pending streams from ``changes()`` finish. Further calls throw `.misuse`.
  public func close() {
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    closeConnections()
  }

  /// Closes every connection and finishes the change streams (``close()`` once `closed` is set).
  func closeConnections() {
    for slot in readers { slot.close() }
    for slot in pinned.withLock({ pinned in
      let all = Array(pinned.values)
      pinned.removeAll()
      return all
    }) {
      slot.close()
    }
    writer?.close()
    broadcaster.finish()
  }
}

/// One connection behind a mutex, opened on first use.
final class ConnectionSlot: Sendable {
  private struct State {
    var connection: SQLiteConnection?
    var isClosed = false
  }

  private let state: Locked<State>
  private let opener: @Sendable () throws -> SQLiteConnection
  /// Whether the connection is lent by its owner for the length of one open transaction (a migration's):
  /// every call checks the transaction is still open, and ``close()`` gives the connection back open.
  private let isBorrowed: Bool

  init(connection: SQLiteConnection) {
    state = Locked(State(connection: connection))
    opener = { throw StoreError(.misuse, "the connection was closed") }
    isBorrowed = false
  }

  /// A slot over a connection that another slot owns, inside the transaction open on it: the owner does
  /// not use the connection until this slot is closed (see ``SQLiteConnection``).
  init(borrowing connection: SQLiteConnection) {
    state = Locked(State(connection: connection))
    opener = { throw StoreError(.misuse, "the connection was given back") }
    isBorrowed = true
  }

  init(opener: @escaping @Sendable () throws -> SQLiteConnection) {
    state = Locked(State())
    self.opener = opener
    isBorrowed = false
  }

  func withConnection<R: Sendable>(path: String, _ body: (SQLiteConnection) throws -> R) throws -> R {
    try state.withLock { state throws -> R in try Self.run(&state, opener, isBorrowed, path, body) }
  }

  func withConnectionIfAvailable<R: Sendable>(path: String, _ body: (SQLiteConnection) throws -> R) throws -> R? {
    try state.withLockIfAvailable { state throws -> R in try Self.run(&state, opener, isBorrowed, path, body) }
  }

  private static func run<R: Sendable>(
    _ state: inout State, _ opener: () throws -> SQLiteConnection, _ isBorrowed: Bool, _ path: String,
    _ body: (SQLiteConnection) throws -> R
  ) throws -> R {
    guard !state.isClosed else { throw StoreError(.misuse, "the store \(path) is closed") }
    let connection: SQLiteConnection
    if let existing = state.connection {
      connection = existing
    } else {
      connection = try opener()
      state.connection = connection
    }
    // A write outside the lender's transaction would commit at once, on its own.
    guard !isBorrowed || connection.isInTransaction else {
      throw StoreError(.io, "the migration's transaction on \(path) is no longer open (SQLite rolled it back after an error)")
    }
    do {
      return try body(connection)
    } catch let error as SQLiteError {
      throw error.storeError(path: path)
    }
  }

  /// Closes the connection (a borrowed one is only given back, open), after a call in progress ends.
  func close() {
    let isBorrowed = self.isBorrowed
    state.withLock { state in
      state.isClosed = true
      if !isBorrowed { state.connection?.close() }
      state.connection = nil
    }
  }
}

/// How an SQLite store's connections are set up, beyond the backend-independent ``StoreOptions``.
///
/// The journal mode is not a setting: a Strata SQLite store is always in WAL mode, which its readers
/// running beside the writer, its pinned query generations and its cross-process change detection rely on.
public struct SQLiteStoreConfiguration: Sendable, Hashable {
  /// When a commit is flushed to disk (`PRAGMA synchronous`).
  public enum Synchronous: String, Sendable, Hashable, CaseIterable {
    /// At checkpoints only: a commit survives a crash of the process, and the store stays consistent
    /// through a power loss, which may lose the last commits. SQLite's recommendation for WAL.
    case normal
    /// At every commit: a commit also survives a power loss, at the cost of one sync per commit.
    case full

    var pragmaValue: String { rawValue.uppercased() }
  }

  /// How long a connection waits for another connection's lock (another process writing, a checkpoint)
  /// before a save or read fails with `.io` ("database is locked").
  public var busyTimeout: Duration
  /// When commits reach the disk.
  public var synchronous: Synchronous

  public init(busyTimeout: Duration = .seconds(5), synchronous: Synchronous = .normal) {
    self.busyTimeout = busyTimeout
    self.synchronous = synchronous
  }
}

/// Makes ``SQLiteStore``s; put it in the ``StoreRegistry`` of containers and CLIs that may pick the
/// ``StoreType/sqlite`` store type.
///
/// ```swift
/// let registry = StoreRegistry([SQLiteStoreFactory(busyTimeout: .seconds(10), synchronous: .full)])
/// let store = try registry.openStore(.sqlite, at: URL(fileURLWithPath: "movies.sqlite"), model: model, options: .init())
/// ```
public struct SQLiteStoreFactory: PersistentStoreFactory {
  /// ``StoreType/sqlite``.
  public var storeType: StoreType { .sqlite }
  /// Always `true`: a SQLite store lives in a file.
  public var requiresLocation: Bool { true }
  /// How the stores this factory opens set up their connections.
  public var configuration: SQLiteStoreConfiguration

  /// A factory whose stores wait `busyTimeout` for a lock and flush commits as `synchronous` says.
  public init(busyTimeout: Duration = .seconds(5), synchronous: SQLiteStoreConfiguration.Synchronous = .normal) {
    configuration = SQLiteStoreConfiguration(busyTimeout: busyTimeout, synchronous: synchronous)
  }

  /// Opens (or creates) the store at `url`; see ``SQLiteStore/init(url:model:options:configuration:)``.
  /// Wrapped in an `ExternalDataStore` only when the store keeps or may keep values out of its rows
  /// (`ExternalDataStore.wrappingIfNeeded(_:storage:requestedModel:)`).
  /// - Throws: `.misuse` when `url` is `nil`, and everything ``SQLiteStore/init(url:model:options:configuration:)`` throws.
  public func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    guard let url else { throw StoreError(.misuse, "the sqlite store needs a file location") }
    return try ExternalDataStore.wrappingIfNeeded(
      SQLiteStore(url: url, model: model, options: options, configuration: configuration),
      storage: ExternalDataDirectory(beside: url), requestedModel: model)
  }
  /// Whether `url` is a file that starts with SQLite's header (`SQLite format 3`). Only a regular file is
  /// read (a FIFO would block).
  public func recognizesStore(at url: URL) -> Bool {
    guard StorePath.kind(of: url.standardizedFileURL.path) == .file,
      let file = FileHandle(forReadingAtPath: url.standardizedFileURL.path)
    else { return false }
    defer { try? file.close() }
    let header = (try? file.read(upToCount: 16)) ?? Data()
    return header == Data("SQLite format 3\0".utf8)
  }

  /// Deletes the store file, its `-wal`, `-shm` and `-journal` companions and the `<file>_SUPPORT`
  /// directory of its externally stored values. A missing file is not an error.
  /// - Throws: `.io` when a file exists but cannot be removed.
  public func destroyStore(at url: URL) throws {
    let path = url.standardizedFileURL.path
    for file in [path, path + "-wal", path + "-shm", path + "-journal"] where FileManager.default.fileExists(atPath: file) {
      do {
        try FileManager.default.removeItem(atPath: file)
      } catch {
        throw StoreError(.io, "cannot delete \(file): \(error.localizedDescription)")
      }
    }
    try ExternalDataDirectory.destroy(beside: url)
  }
}
