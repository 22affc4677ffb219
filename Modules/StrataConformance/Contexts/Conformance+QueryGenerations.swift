import Foundation
import Strata
import StrataStoreKit
import Testing

/// The query-generations area's starting point: the sample store, a `reader` to pin, a `writer` on
/// another store instance (for file stores), and the first commit the pinned reader must not see (Heat
/// retitled "Heat (remastered)", Thief added to Michael Mann's films, Delicatessen deleted).
final class GenerationStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let reader: ObjectContext
  let writer: ObjectContext
  let byTitle: FetchRequest<Film>
  let original: [String]
  var current: [String] = []

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.sampleContainer()
    reader = container.newBackgroundContext()
    writer = try backend.freshContext(container, url)
    byTitle = try FetchRequest<Film>(format: "TRUEPREDICATE", sortDescriptors: [QuerySort("title")])
    let (context, request) = (reader, byTitle)
    original = try context.performAndWait { try context.fetch(request).map(\.title) }
  }

  func titles(_ context: ObjectContext) throws -> [String] {
    try context.performAndWait { try context.fetch(byTitle).map(\.title) }
  }

  func mannFilms(_ context: ObjectContext) throws -> [String] {
    try context.performAndWait {
      let mann = try #require(try context.fetch(FetchRequest<Director>(format: "name == 'Michael Mann'")).first)
      return mann.films.map(\.title).sorted()
    }
  }

  func write(_ body: (ObjectContext) throws -> Void) throws {
    try writer.performAndWait {
      try body(writer)
      try writer.save()
    }
  }

  func film(_ title: String, in context: ObjectContext) throws -> Film {
    try #require(try context.fetch(FetchRequest<Film>(format: "title == %@", title)).first, "no film \(title)")
  }

  /// Pins `reader` to the current generation; its token.
  func pin() throws -> QueryGenerationToken {
    try reader.performAndWait { try reader.setQueryGenerationFrom(.current) }
    return try #require(reader.performAndWait { reader.queryGenerationToken })
  }

  /// The first commit; `current` is then the newest titles.
  func commit() throws {
    try write { writer in
      let heat = try film("Heat", in: writer)
      heat.title = "Heat (remastered)"
      let thief = Film(context: writer)
      thief.title = "Thief"
      thief.uuid = UUID()
      thief.director = heat.director
      writer.delete(try film("Delicatessen", in: writer))
    }
    current = original.filter { $0 != "Delicatessen" && $0 != "Heat" } + ["Heat (remastered)", "Thief"]
    current.sort()
  }

  func count(_ format: String) throws -> Int {
    try reader.performAndWait { try reader.count(for: FetchRequest<Film>(format: format)) }
  }
}

/// A context pinned with `setQueryGenerationFrom(.current)` reads one snapshot — fetches, counts,
/// faults, to-many relationships, asynchronous fetches — whatever another context (another store
/// instance, for file stores) commits, until it saves, merges, refreshes all objects, resets or unpins.
/// Another context given its token reads the same snapshot, which outlives the first context moving on.
enum QueryGenerationCases {
  /// Faults made before a commit and fired after it, fetches, counts, to-many relationships and
  /// asynchronous fetches of a pinned context read the pinned snapshot; others read the newest state; a
  /// reset moves to the newest generation.
  static func aPinnedContextReadsOneSnapshot(_ backend: ConformanceBackend) async throws {
    let s = try GenerationStore(backend)
    let (reader, writer, container, byTitle, original) = (s.reader, s.writer, s.container, s.byTitle, s.original)
    #expect(reader.performAndWait { reader.queryGenerationToken } == nil)
    let pinned = try s.pin()
    #expect(pinned != .current)
    reader.performAndWait { reader.reset() }
    #expect(reader.performAndWait { reader.queryGenerationToken } != pinned, "reset moves to the newest generation")
    try reader.performAndWait { try reader.setQueryGenerationFrom(pinned) }
    let faults = try reader.performAndWait {
      var request = byTitle
      request.fetchBatchSize = 4
      return try reader.fetch(request)
    }
    try s.commit()
    let current = s.current
    reader.performAndWait {
      #expect(faults.allSatisfy { $0.isFault })
      #expect(faults.map(\.title) == original, "faults fire from the pinned snapshot")
    }
    #expect(try s.titles(writer) == current)
    #expect(try s.titles(container.newBackgroundContext()) == current, "an unpinned context reads the newest state")

    #expect(try s.titles(reader) == original, "fetches read the pinned snapshot")
    #expect(try reader.performAndWait { try reader.count(for: FetchRequest<Film>()) } == original.count)
    #expect(try reader.performAndWait { try reader.count(for: FetchRequest<Film>(format: "title == 'Thief'")) } == 0)
    #expect(try s.mannFilms(reader) == ["Collateral", "Heat"], "to-many relationships read the pinned snapshot")
    let asynchronous = try await reader.fetch(AsynchronousFetchRequest(fetchRequest: byTitle, chunkSize: 3))
    #expect(reader.performAndWait { asynchronous.map(\.title) } == original, "asynchronous fetches read it too")
  }

  /// Another context given the token reads the same snapshot, even after the first one moves on
  /// (`refreshAllObjects`); unpinned, it reads the newest state.
  static func anotherContextSharesTheSnapshot(_ backend: ConformanceBackend) async throws {
    let s = try GenerationStore(backend)
    let (reader, container, original) = (s.reader, s.container, s.original)
    let pinned = try s.pin()
    let delicatessenID = try reader.performAndWait { try s.film("Delicatessen", in: reader).objectID }
    try s.commit()
    let current = s.current
    let second = container.newBackgroundContext()
    try second.performAndWait { try second.setQueryGenerationFrom(pinned) }
    #expect(second.performAndWait { second.queryGenerationToken } == pinned)
    try second.performAndWait {
      let delicatessen = try second.existingObject(with: delicatessenID) as? Film
      #expect(delicatessen?.title == "Delicatessen", "an object deleted since the snapshot is still there")
    }
    reader.performAndWait { reader.refreshAllObjects() }
    let advanced = try #require(reader.performAndWait { reader.queryGenerationToken })
    #expect(advanced != pinned, "refreshAllObjects moves a pinned context to the newest generation")
    #expect(try s.titles(reader) == current)
    #expect(try s.mannFilms(reader) == ["Collateral", "Heat (remastered)", "Thief"])
    #expect(try s.titles(second) == original, "the snapshot stays while a context holds its token")
    try second.performAndWait { try second.setQueryGenerationFrom(nil) }
    #expect(second.performAndWait { second.queryGenerationToken } == nil)
    #expect(try s.titles(second) == current, "unpinned, a context reads the newest state")
  }

  /// Saving moves a pinned context on; so does merging another context's save, and the context stays
  /// pinned.
  static func savesAndMergesMoveAPinnedContextOn(_ backend: ConformanceBackend) async throws {
    let s = try GenerationStore(backend)
    let reader = s.reader
    let advanced = try s.pin()
    func film(_ title: String, in context: ObjectContext) throws -> Film { try s.film(title, in: context) }
    func count(_ format: String) throws -> Int { try s.count(format) }
    try s.write { try film("Parasite", in: $0).genre = "Satire" }
    #expect(try count("genre == 'Satire'") == 0)
    try reader.performAndWait {
      try film("Collateral", in: reader).genre = "Noir"
      try reader.save()
    }
    #expect(try count("genre == 'Satire'") == 1, "a save advances")
    #expect(reader.performAndWait { reader.queryGenerationToken } != advanced)
    let parasiteID = try reader.performAndWait { try film("Parasite", in: reader).objectID }
    try s.write { try film("Parasite", in: $0).genre = "Thriller" }
    #expect(try count("genre == 'Thriller'") == 0)
    reader.performAndWait { reader.mergeChanges(fromContextDidSave: ContextDidSave(updatedObjectIDs: [parasiteID])) }
    #expect(try count("genre == 'Thriller'") == 1, "a merge advances")
    #expect(try reader.performAndWait { try film("Parasite", in: reader).genre } == "Thriller")
    #expect(reader.performAndWait { reader.queryGenerationToken } != nil, "and the context stays pinned")
  }

  /// A save from a pinned context is still checked against the newest state.
  static func savesFromAPinnedContextMeetTheNewestState(_ backend: ConformanceBackend) async throws {
    let s = try GenerationStore(backend)
    let reader = s.reader
    _ = try s.pin()
    try s.write { try s.film("Amélie", in: $0).genre = "Fable" }
    try reader.performAndWait {
      try s.film("Amélie", in: reader).rating = 9
      expectStoreError(.optimisticLockConflict) { try reader.save() }
      reader.rollback()
    }
  }

  /// A token of another store is refused and leaves the context's generation as it was; an unpinned
  /// context stays unpinned after a refresh.
  static func tokensOfAnotherStoreAreRefused(_ backend: ConformanceBackend) async throws {
    let s = try GenerationStore(backend)
    let reader = s.reader
    _ = try s.pin()
    let second = s.container.newBackgroundContext()
    let (other, _) = try backend.container(types: sampleTypes)
    let foreign = other.newBackgroundContext()
    try foreign.performAndWait { try foreign.setQueryGenerationFrom(.current) }
    let foreignToken = try #require(foreign.performAndWait { foreign.queryGenerationToken })
    let before = reader.performAndWait { reader.queryGenerationToken }
    reader.performAndWait {
      do {
        try reader.setQueryGenerationFrom(foreignToken)
        Issue.record("a token of another store was accepted")
      } catch let error as StoreError {
        #expect(error.code == .misuse)
      } catch {
        Issue.record("unexpected error \(error)")
      }
    }
    #expect(reader.performAndWait { reader.queryGenerationToken } == before)
    try second.performAndWait { try second.setQueryGenerationFrom(nil) }
    second.performAndWait { second.refreshAllObjects() }
    #expect(second.performAndWait { second.queryGenerationToken } == nil)
  }
}
