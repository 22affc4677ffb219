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

extension Conformance {
  /// Ordered to-many relationships (`[T]`, Core Data's `isOrdered`), one-to-many and many-to-many: insert
  /// at an index, move, remove, repeats kept once, the inverse's to-one appending; the order survives
  /// saves, faults, fresh containers, merges of another context's save, child contexts and undo.
  /// Expected orders are computed with Swift arrays beside the edits.
  public static func orderedRelationships(_ backend: ConformanceBackend) async throws {
    let model = try ObjectModel(types: OrderedModel.types)
    #expect(model.entity(named: "Playlist")?.relationship(named: "tracks")?.isOrdered == true)
    #expect(model.entity(named: "Playlist")?.relationship(named: "picks")?.isOrdered == true)
    #expect(model.entity(named: "Track")?.relationship(named: "mixes")?.isOrdered == false)
    #expect(try ObjectModel.decode(jsonData: model.jsonData()) == model)

    let (container, url) = try backend.container(types: OrderedModel.types)
    let context = container.viewContext
    let titles = ["a", "b", "c", "d", "e", "f", "g"]
    var byTitle: [String: Track] = [:]
    for title in titles {
      let track = Track(context: context)
      track.title = title
      byTitle[title] = track
    }
    func tracks(_ names: [String]) -> [Track] { names.compactMap { byTitle[$0] } }
    let mix = Playlist(context: context)
    mix.name = "mix"
    let other = Playlist(context: context)
    other.name = "other"

    // Assign, append through the inverse, insert at an index; a repeat keeps its first place.
    var expected = ["c", "a", "b"]
    mix.tracks = tracks(expected + ["a"])
    #expect(mix.tracks.map(\.title) == expected)
    byTitle["d"]?.playlist = mix
    expected.append("d")
    mix.tracks.insert(try #require(byTitle["e"]), at: 1)
    expected.insert("e", at: 1)
    #expect(mix.tracks.map(\.title) == expected)
    #expect(byTitle["e"]?.playlist === mix)
    var expectedPicks = ["g", "a", "f"]
    mix.picks = tracks(expectedPicks)
    other.picks = tracks(["f", "g"])
    try context.save()
    #expect(mix.tracks.map(\.title) == expected)

    func storedOrder(_ keyPath: KeyPath<Playlist, [Track]>, in context: ObjectContext) throws -> [String] {
      let found = try context.fetch(FetchRequest<Playlist>(format: "name == 'mix'"))
      return try #require(found.first)[keyPath: keyPath].map(\.title)
    }
    try #expect(storedOrder(\.tracks, in: backend.freshContext(container, url, types: OrderedModel.types)) == expected)
    try #expect(storedOrder(\.picks, in: backend.freshContext(container, url, types: OrderedModel.types)) == expectedPicks)
    try #expect(
      storedOrder(\.picks, in: backend.freshContext(container, url, types: OrderedModel.types)).count == 3)
    let otherReader = try backend.freshContext(container, url, types: OrderedModel.types)
    let otherPicks = try otherReader.fetch(FetchRequest<Playlist>(format: "name == 'other'")).first?.picks.map(\.title)
    #expect(otherPicks == ["f", "g"])

    // A second context that has the lists loaded sees a reorder after merging the save.
    let reader = container.newBackgroundContext()
    let readerMix = try reader.performAndWait { try reader.fetch(FetchRequest<Playlist>(format: "name == 'mix'")).first }
    #expect(reader.performAndWait { readerMix?.tracks.map(\.title) } == expected)

    // Move, remove (the removed track leaves the playlist), reorder the many-to-many.
    var list = mix.tracks
    let moved = list.remove(at: 0)
    list.append(moved)
    mix.tracks = list
    expected.append(expected.removeFirst())
    let removedTitle = expected.remove(at: 2)
    mix.tracks.remove(at: 2)
    #expect(byTitle[removedTitle]?.playlist == nil)
    mix.picks = mix.picks.reversed()
    expectedPicks.reverse()
    #expect(mix.tracks.map(\.title) == expected)
    try context.save()
    let saved = ContextDidSave(updatedObjectIDs: Set([mix.objectID] + byTitle.values.map(\.objectID)))
    try #expect(storedOrder(\.tracks, in: backend.freshContext(container, url, types: OrderedModel.types)) == expected)
    try #expect(storedOrder(\.picks, in: backend.freshContext(container, url, types: OrderedModel.types)) == expectedPicks)
    ObjectContext.mergeChanges(fromRemoteContextSave: saved, into: [reader])
    #expect(reader.performAndWait { readerMix?.tracks.map(\.title) } == expected)
    #expect(reader.performAndWait { readerMix?.picks.map(\.title) } == expectedPicks)

    // Refaulted, the list reads back in order.
    context.refresh(mix, mergeChanges: false)
    #expect(mix.tracks.map(\.title) == expected)

    // A child context's reorder reaches the parent, then the store.
    let child = context.newChildContext(concurrencyType: .mainQueue)
    let draft = try #require(child.object(with: mix.objectID) as? Playlist)
    draft.tracks = draft.tracks.reversed()
    try child.save()
    expected.reverse()
    #expect(mix.tracks.map(\.title) == expected)
    try context.save()
    try #expect(storedOrder(\.tracks, in: backend.freshContext(container, url, types: OrderedModel.types)) == expected)

    // Undo puts the previous order back; rollback the saved one.
    let undo = ContextUndoManager()
    context.undoManager = undo
    let beforeUndo = expected
    mix.tracks.swapAt(0, mix.tracks.count - 1)
    #expect(mix.tracks.map(\.title) != beforeUndo)
    undo.undo()
    #expect(mix.tracks.map(\.title) == beforeUndo)
    mix.tracks = mix.tracks.reversed()
    context.rollback()
    #expect(mix.tracks.map(\.title) == beforeUndo)
    context.undoManager = nil

    // Moving a track to another playlist through its to-one appends it there.
    let last = try #require(mix.tracks.first)
    last.playlist = other
    expected.removeFirst()
    try context.save()
    let fresh = try backend.freshContext(container, url, types: OrderedModel.types)
    try #expect(storedOrder(\.tracks, in: fresh) == expected)
    #expect(try fresh.fetch(FetchRequest<Playlist>(format: "name == 'other'")).first?.tracks.map(\.title) == [last.title])
    withExtendedLifetime(fresh) {}

    // Deleting a track leaves the others in order.
    let doomed = try #require(mix.tracks.dropFirst().first)
    expected.removeAll { $0 == doomed.title }
    expectedPicks.removeAll { $0 == doomed.title }
    context.delete(doomed)
    try context.save()
    try #expect(storedOrder(\.tracks, in: backend.freshContext(container, url, types: OrderedModel.types)) == expected)
    try #expect(storedOrder(\.picks, in: backend.freshContext(container, url, types: OrderedModel.types)) == expectedPicks)

    // A second container on the same store (as another process would be) sees a reorder once it refreshes.
    if let url {
      let other = try backend.container(at: url, types: OrderedModel.types)
      defer { other.close() }
      let seen = try #require(try other.viewContext.fetch(FetchRequest<Playlist>(format: "name == 'mix'")).first)
      #expect(seen.tracks.map(\.title) == expected)
      mix.tracks = mix.tracks.reversed()
      expected.reverse()
      try context.save()
      other.viewContext.refreshAllObjects()
      #expect(seen.tracks.map(\.title) == expected)
    }

    // Predicates: [SIZE] of an ordered relationship is its count, [FIRST].key, [LAST].key and [n].key read
    // an element's attribute (nil past the end), [n] alone the element as an object and [n].toOne.key
    // through to-ones from it; a to-many after an element is refused naming it; a subscript of an
    // unordered relationship is an invalid query.
    let empty = Playlist(context: context)
    empty.name = "empty"
    try context.save()
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
    for (format, arguments, keep) in objectElementCases(tracks: tracks(expected), picks: tracks(expectedPicks), byTitle) {
      let found = try context.fetch(FetchRequest<Playlist>(format: format, argumentArray: arguments)).map(\.name).sorted()
      #expect(found == playlists.filter(keep).map(\.name).sorted(), "\(format)")
    }
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

    // A list for an unordered relationship is refused with the whole save: nothing of it is written.
    let store = try #require(container.persistentStore)
    var bad = ChangeSet(inserted: [
      ObjectChange(objectID: .makeTemporary(entityName: "Playlist"), attributes: [.string("bad")], toOne: [])
    ])
    bad.orderedLists = [
      OrderedListChange(entityName: "Track", relationship: "mixes", source: last.objectID, targets: [mix.objectID])
    ]
    let refused = expectStoreError(.misuse) { try store.save(bad) }
    #expect(refused?.key == "mixes", "\(refused?.message ?? "")")
    #expect(try context.count(for: FetchRequest<Playlist>(format: "name == 'bad'")) == 0)

    // A copy into a new store (`strata copy`) keeps every list's order.
    let destination = StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation())
    _ = try container.migratePersistentStore(to: destination)
    let copied = container.newBackgroundContext()
    try copied.performAndWait {
      try #expect(storedOrder(\.tracks, in: copied) == expected)
      try #expect(storedOrder(\.picks, in: copied) == expectedPicks)
    }
    try orderedHistory(backend)
    try orderedBatches(backend)
    try orderedFaultsOfABatch(backend)
  }

  /// Faults of a batched fetch whose ordered relationship is read before their attributes: the order is
  /// the stored one, and the fault still loads with its batch (one store read for the batch).
  private static func orderedFaultsOfABatch(_ backend: ConformanceBackend) throws {
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
  private static func orderedBatches(_ backend: ConformanceBackend) throws {
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
  private static func elementCases(first: String, second: String, last: String) -> [(String, (Playlist) -> Bool)] {
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
  private static func objectElementCases(
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
  private static func orderedHistory(_ backend: ConformanceBackend) throws {
    let container = PersistentContainer(
      name: "Ordered", model: try ObjectModel(types: OrderedModel.types), types: OrderedModel.types,
      registry: StoreRegistry([backend.factory]))
    container.storeDescriptions = [
      StoreDescription(
        type: backend.factory.storeType, url: try backend.makeLocation(), options: StoreOptions(tracksHistory: true))
    ]
    try container.loadPersistentStores()
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
    let url = try backend.makeLocation()
    let v1 = try MigrationModels.model()
    let store = try backend.factory.openStore(at: url, model: v1, options: StoreOptions())
    let mann = ObjectID.makeTemporary(entityName: "Director")
    func movie(_ title: String) -> ObjectChange {
      let id = ObjectID.makeTemporary(entityName: "Movie")
      return ObjectChange(
        objectID: id, attributes: [.string(title), .int(2000), .null, .bool(false), .null, .null], toOne: [mann])
    }
    let inserted = [
      ObjectChange(objectID: mann, attributes: [.string("Michael Mann")], toOne: []), movie("Thief"), movie("Heat"),
      movie("Collateral"),
    ]
    let saved = try store.save(ChangeSet(inserted: inserted))
    let director = try #require(saved.permanentIDs[mann])
    let movies = inserted.dropFirst().compactMap { saved.permanentIDs[$0.objectID] }
    let byKey = movies.sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }
    #expect(Set(try store.relatedObjectIDs(of: director, relationship: "movies", generation: nil)) == Set(movies))

    func directorModel(ordered: Bool, movie: [AttributeDescription]? = nil) throws -> ObjectModel {
      var movies = MigrationModels.movies
      movies.isOrdered = ordered
      return try movie.map { try MigrationModels.model(movie: $0, directorRelationships: [movies]) }
        ?? MigrationModels.model(directorRelationships: [movies])
    }
    let v2 = try directorModel(ordered: true)
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

    // The destination entity loses an attribute: its table or records are rewritten, the order stays.
    let v3 = try directorModel(
      ordered: true, movie: [MigrationModels.title, MigrationModels.year, MigrationModels.votes, MigrationModels.seen])
    let rewritten = try ordered.migrated(by: try ModelMigration(from: v2, to: v3))
    #expect(try rewritten.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == chosen)

    // The destination's year becomes text: SQLite rebuilds its table (a column's type changes), the order stays.
    let yearText = AttributeDescription(name: "year", type: .string)
    let v3b = try directorModel(
      ordered: true, movie: [MigrationModels.title, yearText, MigrationModels.votes, MigrationModels.seen])
    let retyped = try rewritten.migrated(by: try ModelMigration(from: v3, to: v3b))
    #expect(try retyped.relatedObjectIDs(of: director, relationship: "movies", generation: nil) == chosen)
    let years = try retyped.snapshots(for: movies, generation: nil).map { $0.attributes[1] }
    #expect(years == movies.map { _ in Value.string("2000") })

    // The relationship is renamed: its lists move with it.
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
    let v3c = try filmsModel(ordered: true)
    let renamed = try retyped.migrated(by: try ModelMigration(from: v3b, to: v3c))
    #expect(try renamed.relatedObjectIDs(of: director, relationship: "films", generation: nil) == chosen)

    // The inverse to-one is renamed too: the position column beside its foreign key goes with it.
    let v3d = try filmsModel(ordered: true, inverse: "filmmaker")
    let renamedInverse = try renamed.migrated(by: try ModelMigration(from: v3c, to: v3d))
    #expect(try renamedInverse.relatedObjectIDs(of: director, relationship: "films", generation: nil) == chosen)

    let v4 = try filmsModel(ordered: false, inverse: "filmmaker")
    let toUnordered = try ModelMigration(from: v3d, to: v4)
    #expect(toUnordered.changes.contains { if case .orderingChanged(false) = $0.kind { true } else { false } })
    let unordered = try renamedInverse.migrated(by: toUnordered)
    defer { unordered.close() }
    #expect(try unordered.relatedObjectIDs(of: director, relationship: "films", generation: nil) == byKey)
  }
}
