import Foundation
import Strata

public final class Movie: ManagedObject {
  @Attribute public var title: String
  @Attribute public var genre: String
  @Attribute public var releaseDate: Date
}

/// A movie as plain data, for output and tests.
public struct MovieRecord: Sendable, Hashable, Codable {
  public var title: String
  public var genre: String
  public var releaseDate: Date

  public init(title: String, genre: String, releaseDate: Date) {
    self.title = title
    self.genre = genre
    self.releaseDate = releaseDate
  }

  init(_ movie: Movie) {
    self.init(title: movie.title, genre: movie.genre, releaseDate: movie.releaseDate)
  }
}
