import Foundation

/// What is at a store's location, found with `lstat` and `stat` alone — never `open`, which blocks for
/// ever on a FIFO — so that backends and CLIs refuse a FIFO, a socket, a device or a symbolic-link loop
/// in one line before anything touches it.
///
/// ```swift
/// if try StorePath.check("/tmp/movies.sqlite", expecting: .file, storeName: "a Strata SQLite store") {
///   // something is there: open it
/// } else {
///   // nothing is there: create the store
/// }
/// ```
public enum StorePath {
  /// What a path holds.
  public enum Kind: Sendable, Equatable, CustomStringConvertible {
    /// Nothing (no such file).
    case missing
    /// A regular file (or a symbolic link to one).
    case file
    /// A directory (or a symbolic link to one).
    case directory
    /// A FIFO (named pipe).
    case fifo
    /// A Unix-domain socket.
    case socket
    /// A character or block device.
    case device
    /// A symbolic link that leads back to itself (`ELOOP`).
    case symbolicLinkLoop
    /// A symbolic link whose target does not exist.
    case danglingSymbolicLink(target: String)
    /// A path that cannot be looked at: a part of it is not a directory, or permission is denied.
    case unreachable(reason: String)

    /// The kind in words: "a FIFO (named pipe)", "a symbolic link loop"…
    public var description: String {
      switch self {
      case .missing: "nothing"
      case .file: "a file"
      case .directory: "a directory"
      case .fifo: "a FIFO (named pipe)"
      case .socket: "a Unix socket"
      case .device: "a device"
      case .symbolicLinkLoop: "a symbolic link loop"
      case .danglingSymbolicLink(let target): "a symbolic link to \(target), which does not exist"
      case .unreachable(let reason): "unreachable (\(reason))"
      }
    }
  }

  /// What is at `path`, following symbolic links; nothing is opened.
  public static func kind(of path: String) -> Kind {
    var status = stat()
    if stat(path, &status) != 0 {
      let error = errno
      switch error {
      case ENOENT:
        var link = stat()
        guard lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK else { return .missing }
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
        return .danglingSymbolicLink(target: target)
      case ELOOP: return .symbolicLinkLoop
      default: return .unreachable(reason: String(cString: strerror(error)))
      }
    }
    switch status.st_mode & S_IFMT {
    case S_IFREG: return .file
    case S_IFDIR: return .directory
    case S_IFIFO: return .fifo
    case S_IFSOCK: return .socket
    default: return .device
    }
  }

  /// What a store expects at its location.
  public enum Expected: Sendable {
    /// A regular file (SQLite).
    case file
    /// A directory (LMDB).
    case directory
  }

  /// Checks `path` before a store opens or creates it.
  ///
  /// - Parameters:
  ///   - path: the store's location.
  ///   - expected: what the store keeps there.
  ///   - storeName: how messages name the store, e.g. "a Strata SQLite store".
  /// - Returns: whether something of the expected kind is there (`false`: nothing is, and a store may
  ///   be created).
  /// - Throws: `StoreError` `.corrupted` when the path holds something else (a FIFO, a socket, a
  ///   device, a directory where a file is expected or the other way round); `.io` when it is a
  ///   symbolic-link loop, a link to nothing, or cannot be looked at. Each message names the path and
  ///   what is there.
  @discardableResult
  public static func check(_ path: String, expecting expected: Expected, storeName: String) throws -> Bool {
    let found = kind(of: path)
    switch (found, expected) {
    case (.missing, _): return false
    case (.file, .file), (.directory, .directory): return true
    case (.symbolicLinkLoop, _), (.danglingSymbolicLink, _), (.unreachable, _):
      throw StoreError(.io, "cannot use \(path) as a store: it is \(found)")
    case (.file, .directory):
      throw StoreError(.corrupted, "\(path) is not \(storeName) (it is a file; the store is a directory)")
    default:
      throw StoreError(.corrupted, "\(path) is not \(storeName) (it is \(found))")
    }
  }

  /// Refuses a path that can never hold a store of any backend — a FIFO, a socket, a device, a
  /// symbolic-link loop or a link to nothing — and says whether anything is there.
  ///
  /// ```swift
  /// let exists = try StorePath.checkUsable(url.path)   // throws for a FIFO, never blocks
  /// ```
  /// - Throws: `StoreError` as ``check(_:expecting:storeName:)`` does.
  public static func checkUsable(_ path: String) throws -> Bool {
    let found = kind(of: path)
    switch found {
    case .missing: return false
    case .file, .directory: return true
    case .symbolicLinkLoop, .danglingSymbolicLink, .unreachable:
      throw StoreError(.io, "cannot use \(path) as a store: it is \(found)")
    case .fifo, .socket, .device:
      throw StoreError(.corrupted, "\(path) is not a store (it is \(found))")
    }
  }
}
