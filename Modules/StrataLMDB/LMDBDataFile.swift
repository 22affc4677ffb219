import Foundation
import StrataStoreKit

/// What is checked on an environment's files before liblmdb maps them, so a damaged or truncated
/// `data.mdb` or a full disk gives an error instead of a signal.
///
/// liblmdb reaches every page through a read-only map of `data.mdb`; a page past the end of the file
/// raises `SIGBUS`. It writes its lock table through a shared map of `lock.mdb`, which it only
/// `ftruncate`s: on a full disk the first write into that sparse file raises `SIGBUS` too.
enum LMDBDataFile {
  /// One of the two meta pages at the start of `data.mdb` (page header, then `MDB_meta`).
  struct Meta: Equatable {
    var pageSize: Int
    var lastPage: UInt64
    var transactionID: UInt64
    /// Both databases are empty: a meta page as liblmdb writes it into a new environment.
    var isFresh: Bool
    /// The roots and depths of the free-list database and the main database (`mm_dbs`).
    var freeDatabase = Database(root: noPage, depth: 0)
    var mainDatabase = Database(root: noPage, depth: 0)
  }

  /// What a meta page says of one of its two databases (`md_root`, `md_depth`).
  struct Database: Equatable {
    var root: UInt64
    var depth: Int
  }

  /// What `data.mdb` holds, as far as creation is concerned.
  enum State: Equatable {
    /// No `data.mdb`, or an empty one: liblmdb writes the meta pages when it opens the environment.
    case new
    /// Only the first meta page of a new environment, whose creator ran out of space writing the
    /// second: no data, so the file may be emptied and the environment created again.
    case partialHeader
    /// Two valid meta pages and a file as long as the newer one says.
    case valid(Meta)
  }

  static let magic: UInt32 = 0xBEEF_C0DE
  static let dataVersion: UInt32 = 1
  /// `P_META` in the page header's flags.
  static let metaPageFlag: UInt16 = 0x08
  /// `PAGEHDRSZ`: the meta sits after the page header.
  static let pageHeaderSize = 16
  /// `sizeof(MDB_meta)` on a 64-bit system: magic, version, address, map size, two `MDB_db`s (48 bytes
  /// each), last page, transaction ID.
  static let metaSize = 136
  /// liblmdb's `P_INVALID`: the root of an empty database.
  static let noPage = UInt64.max

  /// The size liblmdb gives `lock.mdb` for 254 readers: `(254 − 1) × 64 + sizeof(MDB_txninfo)` (192).
  static let lockFileSize = 16_384

  /// Checks `data.mdb` in the directory `path` without mapping it.
  /// - Throws: `.corrupted` when the file is not an LMDB data file, a meta page is damaged, or the file
  ///   is shorter than its newer meta page says; `.io` when it cannot be read.
  static func check(directory path: String) throws -> State {
    let file = (path as NSString).appendingPathComponent("data.mdb")
    let notStrata = "\(path) is not a Strata LMDB store"
    // Another process may be writing a meta page while this one reads it — both meta pages of a new
    // environment, or one meta page of a commit — so look again before refusing the file.
    var attempt = 0
    while true {
      let descriptor = open(file, O_RDONLY | O_CLOEXEC)
      if descriptor < 0 {
        if errno == ENOENT { return .new }
        throw StoreError(.io, "cannot read \(file): \(String(cString: strerror(errno)))")
      }
      defer { close(descriptor) }
      var status = stat()
      guard fstat(descriptor, &status) == 0 else {
        throw StoreError(.io, "cannot read \(file): \(String(cString: strerror(errno)))")
      }
      let length = Int(status.st_size)
      if length == 0 { return .new }
      do {
        return try validate(descriptor, length: length, notStrata: notStrata)
      } catch {
        // A new environment's creator may take a while to write both pages; a commit writes one at once.
        let isNew = length < 2 * 4096
        if attempt < (isNew ? 5 : 2) {
          attempt += 1
          usleep(isNew ? 20_000 : 5_000)
          continue
        }
        guard isNew else { throw error }
        if let first = try? readMeta(descriptor, offset: 0), first.isFresh, first.transactionID == 0,
          first.lastPage == 1, length < 2 * first.pageSize
        {
          return .partialHeader
        }
        throw error
      }
    }
  }

  private static func validate(_ descriptor: Int32, length: Int, notStrata: String) throws -> State {
    guard let first = try readMeta(descriptor, offset: 0) else {
      throw StoreError(.corrupted, "\(notStrata) (its data.mdb does not start with a valid LMDB meta page)")
    }
    guard let second = try readMeta(descriptor, offset: first.pageSize), second.pageSize == first.pageSize else {
      throw StoreError(.corrupted, "\(notStrata) (the second meta page of its data.mdb is damaged or missing)")
    }
    let newer = second.transactionID > first.transactionID ? second : first
    let (pages, overflow) = newer.lastPage.addingReportingOverflow(1)
    let (needed, tooLarge) = pages.multipliedReportingOverflow(by: UInt64(newer.pageSize))
    guard !overflow, !tooLarge, needed <= UInt64(Int.max) else {
      throw StoreError(.corrupted, "\(notStrata) (the meta page of its data.mdb gives an impossible size)")
    }
    // The length was read before the meta pages: a commit of another process in between wrote its pages,
    // growing the file, before the meta page that now names them. Lengths only grow, so read it again.
    var status = stat()
    let current = fstat(descriptor, &status) == 0 ? max(length, Int(status.st_size)) : length
    guard UInt64(current) >= needed else {
      throw StoreError(
        .corrupted,
        "\(notStrata) (its data.mdb is shorter than its environment says: \(current) bytes, needs \(needed))")
    }
    return .valid(newer)
  }

  /// Walks every page reachable from the meta page of transaction `transactionID` (``LMDBPageWalk``),
  /// which the caller keeps from being reused by holding a read transaction on it.
  /// - Returns: the pages checked, or `nil` when neither meta page is that transaction's any more.
  /// - Throws: `.corrupted` naming the file and the damaged page; `.io` when the file cannot be read.
  static func checkPages(directory path: String, transactionID: UInt64) throws -> Int? {
    let file = (path as NSString).appendingPathComponent("data.mdb")
    let descriptor = open(file, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw StoreError(.io, "cannot read \(file): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    guard let first = try readMeta(descriptor, offset: 0),
      let meta = [first, try readMeta(descriptor, offset: first.pageSize)].compactMap({ $0 }).first(where: {
        $0.transactionID == transactionID
      })
    else { return nil }
    var status = stat()
    guard fstat(descriptor, &status) == 0, UInt64(status.st_size) >= (meta.lastPage + 1) * UInt64(meta.pageSize) else {
      throw StoreError(.corrupted, "\(file) is damaged: it is shorter than its environment says")
    }
    do {
      return try LMDBPageWalk.check(descriptor, meta: meta)
    } catch let damage as LMDBPageWalk.Damage {
      throw StoreError(.corrupted, "\(file) is damaged: \(damage.message)")
    }
  }

  /// The meta page at `offset`, or `nil` when it is missing or not a valid one.
  static func readMeta(_ descriptor: Int32, offset: Int) throws -> Meta? {
    var bytes = [UInt8](repeating: 0, count: pageHeaderSize + metaSize)
    let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
    guard count >= 0 else { throw StoreError(.io, "cannot read data.mdb: \(String(cString: strerror(errno)))") }
    guard count == bytes.count else { return nil }
    return bytes.withUnsafeBytes { page -> Meta? in
      func load<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T {
        T(littleEndian: page.loadUnaligned(fromByteOffset: offset, as: T.self))
      }
      let meta = pageHeaderSize
      guard load(10, as: UInt16.self) & metaPageFlag != 0,
        load(meta, as: UInt32.self) == magic,
        load(meta + 4, as: UInt32.self) == dataVersion
      else { return nil }
      // mm_dbs[FREE_DBI].md_pad holds the page size; the roots of the free and main databases follow.
      let pageSize = Int(load(meta + 24, as: UInt32.self))
      guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else { return nil }
      let lastPage = load(meta + 120, as: UInt64.self)
      guard lastPage >= 1 else { return nil }
      var isFresh = true
      var databases: [Database] = []
      for database in 0..<2 {
        let base = meta + 24 + database * 48
        let root = load(base + 40, as: UInt64.self)
        guard root == noPage || (root >= 2 && root <= lastPage) else { return nil }
        if root != noPage { isFresh = false }
        databases.append(Database(root: root, depth: Int(load(base + 6, as: UInt16.self))))
      }
      // The main database holds named databases only as plain keys: no flags of its own.
      guard load(meta + 24 + 48 + 4, as: UInt16.self) == 0 else { return nil }
      return Meta(
        pageSize: pageSize, lastPage: lastPage, transactionID: load(meta + 128, as: UInt64.self), isFresh: isFresh,
        freeDatabase: databases[0], mainDatabase: databases[1])
    }
  }

  /// Allocates `lock.mdb`'s blocks before liblmdb maps it, and checks a new environment has room for
  /// its first pages: on a full disk this is a clean `.io` instead of a `SIGBUS` inside liblmdb.
  /// - Throws: `.io` when the disk is full or the lock file cannot be created.
  static func reserveSpace(directory path: String, isNew: Bool) throws {
    if isNew {
      var info = statvfs()
      if statvfs(path, &info) == 0 {
        let free = UInt64(info.f_bavail) * UInt64(info.f_frsize)
        let needed = UInt64(lockFileSize + 16 * 4096)
        guard free >= needed else {
          throw StoreError(
            .io,
            "cannot create the LMDB store \(path): the disk is full (no space left on the device: \(free) bytes free, needs \(needed))"
          )
        }
      }
    }
    let lock = (path as NSString).appendingPathComponent("lock.mdb")
    let descriptor = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    // A lock file that cannot be opened for writing (a read-only store) is liblmdb's to handle.
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    var status = stat()
    let current = fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
    let rc = posix_fallocate(descriptor, 0, off_t(current > 0 ? current : lockFileSize))
    guard rc == 0 || rc == EOPNOTSUPP || rc == EINVAL else {
      if current == 0 { unlink(lock) }
      let verb = isNew ? "create" : "open"
      if rc == ENOSPC {
        throw StoreError(
          .io, "cannot \(verb) the LMDB store \(path): the disk is full (no space left on the device for lock.mdb)")
      }
      throw StoreError(.io, "cannot \(verb) the LMDB store \(path): \(String(cString: strerror(rc))) (allocating lock.mdb)")
    }
  }
}
