import Foundation
import StrataCLI
import StrataStoreKit

/// An error of the tool itself (not of a store), reported as one line.
struct ToolError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

extension StoreLocation {
  /// Opens the store read-only with the model stored inside it (with `tracksHistory`, to read its history:
  /// opening read-only never changes the history a store keeps).
  ///
  /// - Throws: ``ToolError`` when nothing is at the path (checked first, so no store is ever created),
  ///   or the backend keeps no files; the factory's ``StoreError`` otherwise (`.corrupted` for a file
  ///   that is not a store, `.unknownStoreType`).
  func open(tracksHistory: Bool = false) throws -> any PersistentStore {
    let registry = StoreFlags.backends
    if let store, !(try registry.backend(for: store)).requiresLocation {
      throw ToolError("the \(store) store keeps nothing in a file, so there is no store to open at \(path)")
    }
    let options = StoreOptions(isReadOnly: true, tracksHistory: tracksHistory)
    if let uri = serverURL {
      // A store on a server: opening read-only without a model never creates one.
      return try registry.storeFactory(for: store ?? backend(of: uri, in: registry)).openStore(
        at: uri, model: nil, options: options)
    }
    let expanded = (path as NSString).expandingTildeInPath
    // Looked at, never opened, first: a FIFO would block the reads that tell which backend it is.
    guard try StorePath.checkUsable(expanded) else {
      throw ToolError("there is no store at \(expanded) (no such file)")
    }
    let url = URL(fileURLWithPath: expanded)
    return try registry.storeFactory(for: store ?? backend(of: url, in: registry)).openStore(
      at: url, model: nil, options: options)
  }

  /// The location as a URI with a scheme other than `file` (`postgresql://…`), or `nil` for a path.
  var serverURL: URL? {
    guard let scheme = path.split(separator: ":", maxSplits: 1).first, path.contains("://"),
      scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }), scheme != "file",
      let url = URL(string: path)
    else { return nil }
    return url
  }

  /// The one backend whose store is at `url`.
  /// - Throws: ``ToolError`` when no backend, or more than one, recognizes it.
  private func backend(of url: URL, in registry: StoreRegistry) throws -> StoreType {
    let candidates = registry.storeTypes(recognizing: url)
    let shown = url.isFileURL ? url.path : url.absoluteString
    guard let only = candidates.first else {
      if !url.isFileURL {
        throw ToolError("no backend of this build opens \(shown) (pass --store to choose a backend)")
      }
      throw ToolError(
        "\(shown) is not a Strata store: neither an SQLite file nor an LMDB environment (pass --store to choose a backend)")
    }
    guard candidates.count == 1 else {
      throw ToolError(
        "\(shown) could be a store of \(candidates.map(\.rawValue).joined(separator: " or ")); pass --store to choose")
    }
    return only
  }

  /// Opens the store, runs `body` with it and closes it.
  func withStore<T>(tracksHistory: Bool = false, _ body: (any PersistentStore) throws -> T) throws -> T {
    let store = try open(tracksHistory: tracksHistory)
    defer { store.close() }
    return try body(store)
  }
}
