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

  /// Every version of the FaveFlicks model, oldest first: a store of any of them opens with the newest.
  ///
  /// - "1": movies with a title, genre, release date and `lastModified`.
  /// - "2": a rating (0 to 5), `lastModified` renamed `updatedAt`, and the times a movie was watched.
  /// - "3": series, a sub-entity of movies with a number of seasons (every movie stored before stays a movie).
  public static func migrationPlan() throws -> MigrationPlan {
    try MigrationPlan([
      ModelVersion("1", try firstModel()), ModelVersion("2", try ObjectModel(Movie.self, Watch.self)),
      ModelVersion("3", try ObjectModel(Movie.self, Series.self, Watch.self)),
    ])
  }
}
