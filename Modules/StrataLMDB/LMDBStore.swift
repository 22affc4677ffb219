import CLMDB
import Foundation
import StrataStoreKit
import Synchronization

/// A backend over LMDB: one environment directory, one named database per entity holding compact
/// binary records, secondary index databases for uniqueness constraints, indexed attributes and
/// relationships, and the model stored inside (see ``LMDBSchema`` for the layout). `mdb_stat -a DIR`
/// lists every database.
///
/// ```swift
/// let store = try LMDBStore(url: URL(fileURLWithPath: "/tmp/movies.lmdb"), model: model)
/// let result = try store.save(ChangeSet(inserted: [change]))
/// let movies = try store.fetch(FetchDescription(entityName: "Movie"), generation: nil)
/// store.close()
/// ```
///
/// Reads run in LMDB read transactions (MVCC snapshots: a read never waits for a write, and a pinned
/// query generation is simply a read transaction kept open). Saves run in one write transaction.
/// Several processes may open the same environment at once. The map starts at 64 MiB (or the
/// `mapSize` given, in bytes) and doubles whenever a write fills it; a save or batch insert of many
/// objects grows it beforehand to an estimate of what it writes.
///
/// Opening an existing store checks `data.mdb` before liblmdb follows anything in it: the meta pages
/// and the file's length, then every page reachable from the current state (``LMDBPageWalk``, one `pread`
/// per page), so a damaged or truncated file is `.corrupted` naming the page, never a crash.
public final class LMDBStore: PersistentStore {
  /// Always ``StoreType/lmdb``.
  public let storeType = StoreType.lmdb
  /// The `store_id` written into `strata.meta` when the environment was created.
  public let identifier: String
  /// The environment directory (standardized).
  public let url: URL?
  /// The model the store was opened with, equal to the stored model.
  public let model: ObjectModel
  public let options: StoreOptions
  let path: String
  let environment: LMDBEnvironment
  let schema: LMDBSchema
  /// What reads and writes in this store's transactions need besides the transaction.
  let scope: LMDBScope
  let broadcaster = ChangeBroadcaster()
  /// Serializes saves and their announcements, so changes are yielded in commit order.
  let saveLock = NSLock()
  let pinned = Locked<[UInt64: PinnedTransaction]>([:])
  let nextGeneration = Atomic<UInt64>(0)
  let closed = Atomic<Bool>(false)
  /// The thread running ``migrated(along:reporting:)`` (0 when none): a stage calling this store from
  /// it is refused instead of waiting for the migration it is part of.
  let migratingThread = Atomic<UInt>(0)
  /// The last transaction ID this process has announced (its own commits or remote ones).
  let lastAnnounced = Locked<Int>(0)
  let remoteWatcher = RemoteCommitWatcher(name: "strata-lmdb-watch")

  /// Opens the environment in the directory `url`, creating it (and the directory) when there is none.
  ///
  /// ```swift
  /// let store = try LMDBStore(url: url, model: model)                           // create or open
  /// let tool = try LMDBStore(url: url, model: nil, options: .init(isReadOnly: true))  // stored model
  /// let small = try LMDBStore(url: url, model: model, mapSize: 1 << 20)
  /// ```
  ///
  /// - Parameter model: the app's model; an existing store must have been created with an equal one.
  ///   `nil` opens an existing store with the model stored inside it.
  /// - Throws: `.corrupted` when `url` is a file, or a directory that is not a Strata LMDB environment
  ///   or whose `data.mdb` is damaged (a meta page, its length, or a B-tree page; nothing in it is changed); `.schemaMismatch` when the stored model differs; `.notFound` when
  ///   there is no store and none can be created (`model` is `nil` or the store is read-only); `.io` when
  ///   the directory cannot be read or created or liblmdb refuses it; `.misuse` for a `mapSize` under
  ///   64 KiB.
  public init(
    url: URL, model: ObjectModel?, options: StoreOptions = StoreOptions(), mapSize: Int = LMDBStore.defaultMapSize
  ) throws {
    guard url.isFileURL else {
      throw StoreError(.unsupported, "the lmdb store needs a directory URL, not \(url.absoluteString)")
    }
    // Before anything follows or opens it: a FIFO blocks, a symbolic-link loop never resolves.
    try StorePath.check(url.standardizedFileURL.path, expecting: .directory, storeName: "a Strata LMDB store")
    let path = url.standardizedFileURL.resolvingSymlinksInPath().path
    try Self.checkMapSize(mapSize)
    let isNew = try Self.prepareDirectory(path, model: model, options: options)
    let lockFile = (path as NSString).appendingPathComponent("lock.mdb")
    let hadLockFile = FileManager.default.fileExists(atPath: lockFile)
    if !options.isReadOnly { try LMDBDataFile.reserveSpace(directory: path, isNew: isNew) }
    let environment: LMDBEnvironment
    let opened: (identifier: String, model: ObjectModel, schema: LMDBSchema)
    let databases = UInt32(model.map { LMDBSchema.databases(for: $0).count } ?? 0)
    do {
      // The stored model may need more databases than the given one: leave room (handles are cheap).
      environment = try LMDBEnvironment.acquire(
        path: path, maxDatabases: max(databases, 64) * 2, mapSize: mapSize, isReadOnly: options.isReadOnly)
    } catch let error as LMDBError {
      throw error.storeError(path: path)
    }
    do {
      if !isNew { try Self.checkPages(environment, path: path, recordsValidation: !options.isReadOnly) }
      opened = try Self.openSchema(environment, path: path, model: model, options: options)
    } catch {
      // Leave a directory that is not ours as it was: remove the lock file liblmdb just made.
      if environment.release(), !hadLockFile, !isNew { try? FileManager.default.removeItem(atPath: lockFile) }
      if let error = error as? LMDBError { throw error.storeError(path: path) }
      throw error
    }
    self.url = url.standardizedFileURL
    self.path = path
    self.options = options
    self.environment = environment
    self.identifier = opened.identifier
    self.model = opened.model
    self.schema = opened.schema
    scope = LMDBScope(schema: opened.schema, storeIdentifier: opened.identifier, maxKeySize: environment.maxKeySize)
    lastAnnounced.withLock { $0 = environment.lastTransactionID() ?? 0 }
  }

  deinit {
    if !closed.load(ordering: .acquiring) { environment.release() }
    broadcaster.finish()
  }

  // MARK: Opening

  /// The map size a new environment starts with (64 MiB) unless one is given; it doubles whenever a
  /// write fills it.
  public static let defaultMapSize = LMDBEnvironment.defaultMapSize

  private static func checkMapSize(_ mapSize: Int) throws {
    guard mapSize >= 65_536 else {
      throw StoreError(
        .misuse, "the lmdb map size must be at least 65536 bytes, not \(mapSize)", key: "mapSize",
        value: .int(Int64(mapSize)))
    }
  }

  /// Checks what is at `path` before liblmdb touches it (``LMDBDataFile/check(directory:)``: the meta
  /// pages and the length of `data.mdb`); creates the directory for a new store.
  /// - Returns: whether the store is new (the directory was missing or empty, or its `data.mdb` empty).
  private static func prepareDirectory(_ path: String, model: ObjectModel?, options: StoreOptions) throws -> Bool {
    let files = FileManager.default
    let notStrata = "\(path) is not a Strata LMDB store"
    if try StorePath.check(path, expecting: .directory, storeName: "a Strata LMDB store") {
      for name in ["data.mdb", "lock.mdb"] {
        try StorePath.check((path as NSString).appendingPathComponent(name), expecting: .file, storeName: "an LMDB file")
      }
      let contents: [String]
      do {
        contents = try files.contentsOfDirectory(atPath: path)
      } catch {
        throw StoreError(.io, "cannot read the directory \(path): \(error.localizedDescription)")
      }
      if contents.contains("data.mdb") {
        switch try LMDBDataFile.check(directory: path) {
        case .valid: return false
        case .new: break
        case .partialHeader:
          guard model != nil, !options.isReadOnly else { break }
          let data = (path as NSString).appendingPathComponent("data.mdb")
          guard truncate(data, 0) == 0 else {
            throw StoreError(.io, "cannot reset the unfinished \(data): \(String(cString: strerror(errno)))")
          }
        }
      }
      guard contents.filter({ $0 != "lock.mdb" && $0 != "data.mdb" && !$0.hasPrefix(".") }).isEmpty else {
        throw StoreError(.corrupted, "\(notStrata) (it holds other files and no data.mdb)")
      }
    }
    guard model != nil else {
      throw StoreError(.notFound, "there is no store at \(path) (open it with a model to create one)")
    }
    guard !options.isReadOnly else { throw StoreError(.notFound, "there is no store at \(path) to open read-only") }
    do {
      try files.createDirectory(atPath: path, withIntermediateDirectories: true)
    } catch {
      throw StoreError(.io, "cannot create the directory \(path) for the store: \(error.localizedDescription)")
    }
    return true
  }

  /// Walks every B-tree page of the current state before liblmdb reads any of them
  /// (``LMDBDataFile/checkPages(directory:transactionID:)``), inside a read transaction so that no writer
  /// reuses the pages meanwhile. When writers of other processes commit so fast that the transaction's
  /// meta page is overwritten before it is read, eight times in a row, the store opens unchecked.
  ///
  /// A file in the state Strata last walked it or left it at a clean close (``LMDBValidationMarker``) is not
  /// walked again; a writable store records the state it walked.
  private static func checkPages(_ environment: LMDBEnvironment, path: String, recordsValidation: Bool) throws {
    if LMDBValidationMarker.isValidated(directory: path) { return }
    for _ in 0..<8 {
      var walked: UInt64 = 0
      let checked = try environment.read { txn in
        // A transaction ID is a 64-bit unsigned number; liblmdb hands it back as a signed `size_t`.
        walked = UInt64(truncatingIfNeeded: mdb_txn_id(txn.txn))
        return try LMDBDataFile.checkPages(directory: path, transactionID: walked)
      }
      if checked != nil {
        if recordsValidation { LMDBValidationMarker.record(directory: path, at: walked) }
        return
      }
    }
  }

  private static func openSchema(
    _ environment: LMDBEnvironment, path: String, model: ObjectModel?, options: StoreOptions
  ) throws -> (identifier: String, model: ObjectModel, schema: LMDBSchema) {
    let notStrata = "\(path) is not a Strata LMDB store"
    switch try environment.read(keepingOpen: false, { try creationState($0) }) {
    case .foreign(let reason):
      throw StoreError(.corrupted, "\(notStrata) (\(reason))")
    case .unfinished:
      guard let model, !options.isReadOnly else {
        throw StoreError(
          .notFound,
          "there is no store at \(path) yet (it is an empty LMDB environment; open it with a model to create the store)")
      }
      if case .foreign(let reason) = try create(environment, model: model) {
        throw StoreError(.corrupted, "\(notStrata) (\(reason))")
      }
    case .store:
      break
    }
    let metaHandle = try environment.openDatabases([(LMDBSchema.metaName, false)], create: false)
    guard let meta = metaHandle[LMDBSchema.metaName] else {
      throw StoreError(.corrupted, "\(notStrata) (it has no \(LMDBSchema.metaName) database)")
    }
    let metadata = try environment.read { txn -> [String: String] in
      var values: [String: String] = [:]
      for key in ["format", "store_id", "model", "model_fingerprint"] {
        values[key] = try txn.get(meta, Array(key.utf8)) { $0.map { String(decoding: $0, as: UTF8.self) } }
      }
      return values
    }
    guard metadata["format"] == LMDBSchema.format else {
      let found = metadata["format"].map { "format '\($0)'" } ?? "no format"
      throw StoreError(.corrupted, "\(notStrata) (its metadata has \(found), expected '\(LMDBSchema.format)')")
    }
    guard let identifier = metadata["store_id"], !identifier.isEmpty, let json = metadata["model"] else {
      throw StoreError(.corrupted, "\(path) is a damaged Strata LMDB store (its metadata has no store_id or model)")
    }
    let stored: ObjectModel
    do {
      stored = try ObjectModel.decode(jsonData: Data(json.utf8))
    } catch let error as StoreError {
      throw StoreError(.corrupted, "\(path): \(error.message)")
    }
    let storedFingerprint = metadata["model_fingerprint"] ?? stored.fingerprint
    if let model, model.fingerprint != storedFingerprint {
      throw StoreError.modelMismatch(path, stored: stored, storedFingerprint: storedFingerprint, given: model)
    }
    let effective = model ?? stored
    let names = LMDBSchema.databases(for: effective)
    let handles = try environment.openDatabases(names, create: !options.isReadOnly)
    do {
      var schema = try LMDBSchema(model: effective, handles: handles, storeIdentifier: identifier)
      schema.history = try openHistory(environment, schema: schema, options: options)
      return (identifier, effective, schema)
    } catch let error as StoreError {
      throw StoreError(.corrupted, "\(path) is a damaged Strata LMDB store (\(error.message))")
    }
  }

  /// Opens `strata.history`, creating it when history is on. When history is off and the store recorded
  /// some before, that history is dropped and every token issued expires (``LMDBHistory/expireAll(_:_:_:)``).
  private static func openHistory(
    _ environment: LMDBEnvironment, schema: LMDBSchema, options: StoreOptions
  ) throws
    -> MDB_dbi?
  {
    let writable = !options.isReadOnly
    let handles = try environment.openDatabases(
      [(LMDBHistory.databaseName, false)], create: writable && options.tracksHistory)
    guard let history = handles[LMDBHistory.databaseName] else { return nil }
    if writable && !options.tracksHistory {
      try environment.write { txn in try LMDBHistory.expireAll(txn, schema, history) }
    }
    return history
  }

  /// What an environment holds, as far as creating a store in it goes.
  enum CreationState {
    /// `strata.meta` has contents: a store, whole or damaged (the metadata tells).
    case store
    /// Every named database is empty and `strata.meta` is missing or empty: nothing but a creation
    /// that did not finish, which the next open with a model completes.
    case unfinished
    /// Data without Strata metadata: not a Strata store.
    case foreign(String)
  }

  /// Reads the main database's list of named databases and how many entries each holds.
  static func creationState(_ txn: LMDBTransaction) throws -> CreationState {
    var main: MDB_dbi = 0
    try check(mdb_dbi_open(txn.txn, nil, 0, &main), "mdb_dbi_open(main)")
    let names = try txn.withCursor(main) { cursor -> [[UInt8]] in
      var names: [[UInt8]] = []
      var entry = try cursor.next(.first)
      while let current = entry {
        names.append(Array(current.key))
        entry = try cursor.next(.next)
      }
      return names
    }
    var holding: String?
    for bytes in names {
      guard !bytes.contains(0), let name = String(validating: bytes, as: UTF8.self) else {
        return .foreign("its main database holds data")
      }
      var dbi: MDB_dbi = 0
      let rc = mdb_dbi_open(txn.txn, name, 0, &dbi)
      if rc == MDB_INCOMPATIBLE { return .foreign("its main database holds data") }
      try check(rc, "mdb_dbi_open(\(name))")
      let entries = try txn.entries(dbi)
      if name == LMDBSchema.metaName && entries > 0 { return .store }
      if entries > 0 && holding == nil { holding = name }
    }
    if let holding {
      return .foreign("it has no \(LMDBSchema.metaName) contents, yet its database \(holding) holds data")
    }
    return .unfinished
  }

  /// Creates every database and writes the metadata in one write transaction that first checks the
  /// environment is still unfinished (another process may have created the store meanwhile).
  /// - Returns: the state found inside the transaction: `.unfinished` when this call created the store.
  private static func create(_ environment: LMDBEnvironment, model: ObjectModel) throws -> CreationState {
    let names = LMDBSchema.databases(for: model)
    let json = String(decoding: try model.jsonData(), as: UTF8.self)
    return try environment.write { txn -> CreationState in
      let state = try creationState(txn)
      guard case .unfinished = state else { return state }
      var meta: MDB_dbi?
      for (name, isDuplicateSorted) in names {
        var dbi: MDB_dbi = 0
        let flags = UInt32(MDB_CREATE) | (isDuplicateSorted ? UInt32(MDB_DUPSORT) : 0)
        try check(mdb_dbi_open(txn.txn, name, flags, &dbi), "mdb_dbi_open(\(name))")
        if name == LMDBSchema.metaName { meta = dbi }
      }
      guard let meta else { throw LMDBError(EINVAL, "mdb_dbi_open(\(LMDBSchema.metaName))") }
      let metadata: [(String, String)] = [
        ("format", LMDBSchema.format), ("store_id", UUID().uuidString), ("model", json),
        ("model_fingerprint", model.fingerprint), ("created_at", ISO8601DateFormatter().string(from: Date())),
      ]
      for (key, value) in metadata { _ = try txn.put(meta, Array(key.utf8), Array(value.utf8)) }
      return state
    }
  }

  // MARK: Transactions

  /// Throws `.misuse` when the store is closed, or when a stage of its migration calls it. Inlined into
  /// every call: the common case is two loads, the errors are made out of line.
  @inline(__always)
  func checkOpen() throws {
    if closed.load(ordering: .acquiring) || migratingThread.load(ordering: .acquiring) != 0 { try checkOpenOutOfLine() }
  }

  @inline(never)
  private func checkOpenOutOfLine() throws {
    if closed.load(ordering: .acquiring) { throw StoreError(.misuse, "the store \(path) is closed") }
    try checkNotMigrating()
  }

  /// Runs `body` in a read transaction: the pinned one of `generation`, else a new one.
  func read<R>(generation: QueryGeneration?, _ body: (LMDBTransaction) throws -> R) throws -> R {
    try checkOpen()
    do {
      if let generation { return try pinnedTransaction(generation).withTransaction(environment, body) }
      return try environment.read(body)
    } catch let error as LMDBError {
      throw error.storeError(path: path)
    }
  }

  /// Releases the environment. Pinned generations end and streams from ``changes()`` finish.
  /// Further calls throw `.misuse`. A migration stage's call (from the thread migrating the store) is
  /// ignored: the migration closes the store when it succeeds.
  public func close() {
    if migratingThread.load(ordering: .acquiring) == Self.currentThread { return }
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let all = pinned.withLock { pinned in
      defer { pinned.removeAll() }
      return Array(pinned.values)
    }
    for transaction in all { transaction.end(environment) }
    environment.release()
    // What this store wrote, liblmdb wrote: the next open need not walk the file while it stays so.
    if !options.isReadOnly { LMDBValidationMarker.record(directory: path) }
    broadcaster.finish()
  }
}

/// A read transaction kept open for a pinned query generation, used by one thread at a time.
final class PinnedTransaction: @unchecked Sendable {
  private let lock = NSLock()
  private var txn: OpaquePointer?

  init(_ txn: OpaquePointer) { self.txn = txn }

  func withTransaction<R>(_ environment: LMDBEnvironment, _ body: (LMDBTransaction) throws -> R) throws -> R {
    lock.lock()
    defer { lock.unlock() }
    guard let txn else { throw StoreError(.misuse, "the query generation was unpinned") }
    return try environment.withPinned(txn, body)
  }

  func end(_ environment: LMDBEnvironment) {
    lock.lock()
    defer { lock.unlock() }
    if let txn { environment.endPinned(txn) }
    txn = nil
  }
}

/// Makes ``LMDBStore``s; put it in the ``StoreRegistry`` of containers and CLIs that may pick the
/// ``StoreType/lmdb`` store type.
///
/// ```swift
/// let registry = StoreRegistry([LMDBStoreFactory(mapSize: 1 << 30)])
/// let store = try registry.openStore(.lmdb, at: URL(fileURLWithPath: "movies.lmdb"), model: model, options: .init())
/// ```
public struct LMDBStoreFactory: PersistentStoreFactory {
  /// ``StoreType/lmdb``.
  public var storeType: StoreType { .lmdb }
  /// Always `true`: an LMDB store lives in a directory.
  public var requiresLocation: Bool { true }
  /// The map size, in bytes, a new environment starts with (it doubles whenever a write fills it).
  public var mapSize: Int

  /// A factory whose new environments start with a map of `mapSize` bytes (at least 64 KiB).
  public init(mapSize: Int = LMDBStore.defaultMapSize) {
    self.mapSize = mapSize
  }

  /// Opens (or creates) the store in the directory `url`; see ``LMDBStore/init(url:model:options:mapSize:)``.
  /// Wrapped in an `ExternalDataStore` only when the store keeps or may keep values out of its rows
  /// (`ExternalDataStore.wrappingIfNeeded(_:storage:requestedModel:)`).
  /// - Throws: `.misuse` when `url` is `nil`, and everything ``LMDBStore/init(url:model:options:mapSize:)`` throws.
  public func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    guard let url else { throw StoreError(.misuse, "the lmdb store needs a directory location") }
    return try ExternalDataStore.wrappingIfNeeded(
      LMDBStore(url: url, model: model, options: options, mapSize: mapSize), storage: ExternalDataDirectory(beside: url),
      requestedModel: model)
  }

  /// Whether `url` is a directory holding an LMDB environment's `data.mdb`.
  public func recognizesStore(at url: URL) -> Bool {
    let path = url.standardizedFileURL.path
    return StorePath.kind(of: path) == .directory
      && StorePath.kind(of: (path as NSString).appendingPathComponent("data.mdb")) == .file
  }

  /// Deletes the environment's `data.mdb` and `lock.mdb`, then the directory when that leaves it empty, and
  /// the `<directory>_SUPPORT` directory of its externally stored values.
  /// A missing store is not an error.
  /// - Throws: `.io` when a file exists but cannot be removed.
  public func destroyStore(at url: URL) throws {
    let path = url.standardizedFileURL.path
    let files = FileManager.default
    for name in ["data.mdb", "lock.mdb"] {
      let file = (path as NSString).appendingPathComponent(name)
      guard files.fileExists(atPath: file) else { continue }
      do {
        try files.removeItem(atPath: file)
      } catch {
        throw StoreError(.io, "cannot delete \(file): \(error.localizedDescription)")
      }
    }
    if (try? files.contentsOfDirectory(atPath: path))?.isEmpty == true { try? files.removeItem(atPath: path) }
    try ExternalDataDirectory.destroy(beside: url)
  }
}
