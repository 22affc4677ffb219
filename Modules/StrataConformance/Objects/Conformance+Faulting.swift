import Foundation
import Strata
import StrataStoreKit
import Testing

/// Faults and what reading them costs: fetched objects are faults that already hold their values;
/// `fetchBatchSize` loads one batch per store call; prefetching loads to-one, to-many (through the
/// inverse and through join tables) and nested relationship targets with the objects, so that reading
/// them costs no store call; a to-many's targets load in one store call when one of them is read; `IN` a
/// long list of object IDs (what a prefetch asks) matches as ID by ID does; a bad prefetch key path is an
/// error naming it; a batched collection walks the same objects in the same order; one object's snapshot
/// (`snapshot(for:generation:)`) is what `snapshots(for:)` gives. Each case counts its store's calls.
enum FaultingCases {
  static let byTitle = [QuerySort("title", comparator: .localizedStandard)]
  static let titles = [
    "Amélie", "Collateral", "Delicatessen", "File2", "file10", "Heat", "Memories of Murder", "Parasite",
    "Straße", "Untitled Project",
  ]

  /// Faults holding their values: no store call to read them; a fetch told so returns no faults.
  static func fetchedFaultsHoldTheirValues(_ backend: ConformanceBackend) async throws {
    let (container, counts) = try backend.countedSampleContainer()
    let context = container.newBackgroundContext()
    let faults = try context.fetch(FetchRequest<Film>(sortDescriptors: byTitle))
    #expect(faults.allSatisfy { $0.isFault })
    counts.reset()
    #expect(faults.map(\.title) == titles)
    #expect(counts.reads == 0)
    var loaded = FetchRequest<Film>(sortDescriptors: byTitle)
    loaded.returnsObjectsAsFaults = false
    let fresh = container.newBackgroundContext()
    #expect(try fresh.fetch(loaded).allSatisfy { !$0.isFault })
  }

  /// Batch faulting: one store read per batch of three, when the batch is first read.
  static func batchesLoadWhenFirstRead(_ backend: ConformanceBackend) async throws {
    let (container, counts) = try backend.countedSampleContainer()
    let batched = container.newBackgroundContext()
    var request = FetchRequest<Film>(sortDescriptors: byTitle)
    request.fetchBatchSize = 3
    counts.reset()
    let films = try batched.fetch(request)
    #expect(films.count == 10)
    #expect(counts.snapshotReads == 0)
    #expect(films[0].title == "Amélie")
    #expect(counts.snapshotReads == 1)
    #expect(films[1].title == "Collateral" && films[2].title == "Delicatessen")
    #expect(counts.snapshotReads == 1)
    #expect(films.map(\.title) == titles)
    #expect(counts.snapshotReads == 4)
  }

  /// The batched collection: the same objects, one store read per batch.
  static func batchedCollectionsWalkTheSameObjects(_ backend: ConformanceBackend) async throws {
    let (container, counts) = try backend.countedSampleContainer()
    let walker = container.newBackgroundContext()
    counts.reset()
    let collection = try walker.fetch(FetchRequest<Film>(sortDescriptors: byTitle), batchSize: 4)
    #expect(collection.count == 10)
    #expect(collection.map(\.title) == titles)
    #expect(counts.snapshotReads == 3)
    #expect(collection.objectIDs == (try walker.fetchObjectIDs(FetchRequest<Film>(sortDescriptors: byTitle))))
  }

  /// Without prefetching, reading directors costs store calls; with it (to-one, to-many, join tables,
  /// nested), none.
  static func prefetchedRelationshipsCostNoStoreCall(_ backend: ConformanceBackend) async throws {
    let (container, counts) = try backend.countedSampleContainer()
    let plain = container.newBackgroundContext()
    let unprefetched = try plain.fetch(FetchRequest<Film>(sortDescriptors: byTitle))
    counts.reset()
    _ = unprefetched.map { $0.director?.name }
    #expect(counts.reads > 0)

    let prefetching = container.newBackgroundContext()
    var withTargets = FetchRequest<Film>(sortDescriptors: byTitle)
    withTargets.relationshipKeyPathsForPrefetching = ["director", "studio", "actors", "director.films"]
    counts.reset()
    let prefetched = try prefetching.fetch(withTargets)
    let readsToFetch = counts.reads
    #expect(readsToFetch < 10 + 10, "prefetching reads per hop, and per object only for join tables")
    counts.reset()
    let directors = prefetched.map { $0.director?.name }
    let studios = prefetched.map { $0.studio?.name }
    let casts = prefetched.map { $0.actors.map(\.name).sorted() }
    let filmographies = prefetched.map { $0.director?.films.map(\.title).sorted() ?? [] }
    #expect(counts.reads == 0)
    #expect(
      directors == [
        "Jean-Pierre Jeunet", "Michael Mann", "Jean-Pierre Jeunet", nil, nil, "Michael Mann", "Bong Joon-ho", "Bong Joon-ho",
        nil, nil,
      ])
    #expect(studios == ["UGC", "Warner", "UGC", "Warner", "Warner", "Warner", nil, nil, nil, nil])
    #expect(casts[5] == ["Al Pacino", "Robert De Niro"])
    #expect(filmographies[1] == ["Collateral", "Heat"])
  }

  /// A to-many through its inverse: one fetch for every director's films.
  static func prefetchingAToManyThroughItsInverse(_ backend: ConformanceBackend) async throws {
    let (container, counts) = try backend.countedSampleContainer()
    let owners = container.newBackgroundContext()
    var directorRequest = FetchRequest<Director>(sortDescriptors: [QuerySort("name")])
    directorRequest.relationshipKeyPathsForPrefetching = ["films"]
    counts.reset()
    let allDirectors = try owners.fetch(directorRequest)
    #expect(counts.reads == 2)
    counts.reset()
    #expect(
      allDirectors.map { $0.films.map(\.title).sorted() } == [
        ["Memories of Murder", "Parasite"], ["Amélie", "Delicatessen"], ["Collateral", "Heat"], [],
      ])
    #expect(counts.reads == 0)
  }

  /// A to-many's targets load together when one is read: one store read for the set, not one per target.
  static func aToManysTargetsLoadTogether(_ backend: ConformanceBackend) async throws {
    let (container, counts) = try backend.countedSampleContainer()
    let lazy = container.newBackgroundContext()
    let mann = try lazy.fetch(FetchRequest<Director>(format: "name == 'Michael Mann'")).first
    counts.reset()
    #expect(mann?.films.map(\.title).sorted() == ["Collateral", "Heat"])
    #expect(counts.relationshipReads == 1 && counts.snapshotReads == 1)
  }

  /// `IN` a long list of object IDs, as a prefetch of many objects asks its store (stores may hash such
  /// a list, or hand it to SQL as one value): the films a film-by-film check finds, and under NOT the
  /// rest, films without a director included.
  static func longListsOfIDsMatchAsIDByIDDoes(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.countedSampleContainer()
    let adder = container.newBackgroundContext()
    try adder.performAndWait {
      for n in 0..<80 { Director(context: adder).name = "Extra \(n)" }
      try adder.save()
    }
    let reader = container.newBackgroundContext()
    let everyFilm = try reader.fetch(FetchRequest<Film>(sortDescriptors: byTitle))
    let chosen = try reader.fetchObjectIDs(FetchRequest<Director>(sortDescriptors: [QuerySort("name")])).dropFirst()
    #expect(chosen.count > 64)
    let inList = everyFilm.filter { film in film.director.map { chosen.contains($0.objectID) } ?? false }.map(\.title)
    #expect(!inList.isEmpty && inList.count < everyFilm.count)
    let found = try reader.fetch(FetchRequest<Film>(format: "director IN %@", Array(chosen), sortDescriptors: byTitle))
    #expect(found.map(\.title) == inList)
    let rest = try reader.fetch(FetchRequest<Film>(format: "NOT (director IN %@)", Array(chosen), sortDescriptors: byTitle))
    #expect(rest.map(\.title) == everyFilm.map(\.title).filter { !inList.contains($0) })
    #expect(rest.contains { $0.director == nil })
  }

  /// Prefetching a to-many for more objects than a predicate may name: the same films, no store call
  /// to read them.
  static func prefetchingBeyondThePredicateLimit(_ backend: ConformanceBackend) async throws {
    let (container, counts) = try backend.countedSampleContainer()
    let adder = container.newBackgroundContext()
    // Objects keep their context alive only while the caller holds it: `reader` is held to the end.
    let reader = container.newBackgroundContext()
    let everyFilm = try reader.fetch(FetchRequest<Film>(sortDescriptors: byTitle))
    try adder.performAndWait {
      for n in 0..<QueryLimits.maxConstants { Director(context: adder).name = "Crowd \(n)" }
      try adder.save()
    }
    let crowd = container.newBackgroundContext()
    var everyDirector = FetchRequest<Director>(sortDescriptors: [QuerySort("name")])
    everyDirector.relationshipKeyPathsForPrefetching = ["films"]
    let prefetchedDirectors = try crowd.fetch(everyDirector)
    #expect(prefetchedDirectors.count > QueryLimits.maxConstants)
    counts.reset()
    let filmsByDirector = Dictionary(
      prefetchedDirectors.filter { !$0.films.isEmpty }.map { ($0.name, $0.films.map(\.title).sorted()) },
      uniquingKeysWith: { a, _ in a })
    #expect(counts.reads == 0)
    #expect(filmsByDirector["Michael Mann"] == ["Collateral", "Heat"])
    #expect(filmsByDirector.values.reduce(0) { $0 + $1.count } == everyFilm.filter { $0.director != nil }.count)
    withExtendedLifetime(reader) {}
  }

  /// Bad prefetch key paths are an invalid query naming the key.
  static func badPrefetchKeyPathsNameTheKey(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.countedSampleContainer()
    let context = container.newBackgroundContext()
    for bad in ["directr", "title", "director.nme"] {
      var wrong = FetchRequest<Film>()
      wrong.relationshipKeyPathsForPrefetching = [bad]
      do {
        _ = try context.fetch(wrong)
        Issue.record("prefetching '\(bad)' should fail")
      } catch let error as StoreError {
        #expect(error.code == .invalidQuery)
        #expect(error.message.contains(bad.split(separator: ".").last.map(String.init) ?? bad))
      }
    }
  }

  /// One object's snapshot is what `snapshots(for:)` gives (see ``Conformance/singleSnapshots(_:)``).
  static func singleSnapshots(_ backend: ConformanceBackend) async throws { try Conformance.singleSnapshots(backend) }

  /// At a pinned generation (see ``Conformance/pinnedSnapshots(_:)``).
  static func pinnedSnapshots(_ backend: ConformanceBackend) async throws { try Conformance.pinnedSnapshots(backend) }

  /// Stale versions in one save (see ``Conformance/staleVersionsInOneSaveAreAllListed(_:)``).
  static func staleVersionsInOneSaveAreAllListed(_ backend: ConformanceBackend) async throws {
    try Conformance.staleVersionsInOneSaveAreAllListed(backend)
  }

  /// A closed store (see ``Conformance/closedStoresGiveNoSnapshot(_:)``).
  static func closedStoresGiveNoSnapshot(_ backend: ConformanceBackend) async throws {
    try Conformance.closedStoresGiveNoSnapshot(backend)
  }

  /// Faults of every entity fired in random order (see ``Conformance/faultsOfEveryEntity(_:)``).
  static func faultsOfEveryEntity(_ backend: ConformanceBackend) async throws { try Conformance.faultsOfEveryEntity(backend) }

  /// Objects outlive their context (see ``Conformance/objectsOutliveTheirContext(_:)``).
  static func objectsOutliveTheirContext(_ backend: ConformanceBackend) async throws {
    try Conformance.objectsOutliveTheirContext(backend)
  }

  /// Objects reach their own context (see ``Conformance/objectsReachTheirOwnContext(_:)``).
  static func objectsReachTheirOwnContext(_ backend: ConformanceBackend) async throws {
    try Conformance.objectsReachTheirOwnContext(backend)
  }
}

extension Conformance {
  /// Faults of every entity of one store, fired in random order in one context, load the values a fetch
  /// of the same objects reads in another.
  static func faultsOfEveryEntity(_ backend: ConformanceBackend) throws {
    let (container, url) = try backend.sampleContainer()
    let fetcher = try backend.freshContext(container, url)
    var fetched: [ManagedObject] = []
    for entity in ["Film", "Director", "Studio", "Actor"] {
      fetched += try fetcher.fetch(FetchRequest<ManagedObject>(entityName: entity))
    }
    #expect(fetched.count > 4)
    let faulting = try backend.freshContext(container, url)
    var generator = SystemRandomNumberGenerator()
    for object in fetched.shuffled(using: &generator) {
      let fault = faulting.object(with: object.objectID)
      #expect(fault.isFault && fault.entity.name == object.entity.name)
      for attribute in object.entity.attributes where !attribute.isTransient {
        #expect(
          fault.primitiveValue(forKey: attribute.name) == object.primitiveValue(forKey: attribute.name),
          "\(object.objectID) \(attribute.name)")
      }
    }
  }

  /// An object outlives its context: once the context is gone the object has none, still names its
  /// entity, keeps the values it loaded and the changes made to it and takes new ones; a fault that can
  /// no longer load reads default values and is not taken for deleted. Nothing crashes.
  static func objectsOutliveTheirContext(_ backend: ConformanceBackend) throws {
    let (container, _) = try backend.sampleContainer()
    weak var gone: ObjectContext?
    func objects() throws -> (loaded: Film, fault: Film, changed: Film, title: String) {
      let context = container.newBackgroundContext()
      gone = context
      let films = try context.fetch(FetchRequest<Film>(sortDescriptors: [QuerySort("title")]))
      #expect(films.count >= 3)
      let loaded = films[0]
      let fault = films[1]
      context.refresh(fault, mergeChanges: false)
      #expect(fault.isFault)
      let changed = films[2]
      changed.title = "Changed after \(changed.title)"
      return (loaded, fault, changed, loaded.title)
    }
    let (loaded, fault, changed, title) = try objects()
    #expect(gone == nil, "nothing but the test held the context")
    for object in [loaded, fault, changed] {
      #expect(object.managedObjectContext == nil)
      #expect(object.entity.name == "Film")
    }
    #expect(loaded.title == title)
    #expect(changed.title.hasPrefix("Changed after "))
    #expect(changed.changedValues()["title"] == .string(changed.title))
    _ = fault.title
    #expect(!fault.isFault && !fault.isDeleted)
    loaded.title = "Renamed"
    #expect(loaded.title == "Renamed" && loaded.changedValues().keys.contains("title"))
  }

  /// An object reaches its own context whichever context's work runs: a fault fires, a to-one target
  /// is made and a change is recorded in the object's context — outside any `performAndWait`, inside
  /// its context's, inside another context's (nested in its own or not) and again in its own once the
  /// nested one returns — and never in the context whose work is running.
  static func objectsReachTheirOwnContext(_ backend: ConformanceBackend) throws {
    let (container, _) = try backend.sampleContainer()
    let owner = container.newBackgroundContext()
    let other = container.newBackgroundContext()
    let byTitle = FetchRequest<Film>(sortDescriptors: [QuerySort("title")])
    let films = try owner.fetch(byTitle)
    try #require(films.count >= 4)
    let titles = films.map(\.title)
    let directorIDs = films.map { $0.director?.objectID }
    for film in films { owner.refresh(film, mergeChanges: false) }
    #expect(films.allSatisfy { $0.isFault })

    func touch(_ index: Int, in place: String) throws {
      let film = films[index]
      #expect(film.title == titles[index], "\(place): the fault fires from its own context")
      #expect(film.director?.objectID == directorIDs[index], "\(place): the director is the same")
      #expect(film.director.map { $0.managedObjectContext === owner } ?? true, "\(place): the director is the owner's")
      film.rating = 9.5
      #expect(owner.updatedObjects.contains(film), "\(place): the change is the owner's")
      #expect(!other.hasChanges, "\(place): the other context records nothing")
    }
    try touch(0, in: "outside performAndWait")
    try owner.performAndWait { try touch(1, in: "in its context's work") }
    try other.performAndWait { try touch(2, in: "in another context's work") }
    try owner.performAndWait {
      try other.performAndWait { try touch(3, in: "in another context's work nested in its own") }
      let film = films[3]
      owner.refresh(film, mergeChanges: false)
      #expect(film.title == titles[3] && film.isUpdated == false, "back in its own context's work")
      film.rating = 1
      #expect(owner.updatedObjects.contains(film) && !other.hasChanges, "back in its own context's work")
    }
    try owner.save()
    let check = container.newBackgroundContext()
    let saved = try check.fetch(byTitle)
    #expect(saved.prefix(4).map(\.rating) == [9.5, 9.5, 9.5, 1])
  }

  /// One object's snapshot is what `snapshots(for:)` gives: stored objects, deleted ones, IDs never
  /// given or of another store, an unknown entity.
  static func singleSnapshots(_ backend: ConformanceBackend) throws {
    let s = try SnapshotStore(backend)
    defer { s.store.close() }
    let (store, shelfID, itemIDs) = (s.store, s.shelfID, s.itemIDs)
    func agrees(_ id: ObjectID, generation: QueryGeneration? = nil, _ comment: Comment) throws {
      try s.agrees(id, generation: generation, comment)
    }
    let stored = itemIDs + [shelfID]
    for id in stored { try agrees(id, "\(id)") }
    let third = try #require(try store.snapshot(for: itemIDs[3], generation: nil))
    #expect(third.objectID == itemIDs[3] && third.attributes == ["item 3", 21, "odd"] && third.toOne == [shelfID])
    #expect(try store.snapshot(for: itemIDs[4], generation: nil)?.toOne == [nil])
    #expect(try store.snapshot(for: shelfID, generation: nil)?.attributes == ["Top"])

    _ = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: itemIDs[5])]))
    let unsaved = ObjectID.makeTemporary(entityName: "Item")
    let neverGiven = itemIDs[0].withPrimaryKey(1_000_000)
    let otherStore = ObjectID(entityName: "Item", storeIdentifier: "another-store", primaryKey: itemIDs[0].primaryKey ?? 1)
    for id in [itemIDs[5], unsaved, neverGiven, otherStore] {
      #expect(try store.snapshot(for: id, generation: nil) == nil, "\(id)")
      try agrees(id, "\(id)")
    }
    let unknown = ObjectID(entityName: "Nowhere", storeIdentifier: store.identifier, primaryKey: 1)
    func outcome(_ body: () throws -> Snapshot?) -> String {
      do { return "found \(String(describing: try body()?.objectID))" } catch let error as StoreError {
        return "error \(error.code)"
      } catch { return "\(error)" }
    }
    let one = outcome { try store.snapshot(for: unknown, generation: nil) }
    let many = outcome { try store.snapshots(for: [unknown], generation: nil).first }
    #expect(one == many, "an unknown entity")
  }

  /// At a pinned generation, a snapshot is what it was, as `snapshots(for:)` gives it.
  static func pinnedSnapshots(_ backend: ConformanceBackend) throws {
    let s = try SnapshotStore(backend)
    defer { s.store.close() }
    let (store, itemIDs) = (s.store, s.itemIDs)
    let generation = try store.pinGeneration()
    let change = ObjectChange(
      objectID: itemIDs[1], attributes: ["item 1", 100, "changed"], toOne: [nil],
      expectedVersion: try store.snapshot(for: itemIDs[1], generation: nil)?.version, changedKeys: ["count", "note", "shelf"])
    _ = try store.save(ChangeSet(updated: [change]))
    #expect(try store.snapshot(for: itemIDs[1], generation: nil)?.attributes == ["item 1", 100, "changed"])
    #expect(try store.snapshot(for: itemIDs[1], generation: generation)?.attributes == ["item 1", 7, "odd"])
    try s.agrees(itemIDs[1], generation: generation, "at the pinned generation")
    store.unpin(generation)
  }

  /// Stale versions, in one save: every conflict is listed (with the stored values of the changed keys)
  /// and nothing is written; the right versions then go through.
  static func staleVersionsInOneSaveAreAllListed(_ backend: ConformanceBackend) throws {
    let s = try SnapshotStore(backend)
    defer { s.store.close() }
    let (store, itemIDs) = (s.store, s.itemIDs)
    _ = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: itemIDs[5])]))
    let first = try #require(try store.snapshot(for: itemIDs[1], generation: nil))
    _ = try store.save(
      ChangeSet(updated: [
        ObjectChange(
          objectID: itemIDs[1], attributes: ["item 1", 100, "changed"], toOne: [nil], expectedVersion: first.version,
          changedKeys: ["count", "note", "shelf"])
      ]))
    let updatedItem = try #require(try store.snapshot(for: itemIDs[1], generation: nil))
    let kept = try #require(try store.snapshot(for: itemIDs[2], generation: nil))
    let stale = ObjectChange(
      objectID: itemIDs[1], attributes: ["item 1", 5, "stale"], toOne: [nil], expectedVersion: updatedItem.version - 1,
      changedKeys: ["count", "note"])
    let vanished = ObjectChange(
      objectID: itemIDs[5], attributes: ["item 5", 1, "ghost"], toOne: [nil], expectedVersion: 1, changedKeys: ["note"])
    let staleDeletion = ObjectDeletion(objectID: itemIDs[2], expectedVersion: kept.version + 1)
    let refused = expectStoreError(.optimisticLockConflict, "stale versions") {
      try store.save(ChangeSet(updated: [stale, vanished], deleted: [staleDeletion]))
    }
    #expect(Set(refused?.conflicts.compactMap(\.objectID) ?? []) == [itemIDs[1], itemIDs[5], itemIDs[2]])
    let staleConflict = refused?.conflicts.first { $0.objectID == itemIDs[1] }
    #expect(staleConflict?.values == [5, "stale"] && staleConflict?.storedValues == [100, "changed"])
    #expect(refused?.conflicts.first { $0.objectID == itemIDs[5] }?.storedValues == [])
    #expect(try store.snapshot(for: itemIDs[1], generation: nil) == updatedItem)
    #expect(try store.snapshot(for: itemIDs[2], generation: nil) == kept)
    _ = try store.save(
      ChangeSet(
        updated: [
          ObjectChange(
            objectID: itemIDs[1], attributes: ["item 1", 5, "fresh"], toOne: [nil], expectedVersion: updatedItem.version,
            changedKeys: ["count", "note"])
        ],
        deleted: [ObjectDeletion(objectID: itemIDs[2], expectedVersion: kept.version)]))
    #expect(try store.snapshot(for: itemIDs[1], generation: nil)?.attributes == ["item 1", 5, "fresh"])
    #expect(try store.snapshot(for: itemIDs[2], generation: nil) == nil)
  }

  /// A closed store refuses to give a snapshot.
  static func closedStoresGiveNoSnapshot(_ backend: ConformanceBackend) throws {
    let s = try SnapshotStore(backend)
    let (store, itemIDs) = (s.store, s.itemIDs)
    store.close()
    store.close()
    _ = expectStoreError(.misuse, "a closed store") { try store.snapshot(for: itemIDs[0], generation: nil) }
  }

  /// Walking a large result with a batched collection keeps about one batch of objects alive, however
  /// many rows there are.
  public static func boundedWalk(_ backend: ConformanceBackend, rows: Int = 100_000, batchSize: Int = 500) async throws {
    let url = try backend.makeLocation()
    let container = try backend.container(at: url)
    let writer = container.newBackgroundContext()
    try writer.performAndWait {
      var next = 0
      while next < rows {
        for n in next..<min(rows, next + 10_000) {
          let actor = Actor(context: writer)
          actor.name = "Walker \(n)"
        }
        next = min(rows, next + 10_000)
        try writer.save()
        writer.reset()
      }
    }
    // The context's own sweeps let go of the batches walked past (registeredObjects sweeps before it
    // answers, so it cannot tell).
    let walker = container.newBackgroundContext()
    try walker.performAndWait {
      let all = try walker.fetch(FetchRequest<Actor>(format: "name BEGINSWITH 'Walker'"), batchSize: batchSize)
      weak var first: Actor?
      for (i, actor) in all.prefix(20 * batchSize).enumerated() {
        if i == 0 { first = actor }
        _ = actor.name
      }
      #expect(first == nil, "an object of the first batch outlived 20 batches")
    }
    let reader = container.newBackgroundContext()
    try reader.performAndWait {
      let all = try reader.fetch(FetchRequest<Actor>(format: "name BEGINSWITH 'Walker'"), batchSize: batchSize)
      #expect(all.count == rows)
      var most = 0
      var characters = 0
      for (i, actor) in all.enumerated() {
        characters += actor.name.count
        if i % 5_000 == 0 { most = max(most, reader.registeredObjects.count) }
      }
      most = max(most, reader.registeredObjects.count)
      #expect(most <= 2 * batchSize, "live objects while walking: \(most)")
      let expected = (0..<rows).reduce(0) { $0 + "Walker \($1)".count }
      #expect(characters == expected)
    }
  }
}

extension Conformance {
  /// A context hands out one object per ID: fetching again and `object(with:)` give the same instances,
  /// across runs of neighbouring keys. Objects nothing else holds are let go and come back made afresh
  /// with the same values; IDs no store assigns (negative keys, the extreme keys) name faults of their
  /// own; a deleted and saved object leaves the context.
  public static func identityMap(_ backend: ConformanceBackend) async throws {
    let container = try backend.container(at: try backend.makeLocation())
    let writer = container.newBackgroundContext()
    try writer.performAndWait {
      for n in 0..<300 { Actor(context: writer).name = "Actor \(n)" }
      try writer.save()
    }
    let context = container.newBackgroundContext()
    try context.performAndWait {
      var first = try context.fetch(FetchRequest<Actor>())
      #expect(first.count == 300)
      var byID = Dictionary(first.map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
      #expect(byID.count == 300 && Set(first.map(ObjectIdentifier.init)).count == 300)
      #expect(try context.fetch(FetchRequest<Actor>()).allSatisfy { byID[$0.objectID] === $0 })
      #expect(first.allSatisfy { context.object(with: $0.objectID) === $0 })
      #expect(context.registeredObjects.count == 300)

      let names = byID.mapValues(\.name)
      let kept = first.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
      first = []
      byID = [:]
      #expect(context.registeredObjects.count == 100)
      let again = try context.fetch(FetchRequest<Actor>())
      #expect(again.count == 300)
      #expect(again.allSatisfy { $0.name == names[$0.objectID] })
      #expect(kept.allSatisfy { actor in again.contains { $0 === actor } })

      let template = kept[0].objectID
      var unassigned: [ManagedObject] = []
      for key in [Int64(-1), -64, -65, .min, .max, .max - 63] {
        let id = ObjectID(entityName: template.entityName, storeIdentifier: template.storeIdentifier, primaryKey: key)
        let fault = context.object(with: id)
        #expect(fault.isFault && fault.objectID == id)
        #expect(context.object(with: id) === fault)
        unassigned.append(fault)
      }
      #expect(Set(unassigned.map(ObjectIdentifier.init)).count == unassigned.count)
      #expect(context.registeredObjects.count == 300 + unassigned.count)

      let doomed = again[1]
      context.delete(doomed)
      try context.save()
      #expect(!context.registeredObjects.contains(doomed))
      #expect(context.object(with: doomed.objectID) !== doomed)
    }
  }
}

/// The single-snapshot cases' store: shelf "Top" and six items (0…3 on the shelf; odd ones noted "odd").
struct SnapshotStore {
  let store: any PersistentStore
  let shelfID: ObjectID
  let itemIDs: [ObjectID]

  init(_ backend: ConformanceBackend) throws {
    let model = try ObjectModel(entities: [
      EntityDescription(
        name: "Shelf", attributes: [AttributeDescription(name: "label", type: .string)],
        relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "shelf", isToMany: true)]),
      EntityDescription(
        name: "Item",
        attributes: [
          AttributeDescription(name: "name", type: .string), AttributeDescription(name: "count", type: .int64),
          AttributeDescription(name: "note", type: .string, isOptional: true),
        ],
        relationships: [RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "items")]),
    ])
    store = try backend.factory.openStore(at: try backend.makeLocation(), model: model, options: StoreOptions())
    let shelf = ObjectID.makeTemporary(entityName: "Shelf")
    let items = (0..<6).map { _ in ObjectID.makeTemporary(entityName: "Item") }
    let saved = try store.save(
      ChangeSet(
        inserted: [ObjectChange(objectID: shelf, attributes: ["Top"], toOne: [])]
          + items.enumerated().map { i, id in
            ObjectChange(
              objectID: id, attributes: [.string("item \(i)"), .int(Int64(i * 7)), i % 2 == 0 ? .null : "odd"],
              toOne: [i < 4 ? shelf : nil])
          }))
    shelfID = try #require(saved.permanentIDs[shelf])
    itemIDs = try items.map { try #require(saved.permanentIDs[$0]) }
  }

  /// `snapshot(for:generation:)` of `id` is what `snapshots(for:)` gives.
  func agrees(_ id: ObjectID, generation: QueryGeneration? = nil, _ comment: Comment) throws {
    let many = try store.snapshots(for: [id], generation: generation)
    #expect(try store.snapshot(for: id, generation: generation) == many.first, comment)
  }
}
