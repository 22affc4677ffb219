import CLMDB
import Foundation
import StrataStoreKit

/// A failed liblmdb call: its return code and what was being done.
struct LMDBError: Error, CustomStringConvertible {
  let code: Int32
  let operation: String

  init(_ code: Int32, _ operation: String) {
    self.code = code
    self.operation = operation
  }

  /// liblmdb's own text for the code (`MDB_MAP_FULL: Environment mapsize limit reached`, or an errno text).
  var message: String { mdb_strerror(code).map { String(cString: $0) } ?? "error \(code)" }

  var description: String { "\(operation): \(message)" }

  var isMapFull: Bool { code == MDB_MAP_FULL }
  var isMapResized: Bool { code == MDB_MAP_RESIZED }

  /// The ``StoreError`` a user sees for this failure of the environment at `path`.
  func storeError(path: String) -> StoreError {
    switch code {
    case MDB_INVALID, MDB_VERSION_MISMATCH:
      return StoreError(.corrupted, "\(path) is not a Strata LMDB store (\(message))")
    case MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_BAD_TXN, MDB_INCOMPATIBLE:
      return StoreError(.corrupted, "the LMDB store \(path) is damaged (\(operation): \(message))")
    case MDB_MAP_FULL:
      return StoreError(.io, "the LMDB store \(path) is full and its map cannot grow further (\(operation))")
    case MDB_READERS_FULL:
      return StoreError(
        .io, "the LMDB store \(path) has no free reader slot (too many open read transactions or processes; \(operation))")
    case EACCES, EROFS, EPERM:
      return StoreError(.io, "cannot access the LMDB store \(path) (\(operation): \(message))")
    case ENOSPC:
      return StoreError(.io, "the disk holding the LMDB store \(path) is full (no space left on the device; \(operation))")
    case EIO where Self.hasNoFreeSpace(at: path):
      // liblmdb reports a short write as EIO; on a filesystem left with no room, that is the full disk.
      return StoreError(.io, "the disk holding the LMDB store \(path) is full (no space left on the device; \(operation))")
    case EAGAIN:
      return StoreError(.io, "the LMDB store \(path) is locked by another process (\(operation): \(message))")
    default:
      return StoreError(.io, "the LMDB store \(path) failed (\(operation): \(message))")
    }
  }
}

extension LMDBError {
  /// Whether the filesystem holding `path` has less than one page (4 KiB) left for the process.
  static func hasNoFreeSpace(at path: String) -> Bool {
    var stats = statvfs()
    guard statvfs(path, &stats) == 0 else { return false }
    return UInt64(stats.f_bavail) * UInt64(stats.f_frsize) < 4096
  }
}

/// Throws an ``LMDBError`` unless `code` is `MDB_SUCCESS`.
@inline(__always)
func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
  if code != MDB_SUCCESS { throw LMDBError(code, operation()) }
}
