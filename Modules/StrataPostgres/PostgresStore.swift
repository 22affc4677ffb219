import CLibPQ
import Foundation
import StrataSQL
import StrataStoreKit
import Synchronization

extension StoreType {
  /// A schema in a PostgreSQL database, shared by processes on many machines (`StrataPostgres`).
  public static let postgres = StoreType("postgres")
}

/// The PostgreSQL backend: one schema of a database on a server, a table per entity.
///
/// A DBA reads it with `psql`: a table per entity named like the entity (`_pk`, `_version`, a column of
/// a real type per stored attribute, a foreign-key column per to-one relationship), join tables
/// `Owner_relationship`, deferrable unique constraints for uniqueness, and `_strata_metadata` holding
/// the model and the store identifier.
///
/// ```swift
/// guard let url = URL(string: "postgresql:///strata/movies?host=/run/postgresql") else { return }
/// let store = try PostgresStore(url: url, model: model)
/// let movies = try store.fetch(FetchDescription(entityName: "Movie"), generation: nil)
/// store.close()
/// ```
///
/// A store is `Sendable`: reads and writes borrow a connection of a small pool.
public final class PostgresStore: SQLStoreBase {
  /// Always ``StoreType/postgres``.
  public let storeType = StoreType.postgres
  /// The `store_id` written into `_strata_metadata` when the store was created.
  public let identifier: String
  /// The location the store was opened at (a libpq URI, with the schema as its `schema` query item).
  public let url: URL?
  public let model: ObjectModel
  public let options: StoreOptions
  public let configuration: PostgresStoreConfiguration
  /// The URI as messages name it (no password).
  package let location: String
  let schema: PostgresSchema
  let pool: PostgresPool
  /// Serializes this store's writes, so change notifications go out in commit order.
  let writeLock = Locked<Void>(())
  let pinned = Locked<[UInt64: PinnedGeneration]>([:])
  let nextGeneration = Atomic<UInt64>(0)
  let closed = Atomic<Bool>(false)
  package let broadcaster = ChangeBroadcaster()
  /// The test hook (`PostgresStore+TestFaults.swift`): what a test makes the next writes do wrong; empty
  /// in normal use.
  let faults = Locked(PostgresFaults())
  package let remoteWatcher = RemoteCommitWatcher(name: "strata-postgres-listen")
  /// The connection listening for other stores' commits, while a change stream is open.
  let listener = Locked<PostgresConnection?>(nil)
  /// Whether the listening connection was lost and not yet reopened.
  let listenerLost = Atomic<Bool>(false)
  /// Tells this store's own notifications from others'.
  let instanceID = UUID().uuidString
  /// The thread running a migration of this store (holding its write lock), while it runs.
  let migratingThread = Locked<pthread_t?>(nil)
  /// The connection of the migration whose custom stage this store is handed
  /// (``init(boundTo:of:model:schema:log:)``); `nil` for every other store.
  let bound: Locked<PostgresConnection?>?
  /// Where a store bound to a migration collects the history of its writes; `nil` for other stores and
  /// when the migrated store does not track history.
  let migrationLog: Locked<MigrationChangeLog>?
  /// Whether this is the store a migration hands its custom stages.
  package var isBoundToMigration: Bool { bound != nil }
  /// The `NOTIFY` channel of the store's schema.
  var channel: String { "strata_" + String(identifier.lowercased().filter { $0.isHexDigit }.prefix(32)) }

  /// Opens the store in the schema named by `url`'s `schema` query item (else `configuration.schema`),
  /// creating the schema's tables when it holds none and a model is given.
  ///
  /// ```swift
  /// let store = try PostgresStore(url: URL(string: "postgresql://app@db.example.com/catalogue")!, model: model)
  /// ```
  ///
  /// - Throws: `.io` for a malformed URI, a server that does not answer ("is the server running?") or
  ///   refused credentials; `.notFound` for a missing database, or a missing store when `model` is `nil`
  ///   or the store is read-only; `.corrupted` when the schema holds tables that are not a Strata store,
  ///   or a table or column of the store is missing (dropped or renamed by hand; one catalog query);
  ///   `.schemaMismatch` when the stored model differs. Nothing is created or changed on any error.
  public init(
    url: URL, model: ObjectModel?, options: StoreOptions = StoreOptions(),
    configuration: PostgresStoreConfiguration = PostgresStoreConfiguration()
  ) throws {
    let target = try PostgresLocation(url: url, defaultSchema: configuration.schema)
    let first = try target.connect(configuration: configuration)
    let opened: (identifier: String, model: ObjectModel)
    let layout: PostgresSchema
    do {
      opened = try Self.openOrCreate(first, target: target, model: model, options: options)
      layout = try PostgresSchema(model: opened.model, schema: target.schema)
      try layout.checkTables(first, store: target.display)
      if !options.isReadOnly {
        try PostgresHistoryTables(schema: layout, storeIdentifier: opened.identifier).prepare(
          first, tracksHistory: options.tracksHistory)
      }
    } catch let error as PostgresError {
      first.close()
      throw error.storeError(location: target.display)
    } catch {
      first.close()
      throw error
    }
    self.url = url
    self.options = options
    self.configuration = configuration
    self.location = target.display
    self.identifier = opened.identifier
    self.model = opened.model
    self.schema = layout
    self.pool = PostgresPool(target: target, configuration: configuration, first: first)
    self.bound = nil
    self.migrationLog = nil
  }

  /// The store a migration of `store` hands a custom stage (``MigrationStep``): `model` (the step's source
  /// or destination, laid out as `schema`) over the migration's `connection`, inside its open
  /// transaction. It runs the same fetch, save and batch code as any store through that one connection:
  /// reads see the migration's writes, each save runs in a savepoint, and the history of its writes goes
  /// to `log`. It has no pool, query generations, history or change streams; ``close()`` gives the
  /// connection back open.
  init(
    boundTo connection: PostgresConnection, of store: PostgresStore, model: ObjectModel, schema: PostgresSchema,
    log: Locked<MigrationChangeLog>?
  ) {
    url = store.url
    options = store.options
    configuration = store.configuration
    location = store.location
    identifier = store.identifier
    self.model = model
    self.schema = schema
    pool = PostgresPool(target: store.pool.target, configuration: store.configuration)
    bound = Locked(connection)
    migrationLog = log
  }

  deinit {
    broadcaster.finish()
  }

  // MARK: Opening

  private static func openOrCreate(
    _ connection: PostgresConnection, target: PostgresLocation, model: ObjectModel?, options: StoreOptions
  ) throws -> (identifier: String, model: ObjectModel) {
    let where_ = target.display
    // One statement reads both, so a store another process commits in between is never half seen.
    let (hasMetadata, tables) = try contents(connection, target.schema)
    if !hasMetadata {
      if tables > 0 {
        let holds = "\(tables) \(tables == 1 ? "table" : "tables")"
        throw StoreError(
          .corrupted, "\(where_) is not a Strata store: the schema holds \(holds) but no \(PostgresSchema.metadataTable)")
      }
      guard let model, !options.isReadOnly else {
        throw StoreError(.notFound, "there is no store at \(where_) (open it with a model to create one)")
      }
      try create(connection, target: target, model: model)
    }
    let metadata = try readMetadata(connection, target.schema, where_)
    return try SQLLayout.identity(metadata, of: where_, kind: "Strata store", opening: model)
  }

  /// Whether `schema` holds the store's metadata table, and how many tables it holds; the tables of a
  /// mirror hub sharing the schema (`strata_mirror_*`, StrataPostgresHub) are not counted.
  private static func contents(_ connection: PostgresConnection, _ schema: String) throws -> (Bool, Int64) {
    let rows = try connection.query(
      "SELECT count(*) FILTER (WHERE c.relname = $2), count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        + "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname NOT LIKE 'strata\\_mirror\\_%'",
      [.string(schema), .string(PostgresSchema.metadataTable)])
    return (rows.int64(0, 0) > 0, rows.int64(0, 1))
  }

  /// Creates the schema, tables and metadata in one transaction, holding an advisory lock on the schema's
  /// name so that concurrent first opens create it once (the others find it made).
  private static func create(_ connection: PostgresConnection, target: PostgresLocation, model: ObjectModel) throws {
    let layout = try PostgresSchema(model: model, schema: target.schema)
    let json = String(decoding: try model.jsonData(), as: UTF8.self)
    try connection.transaction {
      try connection.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.string("strata:" + target.schema)])
      if try contents(connection, target.schema).1 > 0 { return }
      try connection.execute("CREATE SCHEMA IF NOT EXISTS \(quoteIdentifier(target.schema))")
      for statement in layout.createStatements() { try connection.execute(statement) }
      let metadata: [(String, String)] = [
        ("format", PostgresSchema.format), ("store_id", UUID().uuidString), ("model", json),
        ("model_fingerprint", model.fingerprint), ("created_at", ISO8601DateFormatter().string(from: Date())),
      ]
      for (key, value) in metadata {
        try connection.run(
          "INSERT INTO \(layout.qualify(PostgresSchema.metadataTable)) (\"key\", \"value\") VALUES ($1, $2)",
          [.string(key), .string(value)])
      }
    }
  }

  private static func readMetadata(
    _ connection: PostgresConnection, _ schema: String, _ where_: String
  ) throws -> [String: String] {
    let table = quoteIdentifier(schema) + "." + quoteIdentifier(PostgresSchema.metadataTable)
    let rows = try connection.query("SELECT \"key\", \"value\" FROM \(table)")
    var metadata: [String: String] = [:]
    for row in 0..<rows.count { metadata[rows.text(row, 0)] = rows.text(row, 1) }
    guard metadata["format"] == PostgresSchema.format else {
      let found = metadata["format"].map { "format '\($0)'" } ?? "no format"
      throw StoreError(
        .corrupted, "\(where_) is not a Strata PostgreSQL store (its metadata has \(found), expected '\(PostgresSchema.format)')")
    }
    return metadata
  }

  // MARK: Using connections

  package func checkOpen() throws {
    if closed.load(ordering: .acquiring) { throw StoreError(.misuse, "the store \(location) is closed") }
  }

  /// Runs `body` in one transaction on a pooled connection, holding this store's write lock (a store
  /// bound to a migration: in a savepoint of the migration's transaction). With `deferringConstraints`,
  /// deferrable constraints are checked at the end of the transaction (or when `body` asks), set in the
  /// same round trip as `BEGIN`.
  ///
  /// - Throws: `.misuse` on the thread migrating the store, which holds the lock already (a custom stage
  ///   writing through the store being migrated instead of the one it is handed).
  func write<R: Sendable>(deferringConstraints: Bool = false, _ body: (PostgresConnection) throws -> R) throws -> R {
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(location) was opened read-only") }
    if bound != nil {
      return try onBoundConnection { connection in
        try connection.transaction {
          if deferringConstraints { try connection.execute("SET CONSTRAINTS ALL DEFERRED") }
          return try body(connection)
        }
      }
    }
    if migratingThread.withLock({ thread in thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }) {
      throw StoreError(
        .misuse, "the store \(location) is being migrated: a migration stage writes through the store it is handed")
    }
    return try writeLock.withLock { _ in
      try pool.withConnection { connection in
        try writeTransaction(connection, deferringConstraints: deferringConstraints, body)
      }
    }
  }

  /// Runs `body` on a pooled connection, or on the pinned connection of `generation`.
  func read<R: Sendable>(generation: QueryGeneration?, _ body: (PostgresConnection) throws -> R) throws -> R {
    try checkOpen()
    if bound != nil {
      guard generation == nil else { throw unsupportedInMigration("query generations") }
      return try onBoundConnection(body)
    }
    if let generation {
      guard generation.storeIdentifier == identifier, let pinnedGeneration = pinned.withLock({ $0[generation.id] }) else {
        throw StoreError(
          .misuse,
          "query generation \(generation.id) is not pinned on the store \(location) (it was unpinned or belongs to another store)"
        )
      }
      return try pinnedGeneration.use(pool) { try body($0) }
    }
    return try pool.withConnection(body)
  }

  /// Runs `body` on the connection of the migration this store is bound to.
  private func onBoundConnection<R: Sendable>(_ body: (PostgresConnection) throws -> R) throws -> R {
    guard let bound else { throw StoreError(.misuse, "the store \(location) is not bound to a migration") }
    return try bound.withLock { connection in
      guard let connection else { throw StoreError(.misuse, "the store \(location) is closed") }
      do {
        return try body(connection)
      } catch let error as PostgresError {
        throw error.storeError(location: location)
      }
    }
  }

  /// The error for what a store bound to a migration's transaction does not do.
  func unsupportedInMigration(_ what: String) -> StoreError { PostgresStoreCore(store: self).unsupportedInMigration(what) }

  /// Where the history of a write goes: the history tables, the log of the migration a bound store writes
  /// in, or nowhere (`nil`).
  var historyRecorder: SQLHistoryRecorder<PostgresHistoryTables>? {
    if isBoundToMigration { return migrationLog.map { .migration($0, model: model) } }
    return options.tracksHistory
      ? .tables(PostgresHistoryTables(schema: schema, storeIdentifier: identifier), createsTables: false) : nil
  }

  /// Releases the store's connections; pending streams from ``changes()`` finish. Further calls throw `.misuse`.
  public func close() {
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    for generation in pinned.withLock({ pinned in
      let all = Array(pinned.values)
      pinned.removeAll()
      return all
    }) {
      generation.close()
    }
    listener.withLock { connection in
      connection?.close()
      connection = nil
    }
    // A bound store gives the migration's connection back open.
    bound?.withLock { $0 = nil }
    pool.close()
    broadcaster.finish()
  }
}

/// Where a store lives: the libpq connection string and the schema, parsed from a location URL.
struct PostgresLocation: Sendable {
  /// What libpq is given (the URI without the `schema` query item).
  let conninfo: String
  /// The URI for messages: without a password, with the schema as its `schema` query item.
  let display: String
  let schema: String

  init(url: URL, defaultSchema: String) throws {
    let text = url.absoluteString
    guard var components = URLComponents(string: text),
      let scheme = components.scheme, scheme == "postgresql" || scheme == "postgres"
    else {
      throw StoreError(
        .io,
        "malformed PostgreSQL URI '\(text)': expected postgresql://user@host:port/database or postgresql:///database?host=/socket/dir"
      )
    }
    var schema = defaultSchema
    // `postgresql://host/database/schema`: a second path component names the schema.
    let parts = components.path.split(separator: "/", omittingEmptySubsequences: true)
    if parts.count == 2 {
      schema = String(parts[1])
      components.path = "/" + parts[0]
    } else if parts.count > 2 {
      throw StoreError(.io, "malformed PostgreSQL URI '\(text)': the path is /database or /database/schema")
    }
    var items = components.queryItems ?? []
    if let index = items.firstIndex(where: { $0.name == "schema" }) {
      schema = items[index].value ?? defaultSchema
      items.remove(at: index)
    }
    components.queryItems = items.isEmpty ? nil : items
    guard !schema.isEmpty, schema.utf8.count <= 63 else {
      throw StoreError(.io, "malformed PostgreSQL URI '\(text)': the schema name must have 1 to 63 bytes")
    }
    let conninfo = components.string ?? text
    var errorMessage: UnsafeMutablePointer<CChar>?
    if let options = PQconninfoParse(conninfo, &errorMessage) {
      PQconninfoFree(options)
    } else {
      let reason = errorMessage.map { String(cString: $0) } ?? "unreadable"
      if let errorMessage { PQfreemem(errorMessage) }
      throw StoreError(
        .io, "malformed PostgreSQL URI '\(text)': \(reason.trimmingCharacters(in: .whitespacesAndNewlines))")
    }
    // Shown with its schema (several stores share a database) and never with its password.
    var shown = components
    if shown.password != nil { shown.password = "***" }
    shown.queryItems = items + [URLQueryItem(name: "schema", value: schema)]
    self.conninfo = conninfo
    self.display = shown.string ?? text
    self.schema = schema
  }

  /// The connection string with the configuration's application name as libpq's
  /// `fallback_application_name`: an `application_name` the URI gives (or `PGAPPNAME`) wins over it.
  func conninfo(configuration: PostgresStoreConfiguration) -> String {
    guard var components = URLComponents(string: conninfo) else { return conninfo }
    var items = components.queryItems ?? []
    items.removeAll { $0.name == "fallback_application_name" }
    items.append(URLQueryItem(name: "fallback_application_name", value: configuration.applicationName))
    components.queryItems = items
    return components.string ?? conninfo
  }

  func connect(configuration: PostgresStoreConfiguration) throws -> PostgresConnection {
    do {
      return try PostgresConnection(
        conninfo: conninfo(configuration: configuration), location: display, schema: schema,
        settings: configuration.sessionSettings)
    } catch let error as PostgresError {
      throw error.connectionError(location: display)
    }
  }
}

/// A fixed number of connections, each behind a mutex, opened on first use and reopened when lost.
final class PostgresPool: Sendable {
  /// One connection behind a mutex.
  final class Slot: Sendable {
    let state: Locked<PostgresConnection?>

    init(_ connection: PostgresConnection? = nil) { state = Locked(connection) }

    func use<R: Sendable>(_ pool: PostgresPool, _ body: (PostgresConnection) throws -> R) throws -> R {
      try state.withLock { connection in try pool.run(&connection, body) }
    }

    func close() {
      state.withLock { connection in
        connection?.close()
        connection = nil
      }
    }
  }

  let target: PostgresLocation
  let configuration: PostgresStoreConfiguration
  let slots: [Slot]
  let next = Atomic<Int>(0)
  let closed = Atomic<Bool>(false)

  init(target: PostgresLocation, configuration: PostgresStoreConfiguration, first: PostgresConnection) {
    self.target = target
    self.configuration = configuration
    let count = max(1, configuration.poolSize)
    slots = (0..<count).map { $0 == 0 ? Slot(first) : Slot() }
  }

  /// A pool without connections (for a store bound to a migration, which uses the migration's).
  init(target: PostgresLocation, configuration: PostgresStoreConfiguration) {
    self.target = target
    self.configuration = configuration
    slots = []
  }

  /// Runs `body` on the first free connection in slot order (or waits for one): a store used by one
  /// thread at a time keeps one connection open, warm with its prepared statements; others open only when
  /// operations overlap.
  func withConnection<R: Sendable>(_ body: (PostgresConnection) throws -> R) throws -> R {
    guard !slots.isEmpty else { throw StoreError(.misuse, "the store \(target.display) has no connections") }
    for slot in slots {
      if let result = try slot.state.withLockIfAvailable({ connection in try self.run(&connection, body) }) {
        return result
      }
    }
    return try slots[Int(next.add(1, ordering: .relaxed).oldValue.magnitude % UInt(slots.count))].use(self, body)
  }

  /// Opens the slot's connection when it has none (or lost it), then runs `body`; maps libpq failures.
  func run<R: Sendable>(_ connection: inout PostgresConnection?, _ body: (PostgresConnection) throws -> R) throws -> R {
    if closed.load(ordering: .acquiring) { throw StoreError(.misuse, "the store \(target.display) is closed") }
    if let existing = connection, !existing.isOpen {
      existing.close()
      connection = nil
    }
    var reconnected = false
    while true {
      let current: PostgresConnection
      if let connection {
        current = connection
      } else {
        current = try target.connect(configuration: configuration)
        connection = current
      }
      do {
        return try body(current)
      } catch let error as PostgresError {
        // A connection the server dropped (a restart, pg_terminate_backend) is found out by its next
        // statement; the body, which failed before changing anything, runs once more on a new one.
        if error.connectionLost, !reconnected {
          current.close()
          connection = nil
          reconnected = true
          continue
        }
        throw error.storeError(location: target.display)
      }
    }
  }

  func close() {
    closed.store(true, ordering: .releasing)
    for slot in slots { slot.close() }
  }
}

/// How a PostgreSQL store connects, beyond the backend-independent ``StoreOptions``.
///
/// ```swift
/// let configuration = PostgresStoreConfiguration(schema: "catalogue", poolSize: 8, statementTimeout: .seconds(30))
/// ```
public struct PostgresStoreConfiguration: Sendable, Hashable {
  /// The schema used when the location names none (`?schema=` in the URI).
  public var schema: String
  /// How many connections a store keeps, so contexts on several queues do not wait for one another.
  public var poolSize: Int
  /// The longest a statement may run before the server cancels it (`statement_timeout`); `nil`: no limit.
  public var statementTimeout: Duration?
  /// The longest a statement waits for a lock (`lock_timeout`); `nil`: no limit.
  public var lockTimeout: Duration?
  /// The `application_name` the server shows for the store's connections when the URI gives none (an
  /// `application_name=` query item, or `PGAPPNAME`, wins: it is passed to libpq as
  /// `fallback_application_name`).
  ///
  /// ```swift
  /// let configuration = PostgresStoreConfiguration(applicationName: "catalogue-web")
  /// print(configuration.applicationName)
  /// // pg_stat_activity shows, for postgresql:///catalogue                   catalogue-web
  /// //                      for postgresql:///catalogue?application_name=w2  w2
  /// ```
  public var applicationName: String
  /// How many times a write is run again after the server reports a serialization failure (SQLSTATE
  /// 40001) or a deadlock (40P01) before the error is reported.
  public var retryLimit: Int

  public init(
    schema: String = "strata", poolSize: Int = 4, statementTimeout: Duration? = nil, lockTimeout: Duration? = nil,
    applicationName: String = "strata", retryLimit: Int = 3
  ) {
    self.retryLimit = max(0, retryLimit)
    self.schema = schema
    self.poolSize = poolSize
    self.statementTimeout = statementTimeout
    self.lockTimeout = lockTimeout
    self.applicationName = applicationName
  }

  var sessionSettings: [String: String] {
    func milliseconds(_ duration: Duration) -> String {
      let (seconds, attoseconds) = duration.components
      return String(max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }
    var settings: [String: String] = [:]
    if let statementTimeout { settings["statement_timeout"] = milliseconds(statementTimeout) }
    if let lockTimeout { settings["lock_timeout"] = milliseconds(lockTimeout) }
    return settings
  }
}

/// Makes ``PostgresStore``s; put it in the ``StoreRegistry`` of containers and CLIs that may pick the
/// ``StoreType/postgres`` store type. The location is a libpq URI.
///
/// ```swift
/// let registry = StoreRegistry([PostgresStoreFactory(schema: "movies")])
/// let store = try registry.openStore(.postgres, at: URL(string: "postgresql:///strata"), model: model, options: .init())
/// ```
public struct PostgresStoreFactory: PersistentStoreFactory {
  /// ``StoreType/postgres``.
  public var storeType: StoreType { .postgres }
  /// Always `true`: a store lives at a server location.
  public var requiresLocation: Bool { true }
  public var configuration: PostgresStoreConfiguration

  /// A factory whose stores use `schema` unless their URI names one, with `poolSize` connections each.
  public init(schema: String = "strata", poolSize: Int = 4) {
    configuration = PostgresStoreConfiguration(schema: schema, poolSize: poolSize)
  }

  public init(configuration: PostgresStoreConfiguration) {
    self.configuration = configuration
  }

  /// Opens (or creates) the store at the URI `url`; see ``PostgresStore/init(url:model:options:configuration:)``.
  /// Wrapped in an `ExternalDataStore` only when the store keeps or may keep values out of its rows
  /// (`ExternalDataStore.wrappingIfNeeded(_:storage:requestedModel:)`).
  /// - Throws: `.misuse` when `url` is `nil`, and everything the store's initializer throws.
  public func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    guard let url else { throw StoreError(.misuse, "the postgres store needs a location (a postgresql:// URI)") }
    let store = try PostgresStore(url: url, model: model, options: options, configuration: configuration)
    return try ExternalDataStore.wrappingIfNeeded(store, storage: PostgresExternalData(store: store), requestedModel: model)
  }

  /// Whether `url` is a `postgresql://` or `postgres://` URI.
  public func recognizesStore(at url: URL) -> Bool {
    url.scheme == "postgresql" || url.scheme == "postgres"
  }

  /// Drops the store's schema (every table of the store) from the database.
  /// - Throws: `.io` when the server cannot be reached or refuses.
  public func destroyStore(at url: URL) throws {
    let target = try PostgresLocation(url: url, defaultSchema: configuration.schema)
    let connection = try target.connect(configuration: configuration)
    defer { connection.close() }
    do {
      try connection.execute("DROP SCHEMA IF EXISTS \(quoteIdentifier(target.schema)) CASCADE")
    } catch let error as PostgresError {
      throw error.storeError(location: target.display)
    }
  }
}
