import Foundation
import Observation
import Strata
import Synchronization
import Testing

/// The object the observation case follows.
final class Tuber: ManagedObject {
  @Attribute var name: String
  @Attribute var rating: Int16
}

/// How many times a tracking's `onChange` ran.
private final class ChangeCount: Sendable {
  private let count = Mutex(0)
  var value: Int { count.withLock { $0 } }
  func increment() { count.withLock { $0 += 1 } }
}

extension Conformance {
  /// Observation across contexts, whatever the store: a tracking (`withObservationTracking`) of an
  /// object's property hears of another context's saved change to it when the save is merged, and a
  /// tracking of a property the save did not change hears nothing.
  static func observersHearOfMergedSaves(_ backend: ConformanceBackend) throws {
    let (container, _) = try backend.container(types: [Tuber.self])
    defer { container.close() }
    let writer = container.newBackgroundContext()
    let id = try writer.performAndWait {
      let tuber = Tuber(context: writer)
      tuber.name = "Russet"
      tuber.rating = 3
      try writer.save()
      return tuber.objectID
    }
    let reader = container.newBackgroundContext()
    let ratingChanges = ChangeCount()
    let nameChanges = ChangeCount()
    let tuber = try reader.performAndWait {
      let tuber = try #require(try reader.existingObject(with: id) as? Tuber)
      withObservationTracking {
        _ = tuber.rating
      } onChange: {
        ratingChanges.increment()
      }
      withObservationTracking {
        _ = tuber.name
      } onChange: {
        nameChanges.increment()
      }
      return tuber
    }
    try writer.performAndWait {
      let tuber = try #require(try writer.existingObject(with: id) as? Tuber)
      tuber.rating = 5
      try writer.save()
    }
    reader.performAndWait { reader.mergeChanges(fromContextDidSave: ContextDidSave(updatedObjectIDs: [id])) }
    #expect(ratingChanges.value == 1, "the tracking of the changed property hears of the merge")
    #expect(nameChanges.value == 0, "the tracking of an unchanged property hears nothing")
    #expect(reader.performAndWait { tuber.rating } == 5)
  }

  /// A tracking of any property of an object hears of another context's deletion of it when the deletion
  /// is merged (the object leaves the context, no value read from it holds); a tracking of another object
  /// hears nothing.
  static func observersHearOfMergedDeletions(_ backend: ConformanceBackend) throws {
    let (container, _) = try backend.container(types: [Tuber.self])
    defer { container.close() }
    let writer = container.newBackgroundContext()
    let (gone, kept) = try writer.performAndWait {
      let tubers = ["Russet", "Yukon"].map { name in
        let tuber = Tuber(context: writer)
        tuber.name = name
        return tuber
      }
      try writer.save()
      return (tubers[0].objectID, tubers[1].objectID)
    }
    let reader = container.newBackgroundContext()
    let goneChanges = ChangeCount()
    let keptChanges = ChangeCount()
    let tuber = try reader.performAndWait {
      let tuber = try #require(try reader.existingObject(with: gone) as? Tuber)
      let other = try #require(try reader.existingObject(with: kept) as? Tuber)
      withObservationTracking {
        _ = tuber.name
      } onChange: {
        goneChanges.increment()
      }
      withObservationTracking {
        _ = other.name
      } onChange: {
        keptChanges.increment()
      }
      return tuber
    }
    try writer.performAndWait {
      writer.delete(try writer.existingObject(with: gone))
      try writer.save()
    }
    reader.performAndWait { reader.mergeChanges(fromContextDidSave: ContextDidSave(deletedObjectIDs: [gone])) }
    #expect(goneChanges.value == 1, "the tracking of the deleted object hears of the merge")
    #expect(keptChanges.value == 0, "the tracking of another object hears nothing")
    #expect(reader.performAndWait { tuber.isDeleted })
  }
}
