import Foundation
import Strata
import StrataConformance
import StrataLMDB
import StrataMemory
import StrataMirroring
import StrataPostgres
import StrataSQLite
import StrataStoreKit

// What a documentation example may use without declaring it (the rules: README.md beside this file).
// Keep it small: a name belongs here only when the prose around the examples gives it (the app's
// container, its context, a movie it fetched, the store a backend's method is called on).

// MARK: The model the examples talk about

/// A movie of the examples (FaveFlicks-like; GettingStarted's model plus a year).
final class Movie: ManagedObject {
  @Attribute var title: String
  @Attribute var genre: String
  @Attribute var releaseDate: Date
  @Attribute(minimum: 0, maximum: 5) var rating: Int16
  @Attribute var year: Int
  @Relationship(inverse: "movies") var director: Director?
}

final class Director: ManagedObject {
  @Attribute(.unique) var name: String
  @Relationship(inverse: "director", deleteRule: .cascade) var movies: Set<Movie>
}

/// A time a movie was watched (the second model version of the migration examples).
final class Watch: ManagedObject {
  @Attribute var date: Date
}

final class Studio: ManagedObject {
  @Attribute(.unique) var name: String
}

/// A BubbleTeaFinder-like venue.
final class Venue: ManagedObject {
  @Attribute var name: String
  @Attribute var specialCount: Int64
  @Attribute var favorite: Bool
  @Relationship var location: Location?
  @Relationship var priceInfo: PriceInfo?
}

final class Location: ManagedObject {
  @Attribute var address: String
}

final class PriceInfo: ManagedObject {
  @Attribute var priceCategory: String
}

/// A TaterRater-like potato and its tastings.
final class Potato: ManagedObject {
  @Attribute(.unique) var variety: String
  @Relationship(inverse: "potato", deleteRule: .cascade) var tastings: Set<Tasting>
}

final class Tasting: ManagedObject {
  @Attribute var text: String
  @Relationship(inverse: "tastings") var potato: Potato?
}

/// A FireballWatch-like fireball.
final class Fireball: ManagedObject {
  @Attribute(.unique) var date: Date
  @Attribute var energy: Double
  @Attribute var impactEnergy: Double
}

/// A person of the split-the-name migration examples.
final class Person: ManagedObject {
  @Attribute var fullName: String
  @Attribute var firstName: String
  @Attribute var lastName: String
}

/// An abstract entity and a sub-entity.
class Media: ManagedObject {
  override class var isAbstract: Bool { true }
  @Attribute var title: String
}

final class Series: Media {
  @Attribute var seasons: Int
}

enum Genre: String {
  case drama, crime
}

/// The backend a conformance test target runs the suite on.
let backend = ConformanceBackend(factory: MemoryStoreFactory())

/// A backend's own check of a store file, for the conformance suite.
func checkIntegrity(of url: URL) throws {}

/// What an app does when its store changed.
func refetch() {}

enum TitleError: Error {
  case leadingSpace
}

/// The reader's own store, in the "Writing a backend" examples (`MyStoreFactory` is declared by one of them).
func MyStore(url: URL?, model: ObjectModel?, options: StoreOptions) throws -> any PersistentStore {
  try MemoryStore(model: model ?? ObjectModel(entities: []), options: options)
}

// MARK: The names

/// What the app (or the backend) has at hand around an example. Only the members an example uses are
/// bound, as locals of the function that holds it.
final class DocScope {
  // The app
  var registry: StoreRegistry
  var container: PersistentContainer
  var context: ObjectContext
  var viewContext: ObjectContext
  var background: ObjectContext
  var model: ObjectModel
  /// The model of an app's first release, kept as a value for its migration plan.
  var firstReleaseModel: ObjectModel
  var url: URL
  var directory: URL
  var movie: Movie!
  var cutoff: Date
  /// Model versions: the app's releases in order, the model a store holds, the model the app opens it with.
  var v1: ObjectModel!
  var v2: ObjectModel!
  var v3: ObjectModel!
  var storedModel: ObjectModel!
  var appModel: ObjectModel!
  /// Objects the app has met before (Heat and Ronin, their director, an author of books).
  var heatID: ObjectID!
  var roninID: ObjectID!
  var directorID: ObjectID!
  var authorID: ObjectID!
  var ids: [ObjectID] = []
  /// Persistent history the app has read: the token it goes on from, one it has finished with.
  var lastToken: HistoryToken!
  var token: HistoryToken!
  var processedToken: HistoryToken!
  var transactions: [HistoryTransaction] = []
  var transaction: HistoryTransaction!
  /// A migration plan's versions, and a custom stage's data work.
  var version1: ModelVersion!
  var version2: ModelVersion!
  var version3: ModelVersion!
  var fillNames: (@Sendable (ObjectContext) throws -> Void)!
  /// A request the surrounding prose built: a history request, or a store's fetch description.
  var historyRequest: PersistentHistoryRequest!
  var fetchDescription: FetchDescription!
  /// A fetched results controller's delegate and two of its snapshots' worth of change.
  var delegate: (any FetchedResultsControllerDelegate)!
  var before: FetchedResultsSnapshot!
  var difference: FetchedResultsDifference!
  var predicate: QueryPredicate = .constant(true)
  var options: StoreOptions = StoreOptions()
  var data: Data = Data()
  /// A mirrored app's hub and the mirror of its container (StrataMirroring).
  var hub: MemoryHub!
  var mirror: StoreMirror!

  // A backend's store, named `store` in the examples of its module
  var store: any PersistentStore
  var sqliteStore: SQLiteStore!
  var lmdbStore: LMDBStore!
  var postgresStore: PostgresStore!
  var memoryStore: MemoryStore!

  // Inside a store's implementation (StrataStoreKit's helpers for backend authors)
  var identifier: String = ""
  var purged: Int64 = 0
  var changes: ChangeSet!
  var storeChange: StoreChange!
  var snapshot: Snapshot!
  var source: (any EvaluationSource)!
  var movieEntity: EntityDescription!
  var directorEntity: EntityDescription!
  var change: ObjectChange!
  var conflicts: [StoreError.Conflict] = []
  var titles: [Value] = []
  var allMovies: [Snapshot] = []

  /// A scope on a memory store holding the model above.
  init() throws {
    model = try ObjectModel(
      Movie.self, Director.self, Watch.self, Studio.self, Venue.self, Location.self, PriceInfo.self, Potato.self,
      Tasting.self, Fireball.self, Person.self, Media.self, Series.self)
    firstReleaseModel = try ObjectModel(Movie.self)
    registry = StoreRegistry([MemoryStoreFactory()])
    container = PersistentContainer(
      name: "DocExamples", model: model,
      types: [
        Movie.self, Director.self, Watch.self, Studio.self, Venue.self, Location.self, PriceInfo.self, Potato.self,
        Tasting.self, Fireball.self, Person.self, Media.self, Series.self,
      ], registry: registry)
    container.storeDescriptions = [StoreDescription(type: .memory)]
    try container.loadPersistentStores()
    context = container.viewContext
    viewContext = container.viewContext
    background = container.newBackgroundContext()
    url = FileManager.default.temporaryDirectory.appending(path: "doc-examples-\(UUID().uuidString)")
    directory = url
    cutoff = Date(timeIntervalSinceReferenceDate: 0)
    store = try MemoryStore(model: model)
  }
}
