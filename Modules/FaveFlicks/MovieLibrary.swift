import Foundation
import Strata

/// The FaveFlicks feature: a list of favourite movies, over any Strata store.
public struct MovieLibrary: Sendable {
  public let container: PersistentContainer

  public static let name = "FaveFlicks"

  public static func makeModel() throws -> ObjectModel { try ObjectModel(Movie.self) }

  public static func makeContainer(store: StoreDescription, registry: StoreRegistry) throws -> PersistentContainer {
    try PersistentContainer.loaded(name: name, model: try makeModel(), types: [Movie.self], store: store, registry: registry)
  }

  public init(container: PersistentContainer) {
    self.container = container
  }

  private var context: ObjectContext { container.viewContext }

  @discardableResult
  public func add(title: String, genre: String, releaseDate: Date) throws -> MovieRecord {
    let movie = Movie(context: context)
    movie.title = title.trimmingCharacters(in: .whitespacesAndNewlines)
    movie.genre = genre.trimmingCharacters(in: .whitespacesAndNewlines)
    movie.releaseDate = releaseDate
    do {
      try context.save()
    } catch {
      context.rollback()
      throw error
    }
    return MovieRecord(movie)
  }

  /// The movies by title; `genreContaining` and `titleMatching` ignore case and accents. A title search
  /// runs in the store, on the derived `titleSearch` column (`canonical:(title)`).
  public func list(genreContaining genre: String? = nil, titleMatching search: String? = nil) throws -> [MovieRecord] {
    var request = FetchRequest<Movie>(sortDescriptors: [
      QuerySort(\Movie.title, comparator: .localizedStandard), QuerySort(\Movie.releaseDate),
    ])
    var conditions: [QueryPredicate] = []
    if let genre, !genre.isEmpty {
      conditions.append((\Movie.genre).contains(genre, options: [.caseInsensitive, .diacriticInsensitive]).predicate)
    }
    if let search, !search.isEmpty {
      conditions.append(try QueryPredicate(format: "titleSearch CONTAINS canonical:(%@)", search))
    }
    if !conditions.isEmpty { request.predicate = conditions.count == 1 ? conditions[0] : .and(conditions) }
    return try context.fetch(request).map(MovieRecord.init)
  }

  /// Deletes every movie titled exactly `title`; returns how many.
  @discardableResult
  public func delete(title: String) throws -> Int {
    let movies = try context.fetch(FetchRequest<Movie>(where: \.title == title))
    guard !movies.isEmpty else {
      throw StoreError(.notFound, "no movie is titled '\(title)'", entity: "Movie", key: "title", value: .string(title))
    }
    for movie in movies { context.delete(movie) }
    do {
      try context.save()
    } catch {
      context.rollback()
      throw error
    }
    return movies.count
  }
}
