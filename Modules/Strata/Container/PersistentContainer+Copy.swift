import Foundation
internal import StrataStoreKit

extension PersistentContainer {
  /// Moves the loaded store's objects to a new store — of any backend — and uses that store from then on,
  /// as Core Data's `migratePersistentStore(_:to:options:type:)`: every object and link is copied in one
  /// save (objects get new IDs, in the new store's identifier), the old store is closed and left as it
  /// was, and ``storeDescriptions`` names the new one. Persistent history is not copied. Contexts should
  /// be reset afterwards: their objects still carry the old store's IDs.
  ///
  /// ```swift
  /// try container.loadPersistentStores()                      // the SQLite store
  /// try container.migratePersistentStore(to: StoreDescription(type: .lmdb, url: directory))
  /// ```
  ///
  /// - Returns: the number of objects copied.
  /// - Throws: `.misuse` when no store is loaded or the destination holds objects already;
  ///   `.unknownStoreType`; the destination's errors (`.io`, `.constraintConflict`, …). The loaded store
  ///   stays in use when the copy fails.
  @discardableResult
  public func migratePersistentStore(to description: StoreDescription) throws -> Int {
    guard let source = coordinator.store else {
      throw StoreError(.misuse, "the container \(name) has no loaded store to migrate")
    }
    let factory = try registry.storeFactory(for: description.type)
    if factory.requiresLocation && description.url == nil {
      throw StoreError(.misuse, "a \(description.type) store needs a URL")
    }
    let destination = try factory.openStore(at: description.url, model: model, options: description.options)
    let copied: Int
    do {
      copied = try StoreCopy.copy(from: source, to: destination, author: "copy")
    } catch {
      destination.close()
      throw error
    }
    source.close()
    coordinator.setStore(destination)
    storeDescriptions = [description]
    return copied
  }
}
