import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// A context pinned with `setQueryGenerationFrom(.current)` reads one snapshot — fetches, counts,
  /// faults, to-many relationships, asynchronous fetches — whatever another context (another store
  /// instance, for file stores) commits, until it saves, merges, refreshes all objects, resets or unpins.
  /// Another context given its token reads the same snapshot, which outlives the first context moving on.
  public static func queryGenerations(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let reader = container.newBackgroundContext()
    let writer = try backend.freshContext(container, url)
    let byTitle = try FetchRequest<Film>(format: "TRUEPREDICATE", sortDescriptors: [QuerySort("title")])
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

    let original = try titles(reader)
    #expect(reader.performAndWait { reader.queryGenerationToken } == nil)
    try reader.performAndWait { try reader.setQueryGenerationFrom(.current) }
    let pinned = try #require(reader.performAndWait { reader.queryGenerationToken })
    #expect(pinned != .current)

    // Faults made before the commit, fired after it.
    let delicatessenID = try reader.performAndWait { try film("Delicatessen", in: reader).objectID }
    reader.performAndWait { reader.reset() }
    #expect(reader.performAndWait { reader.queryGenerationToken } != pinned, "reset moves to the newest generation")
    try reader.performAndWait { try reader.setQueryGenerationFrom(pinned) }
    let faults = try reader.performAndWait {
      var request = byTitle
      request.fetchBatchSize = 4
      return try reader.fetch(request)
    }

    try write { writer in
      let heat = try film("Heat", in: writer)
      heat.title = "Heat (remastered)"
      let thief = Film(context: writer)
      thief.title = "Thief"
      thief.uuid = UUID()
      thief.director = heat.director
      writer.delete(try film("Delicatessen", in: writer))
    }
    var current = original.filter { $0 != "Delicatessen" && $0 != "Heat" } + ["Heat (remastered)", "Thief"]
    current.sort()
    reader.performAndWait {
      #expect(faults.allSatisfy { $0.isFault })
      #expect(faults.map(\.title) == original, "faults fire from the pinned snapshot")
    }
    #expect(try titles(writer) == current)
    #expect(try titles(container.newBackgroundContext()) == current, "an unpinned context reads the newest state")

    #expect(try titles(reader) == original, "fetches read the pinned snapshot")
    #expect(try reader.performAndWait { try reader.count(for: FetchRequest<Film>()) } == original.count)
    #expect(try reader.performAndWait { try reader.count(for: FetchRequest<Film>(format: "title == 'Thief'")) } == 0)
    #expect(try mannFilms(reader) == ["Collateral", "Heat"], "to-many relationships read the pinned snapshot")
    let asynchronous = try await reader.fetch(AsynchronousFetchRequest(fetchRequest: byTitle, chunkSize: 3))
    #expect(reader.performAndWait { asynchronous.map(\.title) } == original, "asynchronous fetches read it too")

    // Another context given the token reads the same snapshot, even after the first one moves on.
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
    #expect(try titles(reader) == current)
    #expect(try mannFilms(reader) == ["Collateral", "Heat (remastered)", "Thief"])
    #expect(try titles(second) == original, "the snapshot stays while a context holds its token")
    try second.performAndWait { try second.setQueryGenerationFrom(nil) }
    #expect(second.performAndWait { second.queryGenerationToken } == nil)
    #expect(try titles(second) == current, "unpinned, a context reads the newest state")

    // Saving moves a pinned context on; so does merging another context's save.
    func count(_ format: String) throws -> Int {
      try reader.performAndWait { try reader.count(for: FetchRequest<Film>(format: format)) }
    }
    try write { try film("Parasite", in: $0).genre = "Satire" }
    #expect(try count("genre == 'Satire'") == 0)
    try reader.performAndWait {
      try film("Collateral", in: reader).genre = "Noir"
      try reader.save()
    }
    #expect(try count("genre == 'Satire'") == 1, "a save advances")
    #expect(reader.performAndWait { reader.queryGenerationToken } != advanced)
    let parasiteID = try reader.performAndWait { try film("Parasite", in: reader).objectID }
    try write { try film("Parasite", in: $0).genre = "Thriller" }
    #expect(try count("genre == 'Thriller'") == 0)
    reader.performAndWait { reader.mergeChanges(fromContextDidSave: ContextDidSave(updatedObjectIDs: [parasiteID])) }
    #expect(try count("genre == 'Thriller'") == 1, "a merge advances")
    #expect(try reader.performAndWait { try film("Parasite", in: reader).genre } == "Thriller")
    #expect(reader.performAndWait { reader.queryGenerationToken } != nil, "and the context stays pinned")

    // A save from a pinned context is still checked against the newest state.
    try write { try film("Amélie", in: $0).genre = "Fable" }
    try reader.performAndWait {
      try film("Amélie", in: reader).rating = 9
      expectStoreError(.optimisticLockConflict) { try reader.save() }
      reader.rollback()
    }

    // A token of another store is refused; an unpinned context stays unpinned.
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
