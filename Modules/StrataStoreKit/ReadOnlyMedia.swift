import Foundation

/// Whether a store's location can be written at all, as the backends and the CLIs ask before opening it.
///
/// ```swift
/// if ReadOnlyMedia.contains("/mnt/cdrom/Movies.sqlite") { options.isReadOnly = true }
/// ```
public enum ReadOnlyMedia {
  /// Whether `path` (or, when it does not exist, the directory that would hold it) is on a filesystem
  /// mounted read-only, where nothing — not even a lock file — can be created or changed.
  public static func contains(_ path: String) -> Bool {
    var probe = path
    while !probe.isEmpty && !FileManager.default.fileExists(atPath: probe) {
      let parent = (probe as NSString).deletingLastPathComponent
      if parent == probe { break }
      probe = parent
    }
    var stats = statvfs()
    guard !probe.isEmpty, statvfs(probe, &stats) == 0 else { return false }
    return stats.f_flag & UInt(ST_RDONLY) != 0
  }

  /// Whether this process cannot write at `path`: read-only media, or a directory it may not write to (for
  /// a file, the directory holding it, where SQLite keeps its `-wal` and `-shm` files; for a directory, the
  /// directory itself, where LMDB keeps `lock.mdb`). A store there can only be read, without the lock or
  /// shared-memory files other readers would create.
  ///
  /// ```swift
  /// if ReadOnlyMedia.cannotWrite("/srv/shared/Movies.sqlite") { options.isReadOnly = true }
  /// ```
  public static func cannotWrite(_ path: String) -> Bool {
    if contains(path) { return true }
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return false }
    let directory = isDirectory.boolValue ? path : (path as NSString).deletingLastPathComponent
    return access(directory.isEmpty ? "." : directory, W_OK) != 0
  }
}
