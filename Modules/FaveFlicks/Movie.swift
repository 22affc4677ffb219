import Foundation
import Strata

public class Movie: ManagedObject, ValueValidating {
  @Attribute public var title: String
  @Attribute public var genre: String
  @Attribute public var releaseDate: Date
  @Attribute(originalName: "lastModified") public var updatedAt: Date?
  @Attribute(minimum: 0, maximum: 5) public var rating: Int16 = 0
  @Derived("canonical:(title)") public var titleSearch: String
  /// The movie's poster image (model version "4"); large ones are kept out of the store's rows.
  @Attribute(.externalStorage) public var poster: Data?
  @Relationship(inverse: "movie", deleteRule: .cascade) public var watches: Set<Watch>

  public override func willSave() {
    guard hasPersistentChangedValues, !isDeleted else { return }
    try? setPrimitiveValue(Date.now, forKey: "updatedAt")
  }

  public func validateValue(_ value: Any?, forKey key: String) throws {
    if key == "title", let title = value as? String, title.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
      throw StoreError(.validation, "must not be empty", entity: "Movie", key: "title", value: .string(title))
    }
  }
}

/// A series: a movie of several seasons (model version "3", a sub-entity of `Movie`).
public final class Series: Movie {
  @Attribute(minimum: 1) public var seasons: Int16 = 1
}

/// One time a movie was watched.
public final class Watch: ManagedObject {
  @Attribute public var date: Date
  @Relationship(inverse: "watches") public var movie: Movie?
}

/// A movie as plain data, for output and tests.
public struct MovieRecord: Sendable, Hashable, Codable {
  public var title: String
  public var genre: String
  public var releaseDate: Date
  /// When the movie was last saved with a change.
  public var updatedAt: Date?
  /// Stars from 0 to 5; 0 until rated.
  public var rating: Int
  /// How many times it was watched.
  public var watchCount: Int
  /// For a series, its number of seasons; `nil` for a film.
  public var seasons: Int?

  public init(
    title: String, genre: String, releaseDate: Date, updatedAt: Date? = nil, rating: Int = 0, watchCount: Int = 0,
    seasons: Int? = nil
  ) {
    self.seasons = seasons
    self.title = title
    self.genre = genre
    self.releaseDate = releaseDate
    self.updatedAt = updatedAt
    self.rating = rating
    self.watchCount = watchCount
  }

  init(_ movie: Movie) {
    self.init(
      title: movie.title, genre: movie.genre, releaseDate: movie.releaseDate, updatedAt: movie.updatedAt,
      rating: Int(movie.rating), watchCount: movie.watches.count, seasons: (movie as? Series).map { Int($0.seasons) })
  }
}
