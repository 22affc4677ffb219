import Foundation
import Strata
import StrataStoreKit
import Testing

/// Uniqueness constraints: a clash with a stored object or within one save fails the whole save with
/// one error listing every clash; the store is unchanged; nil values never clash.
enum UniquenessCases {
  /// Clashes with stored objects fail the whole save with one error listing every clash; the store is
  /// unchanged and the context keeps its changes.
  static func clashesWithStoredObjectsAreAllListed(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = container.viewContext
    let heatID = try #require(try context.fetchObjectIDs(FetchRequest<Film>(format: "title == 'Heat'")).first)
    let amelieID = try #require(try context.fetchObjectIDs(FetchRequest<Film>(format: "title == 'Amélie'")).first)

    let copy1 = Film(context: context)
    copy1.title = "Heat (copy)"
    copy1.uuid = SampleData.uuid(1)
    let copy2 = Film(context: context)
    copy2.title = "Amélie (copy)"
    copy2.uuid = SampleData.uuid(3)
    let fine = Film(context: context)
    fine.title = "Fine"
    fine.uuid = SampleData.uuid(700)
    do {
      try context.save()
      Issue.record("a save with duplicate unique keys must fail")
    } catch let error as StoreError {
      #expect(error.code == .constraintConflict)
      #expect(error.conflicts.count == 2)
      #expect(Set(error.conflicts.compactMap(\.conflictingObjectID)) == [heatID, amelieID])
      #expect(error.conflicts.allSatisfy { $0.entity == "Film" && $0.keys == ["uuid"] })
      #expect(error.message.contains("uuid"))
    }
    #expect(context.hasChanges)
    let fresh = try backend.freshContext(container, url)
    #expect(try fresh.count(for: FetchRequest<Film>()) == SampleData.films.count)
    #expect(try fresh.count(for: FetchRequest<Film>(format: "title == 'Fine'")) == 0)
    context.rollback()
  }

  /// Two new objects with the same key in one save clash.
  static func twoNewObjectsWithOneKeyClash(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = container.viewContext
    let fresh = try backend.freshContext(container, url)
    let a = Studio(context: context)
    a.name = "Pixar"
    let b = Studio(context: context)
    b.name = "Pixar"
    expectStoreError(.constraintConflict) { try context.save() }
    #expect(try fresh.count(for: FetchRequest<Studio>()) == SampleData.studios.count)
    context.rollback()
  }

  /// nil never clashes; distinct values save.
  static func nilNeverClashes(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = container.viewContext
    let fresh = try backend.freshContext(container, url)
    for n in 0..<3 {
      let actor = Actor(context: context)
      actor.name = "Extra \(n)"
      actor.imdbID = nil
    }
    try context.save()
    let withoutID = SampleData.actors.filter { $0.imdbID == nil }.count
    #expect(try fresh.count(for: FetchRequest<Actor>(format: "imdbID == nil")) == withoutID + 3)
  }

  /// Changing a stored object's key to a taken value fails; to a free value succeeds.
  static func changedKeysAreCheckedToo(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = container.viewContext
    let fresh = try backend.freshContext(container, url)
    let collateral = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Collateral'")).first)
    collateral.uuid = SampleData.uuid(1)
    expectStoreError(.constraintConflict) { try context.save() }
    collateral.uuid = SampleData.uuid(800)
    try context.save()
    #expect(try fresh.count(for: FetchRequest<Film>(format: "uuid == %@", SampleData.uuid(800))) == 1)
  }

  /// A derived attribute declared unique: values that fold to one key clash like given ones.
  static func uniqueDerivedAttributesClashByTheirFoldedKey(_ backend: ConformanceBackend) async throws {
    let (handles, handlesURL) = try backend.container(types: [Handle.self])
    let handleContext = handles.viewContext
    let first = Handle(context: handleContext)
    first.display = "Café"
    try handleContext.save()
    let second = Handle(context: handleContext)
    second.display = "CAFE"
    do {
      try handleContext.save()
      Issue.record("two handles folding to one key must not save")
    } catch let error as StoreError {
      #expect(error.code == .constraintConflict, "\(error.message)")
      #expect(error.entity == "Handle" && error.message.contains("key"), "\(error.message)")
      #expect(error.conflicts.first?.conflictingObjectID == first.objectID, "\(error.conflicts)")
    }
    let afterClash = try backend.freshContext(handles, handlesURL, types: [Handle.self])
    #expect(try afterClash.fetch(FetchRequest<Handle>()).map(\.display) == ["Café"])
  }

  /// One clash among many new objects (see ``Conformance/uniquenessAmongManyInserts(_:)``).
  static func oneClashAmongManyInsertsIsNamed(_ backend: ConformanceBackend) async throws {
    try Conformance.uniquenessAmongManyInserts(backend)
  }

  /// Saves conditional on the store holding no such object (see ``Conformance/saveIfStoreHasNo(_:)``).
  static func saveIfTheStoreHasNone(_ backend: ConformanceBackend) async throws { try Conformance.saveIfStoreHasNo(backend) }
}

extension Conformance {
  /// A save of many new objects (stores may write them several rows at a time): one clash among them
  /// fails the save naming that object, the store unchanged; without it every object is stored with its
  /// own values and references, also to objects inserted after it in the same save.
  static func uniquenessAmongManyInserts(_ backend: ConformanceBackend) throws {
    let (container, url) = try backend.sampleContainer()
    let context = container.viewContext
    let taken = try #require(try context.fetch(FetchRequest<Studio>()).first?.name)
    // Films first, so that each points at a studio inserted after it.
    let films = (0..<150).map { n in
      let film = Film(context: context)
      film.title = "Many \(n)"
      film.year = Int16(1900 + n)
      film.uuid = SampleData.uuid(10_000 + n)
      // Empty, short and long text, some of it not ASCII.
      film.genre = n % 5 == 0 ? "" : n % 5 == 1 ? nil : "Ñoño, a film of the long-named genre number \(n)"
      return film
    }
    let studios = (0..<100).map { n in
      let studio = Studio(context: context)
      studio.name = "Many \(n)"
      return studio
    }
    for (n, film) in films.enumerated() where n % 3 == 0 { film.studio = studios[n % studios.count] }
    studios[45].name = taken
    do {
      try context.save()
      Issue.record("a new studio named like a stored one must not save")
    } catch let error as StoreError {
      #expect(error.code == .constraintConflict, "\(error.message)")
      #expect(error.conflicts.map(\.objectID) == [studios[45].objectID], "\(error.conflicts)")
    }
    let fresh = try backend.freshContext(container, url)
    #expect(try fresh.count(for: FetchRequest<Studio>()) == SampleData.studios.count)
    #expect(try fresh.count(for: FetchRequest<Film>()) == SampleData.films.count)

    studios[45].name = "Many 45"
    try context.save()
    let reread = try backend.freshContext(container, url)
    let stored = try reread.fetch(FetchRequest<Film>(format: "title BEGINSWITH 'Many '"))
    #expect(stored.count == films.count)
    let byID = Dictionary(uniqueKeysWithValues: films.map { ($0.objectID, $0) })
    for film in stored {
      let sent = try #require(byID[film.objectID], "\(film.objectID) was not one of the saved films")
      #expect(film.title == sent.title && film.year == sent.year && film.uuid == sent.uuid && film.genre == sent.genre)
      #expect(film.studio?.objectID == sent.studio?.objectID)
      #expect(film.studio?.name == sent.studio?.name)
    }
    let storedStudios = try reread.fetch(FetchRequest<Studio>(format: "name BEGINSWITH 'Many '"))
    #expect(Set(storedStudios.map(\.objectID)) == Set(studios.map(\.objectID)))
    #expect(Set(storedStudios.map(\.name)) == Set(studios.map(\.name)))
  }
}

/// A handle of the uniqueness area, unique by its folded form (a derived attribute).
final class Handle: ManagedObject {
  @Attribute var display: String
  @Derived("canonical:(display)", .unique) var key: String
}
