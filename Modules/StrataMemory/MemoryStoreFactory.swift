import Foundation
import StrataStoreKit

/// Makes ``MemoryStore``s; put it in a ``StoreRegistry`` so `--store memory` and
/// `StoreDescription(type: .memory)` work.
///
/// ```swift
/// let registry = StoreRegistry([MemoryStoreFactory()])
/// let store = try registry.openStore(.memory, at: nil, model: model, options: .init())
/// ```
public struct MemoryStoreFactory: PersistentStoreFactory {
  public let storeType = StoreType.memory
  public let requiresLocation = false

  public init() {}

  /// Creates a new, empty memory store. The location is ignored: every call makes a separate store.
  /// - Throws: `.notFound` when `model` is `nil`: a memory store has nothing stored to read a model from.
  public func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    guard let model else {
      throw StoreError(.notFound, "a memory store holds no stored model; open it with a model")
    }
    return MemoryStore(model: model, options: options)
  }

  /// Nothing to delete: a memory store has no files.
  public func destroyStore(at url: URL) throws {}
}
