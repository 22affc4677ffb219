import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Relationship targets are faults until touched; both sides of to-one, to-many and many-to-many
  /// relationships read back as stored.
  static func relationshipTargetsAreFaultsUntilTouched(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let fresh = try backend.freshContext(container, url)

    let heat = try #require(try fresh.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    let director = try #require(heat.director)
    #expect(director.isFault)
    #expect(director.name == "Michael Mann")
    #expect(!director.isFault)
    #expect(Set(director.films.map(\.title)) == ["Heat", "Collateral"])
    #expect(Set(heat.actors.map(\.name)) == ["Al Pacino", "Robert De Niro"])
    let deNiro = try #require(heat.actors.first { $0.name == "Robert De Niro" })
    #expect(Set(deNiro.films.map(\.title)) == ["Heat", "Straße"])
    #expect(heat.studio?.name == "Warner")
  }

  /// Both sides of to-one/to-many and many-to-many relationships stay in step before and after saves:
  /// setting a to-one updates the old and new inverse before saving.
  static func bothSidesStayInStepThroughASave(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = container.viewContext
    let jeunet = try #require(try context.fetch(FetchRequest<Director>(format: "name == 'Jean-Pierre Jeunet'")).first)
    let mann = try #require(try context.fetch(FetchRequest<Director>(format: "name == 'Michael Mann'")).first)
    let collateral = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Collateral'")).first)
    collateral.director = jeunet
    #expect(Set(mann.films.map(\.title)) == ["Heat"])
    #expect(Set(jeunet.films.map(\.title)) == ["Amélie", "Delicatessen", "Collateral"])
    #expect(mann.isUpdated || mann.hasChanges)

    // Removing from a to-many clears the inverse to-one.
    let delicatessen = try #require(jeunet.films.first { $0.title == "Delicatessen" })
    jeunet.films.remove(delicatessen)
    #expect(delicatessen.director == nil)

    // Many-to-many: adding on one side shows on the other.
    let tautou = try #require(try context.fetch(FetchRequest<Actor>(format: "name == 'Audrey Tautou'")).first)
    delicatessen.actors.insert(tautou)
    #expect(Set(tautou.films.map(\.title)) == ["Amélie", "Delicatessen"])
    let pacino = try #require(try context.fetch(FetchRequest<Actor>(format: "name == 'Al Pacino'")).first)
    pacino.films = []
    let heatHere = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Heat'")).first)
    #expect(Set(heatHere.actors.map(\.name)) == ["Robert De Niro"])

    // New objects related to new objects save together.
    let newDirector = Director(context: context)
    newDirector.name = "Greta Gerwig"
    let newFilm = Film(context: context)
    newFilm.title = "Lady Bird"
    newFilm.uuid = SampleData.uuid(500)
    newFilm.director = newDirector
    #expect(newDirector.films == [newFilm])
    try context.save()
    #expect(!newFilm.objectID.isTemporary)
    #expect(newFilm.director === newDirector)

    let after = try backend.freshContext(container, url)
    let collateralAfter = try #require(try after.fetch(FetchRequest<Film>(format: "title == 'Collateral'")).first)
    #expect(collateralAfter.director?.name == "Jean-Pierre Jeunet")
    let jeunetAfter = try #require(try after.fetch(FetchRequest<Director>(format: "name == 'Jean-Pierre Jeunet'")).first)
    #expect(Set(jeunetAfter.films.map(\.title)) == ["Amélie", "Collateral"])
    let delicatessenAfter = try #require(try after.fetch(FetchRequest<Film>(format: "title == 'Delicatessen'")).first)
    #expect(delicatessenAfter.director == nil)
    #expect(Set(delicatessenAfter.actors.map(\.name)) == ["Audrey Tautou"])
    let pacinoAfter = try #require(try after.fetch(FetchRequest<Actor>(format: "name == 'Al Pacino'")).first)
    #expect(pacinoAfter.films.isEmpty)
    let ladyBird = try #require(try after.fetch(FetchRequest<Film>(format: "title == 'Lady Bird'")).first)
    #expect(ladyBird.director?.name == "Greta Gerwig")
    #expect(ladyBird.director?.films.map(\.title) == ["Lady Bird"])
  }

  /// Delete rules: nullify removes the object from related objects, cascade deletes them, deny refuses
  /// the save with a clear error and leaves the store as it was.
  public static func deleteRules(_ backend: ConformanceBackend) async throws {
    let (container, url) = try backend.sampleContainer()
    let context = container.viewContext

    // Cascade: deleting a director deletes its films; nullify: those films leave their actors and studio.
    let mann = try #require(try context.fetch(FetchRequest<Director>(format: "name == 'Michael Mann'")).first)
    let warner = try #require(try context.fetch(FetchRequest<Studio>(format: "name == 'Warner'")).first)
    let deNiro = try #require(try context.fetch(FetchRequest<Actor>(format: "name == 'Robert De Niro'")).first)
    #expect(warner.films.count == 4)
    context.delete(mann)
    #expect(mann.isDeleted)
    #expect(context.deletedObjects.count == 3)
    #expect(Set(warner.films.map(\.title)) == ["File2", "file10"])
    #expect(Set(deNiro.films.map(\.title)) == ["Straße"])
    try context.save()
    let fresh = try backend.freshContext(container, url)
    #expect(try fresh.count(for: FetchRequest<Film>()) == SampleData.films.count - 2)
    #expect(try fresh.count(for: FetchRequest<Director>()) == SampleData.directors.count - 1)
    #expect(try fresh.fetch(FetchRequest<Film>(format: "title == 'Heat' OR title == 'Collateral'")).isEmpty)
    let deNiroAfter = try #require(try fresh.fetch(FetchRequest<Actor>(format: "name == 'Robert De Niro'")).first)
    #expect(Set(deNiroAfter.films.map(\.title)) == ["Straße"])

    // Nullify: deleting a film keeps its director.
    let amelie = try #require(try context.fetch(FetchRequest<Film>(format: "title == 'Amélie'")).first)
    let jeunet = try #require(amelie.director)
    context.delete(amelie)
    #expect(Set(jeunet.films.map(\.title)) == ["Delicatessen"])
    try context.save()

    // Deny: a studio with films cannot be deleted.
    context.delete(warner)
    do {
      try context.save()
      Issue.record("deleting a studio with films must fail")
    } catch let error as StoreError {
      #expect(error.code == .deleteDenied)
      #expect(error.entity == "Studio")
      #expect(error.key == "films")
      #expect(error.message.contains("films"))
    }
    let check = try backend.freshContext(container, url)
    #expect(try check.count(for: FetchRequest<Studio>(format: "name == 'Warner'")) == 1)
    #expect(try check.count(for: FetchRequest<Film>(format: "studio.name == 'Warner'")) == 2)
    context.rollback()
    #expect(!warner.isDeleted)
    for film in warner.films { context.delete(film) }
    context.delete(warner)
    try context.save()
    let last = try backend.freshContext(container, url)
    #expect(try last.count(for: FetchRequest<Studio>(format: "name == 'Warner'")) == 0)
    #expect(try last.count(for: FetchRequest<Film>()) == SampleData.films.count - 5)

    // An empty studio can be deleted.
    let empty = try #require(try context.fetch(FetchRequest<Studio>(format: "name == 'Empty Studio'")).first)
    context.delete(empty)
    try context.save()
    #expect(try last.count(for: FetchRequest<Studio>()) == 1)
  }
}
