import Foundation

/// The name of a kind of store: what a `StoreDescription` (Strata) asks for and what a backend registers under.
///
/// The backends of this package have their names here; a backend written elsewhere adds its own:
///
/// ```swift
/// extension StoreType {
///   static let jsonFile = StoreType("json-file")
/// }
/// let description = StoreDescription(type: .jsonFile, url: url)
/// ```
public struct StoreType: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
  public let rawValue: String

  public init(rawValue: String) { self.rawValue = rawValue }

  /// A store type named `name` (`"sqlite"`, `"lmdb"`, …).
  public init(_ name: String) { self.rawValue = name }

  /// One SQLite file in WAL mode (`StrataSQLite`), the embedded default.
  public static let sqlite = StoreType("sqlite")
  /// One LMDB environment directory, shared by the processes of one machine (`StrataLMDB`).
  public static let lmdb = StoreType("lmdb")
  /// A store without a file, for previews and tests (`StrataMemory`).
  public static let memory = StoreType("memory")

  public var description: String { rawValue }

  public static func < (a: StoreType, b: StoreType) -> Bool { a.rawValue < b.rawValue }
}

/// A backend as a composition root sees it: the store type it provides and whether its stores live at
/// a location. Backends conform through `PersistentStoreFactory` (in `StrataStoreKit`), which adds how a
/// store is opened; an app only creates a backend's factory and puts it in a ``StoreRegistry``.
///
/// ```swift
/// let registry = StoreRegistry([SQLiteStoreFactory(busyTimeout: .seconds(2)), MemoryStoreFactory()])
/// ```
public protocol StoreBackend: Sendable {
  /// The store type this backend provides.
  var storeType: StoreType { get }
  /// Whether stores of this type live at a location (a file, a directory, a server), so that a
  /// `StoreDescription` of this type needs a URL.
  var requiresLocation: Bool { get }

  /// Deletes the store at `url` and its companion files.
  func destroyStore(at url: URL) throws
}

/// The backends one container (or tool) may open, by store type.
///
/// A registry is a value that a composition root makes and passes in: there is no process-wide
/// registry, so two parts of one process can offer different backends, and nothing depends on what
/// was registered elsewhere first.
///
/// ```swift
/// let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory(mapSize: 1 << 30), MemoryStoreFactory()])
/// let container = PersistentContainer(name: "Movies", model: model, registry: registry)
/// ```
public struct StoreRegistry: Sendable {
  private var backends: [StoreType: any StoreBackend] = [:]

  /// A registry of `backends`; a later one replaces an earlier one of the same store type.
  public init(_ backends: [any StoreBackend] = []) {
    for backend in backends { register(backend) }
  }

  /// Adds (or replaces) the backend for its store type.
  public mutating func register(_ backend: any StoreBackend) {
    backends[backend.storeType] = backend
  }

  /// This registry with `backend` added (or replacing the one of its store type).
  public func registering(_ backend: any StoreBackend) -> StoreRegistry {
    var copy = self
    copy.register(backend)
    return copy
  }

  /// The registered store types, sorted by name.
  public var storeTypes: [StoreType] { backends.keys.sorted() }

  /// The backend registered for `storeType`.
  /// - Throws: `.unknownStoreType` listing the registered names.
  public func backend(for storeType: StoreType) throws -> any StoreBackend {
    if let backend = backends[storeType] { return backend }
    let known = storeTypes.map(\.rawValue).joined(separator: ", ")
    throw StoreError(
      .unknownStoreType, "unknown store type '\(storeType)' (available: \(known.isEmpty ? "none registered" : known))")
  }
}
