import Foundation
import Strata
import StrataCore
import Synchronization

/// The stores a command is about to create, so that a command that then fails leaves nothing behind: a
/// store it created and left without a single object is removed again (see ``runReportingErrors(tool:_:)``).
private let newStores = Mutex<[StoreDescription]>([])

extension StoreFlags {
  /// Notes that the command opens the store `description` names, so that it is removed again when the
  /// command fails and the store was created by it and holds nothing.
  ///
  /// ```swift
  /// StoreFlags.noteOpening(description)
  /// let container = try MovieLibrary.makeContainer(store: description, registry: options.registry)
  /// ```
  public static func noteOpening(_ description: StoreDescription) {
    guard let url = description.url, url.isFileURL, !FileManager.default.fileExists(atPath: url.path) else { return }
    newStores.withLock { $0.append(description) }
  }

  /// Removes every store this command created that holds no object (called when the command failed).
  static func removeEmptyNewStores() {
    for description in newStores.withLock({ stores in
      defer { stores = [] }; return stores
    }) {
      guard let url = description.url, FileManager.default.fileExists(atPath: url.path) else { continue }
      guard let store = try? backends.openStore(description.type, at: url, model: nil, options: StoreOptions(isReadOnly: true))
      else { continue }
      let isEmpty = store.model.entities.allSatisfy { entity in
        (try? store.count(FetchDescription(entityName: entity.name))) == 0
      }
      store.close()
      guard isEmpty else { continue }
      for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    }
  }
}
