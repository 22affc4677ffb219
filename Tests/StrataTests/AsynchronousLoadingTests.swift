import Foundation
import Strata
import StrataConformance
import StrataMemory
import StrataStoreKit
import Testing

/// A memory store factory whose `openStore` waits until the test lets it go.
private struct GatedFactory: PersistentStoreFactory {
  let gate: DispatchSemaphore
  let entered: DispatchSemaphore
  var storeType: StoreType { StoreType("gated") }
  var requiresLocation: Bool { false }

  func openStore(at url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
    entered.signal()
    gate.wait()
    return try MemoryStoreFactory().openStore(at: url, model: model, options: options)
  }

  func destroyStore(at url: URL) throws {}
}

@Suite("Loading stores")
struct AsynchronousLoadingTests {
  @Test func anAsynchronousStoreLoadsWithoutBlockingTheCaller() async throws {
    let gate = DispatchSemaphore(value: 0)
    let entered = DispatchSemaphore(value: 0)
    let registry = StoreRegistry([GatedFactory(gate: gate, entered: entered)])
    let container = PersistentContainer(
      name: "Gated", model: try ObjectModel(Shelf.self, Item.self), types: [Shelf.self, Item.self], registry: registry)
    container.storeDescriptions = [StoreDescription(type: StoreType("gated"), shouldAddStoreAsynchronously: true)]
    let loaded = Locked<(StoreType, String?)?>(nil)
    let done = DispatchSemaphore(value: 0)
    container.loadPersistentStores { description, error in
      loaded.withLock { $0 = (description.type, error.map { "\($0)" }) }
      done.signal()
    }
    // The call returned while the store is still opening (the factory is held at the gate).
    entered.wait()
    #expect(loaded.withLock { $0 } == nil)
    #expect(container.persistentStore == nil)
    expectStoreError(.misuse) { try container.newBackgroundContext().count(for: FetchRequest<Shelf>()) }
    gate.signal()
    done.wait()
    #expect(loaded.withLock { $0?.0 } == StoreType("gated"))
    #expect(loaded.withLock { $0?.1 } == nil)
    #expect(try container.newBackgroundContext().count(for: FetchRequest<Shelf>()) == 0)
  }

  @Test func aSynchronousDescriptionCompletesBeforeReturning() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let container = PersistentContainer(
      name: "Plain", model: try ObjectModel(Shelf.self, Item.self), types: [Shelf.self, Item.self], registry: registry)
    container.storeDescriptions = [StoreDescription(type: .memory)]
    let called = Locked(false)
    container.loadPersistentStores { _, error in
      #expect(error == nil)
      called.withLock { $0 = true }
    }
    #expect(called.withLock { $0 })

    let broken = PersistentContainer(
      name: "Broken", model: try ObjectModel(Shelf.self, Item.self), types: [Shelf.self, Item.self], registry: registry)
    broken.storeDescriptions = [StoreDescription(type: StoreType("nosuchstore"))]
    let failure = Locked<String?>(nil)
    broken.loadPersistentStores { _, error in failure.withLock { $0 = error.map { "\($0)" } } }
    #expect(failure.withLock { $0 }?.contains("nosuchstore") == true)
  }
}
