import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Merge policies on uniqueness conflicts (an insert whose unique key is stored) and optimistic-lock
  /// conflicts (two contexts edit one object and save in turn): `.error` lists every conflict with both
  /// values and leaves the store as it was; the trump policies merge property by property; overwrite
  /// writes the object whole; rollback drops the context's side.
  public static func mergePolicies(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let warnerFounded = SampleData.date("1923-04-04")

    func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }
    let reader = try fresh()
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

    // .error: every clash listed, with both sides; nothing written.
    let strict = try fresh()
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
    #expect(try fresh().count(for: FetchRequest<Studio>()) == 3)
    #expect(try actors("nm0000199").map(\.name) == ["Al Pacino"])

    // Object trump: the insert updates the stored row with what the app set; nothing is blanked.
    let objectTrump = try fresh()
    objectTrump.mergePolicy = .mergeByPropertyObjectTrump
    let warner = Studio(context: objectTrump)
    warner.name = "Warner"
    let renamed = Actor(context: objectTrump)
    renamed.name = "Alfredo Pacino"
    renamed.imdbID = "nm0000199"
    try objectTrump.save()
    #expect(!warner.objectID.isTemporary && !warner.isInserted && !warner.hasChanges)
    #expect(warner.founded == warnerFounded)
    #expect(try fresh().count(for: FetchRequest<Studio>()) == 3)
    #expect(try studio("Warner")?.founded == warnerFounded)
    #expect(try studio("Warner")?.films == 4)
    let stored = try actors("nm0000199")
    #expect(stored.map(\.name) == ["Alfredo Pacino"])
    #expect(stored.first?.films == ["Heat"])
    #expect(renamed.objectID == stored.first?.id)

    // Store trump: the stored row wins and the object shows it.
    let storeTrump = try fresh()
    storeTrump.mergePolicy = .mergeByPropertyStoreTrump
    let deNiro = Actor(context: storeTrump)
    deNiro.name = "Bobby"
    deNiro.imdbID = "nm0000134"
    try storeTrump.save()
    #expect(deNiro.name == "Robert De Niro")
    #expect(try actors("nm0000134").map(\.name) == ["Robert De Niro"])

    // Overwrite: the object's attributes replace the row's.
    let overwrite = try fresh()
    overwrite.mergePolicy = .overwrite
    let ugc = Studio(context: overwrite)
    ugc.name = "UGC"
    ugc.founded = SampleData.date("1971-01-01")
    try overwrite.save()
    #expect(try studio("UGC")?.founded == SampleData.date("1971-01-01"))
    #expect(try fresh().count(for: FetchRequest<Studio>()) == 3)

    // Rollback: the insert gives way to the stored row.
    let rollback = try fresh()
    rollback.mergePolicy = .rollback
    let kravitz = Actor(context: rollback)
    kravitz.name = "Not Zoë"
    kravitz.imdbID = "nm0005139"
    try rollback.save()
    #expect(kravitz.name == "Zoë Kravitz")
    #expect(try actors("nm0005139").map(\.name) == ["Zoë Kravitz"])

    // Optimistic locking: `first` saves a change to Heat, then `second`, which read Heat before, saves.
    func heat(_ context: ObjectContext) throws -> Film {
      try #require(try context.fetch(FetchRequest<Film>(format: "uuid == %@", SampleData.uuid(1))).first)
    }
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

    let (byObject, storedByObject, objectRuntime) = try conflict(.mergeByPropertyObjectTrump) {
      $0.genre = "Heist"
      $0.title = "Mine"
    }
    #expect(storedByObject.title == "Mine" && storedByObject.genre == "Heist" && storedByObject.runtime == objectRuntime)
    #expect(byObject.runtime == objectRuntime && !byObject.hasChanges)

    let (byStore, storedByStore, storeRuntime) = try conflict(.mergeByPropertyStoreTrump) {
      $0.genre = "Caper"
      $0.title = "Mine"
    }
    #expect(storedByStore.title == "Heat (mergeByPropertyStoreTrump)")
    #expect(storedByStore.genre == "Caper" && storedByStore.runtime == storeRuntime)
    #expect(byStore.title == "Heat (mergeByPropertyStoreTrump)")

    let (_, storedOverwrite, overwrittenRuntime) = try conflict(.overwrite) { $0.genre = "Drama" }
    #expect(storedOverwrite.genre == "Drama")
    #expect(storedOverwrite.title == "Heat (mergeByPropertyStoreTrump)" && storedOverwrite.runtime == overwrittenRuntime - 1)

    let (rolledBack, storedRollback, _) = try conflict(.rollback) { $0.genre = "Western" }
    #expect(storedRollback.title == "Heat (rollback)" && storedRollback.genre != "Western")
    #expect(rolledBack.title == "Heat (rollback)" && !rolledBack.hasChanges)

    // .error: the conflict names the object, the keys and both values; the store keeps the first save.
    let first = try fresh()
    let second = try fresh()
    let mine = try heat(second)
    _ = mine.title
    let theirs = try heat(first)
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
    #expect(try heat(try fresh()).title == "Theirs")
  }
}
