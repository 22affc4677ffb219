import Foundation
import Strata
import StrataStoreKit
import Testing

/// The CRUD area's starting point: an empty store and one film inserted, not yet saved, with a value of
/// every attribute type at its edge (`exactDate` its release date).
struct CRUDStore {
  static let exactDate = Date(timeIntervalSinceReferenceDate: 123_456_789.123_456)
  let backend: ConformanceBackend
  let url: URL?
  let container: PersistentContainer
  let context: ObjectContext
  let film: Film

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    url = try backend.makeLocation()
    container = try backend.container(at: url)
    context = container.viewContext
    #expect(!context.hasChanges)
    film = Film(context: context)
    film.title = "Ünïcødé 🎬 タイトル"
    film.year = -32768
    film.rating = 9.75
    film.score = 0.5
    film.runtime = Int32.max
    film.boxOffice = Int64.min
    film.budget = Decimal(string: "12345678901234567890.123456789")
    film.released = true
    film.releaseDate = Self.exactDate
    film.poster = Data([0, 1, 2, 0, 255])
    film.uuid = SampleData.uuid(42)
    film.homepage = URL(string: "https://example.com/a%20b?q=1#frag")
    film.genre = nil
    film.scratch = "not stored"
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }

  /// Saves the film; another context and the film as it fetches it.
  func saveAndFetch() throws -> (ObjectContext, Film) {
    try context.save()
    let other = try fresh()
    let fetched = try other.fetch(FetchRequest<Film>())
    try #require(fetched.count == 1)
    return (other, fetched[0])
  }
}

/// Insert, read back from a fresh context, update, delete; every attribute type round-trips exactly;
/// temporary IDs become permanent; one object per ID per context.
enum CRUDCases {
  /// An inserted object has a temporary ID until the save makes it permanent; one object per ID.
  static func insertsGetPermanentIDsOnSave(_ backend: ConformanceBackend) async throws {
    let s = try CRUDStore(backend)
    let (context, film) = (s.context, s.film)
    #expect(film.isInserted)
    #expect(film.objectID.isTemporary)
    #expect(context.hasChanges)
    #expect(context.insertedObjects.count == 1)
    let temporaryID = film.objectID
    #expect(context.object(with: temporaryID) === film)

    try context.save()
    #expect(!context.hasChanges)
    #expect(!film.isInserted)
    #expect(!film.objectID.isTemporary)
    #expect(film.objectID.entityName == "Film")
    #expect(context.object(with: film.objectID) === film)
  }

  /// Every attribute type round-trips exactly through a fresh context; transients are not stored.
  static func everyAttributeTypeRoundTrips(_ backend: ConformanceBackend) async throws {
    let s = try CRUDStore(backend)
    let (film, exactDate) = (s.film, CRUDStore.exactDate)
    let (other, copy) = try s.saveAndFetch()
    #expect(copy !== film)
    #expect(copy.objectID == film.objectID)
    #expect(copy.title == "Ünïcødé 🎬 タイトル")
    #expect(copy.year == -32768)
    #expect(copy.rating == 9.75)
    #expect(copy.score == 0.5)
    #expect(copy.runtime == Int32.max)
    #expect(copy.boxOffice == Int64.min)
    #expect(copy.budget == Decimal(string: "12345678901234567890.123456789"))
    #expect(copy.released == true)
    #expect(copy.releaseDate == exactDate)
    #expect(copy.poster == Data([0, 1, 2, 0, 255]))
    #expect(copy.uuid == SampleData.uuid(42))
    #expect(copy.homepage == URL(string: "https://example.com/a%20b?q=1#frag"))
    #expect(copy.genre == nil)
    #expect(copy.scratch == nil)
    #expect(try other.fetch(FetchRequest<Film>()).first === copy)
    #expect(try other.existingObject(with: film.objectID) === copy)
  }

  /// Dates round-trip to the bit, whatever their fraction of a second.
  static func datesRoundTripToTheBit(_ backend: ConformanceBackend) async throws {
    let s = try CRUDStore(backend)
    let context = s.context
    var seed: UInt64 = 0x5EED
    var dates: [ObjectID: Date] = [:]
    for n in 0..<50 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      let date = Date(timeIntervalSinceReferenceDate: Double(seed >> 11) / Double(1 << 53) * 2_000_000_000 - 1_000_000_000)
      let dated = Film(context: context)
      dated.title = "Dated \(n)"
      dated.uuid = SampleData.uuid(1000 + n)
      dated.releaseDate = date
      try context.save()
      dates[dated.objectID] = date
    }
    let datesContext = try s.fresh()
    for (id, date) in dates {
      let stored = try datesContext.existingObject(with: id) as? Film
      #expect(stored?.releaseDate == date, "date \(date.timeIntervalSinceReferenceDate) round-trips")
    }
    #expect(try datesContext.count(for: FetchRequest<Film>(format: "releaseDate == %@", dates.values.first ?? Date())) == 1)
    for id in dates.keys { context.delete(context.object(with: id)) }
    try context.save()
  }

  /// An update saved by another context reaches a refaulted object; changed values name what changed.
  static func updatesReachARefaultedObject(_ backend: ConformanceBackend) async throws {
    let s = try CRUDStore(backend)
    let (context, film) = (s.context, s.film)
    let (other, copy) = try s.saveAndFetch()
    copy.title = "Renamed"
    copy.genre = "Drama"
    #expect(copy.isUpdated)
    #expect(Set(copy.changedValues().keys) == ["title", "genre"])
    try other.save()
    context.refresh(film, mergeChanges: false)
    #expect(film.isFault)
    #expect(film.title == "Renamed")
    #expect(film.genre == "Drama")
  }

  /// A deleted object leaves fetches at once and the store on save; its ID is then not found.
  static func deletesLeaveTheStore(_ backend: ConformanceBackend) async throws {
    let s = try CRUDStore(backend)
    let (context, film) = (s.context, s.film)
    let (_, copy) = try s.saveAndFetch()
    context.delete(film)
    #expect(film.isDeleted)
    #expect(try context.fetch(FetchRequest<Film>()).isEmpty)
    try context.save()
    let third = try s.fresh()
    #expect(try third.count(for: FetchRequest<Film>()) == 0)
    expectStoreError(.notFound) { try third.existingObject(with: copy.objectID) }
  }

  /// Inserting then deleting before a save writes nothing.
  static func insertingThenDeletingWritesNothing(_ backend: ConformanceBackend) async throws {
    let s = try CRUDStore(backend)
    let context = s.context
    context.delete(s.film)
    let third = try s.fresh()
    let ghost = Film(context: context)
    ghost.title = "Ghost"
    ghost.uuid = SampleData.uuid(99)
    context.delete(ghost)
    #expect(!context.hasChanges)
    try context.save()
    #expect(try third.count(for: FetchRequest<Film>()) == 0)
  }

  /// Rollback restores saved values and drops inserts; reset() forgets every object, and fetching again
  /// gives new instances.
  static func rollbackAndResetDropUnsavedState(_ backend: ConformanceBackend) async throws {
    let s = try CRUDStore(backend)
    let context = s.context
    context.delete(s.film)
    try SampleData.insert(into: context)
    let heat = try #require(try context.fetch(FetchRequest<Film>(format: "title == %@", "Heat")).first)
    heat.title = "Changed"
    let extra = Film(context: context)
    extra.title = "Extra"
    context.rollback()
    #expect(heat.title == "Heat")
    #expect(!context.hasChanges)
    #expect(try context.count(for: FetchRequest<Film>()) == SampleData.films.count)

    // reset() forgets every object; fetching again gives new instances.
    context.reset()
    let again = try #require(try context.fetch(FetchRequest<Film>(format: "title == %@", "Heat")).first)
    #expect(again !== heat)
    #expect(again.title == "Heat")
  }
}
