import CLMDB
import Foundation
import StrataStoreKit
import Synchronization

/// An open liblmdb environment and the rules for using it from many threads and processes.
///
/// - Every transaction runs inside the *gate*, shared; growing the map takes the gate exclusively, so
///   `mdb_env_set_mapsize` runs while no transaction of this process is in flight (liblmdb's rule).
///   Pinned read transactions stay open across calls but hold no cursor between them: liblmdb reaches
///   pages through the environment's current map, so they survive a remap.
/// - Write transactions of this process are serialized by `writeLock` (liblmdb serializes processes).
/// - A read leaves its transaction open as the *current reader*; the next read reuses it only while its
///   snapshot is still the last commit of any process (`mdb_env_info`), so a read never sees less than a
///   new transaction would. It is reset after this process writes and within 50 ms of being kept.
/// - `MDB_MAP_FULL` aborts the write, doubles the map and retries it; `MDB_MAP_RESIZED` (another process
///   grew the map) adopts the new size and retries. Neither reaches the caller.
final class LMDBEnvironment: @unchecked Sendable {
  let env: OpaquePointer
  let path: String
  let isReadOnly: Bool
  /// The longest key liblmdb accepts (index keys longer than this are truncated).
  let maxKeySize: Int
  private let gate = ResizeGate()
  private let writeLock = NSLock()
  /// Set under the exclusive gate, read under the shared gate: no transaction starts after `close()`.
  private var isClosed = false
  /// Read transactions ended with `mdb_txn_reset`, renewed by the next reads instead of beginning new
  /// ones: `mdb_txn_begin` allocates and clears a transaction (sized by the named databases) each time,
  /// a third of firing one fault. A reset transaction pins no pages; `NOTLS` lets any thread renew it.
  private let idleReaders = Locked<[UInt]>([])
  private static let idleReaderLimit = 4
  /// The read transaction the last read left open (not reset), reused by the next read while it is still
  /// on the latest commit of any process (its ID is the environment's last transaction ID): consecutive
  /// reads — a fault after a fault — then cost no renewal, like a loop of `mdb_get`s in one transaction.
  /// A read that finds a commit since renews it. It is released (reset) after every write of this process
  /// and at most ``currentReaderLifetime`` after it was kept, so an idle process pins the pages of an old
  /// commit for that long at most. A transaction that opened database handles is never kept (resetting
  /// it closes them), and one that began before handles were opened elsewhere is not reused (it does not
  /// know them): opening handles moves ``readerEpoch`` on.
  ///
  /// One word, taken with an atomic exchange and kept with a compare-and-exchange (no lock on a read's
  /// path): the transaction's address in the low 48 bits, the low 16 bits of the epoch it began or was
  /// renewed in above them (``CurrentReader``); 0 while none is kept or a read uses it.
  private let currentReader = Atomic<UInt>(0)
  /// Moves on whenever database handles may have been opened (every write, ``openDatabases(_:create:)``):
  /// a transaction of an earlier epoch is not reused without renewal, nor kept.
  private let readerEpoch = Atomic<UInt>(0)
  /// Whether a release ``currentReaderLifetime`` from now is scheduled.
  private let releaseScheduled = Atomic<Bool>(false)
  static let currentReaderLifetime = DispatchTimeInterval.milliseconds(50)

  /// How the current reader's word packs a transaction and its epoch.
  private enum CurrentReader {
    static let addressBits = 48
    static let addressMask: UInt = (1 << addressBits) - 1

    /// The word for `txn` of `epoch`; `nil` for an address above 48 bits (such a transaction is not kept).
    static func word(_ txn: OpaquePointer, epoch: UInt) -> UInt? {
      let address = UInt(bitPattern: txn)
      guard address & ~addressMask == 0 else { return nil }
      return address | epoch << addressBits
    }

    static func transaction(_ word: UInt) -> OpaquePointer? { OpaquePointer(bitPattern: word & addressMask) }
    static func epoch(_ word: UInt) -> UInt { word >> addressBits }
    /// `epoch` as a word stores it.
    static func stored(_ epoch: UInt) -> UInt { epoch & (UInt.max >> addressBits) }
  }

  /// The environments open in this process, by directory, with how many stores use each. liblmdb
  /// forbids opening one environment twice in a process (its POSIX locks are per process: a second
  /// handle would reset the lock file under the first), so stores at one path share one environment.
  private static let open = Locked<[String: (environment: LMDBEnvironment, users: Int)]>([:])

  /// The environment at `path`, opened now or shared with the stores of this process already using it.
  /// Release it with ``release()``.
  /// - Throws: `.misuse` when a read-write store asks for an environment this process has open read-only.
  static func acquire(path: String, maxDatabases: UInt32, mapSize: Int, isReadOnly: Bool) throws -> LMDBEnvironment {
    try open.withLock { open throws -> LMDBEnvironment in
      if let entry = open[path] {
        guard !entry.environment.isReadOnly || isReadOnly else {
          throw StoreError(.misuse, "the LMDB store \(path) is already open read-only in this process; close it first to write")
        }
        open[path] = (entry.environment, entry.users + 1)
        return entry.environment
      }
      let environment = try LMDBEnvironment(path: path, maxDatabases: maxDatabases, mapSize: mapSize, isReadOnly: isReadOnly)
      open[path] = (environment, 1)
      return environment
    }
  }

  /// How many stores of this process use the environment.
  var users: Int {
    Self.open.withLock { open in open[path].map { $0.environment === self ? $0.users : 0 } ?? 0 }
  }

  /// Gives up one store's use of the environment; the last one closes it.
  /// - Returns: whether the environment was closed.
  @discardableResult
  func release() -> Bool {
    let isLast = Self.open.withLock { open -> Bool in
      guard let entry = open[path], entry.environment === self else { return true }
      if entry.users > 1 {
        open[path] = (self, entry.users - 1)
        return false
      }
      open[path] = nil
      return true
    }
    if isLast { close() }
    return isLast
  }

  /// The map size a new environment starts with, unless its factory gives another.
  static let defaultMapSize = 64 << 20
  /// Named databases an environment may hold beyond those a model needs.
  static let spareDatabases: UInt32 = 8

  /// Opens (creating the files when `isReadOnly` is false) the environment in the directory `path`.
  private init(path: String, maxDatabases: UInt32, mapSize: Int, isReadOnly: Bool) throws {
    var created: OpaquePointer?
    try check(mdb_env_create(&created), "mdb_env_create")
    guard let env = created else { throw LMDBError(ENOMEM, "mdb_env_create") }
    do {
      try check(mdb_env_set_maxdbs(env, maxDatabases + Self.spareDatabases), "mdb_env_set_maxdbs")
      try check(mdb_env_set_maxreaders(env, 254), "mdb_env_set_maxreaders")
      // A size smaller than the file's is raised by liblmdb to the file's size.
      try check(mdb_env_set_mapsize(env, mapSize), "mdb_env_set_mapsize")
      // NOTLS: read transactions are not bound to threads (pinned generations move between them).
      // NOMETASYNC: like SQLite's synchronous=NORMAL, a crash may lose the last commit, never integrity.
      var flags = UInt32(MDB_NOTLS | MDB_NOMETASYNC)
      if isReadOnly { flags |= UInt32(MDB_RDONLY) }
      // Where this process cannot write (read-only media, a directory it may not write to) the lock file
      // cannot be made or written: read without the lock table.
      if isReadOnly && ReadOnlyMedia.cannotWrite(path) { flags |= UInt32(MDB_NOLOCK) }
      try check(mdb_env_open(env, path, flags, 0o644), "mdb_env_open")
      // Slots of readers whose process died would pin old pages forever: clear them now.
      var dead: Int32 = 0
      try check(mdb_reader_check(env, &dead), "mdb_reader_check")
    } catch {
      mdb_env_close(env)
      throw error
    }
    self.env = env
    self.path = path
    self.isReadOnly = isReadOnly
    self.maxKeySize = Int(mdb_env_get_maxkeysize(env))
    // Scans find their environment through the transaction (``MapReadTally``); it outlives them.
    mdb_env_set_userctx(env, Unmanaged.passUnretained(self).toOpaque())
  }

  deinit {
    guard !isClosed else { return }
    if let txn = CurrentReader.transaction(currentReader.load(ordering: .sequentiallyConsistent)) { mdb_txn_abort(txn) }
    for txn in idleReaders.withLock({ $0 }) { mdb_txn_abort(OpaquePointer(bitPattern: txn)) }
    mdb_env_close(env)
  }

  /// Closes the environment once every transaction in flight has ended. The store ends its pinned
  /// transactions first; later transactions throw `.misuse`.
  private func close() {
    gate.exclusive {
      guard !isClosed else { return }
      isClosed = true
      if let txn = CurrentReader.transaction(currentReader.exchange(0, ordering: .sequentiallyConsistent)) { mdb_txn_abort(txn) }
      for txn in idleReaders.withLock({ readers in
        defer { readers.removeAll() }; return readers
      }) {
        mdb_txn_abort(OpaquePointer(bitPattern: txn))
      }
      mdb_env_close(env)
    }
  }

  @inline(__always)
  private func checkOpen() throws {
    if isClosed { throw closedError() }
  }

  @inline(never)
  private func closedError() -> StoreError { StoreError(.misuse, "the LMDB store \(path) is closed") }

  /// The current map size in bytes.
  var mapSize: Int {
    var info = MDB_envinfo()
    mdb_env_info(env, &info)
    return info.me_mapsize
  }

  /// The ID of the last transaction committed by any process; `nil` once closed.
  func lastTransactionID() -> Int? {
    gate.concurrently { () -> Int? in
      guard !isClosed else { return nil }
      var info = MDB_envinfo()
      mdb_env_info(env, &info)
      return info.me_last_txnid
    }
  }

  // MARK: Opening databases

  /// Opens named databases in one transaction (a write transaction when `create`, which creates the
  /// missing ones) and returns the handles of those that exist. Called while the store opens, before any
  /// other transaction of this environment.
  func openDatabases(_ names: [(name: String, isDuplicateSorted: Bool)], create: Bool) throws -> [String: MDB_dbi] {
    try gate.concurrently { () throws -> [String: MDB_dbi] in
      try checkOpen()
      var txn: OpaquePointer?
      try check(mdb_txn_begin(env, nil, create ? 0 : UInt32(MDB_RDONLY), &txn), "mdb_txn_begin (open databases)")
      guard let txn else { throw LMDBError(EINVAL, "mdb_txn_begin") }
      var handles: [String: MDB_dbi] = [:]
      for (name, isDuplicateSorted) in names {
        var flags = isDuplicateSorted ? UInt32(MDB_DUPSORT) : 0
        if create { flags |= UInt32(MDB_CREATE) }
        var dbi: MDB_dbi = 0
        let rc = mdb_dbi_open(txn, name, flags, &dbi)
        if rc == MDB_NOTFOUND { continue }
        if rc != MDB_SUCCESS {
          mdb_txn_abort(txn)
          throw LMDBError(rc, "mdb_dbi_open(\(name))")
        }
        handles[name] = dbi
      }
      // Committing (even a read transaction) keeps the handles open for every later transaction.
      try check(mdb_txn_commit(txn), "mdb_txn_commit (open databases)")
      releaseCurrentReader(rescheduling: false, inGate: true)
      return handles
    }
  }

  // MARK: Transactions

  /// Begins a transaction inside the shared gate and hands it to `body`, which ends it. When another
  /// process grew the map (`MDB_MAP_RESIZED`), adopts the new size outside the gate and begins again.
  private func withNewTransaction<R>(_ flags: Int32, _ body: (OpaquePointer) throws -> R) throws -> R {
    while true {
      let outcome: R? = try gate.concurrently { () throws -> R? in
        try checkOpen()
        var txn: OpaquePointer?
        let rc = mdb_txn_begin(env, nil, UInt32(flags), &txn)
        if rc == MDB_MAP_RESIZED { return nil }
        try check(rc, "mdb_txn_begin")
        guard let txn else { throw LMDBError(EINVAL, "mdb_txn_begin") }
        return try body(txn)
      }
      if let outcome { return outcome }
      try adoptGrownMap()
    }
  }

  /// Runs `body` in a read transaction on the latest committed state: the current reader when nothing
  /// committed since it began, else an idle one renewed, else a new one. Unless `keepingOpen` is false
  /// (for a `body` that opens database handles), the transaction is kept open afterwards as the current
  /// reader when there is none (see ``currentReader``).
  func read<R>(keepingOpen: Bool = true, _ body: (LMDBTransaction) throws -> R) throws -> R {
    let reused: R? = try gate.concurrently { () throws -> R? in
      try checkOpen()
      guard let (txn, epoch) = latestReader() else { return nil }
      return try run(body, in: txn, epoch: keepingOpen ? epoch : nil)
    }
    if let reused { return reused }
    let epoch = readerEpoch.load(ordering: .sequentiallyConsistent)
    return try withNewTransaction(MDB_RDONLY) { txn in try run(body, in: txn, epoch: keepingOpen ? epoch : nil) }
  }

  /// Runs a read's `body` in `txn`, then keeps `txn` as the current reader (when `epoch`, the epoch it
  /// began in, is still the current one) or ends it. A transaction a failed read used is never kept.
  @inline(__always)
  private func run<R>(_ body: (LMDBTransaction) throws -> R, in txn: OpaquePointer, epoch: UInt?) throws -> R {
    let result: R
    do {
      result = try body(LMDBTransaction(txn: txn))
    } catch {
      endRead(txn)
      throw error
    }
    if let epoch { keepCurrent(txn, epoch: epoch) } else { endRead(txn) }
    return result
  }

  /// A read transaction on the latest commit, with the epoch it began in: the current reader when its
  /// snapshot is still the last transaction committed by any process, else a reset one renewed; `nil`
  /// when there is none to renew.
  ///
  /// Inlined into every read, which usually reuses the current reader: the other cases are out of line, so
  /// that the fault path's code stays small.
  @inline(__always)
  private func latestReader() -> (OpaquePointer, UInt)? {
    let word = currentReader.exchange(0, ordering: .sequentiallyConsistent)
    // Read after taking the word and before any renewal: an epoch that moves on later stops the keeping.
    let epoch = readerEpoch.load(ordering: .sequentiallyConsistent)
    let taken = CurrentReader.transaction(word)
    if let txn = taken, CurrentReader.epoch(word) == CurrentReader.stored(epoch), isOnLastCommit(txn) { return (txn, epoch) }
    return renewedReader(taken, epoch: epoch)
  }

  /// Whether `txn` reads the last transaction committed by any process. The meta page is written before a
  /// commit returns, so a commit that happened before this call (in any process) shows here; one that races
  /// with it may be seen or not, as with a new transaction.
  @inline(__always)
  private func isOnLastCommit(_ txn: OpaquePointer) -> Bool {
    var info = MDB_envinfo()
    return mdb_env_info(env, &info) == MDB_SUCCESS && info.me_last_txnid == mdb_txn_id(txn)
  }

  /// ``latestReader()`` when the current reader, `taken`, is missing or outdated: `taken` renewed, else an
  /// idle transaction renewed, else `nil`.
  @inline(never)
  private func renewedReader(_ taken: OpaquePointer?, epoch: UInt) -> (OpaquePointer, UInt)? {
    if let txn = taken {
      mdb_txn_reset(txn)
      if mdb_txn_renew(txn) == MDB_SUCCESS { return (txn, epoch) }
      mdb_txn_abort(txn)
    }
    guard let idle = idleReaders.withLock({ $0.popLast() }), let txn = OpaquePointer(bitPattern: idle) else { return nil }
    guard mdb_txn_renew(txn) == MDB_SUCCESS else {
      // Another process grew the map, or the slot is gone: begin anew, which handles either.
      mdb_txn_abort(txn)
      return nil
    }
    return (txn, epoch)
  }

  /// Keeps `txn`, open, as the current reader when there is none and `epoch` is still the current one
  /// (and schedules its release), else ends it. Usually a release is scheduled and the epoch has not moved
  /// on, which two loads tell; the rest is out of line.
  @inline(__always)
  private func keepCurrent(_ txn: OpaquePointer, epoch: UInt) {
    guard let word = CurrentReader.word(txn, epoch: CurrentReader.stored(epoch)),
      currentReader.compareExchange(expected: 0, desired: word, ordering: .sequentiallyConsistent).exchanged
    else { return endRead(txn) }
    // A release clears the flag before it takes the word: a reader kept after that schedules the next.
    // A release clearing the flag after this load takes the word after `txn` was kept, so it ends `txn`
    // (or a later reader).
    if readerEpoch.load(ordering: .sequentiallyConsistent) == epoch && releaseScheduled.load(ordering: .sequentiallyConsistent) {
      return
    }
    settleKept(txn, word: word, epoch: epoch)
  }

  /// ``keepCurrent(_:epoch:)`` once `txn` is kept as `word`, when the epoch moved on or no release is
  /// scheduled.
  @inline(never)
  private func settleKept(_ txn: OpaquePointer, word: UInt, epoch: UInt) {
    // The epoch moved on since `txn` began (a write, handles opened): take it back unless a read or a
    // release took it meanwhile (both check the word's epoch).
    guard readerEpoch.load(ordering: .sequentiallyConsistent) == epoch else {
      if currentReader.compareExchange(expected: word, desired: 0, ordering: .sequentiallyConsistent).exchanged { endRead(txn) }
      return
    }
    guard !releaseScheduled.exchange(true, ordering: .sequentiallyConsistent) else { return }
    DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.currentReaderLifetime) { [weak self] in
      self?.releaseCurrentReader(rescheduling: true, inGate: false)
    }
  }

  /// Resets the current reader, if one is kept, so it pins no pages. `rescheduling` when the scheduled
  /// release runs (the next reader kept schedules another); otherwise the epoch moves on, so a read in
  /// flight does not keep its transaction either. `inGate` when the caller holds the gate.
  private func releaseCurrentReader(rescheduling: Bool, inGate: Bool) {
    func release() {
      if rescheduling {
        releaseScheduled.store(false, ordering: .sequentiallyConsistent)
      } else {
        readerEpoch.wrappingAdd(1, ordering: .sequentiallyConsistent)
      }
      let word = currentReader.exchange(0, ordering: .sequentiallyConsistent)
      guard !isClosed, let txn = CurrentReader.transaction(word) else { return }
      endRead(txn)
    }
    if inGate { release() } else { gate.concurrently(release) }
  }

  /// Ends a read transaction: reset and kept for the next read, or aborted past the limit.
  private func endRead(_ txn: OpaquePointer) {
    mdb_txn_reset(txn)
    let kept = idleReaders.withLock { readers -> Bool in
      guard readers.count < Self.idleReaderLimit else { return false }
      readers.append(UInt(bitPattern: txn))
      return true
    }
    if !kept { mdb_txn_abort(txn) }
  }

  /// Begins a read transaction kept open for a pinned query generation; end it with ``endPinned(_:)``.
  func beginPinned() throws -> OpaquePointer {
    try withNewTransaction(MDB_RDONLY) { $0 }
  }

  /// Runs `body` in a pinned read transaction. The caller keeps one thread at a time on it.
  func withPinned<R>(_ txn: OpaquePointer, _ body: (LMDBTransaction) throws -> R) throws -> R {
    try gate.concurrently {
      try checkOpen()
      return try body(LMDBTransaction(txn: txn))
    }
  }

  func endPinned(_ txn: OpaquePointer) {
    gate.concurrently { if !isClosed { mdb_txn_abort(txn) } }
  }

  /// Runs `body` in a write transaction and commits it. When the map fills up, the transaction is
  /// aborted, the map doubled and `body` run again from the start on a new transaction, so `body` must
  /// compute everything it writes from what it reads in the transaction.
  func write<R>(_ body: (LMDBTransaction) throws -> R) throws -> R {
    writeLock.lock()
    defer { writeLock.unlock() }
    while true {
      let outcome = try withNewTransaction(0) { txn -> Result<R, LMDBError> in
        let result: R
        do {
          result = try body(LMDBTransaction(txn: txn))
        } catch let error as LMDBError where error.isMapFull {
          mdb_txn_abort(txn)
          return .failure(error)
        } catch {
          mdb_txn_abort(txn)
          throw error
        }
        let committed = mdb_txn_commit(txn)  // frees the transaction whatever it returns
        if committed == MDB_MAP_FULL { return .failure(LMDBError(committed, "mdb_txn_commit")) }
        try check(committed, "mdb_txn_commit")
        return .success(result)
      }
      switch outcome {
      case .success(let result):
        // The current reader is on the commit before this one (and does not know handles the write
        // opened): reset it rather than pin that commit.
        releaseCurrentReader(rescheduling: false, inGate: false)
        return result
      case .failure: try growMap()
      }
    }
  }

  // MARK: Releasing the map's pages

  /// How many bytes of the map scans may read before this process releases the map's pages: a walk
  /// over a million records otherwise keeps every page it touched (~91 MiB at a million BenchItems)
  /// resident until the store closes.
  static let scannedBytesBeforeRelease = 32 << 20
  /// Bytes of the map scans read since its pages were last released.
  private let scannedBytes = Atomic<Int>(0)

  /// Counts `bytes` of the map read by a scan; past ``scannedBytesBeforeRelease`` since the last release,
  /// releases every page of the map from this process (`madvise(MADV_DONTNEED)`).
  ///
  /// Safe with liblmdb: the map is a read-only shared mapping of the data file (no `MDB_WRITEMAP`), so
  /// a released page stays in the page cache and the next read of it, by any thread, maps the file's
  /// same contents again (a minor fault). Called inside a transaction, so inside the shared gate: the
  /// map is not resized meanwhile.
  fileprivate func noteScanned(bytes: Int) {
    let total = scannedBytes.add(bytes, ordering: .relaxed).newValue
    guard total >= Self.scannedBytesBeforeRelease,
      scannedBytes.compareExchange(expected: total, desired: 0, ordering: .relaxed).exchanged
    else { return }
    // liblmdb reports the map's address only for a fixed map (`me_mapaddr`), so the mapping is found by
    // its file; a release is rare (once per 32 MiB read), so reading the list costs nothing that shows.
    for range in Self.sharedMappings(of: path + "/data.mdb") {
      _ = madvise(UnsafeMutableRawPointer(bitPattern: range.lowerBound), Int(range.upperBound - range.lowerBound), MADV_DONTNEED)
    }
  }

  /// The address ranges of this process's shared mappings of `file` (`/proc/self/maps`).
  static func sharedMappings(of file: String) -> [Range<UInt>] {
    guard let maps = readWhole("/proc/self/maps") else { return [] }
    var ranges: [Range<UInt>] = []
    for line in maps.split(separator: "\n") where line.hasSuffix(" " + file) {
      // `start-end perms offset device inode path`; a shared mapping's permissions end in `s`.
      let fields = line.split(separator: " ", maxSplits: 2)
      guard fields.count == 3, fields[1].hasSuffix("s") else { continue }
      let bounds = fields[0].split(separator: "-")
      guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), start < end
      else { continue }
      ranges.append(start..<end)
    }
    return ranges
  }

  /// The whole text of a file the kernel makes as it is read (`/proc`): such a file reports no size, and
  /// Foundation's readers stop after the first short read.
  static func readWhole(_ path: String) -> String? {
    let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { Glibc.close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      guard n >= 0 else { return nil }
      if n == 0 { break }
      bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  // MARK: Growing the map

  /// Doubles the map (no transaction of this process is in flight while it changes).
  private func growMap() throws {
    try gate.exclusive { () throws in
      try checkOpen()
      let current = mapSize
      let (doubled, overflow) = current.multipliedReportingOverflow(by: 2)
      guard !overflow else { throw LMDBError(MDB_MAP_FULL, "growing the map beyond \(current) bytes") }
      try check(mdb_env_set_mapsize(env, doubled), "mdb_env_set_mapsize(\(doubled))")
    }
  }

  /// Doubles the map, as a full one would be, until it has room for `extraBytes` beyond the pages in use,
  /// before a write known to need them (a migration): one resize instead of a write run again on each
  /// larger map. The file does not grow until pages are written.
  func reserve(extraBytes: Int) throws {
    try gate.exclusive { () throws in
      try checkOpen()
      var info = MDB_envinfo()
      try check(mdb_env_info(env, &info), "mdb_env_info")
      var stat = MDB_stat()
      try check(mdb_env_stat(env, &stat), "mdb_env_stat")
      let (used, overflow) = (info.me_last_pgno + 1).multipliedReportingOverflow(by: Int(stat.ms_psize))
      guard !overflow else { return }
      let needed = used.addingReportingOverflow(extraBytes)
      guard !needed.overflow else { return }
      var size = info.me_mapsize
      while size < needed.partialValue {
        let (doubled, overflow) = size.multipliedReportingOverflow(by: 2)
        guard !overflow else { return }
        size = doubled
      }
      if size > info.me_mapsize { try check(mdb_env_set_mapsize(env, size), "mdb_env_set_mapsize(\(size))") }
    }
  }

  /// Adopts the size another process gave the map (`MDB_MAP_RESIZED`).
  private func adoptGrownMap() throws {
    try gate.exclusive { () throws in
      try checkOpen()
      try check(mdb_env_set_mapsize(env, 0), "mdb_env_set_mapsize(0)")
    }
  }
}

/// A readers–writer gate that prefers the writer: shared holders are transactions, the exclusive
/// holder resizes the map.
///
/// Entering and leaving shared is one atomic operation each while no resize waits (the count of shared
/// holders and the resize's flag share one word); the mutex and condition are used only to wait: by a
/// resize for the holders to leave, by a holder for a resize to end. Every change of the flag and every
/// wake-up happens under the mutex, and a holder that leaves last while a resize waits takes the mutex to
/// wake it, so no wake-up is lost.
final class ResizeGate: @unchecked Sendable {
  /// The shared holders in the low bits; ``resizing`` while a resize waits for them or runs.
  private let state = Atomic<Int>(0)
  private static let resizing = 1 << 62
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(condition, nil)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
    condition.deallocate()
  }

  @inline(__always)
  func concurrently<R>(_ body: () throws -> R) rethrows -> R {
    enterShared()
    defer { leaveShared() }
    return try body()
  }

  @inline(__always)
  private func enterShared() {
    var current = state.load(ordering: .relaxed)
    while current & Self.resizing == 0 {
      let (entered, found) = state.compareExchange(expected: current, desired: current &+ 1, ordering: .acquiring)
      if entered { return }
      current = found
    }
    enterSharedAfterResize()
  }

  /// Waits for the resize in progress (or waiting) to end, then enters shared.
  @inline(never)
  private func enterSharedAfterResize() {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    while true {
      let current = state.load(ordering: .relaxed)
      if current & Self.resizing != 0 {
        pthread_cond_wait(condition, mutex)
      } else if state.compareExchange(expected: current, desired: current &+ 1, ordering: .acquiring).exchanged {
        return
      }
    }
  }

  @inline(__always)
  private func leaveShared() {
    // The last holder to leave while a resize waits wakes it.
    if state.subtract(1, ordering: .releasing).newValue == Self.resizing { wakeWaiters() }
  }

  @inline(never)
  private func wakeWaiters() {
    pthread_mutex_lock(mutex)
    pthread_cond_broadcast(condition)
    pthread_mutex_unlock(mutex)
  }

  /// Whether a resize is waiting for the shared holders or running (for tests).
  var resizeIsWaiting: Bool { state.load(ordering: .acquiring) & Self.resizing != 0 }

  func exclusive<R>(_ body: () throws -> R) rethrows -> R {
    pthread_mutex_lock(mutex)
    // One resize at a time: the flag is set and cleared under the mutex.
    while state.load(ordering: .relaxed) & Self.resizing != 0 { pthread_cond_wait(condition, mutex) }
    var holders = state.bitwiseOr(Self.resizing, ordering: .acquiring).oldValue
    while holders != 0 {
      pthread_cond_wait(condition, mutex)
      holders = state.load(ordering: .acquiring) & ~Self.resizing
    }
    pthread_mutex_unlock(mutex)
    defer {
      pthread_mutex_lock(mutex)
      state.bitwiseAnd(~Self.resizing, ordering: .releasing)
      pthread_cond_broadcast(condition)
      pthread_mutex_unlock(mutex)
    }
    return try body()
  }
}

/// Counts the bytes of the map a scan reads, handing them to the scan's environment every MiB and when
/// the scan ends (``LMDBEnvironment/noteScanned(bytes:)``), so a long walk does not keep every page it
/// read resident.
///
/// ```swift
/// var tally = MapReadTally(txn)
/// defer { tally.flush() }
/// while let (key, value) = entry { tally.add(key, value); … }
/// ```
struct MapReadTally {
  private let txn: OpaquePointer
  private var bytes = 0

  init(_ txn: LMDBTransaction) { self.txn = txn.txn }

  /// Counts one entry: its key, its value and liblmdb's node header.
  @inline(__always)
  mutating func add(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
    bytes &+= key.count &+ value.count &+ 8
    if bytes >= 1 << 20 { flush() }
  }

  /// Hands the bytes counted so far to the environment.
  mutating func flush() {
    guard bytes > 0 else { return }
    defer { bytes = 0 }
    guard let env = mdb_txn_env(txn), let context = mdb_env_get_userctx(env) else { return }
    Unmanaged<LMDBEnvironment>.fromOpaque(context).takeUnretainedValue().noteScanned(bytes: bytes)
  }
}
