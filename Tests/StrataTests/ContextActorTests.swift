import Foundation
import StrataMemory
import Testing

@testable import Strata

final class Track: ManagedObject {
  @Attribute var title: String
  @Attribute var plays: Int64
}

actor TrackImporter: ContextActor {
  nonisolated let contextExecutor: ContextExecutor

  init(container: PersistentContainer) {
    let context = container.newBackgroundContext()
    context.name = "track importer"
    contextExecutor = ContextExecutor(context: context)
  }

  func importTracks(_ titles: [String]) throws -> [ObjectID] {
    let tracks = titles.map { title in
      let track = Track(context: context)
      track.title = title
      return track
    }
    try context.save()
    return tracks.map(\.objectID)
  }

  func play(_ id: ObjectID) throws -> Int64 {
    let track = try #require(try context.existingObject(with: id) as? Track)
    track.plays += 1
    try context.save()
    return track.plays
  }

  /// Whether this method runs on the actor's context's queue, and on `other`'s.
  func queues(other: ObjectContext) -> (own: Bool, other: Bool) {
    (context.isOnOwnQueue, other.isOnOwnQueue)
  }

  func trackCount() throws -> Int { try context.count(for: FetchRequest<Track>()) }
}

private func makeContainer() throws -> PersistentContainer {
  let container = try PersistentContainer(name: "Tracks", types: Track.self, registry: StoreRegistry([MemoryStoreFactory()]))
  container.storeDescriptions = [StoreDescription(type: .memory)]
  try container.loadPersistentStores()
  return container
}

@Suite("Context actors and the main context")
struct ContextActorTests {
  @Test func anActorsMethodsRunOnItsContextsQueue() async throws {
    let container = try makeContainer()
    let importer = TrackImporter(container: container)
    let queues = await importer.queues(other: container.newBackgroundContext())
    #expect(queues.own)
    #expect(!queues.other)
  }

  @Test func anActorImportsUpdatesAndHandsOutObjectIDs() async throws {
    let container = try makeContainer()
    let importer = TrackImporter(container: container)
    let titles = ["Blue in Green", "So What", "Flamenco Sketches"]
    let ids = try await importer.importTracks(titles)
    #expect(ids.count == titles.count)
    #expect(ids.allSatisfy { !$0.isTemporary })
    let plays = try await importer.play(ids[1])
    #expect(plays == 1)

    let reader = container.newBackgroundContext()
    let stored = try await reader.perform {
      try reader.fetch(FetchRequest<Track>()).map { "\($0.title) \($0.plays)" }.sorted()
    }
    #expect(stored == ["Blue in Green 0", "Flamenco Sketches 0", "So What 1"])
  }

  @Test func assumeIsolatedPassesInsideTheContextsPerform() async throws {
    let container = try makeContainer()
    let importer = TrackImporter(container: container)
    _ = try await importer.importTracks(["Freddie Freeloader"])
    let count = try await importer.context.perform {
      try importer.assumeIsolated { try $0.trackCount() }
    }
    #expect(count == 1)
  }

  @Test func aBackgroundActorPerformsOnItsQueue() async throws {
    let container = try makeContainer()
    let worker = container.newBackgroundActor()
    let result = try await worker.perform { context in
      let track = Track(context: context)
      track.title = "All Blues"
      try context.save()
      return (context.isOnOwnQueue, track.objectID)
    }
    #expect(result.0)
    let title = try await worker.perform { context in (try context.existingObject(with: result.1) as? Track)?.title }
    #expect(title == "All Blues")
  }

  @MainActor @Test func theMainContextWorksBeforeAndAfterAwaits() async throws {
    let container = try makeContainer()
    let view = container.mainContext
    #expect(view === container.viewContext)
    #expect(view.isOnOwnQueue)
    let ids = try await TrackImporter(container: container).importTracks(["Milestones", "Kind of Blue"])
    try await Task.sleep(for: .milliseconds(5))
    #expect(view.isOnOwnQueue, "after an await the main actor is still on the main queue")
    let tracks = try view.fetch(FetchRequest<Track>(sortDescriptors: [QuerySort(\Track.title)]))
    #expect(tracks.map(\.title) == ["Kind of Blue", "Milestones"])

    let worker = container.newBackgroundActor()
    let before = try await worker.perform { context in try context.count(for: FetchRequest<Track>()) }
    #expect(view.isOnOwnQueue)
    tracks[0].plays = 7
    try view.save()
    let plays = try await worker.perform { context in (try context.existingObject(with: ids[1]) as? Track)?.plays }
    #expect(before == 2)
    #expect(plays == 7)
  }
}
