import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Where a store keeps the values of attributes that allow external storage
/// (`AttributeDescription.allowsExternalBinaryDataStorage`) once they reach
/// `AttributeDescription.externalStorageThreshold` bytes: a directory of files beside an SQLite or LMDB
/// store (``ExternalDataDirectory``), a table of a PostgreSQL schema. An ``ExternalDataStore`` writes a
/// save's values here *before* the save's transaction commits and removes the values the save replaced
/// after it commits; values that no row names (a crash between the two) are removed when the store opens.
///
/// ```swift
/// let storage = ExternalDataDirectory(beside: url)
/// try storage.write([(UUID(), data)])
/// ```
public protocol ExternalDataStorage: Sendable {
  /// Stores each value under its name, durably (a crash after the call returns keeps them all).
  func write(_ values: [(name: UUID, bytes: Data)]) throws
  /// The value stored under `name`, `nil` when there is none.
  func read(_ name: UUID) throws -> Data?
  /// Removes the values stored under `names`; a name with no value is skipped.
  func remove(_ names: [UUID]) throws
  /// Every stored name, with the time its value was written when the storage knows it.
  func names() throws -> [UUID: Date]
  /// The storage of `store`, which a migration returned in place of the store this storage served (a
  /// storage reading through the store's connections follows it). The default is the storage itself.
  func serving(_ store: any PersistentStore) -> any ExternalDataStorage
}

extension ExternalDataStorage {
  public func serving(_ store: any PersistentStore) -> any ExternalDataStorage { self }
}

/// What the row of an attribute that allows external storage holds for a value kept out of line: a
/// 16-byte marker, then the 16 bytes of the value's name in its ``ExternalDataStorage``. Values kept in
/// the row are stored as they are, so a store written before the attribute allowed external storage reads
/// unchanged.
public enum ExternalDataReference {
  static let marker = Data("STRATA-EXTERNAL\u{0}".utf8)
  /// The size of a reference in bytes.
  public static let size = 32

  /// The reference to the value stored under `name`.
  public static func encode(_ name: UUID) -> Data {
    var data = marker
    withUnsafeBytes(of: name.uuid) { data.append(contentsOf: $0) }
    return data
  }

  /// The name a stored value refers to, `nil` when `data` is a value kept in the row.
  public static func decode(_ data: Data) -> UUID? {
    guard data.count == size, data.prefix(16) == marker else { return nil }
    var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: data.suffix(16)) }
    return UUID(uuid: uuid)
  }
}

/// The files of a file store's externally stored values, in `<store>_SUPPORT/_EXTERNAL_DATA/` beside
/// the store (Core Data's layout), one file per value named by its UUID. A file is written under a
/// temporary name, flushed to disk and renamed, so a file with a UUID name is always whole.
///
/// ```swift
/// let storage = ExternalDataDirectory(beside: URL(fileURLWithPath: "/data/Movies.sqlite"))
/// storage.url.path   // "/data/Movies.sqlite_SUPPORT/_EXTERNAL_DATA"
/// ```
public struct ExternalDataDirectory: ExternalDataStorage {
  /// The directory holding the files.
  public let url: URL

  /// The directory of the store at `storeURL` (a file or an LMDB environment directory).
  public init(beside storeURL: URL) {
    url = Self.supportDirectory(of: storeURL).appendingPathComponent("_EXTERNAL_DATA", isDirectory: true)
  }

  /// `<store>_SUPPORT`, the directory beside a store that holds what is not in the store's own files.
  public static func supportDirectory(of storeURL: URL) -> URL {
    let path = storeURL.standardizedFileURL.path
    let trimmed = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
    return URL(fileURLWithPath: trimmed + "_SUPPORT", isDirectory: true)
  }

  /// Deletes the `<store>_SUPPORT` directory of the store at `storeURL`, if there is one.
  /// - Throws: `.io` when it exists but cannot be removed.
  public static func destroy(beside storeURL: URL) throws {
    let support = supportDirectory(of: storeURL)
    guard FileManager.default.fileExists(atPath: support.path) else { return }
    do {
      try FileManager.default.removeItem(at: support)
    } catch {
      throw StoreError(.io, "cannot delete \(support.path): \(error.localizedDescription)")
    }
  }

  private func path(of name: UUID) -> String { url.appendingPathComponent(name.uuidString).path }

  public func write(_ values: [(name: UUID, bytes: Data)]) throws {
    guard !values.isEmpty else { return }
    do {
      try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    } catch {
      throw StoreError(.io, "cannot create \(url.path): \(error.localizedDescription)")
    }
    for (name, bytes) in values {
      let final = path(of: name)
      let temporary = url.appendingPathComponent(".\(name.uuidString).tmp").path
      try Self.writeSynchronously(bytes, to: temporary)
      guard rename(temporary, final) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        throw StoreError(.io, "cannot rename \(temporary) to \(final): \(reason)")
      }
    }
    // The renames are durable once the directory is.
    let directory = open(url.path, O_RDONLY)
    if directory >= 0 {
      _ = fsync(directory)
      close(directory)
    }
  }

  private static func writeSynchronously(_ bytes: Data, to path: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else {
      throw StoreError(.io, "cannot create \(path): \(String(cString: strerror(errno)))")
    }
    defer { close(descriptor) }
    let written = bytes.withUnsafeBytes { buffer -> Bool in
      var offset = 0
      while offset < buffer.count {
        let n = Glibc.write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
        if n < 0 {
          if errno == EINTR { continue }
          return false
        }
        offset += n
      }
      return true
    }
    guard written, fsync(descriptor) == 0 else {
      let reason = String(cString: strerror(errno))
      unlink(path)
      throw StoreError(.io, "cannot write \(path): \(reason)")
    }
  }

  public func read(_ name: UUID) throws -> Data? {
    let path = path(of: name)
    guard FileManager.default.fileExists(atPath: path) else { return nil }
    do {
      return try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
      throw StoreError(.io, "cannot read \(path): \(error.localizedDescription)")
    }
  }

  public func remove(_ names: [UUID]) throws {
    for name in names where unlink(path(of: name)) != 0 && errno != ENOENT {
      throw StoreError(.io, "cannot remove \(path(of: name)): \(String(cString: strerror(errno)))")
    }
  }

  public func names() throws -> [UUID: Date] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: url.path) else { return [:] }
    var names: [UUID: Date] = [:]
    for entry in entries {
      let path = url.appendingPathComponent(entry).path
      let attributes = try? FileManager.default.attributesOfItem(atPath: path)
      let date = attributes?[.modificationDate] as? Date ?? .distantPast
      if let name = UUID(uuidString: entry) {
        names[name] = date
      } else if entry.hasPrefix("."), entry.hasSuffix(".tmp"), date < Date().addingTimeInterval(-ExternalDataStore.orphanAge) {
        unlink(path)  // a write a crash interrupted
      }
    }
    return names
  }
}
