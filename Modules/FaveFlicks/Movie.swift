import Foundation
import Strata

public final class Movie: ManagedObject, ValueValidating {
  @Attribute public var title: String
  @Attribute public var genre: String
  @Attribute public var releaseDate: Date
  @Attribute public var lastModified: Date?
  @Derived("canonical:(title)") public var titleSearch: String

  public override func willSave() {
    guard hasPersistentChangedValues, !isDeleted else { return }
    try? setPrimitiveValue(Date.now, forKey: "lastModified")
  }

  public func validateValue(_ value: Any?, forKey key: String) throws {
    if key == "title", let title = value as? String, title.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
      throw StoreError(.validation, "must not be empty", entity: "Movie", key: "title", value: .string(title))
    }
  }
}

/// A movie as plain data, for output and tests.
public struct MovieRecord: Sendable, Hashable, Codable {
  public var title: String
  public var genre: String
  public var releaseDate: Date
  /// When the movie was last saved with a change.
  public var lastModified: Date?

  public init(title: String, genre: String, releaseDate: Date, lastModified: Date? = nil) {
    self.title = title
    self.genre = genre
    self.releaseDate = releaseDate
    self.lastModified = lastModified
  }

  init(_ movie: Movie) {
    self.init(title: movie.title, genre: movie.genre, releaseDate: movie.releaseDate, lastModified: movie.lastModified)
  }
}
