import Foundation
import StrataConformance
import StrataMemory
import Testing

@testable import Strata

/// The registry's generational sweeps, watched through the context's registry: young objects nothing holds
/// go within ``ObjectRegistry/youngLimit`` registrations, however many old ones are held; old ones let go
/// go at the next full sweep; a batch's objects wait for the batch to end.
@Suite struct RegistrySweepTests {
  let container: PersistentContainer
  let context: ObjectContext
  let template: ObjectID

  init() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    container = PersistentContainer(
      name: "Sweeps", model: try ObjectModel(types: sampleTypes), types: sampleTypes, registry: registry)
    container.storeDescriptions = [StoreDescription(type: MemoryStoreFactory().storeType, url: nil)]
    try container.loadPersistentStores()
    let writer = container.newBackgroundContext()
    template = try writer.performAndWait {
      let actor = Actor(context: writer)
      actor.name = "Template"
      try writer.save()
      return actor.objectID
    }
    context = container.newBackgroundContext()
  }

  func id(_ key: Int) -> ObjectID { template.withPrimaryKey(Int64(key)) }

  @Test func walkedPastObjectsGoWhileManyAreHeld() {
    context.performAndWait {
      let held = (1...10_000).map { context.object(with: id($0)) }
      var most = 0
      for key in 20_001...50_000 {
        _ = context.object(with: id(key)).objectID
        most = max(most, context.registry.count)
      }
      // Each young sweep also keeps the object being made, held by its caller at that moment.
      let sweeps = 30_000 / ObjectRegistry.youngLimit + 1
      #expect(most <= held.count + ObjectRegistry.youngLimit + sweeps, "registry peaked at \(most)")
      #expect(held.enumerated().allSatisfy { context.object(with: id($0.offset + 1)) === $0.element })
    }
  }

  @Test func oldObjectsLetGoLeaveAtTheNextFullSweep() {
    context.performAndWait {
      var held = (1...5_000).map { context.object(with: id($0)) }
      weak let firstOld = held.first
      // A young sweep finds them held: they become old.
      for key in 10_001...(10_000 + ObjectRegistry.youngLimit) { _ = context.object(with: id(key)) }
      #expect(firstOld != nil && context.registry.youngCount < ObjectRegistry.youngLimit)
      held = []
      // Young sweeps alone never look at old objects again...
      for key in 20_001...(20_000 + 2 * ObjectRegistry.youngLimit) { _ = context.object(with: id(key)) }
      #expect(firstOld != nil)
      // ...a full sweep does, once the old objects have doubled.
      var kept: [ManagedObject] = []
      for key in 40_001...60_000 { kept.append(context.object(with: id(key))) }
      #expect(firstOld == nil)
      #expect(kept.enumerated().allSatisfy { context.object(with: id(40_001 + $0.offset)) === $0.element })
    }
  }

  @Test func aBatchsObjectsWaitForItsEnd() {
    context.performAndWait {
      weak var first: ManagedObject?
      context.registeringBatch(of: 0) {
        for key in 1...(2 * ObjectRegistry.youngLimit) {
          let object = context.object(with: id(key))
          if key == 1 { first = object }
        }
        #expect(context.registry.count == 2 * ObjectRegistry.youngLimit)
        #expect(first != nil)
      }
      let next = context.object(with: id(100_000))
      #expect(first == nil)
      #expect(context.registry.count == 1)
      #expect(context.object(with: next.objectID) === next)
    }
  }

  @Test func aSaveWithoutInsertsLeavesTheSweepToTheNextRegistration() throws {
    try context.performAndWait {
      let held = context.registeringBatch(of: 0) {
        [context.object(with: template)] + (1_001...(1_000 + 2 * ObjectRegistry.youngLimit)).map { context.object(with: id($0)) }
      }
      let young = context.registry.youngCount
      #expect(young >= ObjectRegistry.youngLimit)
      let actor = try #require(held.first as? Actor)
      actor.name = "Renamed"
      try context.save()
      #expect(context.registry.youngCount >= young)
      _ = context.object(with: id(100_000))
      #expect(context.registry.youngCount < ObjectRegistry.youngLimit)
      #expect(context.registry.count >= held.count)
    }
  }

  @Test func registeredObjectsSweepsEverything() {
    context.performAndWait {
      let kept = (1...3_000).map { context.object(with: id($0)) }
      for key in 5_001...6_000 { _ = context.object(with: id(key)) }
      #expect(context.registeredObjects.count == kept.count)
      #expect(context.registry.youngCount == 0)
    }
  }
}
