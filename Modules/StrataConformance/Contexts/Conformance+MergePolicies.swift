import Foundation
import Strata
import StrataStoreKit
import Testing

/// The merge-policies area's starting point: the sample store, a reader that refreshes before each look,
/// and the optimistic-lock conflict every policy meets.
struct MergeStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let reader: ObjectContext
  static let warnerFounded = SampleData.date("1923-04-04")

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.sampleContainer()
    reader = try backend.freshContext(container, url)
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }

  func studio(_ name: String) throws -> (founded: Date?, films: Int)? {
    reader.refreshAllObjects()
    return try reader.fetch(FetchRequest<Studio>(format: "name == %@", name)).first.map { ($0.founded, $0.films.count) }
  }

  func actors(_ imdbID: String) throws -> [(name: String, films: [String], id: ObjectID)] {
    reader.refreshAllObjects()
    return try reader.fetch(FetchRequest<Actor>(format: "imdbID == %@", imdbID)).map {
      ($0.name, $0.films.map(\.title).sorted(), $0.objectID)
    }
  }

  func heat(_ context: ObjectContext) throws -> Film {
    try #require(try context.fetch(FetchRequest<Film>(format: "uuid == %@", SampleData.uuid(1))).first)
  }

  /// Optimistic locking: `first` saves a change to Heat, then `second`, which read Heat before, saves
  /// `change` under `policy`. Returns second's Heat, the stored Heat, and the runtime first saved.
  func conflict(_ policy: MergePolicy, _ change: (Film) -> Void) throws -> (Film, Film, Int32) {
    let first = try fresh()
    let second = try fresh()
    second.mergePolicy = policy
    let mine = try heat(second)
    _ = mine.title
    let theirs = try heat(first)
    theirs.title = "Heat (\(policy))"
    theirs.runtime += 1
    let runtime = theirs.runtime
    try first.save()
    change(mine)
    try second.save()
    return (mine, try heat(try fresh()), runtime)
  }
}

/// Merge policies on uniqueness conflicts (an insert whose unique key is stored) and optimistic-lock
/// conflicts (two contexts edit one object and save in turn): `.error` lists every conflict with both
/// values and leaves the store as it was; the trump policies merge property by property; overwrite
/// writes the object whole; rollback drops the context's side.
enum MergePolicyCases {
  /// .error: every uniqueness clash listed, with both sides; nothing written.
  static func uniquenessClashesUnderErrorAreAllListed(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let strict = try s.fresh()
    let twin = Studio(context: strict)
    twin.name = "Warner"
    let pacino = Actor(context: strict)
    pacino.name = "Another Pacino"
    pacino.imdbID = "nm0000199"
    do {
      try strict.save()
      Issue.record("a uniqueness clash under .error should throw")
    } catch let error as StoreError {
      #expect(error.code == .constraintConflict)
      #expect(error.conflicts.count == 2)
      #expect(Set(error.conflicts.flatMap(\.keys)) == ["name", "imdbID"])
      #expect(error.conflicts.allSatisfy { $0.conflictingObjectID != nil && !$0.values.isEmpty })
    }
    #expect(try s.fresh().count(for: FetchRequest<Studio>()) == 3)
    #expect(try s.actors("nm0000199").map(\.name) == ["Al Pacino"])
  }

  /// Object trump: the insert updates the stored row with what the app set; nothing is blanked.
  static func objectTrumpUpdatesTheStoredRow(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let warnerFounded = MergeStore.warnerFounded
    let objectTrump = try s.fresh()
    objectTrump.mergePolicy = .mergeByPropertyObjectTrump
    let warner = Studio(context: objectTrump)
    warner.name = "Warner"
    let renamed = Actor(context: objectTrump)
    renamed.name = "Alfredo Pacino"
    renamed.imdbID = "nm0000199"
    try objectTrump.save()
    #expect(!warner.objectID.isTemporary && !warner.isInserted && !warner.hasChanges)
    #expect(warner.founded == warnerFounded)
    #expect(try s.fresh().count(for: FetchRequest<Studio>()) == 3)
    #expect(try s.studio("Warner")?.founded == warnerFounded)
    #expect(try s.studio("Warner")?.films == 4)
    let stored = try s.actors("nm0000199")
    #expect(stored.map(\.name) == ["Alfredo Pacino"])
    #expect(stored.first?.films == ["Heat"])
    #expect(renamed.objectID == stored.first?.id)
  }

  /// Store trump: the stored row wins and the object shows it.
  static func storeTrumpKeepsTheStoredRow(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let storeTrump = try s.fresh()
    storeTrump.mergePolicy = .mergeByPropertyStoreTrump
    let deNiro = Actor(context: storeTrump)
    deNiro.name = "Bobby"
    deNiro.imdbID = "nm0000134"
    try storeTrump.save()
    #expect(deNiro.name == "Robert De Niro")
    #expect(try s.actors("nm0000134").map(\.name) == ["Robert De Niro"])
  }

  /// Overwrite: the object's attributes replace the row's.
  static func overwriteReplacesTheStoredRow(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let overwrite = try s.fresh()
    overwrite.mergePolicy = .overwrite
    let ugc = Studio(context: overwrite)
    ugc.name = "UGC"
    ugc.founded = SampleData.date("1971-01-01")
    try overwrite.save()
    #expect(try s.studio("UGC")?.founded == SampleData.date("1971-01-01"))
    #expect(try s.fresh().count(for: FetchRequest<Studio>()) == 3)
  }

  /// Rollback: the insert gives way to the stored row.
  static func rollbackGivesWayToTheStoredRow(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let rollback = try s.fresh()
    rollback.mergePolicy = .rollback
    let kravitz = Actor(context: rollback)
    kravitz.name = "Not Zoë"
    kravitz.imdbID = "nm0005139"
    try rollback.save()
    #expect(kravitz.name == "Zoë Kravitz")
    #expect(try s.actors("nm0005139").map(\.name) == ["Zoë Kravitz"])
  }

  /// An optimistic-lock conflict under object trump: the object's changed properties win, the others
  /// are the stored ones.
  static func lockConflictsUnderObjectTrump(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let (byObject, storedByObject, objectRuntime) = try s.conflict(.mergeByPropertyObjectTrump) {
      $0.genre = "Heist"
      $0.title = "Mine"
    }
    #expect(storedByObject.title == "Mine" && storedByObject.genre == "Heist" && storedByObject.runtime == objectRuntime)
    #expect(byObject.runtime == objectRuntime && !byObject.hasChanges)
  }

  /// An optimistic-lock conflict under store trump: the stored properties win, the object's others are
  /// written.
  static func lockConflictsUnderStoreTrump(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let (byStore, storedByStore, storeRuntime) = try s.conflict(.mergeByPropertyStoreTrump) {
      $0.genre = "Caper"
      $0.title = "Mine"
    }
    #expect(storedByStore.title == "Heat (mergeByPropertyStoreTrump)")
    #expect(storedByStore.genre == "Caper" && storedByStore.runtime == storeRuntime)
    #expect(byStore.title == "Heat (mergeByPropertyStoreTrump)")
  }

  /// An optimistic-lock conflict under overwrite: the object is written whole over the other save.
  static func lockConflictsUnderOverwrite(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let (_, storedOverwrite, overwrittenRuntime) = try s.conflict(.overwrite) { $0.genre = "Drama" }
    #expect(storedOverwrite.genre == "Drama")
    #expect(storedOverwrite.title == "Heat" && storedOverwrite.runtime == overwrittenRuntime - 1)
  }

  /// An optimistic-lock conflict under rollback: the other save stays, the object shows it.
  static func lockConflictsUnderRollback(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let (rolledBack, storedRollback, _) = try s.conflict(.rollback) { $0.genre = "Western" }
    #expect(storedRollback.title == "Heat (rollback)" && storedRollback.genre != "Western")
    #expect(rolledBack.title == "Heat (rollback)" && !rolledBack.hasChanges)
  }

  /// .error: the conflict names the object, the keys and both values; the store keeps the first save.
  static func lockConflictsUnderErrorNameBothValues(_ backend: ConformanceBackend) async throws {
    let s = try MergeStore(backend)
    let first = try s.fresh()
    let second = try s.fresh()
    let mine = try s.heat(second)
    _ = mine.title
    let theirs = try s.heat(first)
    theirs.title = "Theirs"
    try first.save()
    mine.title = "Mine again"
    do {
      try second.save()
      Issue.record("an optimistic-lock conflict under .error should throw")
    } catch let error as StoreError {
      #expect(error.code == .optimisticLockConflict)
      let clash = try #require(error.conflicts.first)
      #expect(clash.objectID == mine.objectID)
      #expect(clash.keys == ["title"])
      #expect(clash.values == [.string("Mine again")])
      #expect(clash.storedValues == [.string("Theirs")])
    }
    #expect(try s.heat(try s.fresh()).title == "Theirs")
  }
}
