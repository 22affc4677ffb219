import Foundation
import Strata

extension MovieLibrary {
  /// The first FaveFlicks model: movies alone, stamped in `lastModified`.
  static func firstModel() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [
          AttributeDescription(name: "title", type: .string), AttributeDescription(name: "genre", type: .string),
          AttributeDescription(name: "releaseDate", type: .date),
          AttributeDescription(name: "lastModified", type: .date, isOptional: true),
          AttributeDescription(name: "titleSearch", type: .string, derivation: "canonical:(title)"),
        ])
    ])
  }

  /// Movie and Watch as version "2" declared them; version "3" adds Series.
  static func ratedEntities() -> [EntityDescription] {
    [
      EntityDescription(
        name: "Movie",
        attributes: [
          AttributeDescription(name: "title", type: .string), AttributeDescription(name: "genre", type: .string),
          AttributeDescription(name: "releaseDate", type: .date),
          AttributeDescription(name: "updatedAt", type: .date, isOptional: true, renamingIdentifier: "lastModified"),
          AttributeDescription(
            name: "rating", type: .int16, defaultValue: .int(0), validation: AttributeValidation(minimum: 0, maximum: 5)),
          AttributeDescription(name: "titleSearch", type: .string, derivation: "canonical:(title)"),
        ],
        relationships: [
          RelationshipDescription(name: "watches", destination: "Watch", inverse: "movie", isToMany: true, deleteRule: .cascade)
        ]),
      EntityDescription(
        name: "Watch", attributes: [AttributeDescription(name: "date", type: .date)],
        relationships: [RelationshipDescription(name: "movie", destination: "Movie", inverse: "watches")]),
    ]
  }

  /// The third FaveFlicks model: series, a sub-entity of movies.
  static func thirdModel() throws -> ObjectModel {
    let rated = ratedEntities()
    let series = EntityDescription(
      name: "Series",
      attributes: [
        AttributeDescription(name: "seasons", type: .int16, defaultValue: .int(1), validation: AttributeValidation(minimum: 1))
      ], parentEntity: "Movie")
    return try ObjectModel(entities: [rated[0], series, rated[1]])
  }

  /// Every version of the FaveFlicks model, oldest first: a store of any of them opens with the newest.
  ///
  /// - "1": movies with a title, genre, release date and `lastModified`.
  /// - "2": a rating (0 to 5), `lastModified` renamed `updatedAt`, and the times a movie was watched.
  /// - "3": series, a sub-entity of movies with a number of seasons (every movie stored before stays a movie).
  /// - "4": a poster image, kept out of the store's rows when large (`@Attribute(.externalStorage)`).
  public static func migrationPlan() throws -> MigrationPlan {
    try MigrationPlan([
      ModelVersion("1", try firstModel()), ModelVersion("2", try ObjectModel(entities: ratedEntities())),
      ModelVersion("3", try thirdModel()), ModelVersion("4", try ObjectModel(Movie.self, Series.self, Watch.self)),
    ])
  }
}
