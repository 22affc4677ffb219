import Foundation
import Strata
import StrataStoreKit
import Testing

/// The errors area's starting point: the sample store, its view context, and a well-formed raw insert
/// of a film (`good`) for the cases that send change sets to the store itself.
struct ErrorsStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let context: ObjectContext
  let store: any PersistentStore
  let film: EntityDescription
  let good: ObjectChange

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.sampleContainer()
    context = container.viewContext
    store = try #require(container.persistentStore)
    film = try #require(container.model.entity(named: "Film"))
    good = ObjectChange(
      objectID: .makeTemporary(entityName: "Film"), attributes: film.attributes.map(\.initialValue),
      toOne: film.toOneRelationships.map { _ in nil })
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }

  func film(_ title: String) throws -> Film {
    try #require(try context.fetch(FetchRequest<Film>(format: "title == %@", title)).first)
  }
}

/// Bad input gets a clear error naming what was wrong, and the store stays as it was: unknown keys,
/// transient attributes, type mismatches, unparsable predicates, validation failures, malformed change sets.
enum ErrorCases {
  /// Unknown keys and entities, transient attributes, type mismatches: an invalid query naming the key;
  /// an incomplete predicate does not parse and says where.
  static func badQueriesNameTheirKey(_ backend: ConformanceBackend) async throws {
    let context = try ErrorsStore(backend).context
    func expectQueryError(_ request: FetchRequest<Film>, key: String, _ comment: Comment) {
      do {
        _ = try context.fetch(request)
        Issue.record("expected an error: \(comment)")
      } catch let error as StoreError {
        #expect(error.code == .invalidQuery, comment)
        #expect(error.message.contains(key), "message names '\(key)': \(error.message)")
      } catch {
        Issue.record("expected a StoreError, got \(error)")
      }
    }
    expectQueryError(try FetchRequest<Film>(format: "titel == 'Heat'"), key: "titel", "unknown key")
    expectQueryError(try FetchRequest<Film>(format: "director.nmae == 'x'"), key: "nmae", "unknown key through a relationship")
    expectQueryError(try FetchRequest<Film>(format: "scratch == 'x'"), key: "scratch", "transient attribute in a predicate")
    expectQueryError(FetchRequest<Film>(sortDescriptors: [QuerySort("scratch")]), key: "scratch", "transient attribute in a sort")
    expectQueryError(FetchRequest<Film>(sortDescriptors: [QuerySort("nope")]), key: "nope", "unknown sort key")
    expectQueryError(try FetchRequest<Film>(format: "year == 'abc'"), key: "year", "string compared with an integer")
    expectQueryError(try FetchRequest<Film>(format: "releaseDate > 5"), key: "releaseDate", "number compared with a date")
    expectQueryError(FetchRequest<Film>(entityName: "Nope"), key: "Nope", "unknown entity")

    do {
      _ = try FetchRequest<Film>(format: "title == ")
      Issue.record("an incomplete predicate must not parse")
    } catch let error as StoreError {
      #expect(error.code == .invalidQuery)
      #expect(error.message.contains("position"))
    }
  }

  /// Validation: every failure of one save is reported together, the store is unchanged.
  static func validationFailuresAreReportedTogether(_ backend: ConformanceBackend) async throws {
    let s = try ErrorsStore(backend)
    let context = s.context
    let heat = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    heat.rating = 11
    let parasite = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).first)
    parasite.rating = -1
    do {
      try context.save()
      Issue.record("ratings outside 0...10 must not save")
    } catch let error as StoreError {
      #expect(error.code == .validation)
      #expect(error.conflicts.count == 2)
      #expect(error.key == "rating")
      #expect(error.message.contains("rating"))
    }
    let fresh = try s.fresh()
    #expect(try fresh.count(for: FetchRequest<Film>(format: "rating > 10 OR rating < 0")) == 0)
    context.rollback()
  }

  /// An insert and an update failing together: the insert's failure first (inserts are validated before
  /// updates), each naming its object and value; nothing is written. Fixed, the next save writes the
  /// values as they are then.
  static func insertsAreValidatedBeforeUpdates(_ backend: ConformanceBackend) async throws {
    let s = try ErrorsStore(backend)
    let context = s.context
    let parasite = try s.film("Parasite")
    let fresh = try s.fresh()
    let filmsBefore = try fresh.count(for: FetchRequest<Film>())
    let newFilm = Film(context: context)
    newFilm.title = "Validated"
    newFilm.uuid = UUID()
    newFilm.rating = 12
    parasite.rating = -1
    do {
      try context.save()
      Issue.record("an insert and an update out of range must not save")
    } catch let error as StoreError {
      #expect(error.code == .validation)
      #expect(error.conflicts.map(\.objectID) == [newFilm.objectID, parasite.objectID])
      #expect(error.conflicts.map(\.keys) == [["rating"], ["rating"]])
      #expect(error.conflicts.map(\.values) == [[.double(12)], [.double(-1)]])
    }
    #expect(try s.fresh().count(for: FetchRequest<Film>()) == filmsBefore)
    newFilm.rating = 7
    parasite.rating = 2
    try context.save()
    let reread = try s.fresh()
    #expect(try reread.fetch(FetchRequest<Film>(format: "title == 'Validated'")).map(\.rating) == [7])
    #expect(try reread.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).map(\.rating) == [2])
  }

  /// `setValue(_:forKey:)` checks the key and the value's type; a Float attribute takes what a Float
  /// holds: a double it would round to infinity is refused.
  static func setValueChecksKeysAndTypes(_ backend: ConformanceBackend) async throws {
    let s = try ErrorsStore(backend)
    let heat = try s.film("Heat")
    expectStoreError(.validation) { try heat.setValue(nil, forKey: "title") }
    expectStoreError(.validation) { try heat.setValue("text", forKey: "year") }
    expectStoreError(.invalidQuery) { try heat.setValue(1, forKey: "nope") }
    try heat.setValue(Int16(1996), forKey: "year")
    #expect(heat.year == 1996)
    #expect(heat.value(forKey: "title") as? String == "Heat")
    // A Float attribute takes what a Float holds: a double it would round to infinity is refused.
    let score = heat.score
    expectStoreError(.validation) { try heat.setValue(1e39, forKey: "score") }
    try heat.setValue(3e38, forKey: "score")
    #expect(heat.score == Float(3e38))
    heat.score = score
  }

  /// A malformed change set (a change whose values do not fit its entity) is misuse, refused whole: the
  /// well-formed insert before it is not written either. So is one object inserted twice, or an insert of
  /// an ID that belongs to another store.
  static func malformedChangeSetsAreRefusedWhole(_ backend: ConformanceBackend) async throws {
    let s = try ErrorsStore(backend)
    let (store, good) = (s.store, s.good)
    let films = try s.fresh().count(for: FetchRequest<Film>())
    let short = ObjectChange(objectID: .makeTemporary(entityName: "Film"), attributes: [.string("Short")], toOne: [])
    #expect {
      try store.save(ChangeSet(inserted: [good, short]))
    } throws: { error in
      (error as? StoreError)?.code == .misuse && (error as? StoreError)?.message.contains("attribute values") == true
    }
    #expect(try s.fresh().count(for: FetchRequest<Film>()) == films)

    // So is one object inserted twice, or an insert of an ID that belongs to another store.
    #expect {
      try store.save(ChangeSet(inserted: [good, good]))
    } throws: { error in
      (error as? StoreError)?.code == .misuse && (error as? StoreError)?.message.contains("inserted twice") == true
    }
    // Also when it comes back after other objects: of its entity, or of another.
    let later = ObjectChange(objectID: .makeTemporary(entityName: "Film"), attributes: good.attributes, toOne: good.toOne)
    let studio = ObjectChange(objectID: .makeTemporary(entityName: "Studio"), attributes: [.string("Twice"), .null], toOne: [])
    for inserted in [[good, later, good], [good, studio, good]] {
      #expect {
        try store.save(ChangeSet(inserted: inserted))
      } throws: { error in
        (error as? StoreError)?.code == .misuse && (error as? StoreError)?.message.contains("inserted twice") == true
      }
    }
    var foreign = good
    foreign.objectID = ObjectID(entityName: "Film", storeIdentifier: "another-store", primaryKey: 7)
    #expect {
      try store.save(ChangeSet(inserted: [good, foreign]))
    } throws: { error in
      (error as? StoreError)?.code == .misuse
    }
    #expect(try s.fresh().count(for: FetchRequest<Film>()) == films)
  }

  /// Every store checks what it writes: a Float attribute sent a value beyond a Float is refused.
  static func storesCheckWhatTheyWrite(_ backend: ConformanceBackend) async throws {
    let s = try ErrorsStore(backend)
    let (store, good, film) = (s.store, s.good, s.film)
    let films = try s.fresh().count(for: FetchRequest<Film>())
    var beyondFloat = good.attributes
    beyondFloat[try #require(film.attributeIndex(named: "score"))] = .double(1e39)
    let tooLarge = ObjectChange(objectID: .makeTemporary(entityName: "Film"), attributes: beyondFloat, toOne: good.toOne)
    #expect {
      try store.save(ChangeSet(inserted: [tooLarge]))
    } throws: { error in
      (error as? StoreError)?.code == .validation && (error as? StoreError)?.key == "score"
    }
    #expect(try s.fresh().count(for: FetchRequest<Film>()) == films)
  }

  /// Inserts sent in another order than their IDs were made in are not inserted twice: each gets a key.
  static func insertsOutOfOrderGetAKeyEach(_ backend: ConformanceBackend) async throws {
    let s = try ErrorsStore(backend)
    let (store, good, film) = (s.store, s.good, s.film)
    let films = try s.fresh().count(for: FetchRequest<Film>())
    let uuidIndex = try #require(film.attributeIndex(named: "uuid"))
    let (first, second) = (ObjectID.makeTemporary(entityName: "Film"), ObjectID.makeTemporary(entityName: "Film"))
    let outOfOrder = [second, first].map { id in
      var attributes = good.attributes
      attributes[uuidIndex] = .uuid(UUID())
      return ObjectChange(objectID: id, attributes: attributes, toOne: good.toOne)
    }
    let saved = try store.save(ChangeSet(inserted: outOfOrder))
    let keys = Set([first, second].compactMap { saved.permanentIDs[$0]?.primaryKey })
    #expect(keys.count == 2)
    #expect(try s.fresh().count(for: FetchRequest<Film>()) == films + 2)
  }
}
