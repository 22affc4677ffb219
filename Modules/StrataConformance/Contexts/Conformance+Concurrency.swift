import Foundation
import Strata
import StrataStoreKit
import Testing

/// Two contexts saving in turn; a background context saving while the view context reads; an
/// optimistic-lock conflict when two contexts change the same object.
enum ConcurrencyCases {
  /// A background context and the view context save in turn; each sees the other's objects.
  static func contextsSaveInTurn(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.sampleContainer()
    let view = container.viewContext
    let background = container.newBackgroundContext()
    try await background.perform {
      let director = Director(context: background)
      director.name = "Background One"
      try background.save()
    }
    let fromView = Director(context: view)
    fromView.name = "View One"
    try view.save()
    try await background.perform {
      let director = Director(context: background)
      director.name = "Background Two"
      try background.save()
    }
    let names = Set(try view.fetch(FetchRequest<Director>()).map(\.name))
    #expect(names.isSuperset(of: ["Background One", "View One", "Background Two"]))
    #expect(names.count == SampleData.directors.count + 3)
  }

  /// A writer task saves in batches while the reader counts: counts never go down and end complete.
  static func readersSeeWholeSaves(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.sampleContainer()
    let batches = 10
    let perBatch = 20
    let writer = Task {
      try await container.performBackgroundTask { context in
        for batch in 0..<batches {
          for n in 0..<perBatch {
            let actor = Actor(context: context)
            actor.name = "Extra \(batch)-\(n)"
          }
          try context.save()
        }
      }
    }
    let reader = container.newBackgroundContext()
    var last = 0
    var decreased = false
    for _ in 0..<50 {
      let count = try await reader.perform { try reader.count(for: FetchRequest<Actor>(format: "name BEGINSWITH 'Extra'")) }
      if count < last { decreased = true }
      #expect(count % perBatch == 0, "a reader sees whole saves, never part of one")
      last = count
      await Task.yield()
    }
    try await writer.value
    #expect(!decreased)
    let total = try await reader.perform { try reader.count(for: FetchRequest<Actor>(format: "name BEGINSWITH 'Extra'")) }
    #expect(total == batches * perBatch)
  }

  /// Two contexts edit the same object and save in turn: the second save reports the conflict.
  static func secondSaveOfOneObjectConflicts(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.sampleContainer()
    let view = container.viewContext
    let first = container.newBackgroundContext()
    let second = container.newBackgroundContext()
    let heatID = try #require(try view.fetchObjectIDs(FetchRequest<Film>(format: "title == 'Heat'")).first)
    try await first.perform {
      let heat = try first.existingObject(with: heatID) as? Film
      heat?.rating = 9.0
    }
    try await second.perform {
      let heat = try second.existingObject(with: heatID) as? Film
      heat?.genre = "Heist"
    }
    try await first.perform { try first.save() }
    let conflict: StoreError? = try await second.perform {
      do {
        try second.save()
        return nil
      } catch let error as StoreError {
        return error
      } catch {
        return StoreError(.io, "\(error)")
      }
    }
    #expect(conflict?.code == .optimisticLockConflict)
    #expect(conflict?.conflicts.first?.objectID == heatID)
    let check = container.newBackgroundContext()
    let (rating, genre) = try await check.perform {
      let heat = try check.existingObject(with: heatID) as? Film
      return (heat?.rating, heat?.genre)
    }
    #expect(rating == 9.0)
    #expect(genre == "Crime")
  }
}
