import Foundation
import Strata
import StrataStoreKit
import Testing

/// The pending-changes area's starting point: the sample store read by `context`, and the unsaved edits
/// its cases make in turn (``insertZulu()``, ``editHeatAndDeleteMemories()``, ``renameParasite()``,
/// ``directZulu()``).
final class PendingStore {
  static let byTitle = [QuerySort("title", comparator: .localizedStandard)]
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let context: ObjectContext
  var zulu: Film?
  var heat: Film?

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.sampleContainer()
    context = try backend.freshContext(container, url)
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }

  func titles(
    _ format: String, sort: [QuerySort] = byTitle, limit: Int? = nil, offset: Int = 0, pending: Bool = true
  ) throws -> [String] {
    var request = try FetchRequest<Film>(format: format, sortDescriptors: sort)
    request.fetchLimit = limit
    request.fetchOffset = offset
    request.includesPendingChanges = pending
    return try context.fetch(request).map(\.title)
  }

  func count(_ format: String, limit: Int? = nil, offset: Int = 0, pending: Bool = true) throws -> Int {
    var request = try FetchRequest<Film>(format: format)
    request.fetchLimit = limit
    request.fetchOffset = offset
    request.includesPendingChanges = pending
    let counted = try context.count(for: request)
    #expect(try context.fetchObjectIDs(request).count == counted, "count and IDs agree for \(format)")
    return counted
  }

  /// Zulu (Crime, 2020) inserted.
  @discardableResult
  func insertZulu() -> Film {
    let zulu = Film(context: context)
    zulu.title = "Zulu"
    zulu.genre = "Crime"
    zulu.year = 2020
    zulu.uuid = UUID()
    self.zulu = zulu
    return zulu
  }

  /// Heat made a Drama; Memories of Murder deleted.
  func editHeatAndDeleteMemories() throws {
    let heat = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    heat.genre = "Drama"
    self.heat = heat
    context.delete(try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Memories of Murder'")).first))
  }

  /// Parasite retitled "Aardvark".
  func renameParasite() throws {
    let parasite = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).first)
    parasite.title = "Aardvark"
  }

  /// Zulu directed by a new director.
  func directZulu() {
    let newcomer = Director(context: context)
    newcomer.name = "New Director"
    zulu?.director = newcomer
  }
}

/// `includesPendingChanges`: fetches, ID fetches and counts reflect unsaved inserts, edits and deletes
/// (matched and sorted by current values, through relationships too, with limit and offset), and
/// answer exactly what the store answers once the changes are saved; without it, the store's answer.
enum PendingChangeCases {
  /// An unsaved insert is fetched, counted and found by ID.
  static func pendingInsertsAreFetched(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    let context = s.context
    let zulu = s.insertZulu()
    #expect(try s.titles("genre == 'Crime'") == ["Heat", "Memories of Murder", "Zulu"])
    #expect(try s.count("genre == 'Crime'") == 3)
    #expect(try context.fetchObjectIDs(FetchRequest<Film>(format: "title == 'Zulu'")) == [zulu.objectID])
  }

  /// Unsaved edits are matched by their current values; unsaved deletes are left out.
  static func pendingEditsAndDeletesAreMatchedAsTheyAre(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    let context = s.context
    s.insertZulu()
    let heat = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    heat.genre = "Drama"
    #expect(try s.titles("genre == 'Crime'") == ["Memories of Murder", "Zulu"])
    #expect(try s.titles("genre == 'Drama'") == ["Heat", "Straße"])
    #expect(try s.count("genre == 'Crime'") == 2)
    #expect(try s.count("genre == 'Drama'") == 2)

    let memories = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Memories of Murder'")).first)
    context.delete(memories)
    #expect(try s.titles("genre == 'Crime'") == ["Zulu"])
    #expect(try s.count("genre == 'Crime'") == 1)
  }

  /// Sorted by current values, paged after merging.
  static func pendingChangesAreSortedAndPaged(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    let context = s.context
    s.insertZulu()
    try s.editHeatAndDeleteMemories()
    let parasite = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).first)
    parasite.title = "Aardvark"
    #expect(try s.titles("TRUEPREDICATE", limit: 1) == ["Aardvark"])
    #expect(try s.titles("TRUEPREDICATE", limit: 3, offset: 1) == ["Amélie", "Collateral", "Delicatessen"])
    #expect(try s.titles("TRUEPREDICATE", sort: [QuerySort("year", ascending: false)], limit: 2) == ["Untitled Project", "Zulu"])
    #expect(try s.count("TRUEPREDICATE") == 10)
    #expect(try s.count("TRUEPREDICATE", limit: 4, offset: 8) == 2)
    #expect(try s.count("year > 2000", limit: 3) == 3)
  }

  /// Through relationships, to objects that exist only in the context.
  static func pendingObjectsAreReachedThroughRelationships(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    let context = s.context
    let zulu = s.insertZulu()
    try s.editHeatAndDeleteMemories()
    let newcomer = Director(context: context)
    newcomer.name = "New Director"
    zulu.director = newcomer
    #expect(try s.titles("director.name == 'New Director'") == ["Zulu"])
    #expect(try s.count("director.name BEGINSWITH 'New'") == 1)
    #expect(try context.count(for: FetchRequest<Director>(format: "films.@count == 0")) == 1)
    let oneFilm = try context.fetch(FetchRequest<Director>(format: "films.@count == 1", sortDescriptors: [QuerySort("name")]))
    #expect(oneFilm.map(\.name) == ["Bong Joon-ho", "New Director"])
  }

  /// Without pending changes: the store as it is.
  static func withoutPendingChangesTheStoreAnswers(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    s.insertZulu()
    try s.editHeatAndDeleteMemories()
    #expect(try s.titles("genre == 'Crime'", pending: false) == ["Heat", "Memories of Murder"])
    #expect(try s.count("genre == 'Crime'", pending: false) == 2)
    #expect(try s.titles("title == 'Zulu'", pending: false).isEmpty)
  }

  /// Saved, the store gives the answers the context gave.
  static func savedTheStoreGivesTheSameAnswers(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    let context = s.context
    s.insertZulu()
    try s.editHeatAndDeleteMemories()
    try s.renameParasite()
    s.directZulu()
    let byTitle = PendingStore.byTitle
    func titles(_ format: String) throws -> [String] { try s.titles(format) }
    func count(_ format: String) throws -> Int { try s.count(format) }
    let questions = [
      "genre == 'Crime'", "genre == 'Drama'", "TRUEPREDICATE", "year > 2000", "director.name BEGINSWITH 'New'",
    ]
    let before = try questions.map { try titles($0) }
    let countsBefore = try questions.map { try count($0) }
    try context.save()
    let after = try s.fresh()
    for (i, question) in questions.enumerated() {
      let request = try FetchRequest<Film>(format: question, sortDescriptors: byTitle)
      #expect(try after.fetch(request).map(\.title) == before[i], "\(question)")
      #expect(try after.count(for: request) == countsBefore[i], "\(question)")
    }
  }

  /// Rolled back, the store's answer again.
  static func rolledBackTheStoreAnswersAgain(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    let context = s.context
    s.insertZulu()
    try s.editHeatAndDeleteMemories()
    try context.save()
    let heat = try #require(s.heat)
    heat.genre = "Crime"
    let ghost = Film(context: context)
    ghost.title = "Ghost"
    ghost.uuid = UUID()
    #expect(try s.count("TRUEPREDICATE") == 11)
    context.rollback()
    #expect(try s.titles("genre == 'Crime'") == ["Zulu"])
    #expect(try s.count("TRUEPREDICATE") == 10)
  }

  /// A bad predicate is still an error naming the key, with pending changes about.
  static func badPredicatesAreStillRefused(_ backend: ConformanceBackend) async throws {
    let s = try PendingStore(backend)
    let context = s.context
    _ = Film(context: context)
    expectStoreError(.invalidQuery) { try s.titles("nosuchkey == 1") }
    expectStoreError(.invalidQuery) { try s.count("nosuchkey == 1") }
  }
}
