import Foundation
import Strata
import StrataMemory
import Testing

final class Movie: ManagedObject {
  @Attribute var title: String
  @Attribute var genre: String
  @Attribute var releaseDate: Date
  @Relationship(inverse: "movies") var director: Director?
}

final class Director: ManagedObject {
  @Attribute(.unique) var name: String
  @Relationship(inverse: "director", deleteRule: .cascade) var movies: Set<Movie>
}

/// The README's example, as written there (on a memory store instead of the default SQLite file).
@Suite("README example")
struct ReadmeExampleTests {
  @Test func theExampleRuns() async throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let container = PersistentContainer(
      name: "Movies", model: try ObjectModel(Movie.self, Director.self),
      types: [Movie.self, Director.self], registry: registry)
    container.storeDescriptions = [StoreDescription(type: .memory)]
    try await container.loadPersistentStores()

    let context = container.newBackgroundContext()
    let mann = Director(context: context)
    mann.name = "Michael Mann"
    let heat = Movie(context: context)
    heat.title = "Heat"
    heat.genre = "Crime"
    heat.releaseDate = .now
    heat.director = mann
    #expect(mann.movies == [heat])
    try context.save()

    let crime = try context.fetch(
      FetchRequest<Movie>(
        format: "genre CONTAINS[cd] %@ AND director.name BEGINSWITH %@", "crime", "Michael",
        sortDescriptors: [QuerySort(\Movie.title, comparator: .localizedStandard)]))
    let typed = try context.fetch(FetchRequest<Movie>(where: \.director?.name == "Michael Mann"))
    let swifty = try context.fetch(FetchRequest<Movie>(#Predicate<Movie> { $0.genre.localizedStandardContains("crime") }))
    #expect(crime == [heat] && typed == [heat] && swifty == [heat])

    var everything = FetchRequest<Movie>(sortDescriptors: [QuerySort(\Movie.releaseDate)])
    everything.relationshipKeyPathsForPrefetching = ["director"]
    var printed: [String] = []
    for movie in try context.fetch(everything, batchSize: 500) {
      printed.append("\(movie.title) \(movie.director?.name ?? "")")
    }
    #expect(printed == ["Heat Michael Mann"])
    let later = try await context.fetch(AsynchronousFetchRequest(fetchRequest: everything))
    #expect(context.performAndWait { later.map { $0.title } } == ["Heat"])
  }
}
