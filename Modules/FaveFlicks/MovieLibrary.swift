import Foundation
import Strata

/// The FaveFlicks feature: a list of favourite movies, over any Strata store.
public struct MovieLibrary: Sendable {
  public let container: PersistentContainer

  public static let name = "FaveFlicks"

  /// The current model (version "3" of ``migrationPlan()``): movies, series and the times they were watched.
  public static func makeModel() throws -> ObjectModel { try migrationPlan().current.model }

  /// A container of the current model with `store` loaded; a store written by an earlier version
  /// migrates when it opens, reporting to `migrationProgress`.
  public static func makeContainer(
    store: StoreDescription, registry: StoreRegistry, migrationProgress: (@Sendable (MigrationProgress) -> Void)? = nil
  ) throws -> PersistentContainer {
    let container = PersistentContainer(
      name: name, plan: try migrationPlan(), types: [Movie.self, Series.self, Watch.self], registry: registry)
    container.storeDescriptions = [store]
    container.migrationProgressHandler = migrationProgress
    try container.loadPersistentStores()
    return container
  }

  /// What opening the store `store` would migrate, without opening it for writing: `nil` when it already
  /// has this version's model or does not exist yet.
  public static func pendingMigration(store: StoreDescription, registry: StoreRegistry) throws -> MigrationPreview? {
    let container = PersistentContainer(
      name: name, plan: try migrationPlan(), types: [Movie.self, Series.self, Watch.self], registry: registry)
    container.storeDescriptions = [store]
    return try container.previewMigration()
  }

  public init(container: PersistentContainer) {
    self.container = container
    // Another process rating or watching the same movie: each keeps the properties it changed.
    container.viewContext.mergePolicy = .mergeByPropertyObjectTrump
  }

  private var context: ObjectContext { container.viewContext }

  /// Adds a movie, or with `seasons` a series.
  @discardableResult
  public func add(title: String, genre: String, releaseDate: Date, seasons: Int? = nil) throws -> MovieRecord {
    let movie: Movie
    if let seasons {
      guard let count = Int16(exactly: seasons), count >= 1 else {
        throw StoreError(
          .validation, "a series has at least 1 season, not \(seasons)", entity: "Series", key: "seasons",
          value: .int(Int64(seasons)))
      }
      let series = Series(context: context)
      series.seasons = count
      movie = series
    } else {
      movie = Movie(context: context)
    }
    movie.title = title.trimmingCharacters(in: .whitespacesAndNewlines)
    movie.genre = genre.trimmingCharacters(in: .whitespacesAndNewlines)
    movie.releaseDate = releaseDate
    try save()
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

  /// Gives every movie titled exactly `title` `stars` from 0 to 5; returns how many.
  @discardableResult
  public func rate(title: String, stars: Int) throws -> Int {
    guard (0...5).contains(stars) else {
      throw StoreError(
        .validation, "stars must be from 0 to 5, not \(stars)", entity: "Movie", key: "rating", value: .int(Int64(stars)))
    }
    let movies = try movies(titled: title)
    for movie in movies { movie.rating = Int16(stars) }
    try save()
    return movies.count
  }

  /// Records that the first movie titled exactly `title` was watched on `date`; returns how many times it
  /// has been watched.
  @discardableResult
  public func watched(title: String, on date: Date) throws -> Int {
    guard let movie = try movies(titled: title).first else { return 0 }
    let watch = Watch(context: context)
    watch.date = date
    watch.movie = movie
    try save()
    return movie.watches.count
  }

  private func movies(titled title: String) throws -> [Movie] {
    let movies = try context.fetch(FetchRequest<Movie>(where: \.title == title))
    guard !movies.isEmpty else {
      throw StoreError(.notFound, "no movie is titled '\(title)'", entity: "Movie", key: "title", value: .string(title))
    }
    return movies
  }

  private func save() throws {
    do {
      try context.save()
    } catch {
      context.rollback()
      throw error
    }
  }

  /// Gives the first movie titled exactly `title` the poster `image` (`nil` removes it). A large image
  /// is kept beside the store, not in its rows (`@Attribute(.externalStorage)`).
  ///
  /// - Throws: `.notFound` when no movie has that title; what the save throws.
  public func setPoster(title: String, image: Data?) throws {
    guard let movie = try movies(titled: title).first else { return }
    movie.poster = image
    try save()
  }

  /// The poster of the first movie titled exactly `title`, `nil` when it has none. A large one is read
  /// from beside the store only now.
  ///
  /// - Throws: `.notFound` when no movie has that title; `.corrupted` when its stored image is missing.
  public func poster(title: String) throws -> Data? {
    try movies(titled: title).first?.fulfilledValue(forKey: "poster") as? Data
  }

  /// Deletes every movie titled exactly `title`; returns how many.
  @discardableResult
  public func delete(title: String) throws -> Int {
    let movies = try movies(titled: title)
    for movie in movies { context.delete(movie) }
    try save()
    return movies.count
  }
}
