import Foundation
import Strata
import StrataStoreKit
import Testing

/// The batch area's starting point: the sample store, a live context reading it, and fresh readers.
struct BatchStore {
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let live: ObjectContext

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.sampleContainer()
    live = try backend.freshContext(container, url)
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }

  func titles(_ format: String) throws -> Set<String> {
    Set(try fresh().fetch(FetchRequest<Film>(format: format)).map(\.title))
  }

  /// Michael Mann's films 10 minutes longer and rated half (Heat: 180 minutes, 4.15).
  @discardableResult
  func lengthenMannFilms() throws -> (BatchRequest, BatchResult) {
    let longer = BatchRequest.update(
      entityName: "Film", predicate: try QueryPredicate(format: "director.name == 'Michael Mann'"),
      propertiesToUpdate: [
        "runtime": try QueryExpression(format: "runtime + 10"), "rating": try QueryExpression(format: "rating / 2"),
      ])
    return (longer, try live.execute(longer))
  }
}

/// Batch update and delete: expressions, delete rules (cascade, deny), errors that leave the store as it
/// was, and merging the results into a live context.
enum BatchCases {
  /// Update: constants and expressions of the object's own values; merged, the live context sees them.
  static func updatesSetConstantsAndExpressions(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let live = s.live
    let heat = try #require(try live.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    #expect(heat.runtime == 170)
    let release = BatchRequest.update(
      entityName: "Film", predicate: try QueryPredicate(format: "released == NO"),
      propertiesToUpdate: ["released": .constant(true)])
    let released = try live.execute(release)
    #expect(released.count == 3)
    #expect(try s.titles("released == NO").isEmpty)
    let (longer, result) = try s.lengthenMannFilms()
    #expect(result.count == 2)
    #expect(try s.titles("runtime == 180 AND rating == 4.15") == ["Heat"])
    #expect(try s.titles("runtime == 130") == ["Collateral"])
    ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: longer), into: [live])
    #expect(heat.runtime == 180)
  }

  /// Bad updates and deletes (unknown keys, relationships, transients, nil for a required value, values out
  /// of range, a constraint clash, a denied delete) change nothing.
  static func badRequestsChangeNothing(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let live = s.live
    let bad: [(BatchRequest, StoreError.Code)] = [
      (.update(entityName: "Film", predicate: nil, propertiesToUpdate: ["length": .constant(1)]), .invalidQuery),
      (.update(entityName: "Film", predicate: nil, propertiesToUpdate: ["director": .constant(.null)]), .invalidQuery),
      (.update(entityName: "Film", predicate: nil, propertiesToUpdate: ["scratch": .constant("x")]), .invalidQuery),
      (.update(entityName: "Film", predicate: nil, propertiesToUpdate: ["title": .constant(.null)]), .validation),
      (.update(entityName: "Film", predicate: nil, propertiesToUpdate: ["year": .constant(100_000)]), .validation),
      (
        .update(entityName: "Film", predicate: nil, propertiesToUpdate: ["year": try QueryExpression(format: "title")]),
        .validation
      ),
      (.update(entityName: "Film", predicate: try QueryPredicate(format: "year > 'x'"), propertiesToUpdate: [:]), .invalidQuery),
      (
        .update(entityName: "Film", predicate: nil, propertiesToUpdate: ["year": try QueryExpression(format: "year * 100")]),
        .validation
      ),
      (.update(entityName: "Actor", predicate: nil, propertiesToUpdate: ["imdbID": .constant("nm1")]), .constraintConflict),
      (.delete(entityName: "Studio", predicate: try QueryPredicate(format: "name == 'Warner'")), .deleteDenied),
      (.delete(entityName: "Nope", predicate: nil), .invalidQuery),
    ]
    for (request, code) in bad {
      do {
        _ = try live.execute(request)
        Issue.record("expected \(code) for \(request)")
      } catch let error as StoreError {
        #expect(error.code == code, "\(request): \(error.message)")
      }
    }
    #expect(try s.fresh().count(for: FetchRequest<Film>()) == SampleData.films.count)
    #expect(try s.titles("title == nil OR year > 3000").isEmpty)
    #expect(try s.fresh().count(for: FetchRequest<Actor>(format: "imdbID == 'nm1'")) == 0)
    #expect(try s.fresh().count(for: FetchRequest<Studio>()) == SampleData.studios.count)

  }

  /// Values an attribute cannot hold: the whole update is refused with the same error on every backend
  /// (SQLite's native path checks them in SQL as it writes, then reports through the general path), and
  /// nothing is written — not even the objects whose new values would have fitted.
  static func valuesAnAttributeCannotHoldAreRefused(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let live = s.live
    try s.lengthenMannFilms()
    let untitled = try #require(try s.fresh().fetch(FetchRequest<Film>(format: "title == 'Untitled Project'")).first)
    let heatOnly = try QueryPredicate(format: "title == 'Heat'")
    let refused: [(BatchRequest, StoreError)] = [
      (
        .update(entityName: "Film", predicate: heatOnly, propertiesToUpdate: ["year": try QueryExpression(format: "year * 100")]),
        StoreError(.validation, "Film.year is a int16 and cannot hold 199500", entity: "Film", key: "year", value: .int(199_500))
      ),
      (
        .update(
          entityName: "Film", predicate: heatOnly, propertiesToUpdate: ["year": try QueryExpression(format: "year - 40000")]),
        StoreError(.validation, "Film.year is a int16 and cannot hold -38005", entity: "Film", key: "year", value: .int(-38_005))
      ),
      (
        .update(
          entityName: "Film", predicate: heatOnly,
          propertiesToUpdate: ["runtime": try QueryExpression(format: "runtime * 100000000")]),
        StoreError(
          .validation, "Film.runtime is a int32 and cannot hold 18000000000", entity: "Film", key: "runtime",
          value: .int(18_000_000_000))
      ),
      (
        .update(
          entityName: "Film", predicate: try QueryPredicate(format: "title == 'Untitled Project'"),
          propertiesToUpdate: ["title": try QueryExpression(format: "genre")]),
        StoreError(
          .validation, "Film.title is not optional; the batch update would set it to nil for \(untitled.objectID)",
          entity: "Film", key: "title")
      ),
      (
        .update(
          entityName: "Film", predicate: heatOnly,
          propertiesToUpdate: [
            "runtime": try QueryExpression(format: "runtime + 1"), "year": try QueryExpression(format: "year + 40000"),
          ]),
        StoreError(.validation, "Film.year is a int16 and cannot hold 41995", entity: "Film", key: "year", value: .int(41_995))
      ),
    ]
    for (request, expected) in refused {
      do {
        _ = try live.execute(request)
        Issue.record("expected \(expected) for \(request)")
      } catch let error as StoreError {
        #expect(error == expected)
      }
    }
  }

  /// Beyond Int64 (an overflow or a huge product) and beyond Float (a value a Float would round to
  /// infinity), computed or constant: refused too, never clamped or trapped.
  static func valuesBeyondInt64AndFloatAreRefused(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let live = s.live
    let heatOnly = try QueryPredicate(format: "title == 'Heat'")
    let beyondRange = [
      ("boxOffice", "boxOffice * 1e30"), ("boxOffice", "boxOffice + 9223372036854775807"),
      ("boxOffice", "0 - boxOffice - 9223372036854775807"),
      ("score", "score * 1e38 + 1e39"), ("score", "1e39"), ("score", "0 - 1e39"),
    ]
    for (key, format) in beyondRange {
      do {
        _ = try live.execute(
          .update(entityName: "Film", predicate: heatOnly, propertiesToUpdate: [key: try QueryExpression(format: format)]))
        Issue.record("expected \(key) = \(format) to be refused")
      } catch let error as StoreError {
        #expect(error.code == .validation && error.entity == "Film" && error.key == key, "\(format): \(error)")
      }
    }
  }

  /// Some objects fit (Delicatessen: 99 × 20,000,000 is an Int32), Heat's 180 does not: none changes.
  static func aPartlyFittingUpdateWritesNothing(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let live = s.live
    try s.lengthenMannFilms()
    let mixed = BatchRequest.update(
      entityName: "Film", predicate: nil, propertiesToUpdate: ["runtime": try QueryExpression(format: "runtime * 20000000")])
    do {
      _ = try live.execute(mixed)
      Issue.record("expected a validation error for \(mixed)")
    } catch let error as StoreError {
      #expect(error.code == .validation && error.entity == "Film" && error.key == "runtime")
    }
    #expect(try s.titles("runtime == 180 AND year == 1995") == ["Heat"])
    #expect(try s.titles("runtime == 99") == ["Delicatessen"])
    #expect(try s.titles("runtime == 0") == ["Untitled Project"])
    #expect(try s.titles("runtime > 1000 OR year > 3000 OR year < 0 OR title == nil").isEmpty)
    #expect(try s.fresh().count(for: FetchRequest<Film>()) == SampleData.films.count)

  }

  /// As in Core Data, a batch update does not apply validation bounds (rating is 0…10): every backend
  /// stores the value, as it stores what the general path would.
  static func updatesIgnoreValidationBounds(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let doubled = try s.live.execute(
      .update(
        entityName: "Film", predicate: try QueryPredicate(format: "title == 'Parasite'"),
        propertiesToUpdate: ["rating": try QueryExpression(format: "rating * 2")]))
    #expect(doubled.count == 1)
    #expect(try s.titles("rating > 10") == ["Parasite"])

  }

  /// A Float attribute takes the nearest Float, computed or constant, as a context's save stores it; a
  /// constant compared with it is taken as a Float too (as Swift reads `score == 0.1` of a Float).
  static func floatsTakeTheNearestFloat(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let live = s.live
    let heatOnly = try QueryPredicate(format: "title == 'Heat'")
    let heatScore = try #require(try s.fresh().fetch(FetchRequest<Film>(format: "title == 'Heat'")).first?.score)
    _ = try live.execute(
      .update(entityName: "Film", predicate: heatOnly, propertiesToUpdate: ["score": try QueryExpression(format: "score + 0.1")]))
    let raised = Float(Double(heatScore) + 0.1)
    #expect(try s.fresh().fetch(FetchRequest<Film>(format: "title == 'Heat'")).first?.score == raised)
    #expect(try s.titles(String(format: "score == %.17g", Double(raised))).contains("Heat"))
    _ = try live.execute(.update(entityName: "Film", predicate: heatOnly, propertiesToUpdate: ["score": .constant(0.1)]))
    #expect(try s.titles("score == 0.1") == ["Heat"])
    #expect(try s.titles("score > 0.1 AND title == 'Heat'").isEmpty)
    let again = try #require(try s.fresh().fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    again.score = 0.1
    #expect(!again.hasChanges)

  }

  /// Delete: by predicate, cascading (a director's films), by IDs; merged, the live context forgets them.
  static func deletesByPredicateCascadeAndIDs(_ backend: ConformanceBackend) async throws {
    let s = try BatchStore(backend)
    let live = s.live
    let parasite = try #require(try live.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).first)
    let old = try live.execute(.delete(entityName: "Film", predicate: try QueryPredicate(format: "year < 1992")))
    #expect(old.count == 1)
    #expect(try s.titles("title == 'Delicatessen'").isEmpty)
    let bong = BatchRequest.delete(entityName: "Director", predicate: try QueryPredicate(format: "name == 'Bong Joon-ho'"))
    let cascaded = try live.execute(bong)
    #expect(cascaded.count == 3)
    #expect(Set(cascaded.objectIDs.map(\.entityName)) == ["Director", "Film"])
    #expect(try s.titles("title IN {'Parasite', 'Memories of Murder'}").isEmpty)
    ObjectContext.mergeChanges(fromRemoteContextSave: cascaded.changes(of: bong), into: [live])
    #expect(parasite.isDeleted || parasite.managedObjectContext == nil)
    #expect(try live.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).isEmpty)
    let empty = try #require(try live.fetch(FetchRequest<Studio>(format: "name == 'Empty Studio'")).first)
    let byID = try live.execute(.deleteObjects([empty.objectID]))
    #expect(byID.count == 1)
    #expect(try s.fresh().count(for: FetchRequest<Studio>()) == SampleData.studios.count - 1)
    #expect(try live.execute(.delete(entityName: "Film", predicate: try QueryPredicate(format: "year > 3000"))).count == 0)
  }
}
