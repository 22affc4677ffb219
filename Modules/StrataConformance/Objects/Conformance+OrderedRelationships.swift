import Foundation
import Strata
import StrataStoreKit
import Testing

final class Playlist: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "playlist", deleteRule: .cascade) var tracks: [Track]
  @Relationship(inverse: "mixes") var picks: [Track]
}

final class Track: ManagedObject {
  @Attribute var title: String
  @Relationship(inverse: "tracks") var playlist: Playlist?
  @Relationship(inverse: "picks") var mixes: Set<Playlist>
}

enum OrderedModel {
  static let types: [ManagedObject.Type] = [Playlist.self, Track.self]
}

/// The ordered-relationships area's starting store: tracks a…g; playlist "mix" with tracks c, e, a, b, d
/// (assigned, appended through the inverse, inserted at an index; a repeat kept once) and picks g, a, f;
/// playlist "other" with picks f, g; saved. `expected` and `expectedPicks` follow the edits of a case.
final class OrderedStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let context: ObjectContext
  var byTitle: [String: Track] = [:]
  let mix: Playlist
  let other: Playlist
  var expected = ["c", "a", "b"]
  var expectedPicks = ["g", "a", "f"]

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.container(types: OrderedModel.types)
    context = container.viewContext
    for title in ["a", "b", "c", "d", "e", "f", "g"] {
      let track = Track(context: context)
      track.title = title
      byTitle[title] = track
    }
    mix = Playlist(context: context)
    mix.name = "mix"
    other = Playlist(context: context)
    other.name = "other"
    // Assign, append through the inverse, insert at an index; a repeat keeps its first place.
    mix.tracks = tracks(expected + ["a"])
    #expect(mix.tracks.map(\.title) == expected)
    byTitle["d"]?.playlist = mix
    expected.append("d")
    mix.tracks.insert(try #require(byTitle["e"]), at: 1)
    expected.insert("e", at: 1)
    #expect(mix.tracks.map(\.title) == expected)
    #expect(byTitle["e"]?.playlist === mix)
    mix.picks = tracks(expectedPicks)
    other.picks = tracks(["f", "g"])
    try context.save()
    #expect(mix.tracks.map(\.title) == expected)
  }

  func tracks(_ names: [String]) -> [Track] { names.compactMap { byTitle[$0] } }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url, types: OrderedModel.types) }

  /// The order of "mix"'s list at `keyPath` as `context` reads it.
  func storedOrder(_ keyPath: KeyPath<Playlist, [Track]>, in context: ObjectContext? = nil) throws -> [String] {
    let reader = try context ?? fresh()
    let found = try reader.fetch(FetchRequest<Playlist>(format: "name == 'mix'"))
    return try #require(found.first)[keyPath: keyPath].map(\.title)
  }
}

/// Ordered to-many relationships (`[T]`, Core Data's `isOrdered`), one-to-many and many-to-many: insert
/// at an index, move, remove, repeats kept once, the inverse's to-one appending; the order survives
/// saves, faults, fresh containers, merges of another context's save, child contexts and undo.
/// Expected orders are computed with Swift arrays beside the edits.
enum OrderedRelationshipCases {
  /// The model marks `[T]` relationships ordered and `Set<T>` ones not, and keeps that through JSON.
  static func modelMarksOrderedRelationships(_ backend: ConformanceBackend) async throws {
    let model = try ObjectModel(types: OrderedModel.types)
    #expect(model.entity(named: "Playlist")?.relationship(named: "tracks")?.isOrdered == true)
    #expect(model.entity(named: "Playlist")?.relationship(named: "picks")?.isOrdered == true)
    #expect(model.entity(named: "Track")?.relationship(named: "mixes")?.isOrdered == false)
    #expect(try ObjectModel.decode(jsonData: model.jsonData()) == model)
  }

  /// Assigned, appended and inserted lists read back in order from fresh readers, both kinds.
  static func editsKeepTheirOrderThroughASave(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    try #expect(s.storedOrder(\.tracks) == s.expected)
    try #expect(s.storedOrder(\.picks) == s.expectedPicks)
    try #expect(s.storedOrder(\.picks).count == 3)
    let otherReader = try s.fresh()
    let otherPicks = try otherReader.fetch(FetchRequest<Playlist>(format: "name == 'other'")).first?.picks.map(\.title)
    #expect(otherPicks == ["f", "g"])
  }

  /// Move, remove (the removed track leaves the playlist), reorder the many-to-many: a second context
  /// that has the lists loaded sees it after merging the save; refaulted, the list reads back in order.
  static func movesAndRemovalsReachOtherContexts(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let (context, mix) = (s.context, s.mix)
    let reader = s.container.newBackgroundContext()
    let readerMix = try reader.performAndWait { try reader.fetch(FetchRequest<Playlist>(format: "name == 'mix'")).first }
    #expect(reader.performAndWait { readerMix?.tracks.map(\.title) } == s.expected)
    var list = mix.tracks
    let moved = list.remove(at: 0)
    list.append(moved)
    mix.tracks = list
    s.expected.append(s.expected.removeFirst())
    let removedTitle = s.expected.remove(at: 2)
    mix.tracks.remove(at: 2)
    #expect(s.byTitle[removedTitle]?.playlist == nil)
    mix.picks = mix.picks.reversed()
    s.expectedPicks.reverse()
    #expect(mix.tracks.map(\.title) == s.expected)
    try context.save()
    let saved = ContextDidSave(updatedObjectIDs: Set([mix.objectID] + s.byTitle.values.map(\.objectID)))
    try #expect(s.storedOrder(\.tracks) == s.expected)
    try #expect(s.storedOrder(\.picks) == s.expectedPicks)
    ObjectContext.mergeChanges(fromRemoteContextSave: saved, into: [reader])
    #expect(reader.performAndWait { readerMix?.tracks.map(\.title) } == s.expected)
    #expect(reader.performAndWait { readerMix?.picks.map(\.title) } == s.expectedPicks)
    context.refresh(mix, mergeChanges: false)
    #expect(mix.tracks.map(\.title) == s.expected)
  }

  /// A child context's reorder reaches the parent, then the store.
  static func childContextReorderReachesTheStore(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let child = s.context.newChildContext(concurrencyType: .mainQueue)
    let draft = try #require(child.object(with: s.mix.objectID) as? Playlist)
    draft.tracks = draft.tracks.reversed()
    try child.save()
    s.expected.reverse()
    #expect(s.mix.tracks.map(\.title) == s.expected)
    try s.context.save()
    try #expect(s.storedOrder(\.tracks) == s.expected)
  }

  /// Undo puts the previous order back; rollback the saved one.
  static func undoAndRollbackRestoreTheOrder(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let (context, mix) = (s.context, s.mix)
    let undo = ContextUndoManager()
    context.undoManager = undo
    let beforeUndo = s.expected
    mix.tracks.swapAt(0, mix.tracks.count - 1)
    #expect(mix.tracks.map(\.title) != beforeUndo)
    undo.undo()
    #expect(mix.tracks.map(\.title) == beforeUndo)
    mix.tracks = mix.tracks.reversed()
    context.rollback()
    #expect(mix.tracks.map(\.title) == beforeUndo)
    context.undoManager = nil
  }

  /// Moving a track to another playlist through its to-one appends it there; deleting a track leaves
  /// the others in order.
  static func movesAndDeletesOfTracksKeepTheOthersInOrder(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let (context, mix) = (s.context, s.mix)
    let last = try #require(mix.tracks.first)
    last.playlist = s.other
    s.expected.removeFirst()
    try context.save()
    let fresh = try s.fresh()
    try #expect(s.storedOrder(\.tracks, in: fresh) == s.expected)
    #expect(try fresh.fetch(FetchRequest<Playlist>(format: "name == 'other'")).first?.tracks.map(\.title) == [last.title])
    withExtendedLifetime(fresh) {}

    let doomed = try #require(mix.tracks.dropFirst().first)
    s.expected.removeAll { $0 == doomed.title }
    s.expectedPicks.removeAll { $0 == doomed.title }
    context.delete(doomed)
    try context.save()
    try #expect(s.storedOrder(\.tracks) == s.expected)
    try #expect(s.storedOrder(\.picks) == s.expectedPicks)
  }

  /// A second container on the same store (as another process would be) sees a reorder once it refreshes.
  static func anotherContainerSeesAReorderAfterARefresh(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    guard let url = s.url else { return }
    let other = try backend.container(at: url, types: OrderedModel.types)
    defer { other.close() }
    let seen = try #require(try other.viewContext.fetch(FetchRequest<Playlist>(format: "name == 'mix'")).first)
    #expect(seen.tracks.map(\.title) == s.expected)
    s.mix.tracks = s.mix.tracks.reversed()
    s.expected.reverse()
    try s.context.save()
    other.viewContext.refreshAllObjects()
    #expect(seen.tracks.map(\.title) == s.expected)
  }

  /// Predicates: [SIZE] of an ordered relationship is its count, [FIRST].key, [LAST].key and [n].key read
  /// an element's attribute (nil past the end), [n] alone the element as an object and [n].toOne.key
  /// through to-ones from it; each answers what the same test in Swift does.
  static func predicatesReadElements(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let context = s.context
    let moved = try #require(s.mix.tracks.first)
    moved.playlist = s.other
    s.expected.removeFirst()
    let empty = Playlist(context: context)
    empty.name = "empty"
    try context.save()
    let (expected, expectedPicks) = (s.expected, s.expectedPicks)
    let playlists = try context.fetch(FetchRequest<Playlist>())
    for (format, keep) in [
      ("tracks[SIZE] > 2", { (p: Playlist) in p.tracks.count > 2 }), ("tracks[SIZE] == 0", { $0.tracks.isEmpty }),
      ("picks[SIZE] >= 2", { $0.picks.count >= 2 }),
      (
        "tracks[SIZE] == 1 OR picks[SIZE] == 0",
        {
          $0.tracks.count == 1 || $0.picks.isEmpty
        }
      ),
    ] + elementCases(first: expected.first ?? "", second: expected.dropFirst().first ?? "", last: expected.last ?? "") {
      let found = try context.fetch(FetchRequest<Playlist>(format: format)).map(\.name).sorted()
      #expect(found == playlists.filter(keep).map(\.name).sorted(), "\(format)")
    }
    for (format, arguments, keep) in objectElementCases(
      tracks: s.tracks(expected), picks: s.tracks(expectedPicks), s.byTitle)
    {
      let found = try context.fetch(FetchRequest<Playlist>(format: format, argumentArray: arguments)).map(\.name).sorted()
      #expect(found == playlists.filter(keep).map(\.name).sorted(), "\(format)")
    }
  }

  /// A to-many after an element is refused naming it; a subscript of an unordered relationship, a
  /// negative, fractional or SIZE index read as an element, and a key an element lacks are invalid queries.
  static func badElementPredicatesAreRefused(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let context = s.context
    let beyond = expectStoreError(.unsupported) {
      try context.fetch(FetchRequest<Playlist>(format: "picks[FIRST].mixes.name == 'mix'"))
    }
    #expect(beyond?.message.contains("mixes") == true, "\(beyond?.message ?? "")")
    expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Playlist>(format: "tracks[0].title.name == 'a'")) }
    expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Playlist>(format: "tracks[0].nothing == 'a'")) }
    expectStoreError(.invalidQuery) {
      try context.fetch(FetchRequest<Playlist>(sortDescriptors: [QuerySort("tracks[0].playlist.name")]))
    }
    expectStoreError(.invalidQuery) {
      try context.fetch(FetchRequest<Playlist>(sortDescriptors: [QuerySort("tracks[0].title")]))
    }
    let unordered = expectStoreError(.invalidQuery) {
      try context.fetch(FetchRequest<Track>(format: "mixes[FIRST].name == 'mix'"))
    }
    #expect(unordered?.message.contains("mixes") == true, "\(unordered?.message ?? "")")
    expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Track>(format: "mixes[SIZE] == 1")) }
    expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Playlist>(format: "tracks[-1].title == 'a'")) }
    expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Playlist>(format: "tracks[1.5].title == 'a'")) }
    expectStoreError(.invalidQuery) { try context.fetch(FetchRequest<Playlist>(format: "tracks[SIZE].title == 1")) }
  }

  /// A list for an unordered relationship is refused with the whole save: nothing of it is written.
  static func aListForAnUnorderedRelationshipIsRefused(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let (context, mix) = (s.context, s.mix)
    let last = try #require(s.byTitle["d"])
    let store = try #require(s.container.persistentStore)
    var bad = ChangeSet(inserted: [
      ObjectChange(objectID: .makeTemporary(entityName: "Playlist"), attributes: [.string("bad")], toOne: [])
    ])
    bad.orderedLists = [
      OrderedListChange(entityName: "Track", relationship: "mixes", source: last.objectID, targets: [mix.objectID])
    ]
    let refused = expectStoreError(.misuse) { try store.save(bad) }
    #expect(refused?.key == "mixes", "\(refused?.message ?? "")")
    #expect(try context.count(for: FetchRequest<Playlist>(format: "name == 'bad'")) == 0)
  }

  /// A copy into a new store (`strata copy`) keeps every list's order.
  static func aCopyKeepsEveryOrder(_ backend: ConformanceBackend) async throws {
    let s = try OrderedStore(backend)
    let destination = StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation())
    _ = try s.container.migratePersistentStore(to: destination)
    let copied = s.container.newBackgroundContext()
    try copied.performAndWait {
      try #expect(s.storedOrder(\.tracks, in: copied) == s.expected)
      try #expect(s.storedOrder(\.picks, in: copied) == s.expectedPicks)
    }
  }

  /// Faults of a batched fetch whose ordered relationship is read before their attributes: the order is
  /// the stored one, and the fault still loads with its batch (one store read for the batch).
  static func faultsOfABatchReadTheStoredOrder(_ backend: ConformanceBackend) async throws {
    let counts = StoreCallCounts()
    let counted = ConformanceBackend(
      factory: CountingStoreFactory(inner: backend.factory, counts: counts), location: backend.location)
    let (container, _) = try counted.container(types: OrderedModel.types)
    let context = container.viewContext
    let orders = [["c", "a"], ["b", "d", "a"], ["e"]]
    for (i, order) in orders.enumerated() {
      let list = Playlist(context: context)
      list.name = "list \(i)"
      list.tracks = order.map { title in
        let track = Track(context: context)
        track.title = title
        return track
      }
    }
    try context.save()
    let reader = container.newBackgroundContext()
    var request = FetchRequest<Playlist>(sortDescriptors: [QuerySort("name")])
    request.fetchBatchSize = orders.count
    let lists = try reader.fetch(request)
    #expect(lists.count == orders.count && lists.allSatisfy(\.isFault))
    counts.reset()
    let firstTracks = lists.first?.tracks ?? []
    #expect(counts.snapshotReads == 0, "reading the relationship loads no attributes")
    #expect(lists.map(\.name) == orders.indices.map { "list \($0)" })
    #expect(counts.snapshotReads == 1, "the batch loads together")
    #expect(firstTracks.map(\.title) == orders.first)
    #expect(lists.map { $0.tracks.map(\.title) } == orders)
  }

  /// Batch updates and deletes of targets leave the others in their order.
  static func batchUpdatesAndDeletesKeepTheOrder(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.container(types: OrderedModel.types)
    let context = container.viewContext
    let list = Playlist(context: context)
    list.name = "batch"
    var expected = ["d", "b", "e", "a", "c"]
    list.tracks = expected.map { title in
      let track = Track(context: context)
      track.title = title
      return track
    }
    try context.save()
    _ = try context.execute(
      .update(
        entityName: "Track", predicate: try QueryPredicate(format: "title == 'a'"),
        propertiesToUpdate: [
          "title": .constant(.string("A"))
        ]))
    expected = expected.map { $0 == "a" ? "A" : $0 }
    _ = try context.execute(.delete(entityName: "Track", predicate: try QueryPredicate(format: "title == 'e'")))
    expected.removeAll { $0 == "e" }
    let fresh = try backend.freshContext(container, url, types: OrderedModel.types)
    let stored = try fresh.fetch(FetchRequest<Playlist>(format: "name == 'batch'")).first?.tracks.map(\.title)
    #expect(stored == expected)
  }

  /// Predicates reading elements of `Playlist.tracks` and `picks`, with the same test in Swift.
  static func elementCases(first: String, second: String, last: String) -> [(String, (Playlist) -> Bool)] {
    [
      ("tracks[FIRST].title == '\(first)'", { $0.tracks.first?.title == first }),
      ("tracks[LAST].title == '\(last)'", { $0.tracks.last?.title == last }),
      ("tracks[1].title == '\(second)'", { $0.tracks.count > 1 && $0.tracks[1].title == second }),
      ("tracks[0].title == '\(second)'", { $0.tracks.first?.title == second }),
      ("tracks[99].title == nil", { $0.tracks.count <= 99 }),
      ("tracks[LAST].title == nil", { $0.tracks.isEmpty }),
      ("tracks[FIRST].title != '\(first)'", { $0.tracks.first?.title != first }),
      ("picks[FIRST].title BEGINSWITH '\(first)'", { $0.picks.first?.title.hasPrefix(first) == true }),
      ("picks[LAST].title < 'm'", { ($0.picks.last?.title).map { $0 < "m" } == true }),
      ("uppercase:(tracks[FIRST].title) == '\(first.uppercased())'", { $0.tracks.first?.title == first }),
      ("tracks[SIZE] + picks[SIZE] > 3", { $0.tracks.count + $0.picks.count > 3 }),
    ]
  }

  /// Predicates comparing elements of `Playlist.tracks` and `picks` as objects, or reading through a
  /// to-one from them, with the same test in Swift. `tracks` and `picks` are the lists of the playlist that
  /// has them; arguments are managed objects or object IDs.
  static func objectElementCases(
    tracks: [Track], picks: [Track], _ byTitle: [String: Track]
  ) -> [(String, [any PredicateArgument], (Playlist) -> Bool)] {
    let first = tracks.first
    let third = tracks.dropFirst(2).first
    let stranger = byTitle["g"]
    func id(_ track: Track?) -> ObjectID? { track?.objectID }
    let inThird = [third, stranger].compactMap(\.self)
    return [
      ("tracks[FIRST] == %@", [first], { id($0.tracks.first) == id(first) }),
      ("tracks[LAST] != nil", [], { !$0.tracks.isEmpty }),
      ("tracks[LAST] == nil", [], { $0.tracks.isEmpty }),
      ("tracks[99] == nil", [], { $0.tracks.count <= 99 }),
      (
        "tracks[2] IN %@", [inThird],
        { p in p.tracks.count > 2 && inThird.contains { $0.objectID == p.tracks[2].objectID } }
      ),
      (
        "tracks[LAST] == %@", [Value.objectID(tracks.last?.objectID ?? ObjectID.makeTemporary(entityName: "Track"))],
        { id($0.tracks.last) == id(tracks.last) }
      ),
      ("picks[1] != %@", [picks.dropFirst().first], { id($0.picks.dropFirst().first) != id(picks.dropFirst().first) }),
      ("picks[FIRST].playlist.name == 'mix'", [], { $0.picks.first?.playlist?.name == "mix" }),
      ("picks[LAST].playlist == nil", [], { p in p.picks.last.map { $0.playlist == nil } ?? true }),
      ("picks[1].playlist.name != 'other'", [], { $0.picks.dropFirst().first?.playlist?.name != "other" }),
      ("tracks[0].playlist.name == name", [], { p in p.tracks.first?.playlist?.name == p.name }),
      (
        "picks[0].playlist == %@", [first?.playlist],
        { p in p.picks.first?.playlist.map { $0.objectID == first?.playlist?.objectID } == true }
      ),
    ]
  }

  /// Persistent history records a reorder as an update of the relationship on its source.
  static func historyRecordsAReorder(_ backend: ConformanceBackend) async throws {
    let container = PersistentContainer(
      name: "Ordered", model: try ObjectModel(types: OrderedModel.types), types: OrderedModel.types,
      registry: StoreRegistry([backend.factory]))
    container.storeDescriptions = [
      StoreDescription(
        type: backend.factory.storeType, url: try backend.makeLocation(), options: StoreOptions(tracksHistory: true))
    ]
    try await container.loadPersistentStores()
    defer { container.close() }
    let context = container.viewContext
    let list = Playlist(context: context)
    list.name = "history"
    let one = Track(context: context)
    one.title = "1"
    let two = Track(context: context)
    two.title = "2"
    list.tracks = [one, two]
    try context.save()
    let token = try #require(container.persistentStore).currentHistoryToken()
    list.tracks = [two, one]
    try context.save()
    guard case .transactions(let transactions) = try context.execute(.fetchHistory(after: token)) else {
      Issue.record("expected history transactions")
      return
    }
    let change = transactions.flatMap(\.changes).first { $0.objectID == list.objectID }
    #expect(change?.changeType == .update)
    #expect(change?.updatedProperties.contains("tracks") == true, "\(String(describing: change))")
  }
}

extension Conformance {
  /// Migration of ordered relationships (part of the migration area): a to-many made ordered starts in
  /// its targets' primary-key order, a saved order survives a later migration of the destination entity,
  /// and a relationship made unordered reads in primary-key order again.
  static func orderingMigrates(_ backend: ConformanceBackend) throws {
    let v1 = try MigrationModels.model()
    let store = try backend.factory.openStore(at: try backend.makeLocation(), model: v1, options: StoreOptions())
    let (director, movies) = try directorOfThreeMovies(in: store)
    let byKey = movies.sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }
    #expect(Set(try store.relatedObjectIDs(of: director, relationship: "movies", generation: nil)) == Set(movies))

    let v2 = try orderedDirectorModel()
    let toOrdered = try ModelMigration(from: v1, to: v2)
    #expect(
      toOrdered.changes.contains { change in
        if case .orderingChanged(true) = change.kind { change.key == "movies" } else { false }
      })
    let ordered = try store.migrated(by: toOrdered)
    #expect(try ordered.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == byKey)

    let chosen = Array(byKey.reversed())
    var reorder = ChangeSet()
    reorder.orderedLists = [OrderedListChange(entityName: "Director", relationship: "movies", source: director, targets: chosen)]
    _ = try ordered.save(reorder)
    #expect(try ordered.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == chosen)

    let retyped = try orderSurvivesRewrites(of: ordered, from: v2, director: director, movies: movies, order: chosen)
    let unordered = try orderFollowsRenames(of: retyped, director: director, order: chosen, keyOrder: byKey)
    unordered.close()
  }

  /// Michael Mann and three of his movies, saved; his and their permanent IDs.
  private static func directorOfThreeMovies(in store: any PersistentStore) throws -> (ObjectID, [ObjectID]) {
    let mann = ObjectID.makeTemporary(entityName: "Director")
    let inserted =
      [ObjectChange(objectID: mann, attributes: [.string("Michael Mann")], toOne: [])]
      + ["Thief", "Heat", "Collateral"].map { title in
        ObjectChange(
          objectID: .makeTemporary(entityName: "Movie"),
          attributes: [.string(title), .int(2000), .null, .bool(false), .null, .null], toOne: [mann])
      }
    let saved = try store.save(ChangeSet(inserted: inserted))
    return (try #require(saved.permanentIDs[mann]), inserted.dropFirst().compactMap { saved.permanentIDs[$0.objectID] })
  }

  /// The migration models with the director's movies ordered, and the movie's attributes as given.
  private static func orderedDirectorModel(movie: [AttributeDescription]? = nil) throws -> ObjectModel {
    var movies = MigrationModels.movies
    movies.isOrdered = true
    return try movie.map { try MigrationModels.model(movie: $0, directorRelationships: [movies]) }
      ?? MigrationModels.model(directorRelationships: [movies])
  }

  /// The destination entity loses an attribute (its table or records are rewritten), then its year becomes
  /// text (SQLite rebuilds its table): the order stays through both.
  private static func orderSurvivesRewrites(
    of store: any PersistentStore, from v2: ObjectModel, director: ObjectID, movies: [ObjectID], order: [ObjectID]
  ) throws -> any PersistentStore {
    let v3 = try orderedDirectorModel(movie: [
      MigrationModels.title, MigrationModels.year, MigrationModels.votes, MigrationModels.seen,
    ])
    let rewritten = try store.migrated(by: try ModelMigration(from: v2, to: v3))
    #expect(try rewritten.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == order)

    let v3b = try orderedDirectorModel(movie: [MigrationModels.title, yearText, MigrationModels.votes, MigrationModels.seen])
    let retyped = try rewritten.migrated(by: try ModelMigration(from: v3, to: v3b))
    #expect(try retyped.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == order)
    let years = try retyped.snapshots(for: movies, generation: nil).map { $0.attributes[1] }
    #expect(years == movies.map { _ in Value.string("2000") })
    return retyped
  }

  private static let yearText = AttributeDescription(name: "year", type: .string)

  /// The relationship is renamed (its lists move with it), then its inverse to-one (the position column
  /// beside its foreign key goes with it); last the relationship becomes unordered and lists by key again.
  private static func orderFollowsRenames(
    of store: any PersistentStore, director: ObjectID, order: [ObjectID], keyOrder: [ObjectID]
  ) throws -> any PersistentStore {
    func filmsModel(ordered: Bool, inverse: String = "director") throws -> ObjectModel {
      let films = RelationshipDescription(
        name: "films", destination: "Movie", inverse: inverse, isToMany: true, renamingIdentifier: "movies",
        isOrdered: ordered)
      let toOne = RelationshipDescription(
        name: inverse, destination: "Director", inverse: "films", renamingIdentifier: inverse == "director" ? nil : "director")
      return try MigrationModels.model(
        movie: [MigrationModels.title, yearText, MigrationModels.votes, MigrationModels.seen],
        movieRelationships: [toOne], directorRelationships: [films])
    }
    let v3b = try orderedDirectorModel(movie: [MigrationModels.title, yearText, MigrationModels.votes, MigrationModels.seen])
    let v3c = try filmsModel(ordered: true)
    let renamed = try store.migrated(by: try ModelMigration(from: v3b, to: v3c))
    #expect(try renamed.relatedObjectIDs(of: director, relationship: "films", generation: nil) == order)

    let v3d = try filmsModel(ordered: true, inverse: "filmmaker")
    let renamedInverse = try renamed.migrated(by: try ModelMigration(from: v3c, to: v3d))
    #expect(try renamedInverse.relatedObjectIDs(of: director, relationship: "films", generation: nil) == order)

    let toUnordered = try ModelMigration(from: v3d, to: try filmsModel(ordered: false, inverse: "filmmaker"))
    #expect(toUnordered.changes.contains { if case .orderingChanged(false) = $0.kind { true } else { false } })
    let unordered = try renamedInverse.migrated(by: toUnordered)
    #expect(try unordered.relatedObjectIDs(of: director, relationship: "films", generation: nil) == keyOrder)
    return unordered
  }
}
