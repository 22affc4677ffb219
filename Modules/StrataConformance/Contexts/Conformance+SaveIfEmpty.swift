import Foundation
import Strata
import StrataStoreKit
import Testing

/// A seed row of the save-if-empty case.
final class Seedling: ManagedObject {
  @Attribute var name: String
}

extension Conformance {
  /// `save(ifStoreHasNo:)` ("import when the store is empty") is decided by the store when the save
  /// commits, not by an earlier count: a context that counted an empty store before another saved its seed
  /// writes nothing and keeps its changes; a child context is refused.
  static func saveIfStoreHasNo(_ backend: ConformanceBackend) throws {
    let (container, url) = try backend.container(types: [Seedling.self])
    defer { container.close() }
    let first = container.newBackgroundContext()
    let second = container.newBackgroundContext()
    let secondCounted = try second.performAndWait { try second.count(for: FetchRequest<Seedling>()) }
    #expect(secondCounted == 0)

    let saved = try first.performAndWait {
      for name in ["Ash", "Birch"] { Seedling(context: first).name = name }
      return try first.save(ifStoreHasNo: Seedling.self)
    }
    #expect(saved, "the first seed of an empty store is saved")

    let refused = try second.performAndWait {
      for name in ["Cedar", "Douglas", "Elm"] { Seedling(context: second).name = name }
      return try second.save(ifStoreHasNo: Seedling.self)
    }
    #expect(!refused, "a seed saved after another process's is refused by the store")
    #expect(second.performAndWait { second.hasChanges }, "the refused context keeps its changes")

    let fresh = try backend.freshContext(container, url, types: [Seedling.self])
    let names = try fresh.performAndWait { try fresh.fetch(FetchRequest<Seedling>()).map(\.name).sorted() }
    #expect(names == ["Ash", "Birch"], "\(names)")

    let child = first.performAndWait { first.newChildContext() }
    child.performAndWait {
      Seedling(context: child).name = "Fir"
      expectStoreError(.misuse) { _ = try child.save(ifStoreHasNo: Seedling.self) }
    }
  }
}
