import Foundation
import Strata
import StrataStoreKit
import Testing

/// The identity map's sweeps while many objects pass through a context: objects walked past are let go
/// a few thousand objects later even while many more stay held; objects the app holds, objects with
/// unsaved changes (inserted, updated, deleted) and a fetch's objects held through its result are never
/// let go, and each ID keeps naming one object. One case: its store (8,000 directors, 6,000 films) is
/// costly to fill, so its three steps share it, each a function of its own.
enum SweepCases {
  static let directors = 8_000
  static let directorsWithFilms = 600
  static let filmsPerDirector = 10
  static let films = directorsWithFilms * filmsPerDirector
  static let byName = FetchRequest<Director>(sortDescriptors: [QuerySort("name")])

  static func sweepsLetWalkedObjectsGoAndKeepTheRest(_ backend: ConformanceBackend) async throws {
    let container = try backend.container(at: try backend.makeLocation())
    let writer = container.newBackgroundContext()
    try writer.performAndWait {
      for d in 0..<directors {
        let director = Director(context: writer)
        director.name = "Sweep director \(String(10_000 + d).dropFirst())"
        guard d < directorsWithFilms else { continue }
        for f in 0..<filmsPerDirector {
          let film = Film(context: writer)
          film.title = "Sweep film \(d)-\(f)"
          film.year = Int16(1950 + f)
          film.uuid = UUID()
          film.director = director
        }
      }
      try writer.save()
    }
    try walkedObjectsAreLetGo(container)
    try changedAndHeldObjectsOutliveSweeps(container)
    try aFetchsObjectsOutliveLaterSweeps(container)
  }

  /// Every director stays held while the films of the first ones are walked once and let go: the first
  /// film is gone well before the registry has doubled the directors.
  static func walkedObjectsAreLetGo(_ container: PersistentContainer) throws {
    let context = container.newBackgroundContext()
    try context.performAndWait {
      let held = try context.fetch(byName)
      #expect(held.count == directors)
      weak var firstFilm: Film?
      var firstFilmID: ObjectID?
      var walked = 0
      var years = 0
      for director in held.prefix(directorsWithFilms) {
        for film in director.films {
          if walked == 0 {
            firstFilm = film
            firstFilmID = film.objectID
          }
          walked += 1
          years += Int(film.year) - 1950
        }
      }
      #expect(walked == films)
      #expect(years == directorsWithFilms * (0..<filmsPerDirector).reduce(0, +))
      #expect(firstFilm == nil, "a film walked past outlived \(walked - 1) more while \(directors) directors were held")
      #expect(held.allSatisfy { context.object(with: $0.objectID) === $0 })
      if let firstFilmID {
        let again = context.object(with: firstFilmID) as? Film
        #expect(again?.director === held.first && again?.title.hasPrefix("Sweep film 0-") == true)
      }
    }
  }

  /// Objects with unsaved changes and objects the app holds outlive young and full sweeps.
  static func changedAndHeldObjectsOutliveSweeps(_ container: PersistentContainer) throws {
    let pending = container.newBackgroundContext()
    try pending.performAndWait {
      weak var updated: Film?
      weak var inserted: Director?
      let kept: Film
      let (updatedID, deletedID, insertedID, filmIDs) = try {
        let all = try pending.fetch(FetchRequest<Film>(sortDescriptors: [QuerySort("title")]))
        #expect(all.count == films)
        all[0].title = "Sweep film renamed"
        pending.delete(all[1])
        let new = Director(context: pending)
        new.name = "Sweep director inserted"
        updated = all[0]
        inserted = new
        return (all[0].objectID, all[1].objectID, new.objectID, all.map(\.objectID))
      }()
      kept = try #require(pending.object(with: filmIDs[2]) as? Film)
      // Walked directors are held, so the old objects double and full sweeps run too.
      var walked: [Director] = []
      for director in try pending.fetch(byName, batchSize: 500) {
        _ = director.name
        walked.append(director)
      }
      for id in filmIDs { _ = (pending.object(with: id) as? Film)?.year }
      #expect(walked.count == directors + 1)
      #expect(updated != nil && inserted != nil, "an object with unsaved changes was let go")
      #expect(pending.object(with: updatedID) === updated)
      #expect((pending.object(with: updatedID) as? Film)?.title == "Sweep film renamed")
      #expect(pending.object(with: filmIDs[2]) === kept)
      #expect(pending.updatedObjects.contains { $0.objectID == updatedID })
      #expect(pending.deletedObjects.map(\.objectID) == [deletedID])
      #expect(pending.insertedObjects.map(\.objectID) == [insertedID])
      #expect(walked.allSatisfy { pending.object(with: $0.objectID) === $0 })
      try pending.save()
    }
    let checker = container.newBackgroundContext()
    let (renamed, savedFilms, insertedDirectors) = try checker.performAndWait {
      (
        try checker.count(for: FetchRequest<Film>(format: "title == 'Sweep film renamed'")),
        try checker.count(for: FetchRequest<Film>()),
        try checker.count(for: FetchRequest<Director>(format: "name == 'Sweep director inserted'"))
      )
    }
    #expect(renamed == 1 && savedFilms == films - 1 && insertedDirectors == 1)
  }

  /// A fetch registers its objects while sweeps wait; held by its result, they outlive the sweeps after it
  /// and keep their identity.
  static func aFetchsObjectsOutliveLaterSweeps(_ container: PersistentContainer) throws {
    let batch = container.newBackgroundContext()
    try batch.performAndWait {
      let all = try batch.fetch(byName)
      #expect(all.count == directors + 1)
      var years = 0
      for film in try batch.fetch(FetchRequest<Film>(), batchSize: 100) { years += Int(film.year) }
      #expect(years > 0)
      #expect(all.allSatisfy { batch.object(with: $0.objectID) === $0 })
      let again = try batch.fetch(byName)
      #expect(zip(again, all).allSatisfy { $0 === $1 })
      #expect(batch.registeredObjects.count >= all.count)
    }
  }
}
