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
}
