import Foundation
import Strata
import Testing

private final class MovieV1: ManagedObject {
  override class var entityName: String { "Movie" }
  @Attribute var title: String
  @Attribute var lastModified: Date?
  @Relationship(inverse: "movies") var director: DirectorV1?
}

private final class DirectorV1: ManagedObject {
  override class var entityName: String { "Director" }
  @Attribute var name: String
  @Relationship(inverse: "director") var movies: Set<MovieV1>
}

private final class MovieV2: ManagedObject {
  override class var entityName: String { "Film" }
  override class var originalEntityName: String? { "Movie" }
  @Attribute var title: String
  @Attribute(originalName: "lastModified") var updatedAt: Date?
  @Attribute var rating: Int16 = 0
  @Relationship(inverse: "films", originalName: "director") var directedBy: DirectorV2?
}

private final class DirectorV2: ManagedObject {
  override class var entityName: String { "Director" }
  @Attribute var name: String
  @Relationship(inverse: "directedBy", originalName: "movies") var films: Set<MovieV2>
}

@Suite("Renames declared on classes")
struct RenamingDeclarationTests {
  @Test func originalNamesBecomeRenamingIdentifiersAndMigrationFollowsThem() throws {
    let v1 = try ObjectModel(MovieV1.self, DirectorV1.self)
    let v2 = try ObjectModel(MovieV2.self, DirectorV2.self)
    let film = try #require(v2.entity(named: "Film"))
    #expect(film.renamingIdentifier == "Movie")
    #expect(film.attribute(named: "updatedAt")?.renamingIdentifier == "lastModified")
    #expect(film.relationship(named: "directedBy")?.renamingIdentifier == "director")
    #expect(v1.entity(named: "Movie")?.attribute(named: "title")?.renamingIdentifier == nil)

    let migration = try ModelMigration(from: v1, to: v2)
    #expect(
      migration.changes.map(\.description) == [
        "Film: entity renamed from Movie", "Film.updatedAt: renamed from lastModified", "Film.rating: added, filled with 0",
        "Film.directedBy: relationship renamed from director", "Director.films: relationship renamed from movies",
      ])
    #expect(migration.entities.map(\.source) == ["Movie", "Director"])
  }

  @Test func aModelWithoutRenamesKeepsItsFingerprint() throws {
    let model = try ObjectModel(MovieV1.self, DirectorV1.self)
    let json = String(decoding: try model.jsonData(), as: UTF8.self)
    #expect(!json.contains("renamingIdentifier"))
  }
}
