import Foundation
import Observation
import Strata
import StrataMemory
import Synchronization
import Testing

final class Potato: ManagedObject {
  @Attribute var title: String
  @Attribute var genre: String
  @Attribute var userRating: Int16
  @Relationship(inverse: "potatoes") var farm: Farm?
}

final class Farm: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "farm") var potatoes: Set<Potato>
}

/// How many times a tracking's `onChange` ran.
final class ChangeCount: Sendable {
  private let count = Mutex(0)
  var value: Int { count.withLock { $0 } }
  func increment() { count.withLock { $0 += 1 } }
}

/// Runs `read` under `withObservationTracking`, counting the changes it hears of.
func tracking(_ read: () -> Void) -> ChangeCount {
  let changes = ChangeCount()
  withObservationTracking(read) { changes.increment() }
  return changes
}

@Suite("Observation")
struct ObservationTests {
  func container() throws -> PersistentContainer {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let container = PersistentContainer(
      name: "Observation", model: try ObjectModel(Potato.self, Farm.self), types: [Potato.self, Farm.self],
      registry: registry)
    container.storeDescriptions = [StoreDescription(type: .memory)]
    try container.loadPersistentStores()
    return container
  }

  /// A saved potato, read back in a fresh context (`context` or the view context).
  func savedPotato(in container: PersistentContainer, context: ObjectContext? = nil) throws -> Potato {
    let writer = container.newBackgroundContext()
    let id = try writer.performAndWait {
      let potato = Potato(context: writer)
      potato.title = "Russet"
      potato.genre = "Baking"
      potato.userRating = 3
      try writer.save()
      return potato.objectID
    }
    let context = context ?? container.viewContext
    return try #require(try context.existingObject(with: id) as? Potato)
  }

  /// Changes the stored potato `id` through another context and returns that context's save.
  func changeElsewhere(
    _ id: ObjectID, in container: PersistentContainer, _ change: @escaping (Potato) -> Void
  ) throws -> ContextDidSave {
    let writer = container.newBackgroundContext()
    return try writer.performAndWait {
      let potato = try #require(try writer.existingObject(with: id) as? Potato)
      change(potato)
      try writer.save()
      return ContextDidSave(updatedObjectIDs: [id])
    }
  }

  @Test func assignmentFires() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    let changes = tracking { _ = potato.userRating }
    #expect(changes.value == 0)
    potato.userRating = 5
    #expect(changes.value == 1)
  }

  @Test func assignmentToANewObjectFires() throws {
    let container = try container()
    let potato = Potato(context: container.viewContext)
    let changes = tracking { _ = potato.userRating }
    potato.userRating = 4
    #expect(changes.value == 1)
  }

  @Test func assigningTheSameValueDoesNotFire() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    let changes = tracking { _ = potato.userRating }
    potato.userRating = 3
    #expect(changes.value == 0)
    potato.userRating = 4
    #expect(changes.value == 1)
  }

  @Test func readingTitleThenChangingGenreDoesNotFire() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    let changes = tracking { _ = potato.title }
    potato.genre = "Mashing"
    potato.userRating = 1
    #expect(changes.value == 0)
    potato.title = "Yukon Gold"
    #expect(changes.value == 1)
  }

  @Test func anotherObjectsChangeDoesNotFire() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    let other = try savedPotato(in: container)
    let changes = tracking { _ = potato.userRating }
    other.userRating = 1
    #expect(changes.value == 0)
  }

  @Test func undoAndRedoFire() throws {
    let container = try container()
    let context = container.viewContext
    context.undoManager = ContextUndoManager()
    let potato = try savedPotato(in: container)
    potato.userRating = 5
    let undone = tracking { _ = potato.userRating }
    context.undoManager?.undo()
    #expect(undone.value == 1)
    #expect(potato.userRating == 3)
    let redone = tracking { _ = potato.userRating }
    context.undoManager?.redo()
    #expect(redone.value == 1)
    #expect(potato.userRating == 5)
  }

  @Test func rollbackFires() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    potato.userRating = 5
    let titleChanges = tracking { _ = potato.title }
    let changes = tracking { _ = potato.userRating }
    container.viewContext.rollback()
    #expect(changes.value == 1)
    #expect(titleChanges.value == 0)
    #expect(potato.userRating == 3)
  }

  @Test func refreshMergingChangesFires() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    _ = try changeElsewhere(potato.objectID, in: container) { $0.userRating = 1 }
    let titleChanges = tracking { _ = potato.title }
    let changes = tracking { _ = potato.userRating }
    container.viewContext.refresh(potato, mergeChanges: true)
    #expect(changes.value == 1)
    #expect(titleChanges.value == 0)
    #expect(potato.userRating == 1)
  }

  @Test func refreshIntoAFaultFires() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    _ = try changeElsewhere(potato.objectID, in: container) { $0.userRating = 2 }
    let changes = tracking { _ = potato.userRating }
    container.viewContext.refresh(potato, mergeChanges: false)
    #expect(changes.value == 1)
    #expect(potato.userRating == 2)
  }

  @Test func mergeFromAnotherContextsSaveFires() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    let save = try changeElsewhere(potato.objectID, in: container) { $0.userRating = 4 }
    let genreChanges = tracking { _ = potato.genre }
    let changes = tracking { _ = potato.userRating }
    container.viewContext.mergeChanges(fromContextDidSave: save)
    #expect(changes.value == 1)
    #expect(genreChanges.value == 0)
    #expect(potato.userRating == 4)
  }

  @Test func aMergedDeletionFiresEveryTrackingOfTheObject() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    let other = try savedPotato(in: container)
    let ratingChanges = tracking { _ = potato.userRating }
    let titleChanges = tracking { _ = potato.title }
    let otherChanges = tracking { _ = other.title }
    let writer = container.newBackgroundContext()
    try writer.performAndWait {
      writer.delete(try writer.existingObject(with: potato.objectID))
      try writer.save()
    }
    container.viewContext.mergeChanges(fromContextDidSave: ContextDidSave(deletedObjectIDs: [potato.objectID]))
    #expect(ratingChanges.value == 1 && titleChanges.value == 1)
    #expect(otherChanges.value == 0, "another object's tracking hears nothing")
    #expect(potato.isDeleted)
  }

  @Test func automaticMergeIntoTheViewContextFires() async throws {
    let container = try container()
    let view = container.viewContext
    view.automaticallyMergesChangesFromParent = true
    let (potato, changes, titleChanges) = try view.performAndWait {
      let potato = try savedPotato(in: container, context: view)
      return (potato, tracking { _ = potato.userRating }, tracking { _ = potato.title })
    }
    _ = try changeElsewhere(potato.objectID, in: container) { $0.userRating = 5 }
    for _ in 0..<500 where changes.value == 0 { try await Task.sleep(for: .milliseconds(20)) }
    #expect(changes.value == 1)
    #expect(titleChanges.value == 0)
    #expect(view.performAndWait { potato.userRating } == 5)
  }

  @Test func toOneRelationshipReadsAreObservable() throws {
    let container = try container()
    let context = container.viewContext
    let potato = Potato(context: context)
    let farm = Farm(context: context)
    try context.save()
    let changes = tracking { _ = potato.farm }
    potato.title = "Kennebec"
    #expect(changes.value == 0)
    farm.potatoes.insert(potato)
    #expect(changes.value == 1)
    #expect(potato.farm === farm)
  }

  @Test func toManyRelationshipReadsAreObservable() throws {
    let container = try container()
    let context = container.viewContext
    let farm = Farm(context: context)
    let potato = Potato(context: context)
    try context.save()
    let nameChanges = tracking { _ = farm.name }
    let changes = tracking { _ = farm.potatoes }
    potato.farm = farm
    #expect(changes.value == 1)
    #expect(nameChanges.value == 0)
    #expect(farm.potatoes == [potato])
  }

  @Test func unobservedObjectsStillReadAndWrite() throws {
    let container = try container()
    let potato = try savedPotato(in: container)
    potato.userRating = 2
    #expect(potato.userRating == 2 && potato.title == "Russet")
    let changes = tracking { _ = potato.title }
    potato.title = "Fingerling"
    potato.title = "Adirondack"
    #expect(changes.value == 1, "a tracking hears of the first change only, then is done")
  }
}
