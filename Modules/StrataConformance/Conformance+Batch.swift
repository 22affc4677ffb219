import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Batch update and delete: expressions, delete rules (cascade, deny), errors that leave the store as it
  /// was, and merging the results into a live context.
  public static func batch(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let live = try backend.freshContext(container, url)
    func fresh() throws -> ObjectContext { try backend.freshContext(container, url) }
    func titles(_ format: String) throws -> Set<String> {
      Set(try fresh().fetch(FetchRequest<Film>(format: format)).map(\.title))
    }

    let heat = try #require(try live.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    let parasite = try #require(try live.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).first)
    #expect(heat.runtime == 170)

    // Update: constants and expressions of the object's own values.
    let release = BatchRequest.update(
      entityName: "Film", predicate: try QueryPredicate(format: "released == NO"),
      propertiesToUpdate: ["released": .constant(true)])
    let released = try live.execute(release)
    #expect(released.count == 3)
    #expect(try titles("released == NO").isEmpty)
    let longer = BatchRequest.update(
      entityName: "Film", predicate: try QueryPredicate(format: "director.name == 'Michael Mann'"),
      propertiesToUpdate: [
        "runtime": try QueryExpression(format: "runtime + 10"), "rating": try QueryExpression(format: "rating / 2"),
      ])
    let result = try live.execute(longer)
    #expect(result.count == 2)
    #expect(try titles("runtime == 180 AND rating == 4.15") == ["Heat"])
    #expect(try titles("runtime == 130") == ["Collateral"])
    ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: longer), into: [live])
    #expect(heat.runtime == 180)

    // Bad updates change nothing.
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
    #expect(try fresh().count(for: FetchRequest<Film>()) == SampleData.films.count)
    #expect(try titles("title == nil OR year > 3000").isEmpty)
    #expect(try fresh().count(for: FetchRequest<Actor>(format: "imdbID == 'nm1'")) == 0)
    #expect(try fresh().count(for: FetchRequest<Studio>()) == SampleData.studios.count)

    // Values an attribute cannot hold: the whole update is refused with the same error on every backend
    // (SQLite's native path checks them in SQL as it writes, then reports through the general path), and
    // nothing is written — not even the objects whose new values would have fitted.
    let untitled = try #require(try fresh().fetch(FetchRequest<Film>(format: "title == 'Untitled Project'")).first)
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
    // Beyond Int64 (an overflow or a huge product) and beyond Float (a value a Float would round to
    // infinity), computed or constant: refused too, never clamped or trapped.
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
    for (request, expected) in refused {
      do {
        _ = try live.execute(request)
        Issue.record("expected \(expected) for \(request)")
      } catch let error as StoreError {
        #expect(error == expected)
      }
    }
    // Some objects fit (Delicatessen: 99 × 20,000,000 is an Int32), Heat's 180 does not: none changes.
    let mixed = BatchRequest.update(
      entityName: "Film", predicate: nil, propertiesToUpdate: ["runtime": try QueryExpression(format: "runtime * 20000000")])
    do {
      _ = try live.execute(mixed)
      Issue.record("expected a validation error for \(mixed)")
    } catch let error as StoreError {
      #expect(error.code == .validation && error.entity == "Film" && error.key == "runtime")
    }
    #expect(try titles("runtime == 180 AND year == 1995") == ["Heat"])
    #expect(try titles("runtime == 99") == ["Delicatessen"])
    #expect(try titles("runtime == 0") == ["Untitled Project"])
    #expect(try titles("runtime > 1000 OR year > 3000 OR year < 0 OR title == nil").isEmpty)
    #expect(try fresh().count(for: FetchRequest<Film>()) == SampleData.films.count)

    // As in Core Data, a batch update does not apply validation bounds (rating is 0…10): every backend
    // stores the value, as it stores what the general path would.
    let doubled = try live.execute(
      .update(
        entityName: "Film", predicate: try QueryPredicate(format: "title == 'Parasite'"),
        propertiesToUpdate: ["rating": try QueryExpression(format: "rating * 2")]))
    #expect(doubled.count == 1)
    #expect(try titles("rating > 10") == ["Parasite"])

    // A Float attribute takes the nearest Float, computed or constant, as a context's save stores it; a
    // constant compared with it is taken as a Float too (as Swift reads `score == 0.1` of a Float).
    let heatScore = try #require(try fresh().fetch(FetchRequest<Film>(format: "title == 'Heat'")).first?.score)
    _ = try live.execute(
      .update(entityName: "Film", predicate: heatOnly, propertiesToUpdate: ["score": try QueryExpression(format: "score + 0.1")]))
    let raised = Float(Double(heatScore) + 0.1)
    #expect(try fresh().fetch(FetchRequest<Film>(format: "title == 'Heat'")).first?.score == raised)
    #expect(try titles(String(format: "score == %.17g", Double(raised))).contains("Heat"))
    _ = try live.execute(.update(entityName: "Film", predicate: heatOnly, propertiesToUpdate: ["score": .constant(0.1)]))
    #expect(try titles("score == 0.1") == ["Heat"])
    #expect(try titles("score > 0.1 AND title == 'Heat'").isEmpty)
    let again = try #require(try fresh().fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    again.score = 0.1
    #expect(!again.hasChanges)

    // Delete: by predicate, cascading (a director's films), by IDs; merged, the live context forgets them.
    let old = try live.execute(.delete(entityName: "Film", predicate: try QueryPredicate(format: "year < 1992")))
    #expect(old.count == 1)
    #expect(try titles("title == 'Delicatessen'").isEmpty)
    let bong = BatchRequest.delete(entityName: "Director", predicate: try QueryPredicate(format: "name == 'Bong Joon-ho'"))
    let cascaded = try live.execute(bong)
    #expect(cascaded.count == 3)
    #expect(Set(cascaded.objectIDs.map(\.entityName)) == ["Director", "Film"])
    #expect(try titles("title IN {'Parasite', 'Memories of Murder'}").isEmpty)
    ObjectContext.mergeChanges(fromRemoteContextSave: cascaded.changes(of: bong), into: [live])
    #expect(parasite.isDeleted || parasite.managedObjectContext == nil)
    #expect(try live.fetch(FetchRequest<Film>(format: "title == 'Parasite'")).isEmpty)
    let empty = try #require(try live.fetch(FetchRequest<Studio>(format: "name == 'Empty Studio'")).first)
    let byID = try live.execute(.deleteObjects([empty.objectID]))
    #expect(byID.count == 1)
    #expect(try fresh().count(for: FetchRequest<Studio>()) == SampleData.studios.count - 1)
    #expect(try live.execute(.delete(entityName: "Film", predicate: try QueryPredicate(format: "year > 3000"))).count == 0)
  }
}
