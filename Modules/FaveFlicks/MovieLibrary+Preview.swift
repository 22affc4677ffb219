import Foundation
import Strata

extension MovieLibrary {
  /// The movies the app starts with, from the module's `default-movies.json`.
  public static func defaultMovies() throws -> [MovieRecord] {
    guard let url = Bundle.module.url(forResource: "default-movies", withExtension: "json") else {
      throw StoreError(.notFound, "default-movies.json is missing from the FaveFlicks resources")
    }
    struct Row: Decodable {
      var title: String
      var genre: String
      var releaseDateUTC: Date
    }
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    let rows = try decoder.decode([Row].self, from: try Data(contentsOf: url))
    return rows.map { MovieRecord(title: $0.title, genre: $0.genre, releaseDate: $0.releaseDateUTC) }
  }

  /// A library over a new in-memory store holding the default movies: the preview fixture.
  /// `registry` must offer the memory store type (the composition root passes one that does).
  public static func preview(registry: StoreRegistry) throws -> MovieLibrary {
    let library = MovieLibrary(container: try makeContainer(store: StoreDescription(type: .memory), registry: registry))
    for movie in try defaultMovies() {
      try library.add(title: movie.title, genre: movie.genre, releaseDate: movie.releaseDate)
    }
    return library
  }
}
