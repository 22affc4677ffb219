import Foundation
import Strata
import StrataConformance
import StrataMemory
import Testing

final class PredMovie: ManagedObject {
  @Attribute var title: String
  @Attribute var year: Int
  @Attribute var genre: String
  @Attribute var rating: Double
  @Attribute var watched: Bool
  @Attribute var tagline: String?
  @Relationship(inverse: "movies") var director: PredDirector?

  /// Not a model property: a `#Predicate` reading it cannot be translated.
  var scratch = 0
}

final class PredDirector: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "director") var movies: Set<PredMovie>
}

/// A captured constant, as `#Predicate` closures often use.
let predicateCutoff = 1990

/// A `#Predicate` and the format string that must give the same tree and the same objects.
struct PredicateCase: Sendable, CustomStringConvertible {
  let predicate: Foundation.Predicate<PredMovie>
  let format: String
  var description: String { format }
}

@Suite("Foundation #Predicate")
struct FoundationPredicateTests {
  static let cases: [PredicateCase] = [
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.title == "Heat" && $0.year > 1990 },
      format: "title == 'Heat' AND year > 1990"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.title != "Heat" }, format: "title != 'Heat'"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.year < 1990 }, format: "year < 1990"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.year <= 1995 || $0.rating >= 8.5 },
      format: "year <= 1995 OR rating >= 8.5"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.tagline != nil && $0.year >= 2000 && $0.rating > 7.0 },
      format: "tagline != nil AND year >= 2000 AND rating > 7.0"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.watched == false && $0.tagline == nil },
      format: "watched == NO AND tagline == nil"),
    PredicateCase(predicate: #Predicate<PredMovie> { !($0.year > 2000) }, format: "NOT (year > 2000)"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.director?.name == "Michael Mann" },
      format: "director.name == 'Michael Mann'"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.director == nil }, format: "director == nil"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.title.contains("ea") }, format: "title CONTAINS 'ea'"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.title.starts(with: "The") }, format: "title BEGINSWITH 'The'"),
    PredicateCase(
      predicate: #Predicate<PredMovie> {
        $0.genre.localizedStandardContains("DRAMA") || $0.director?.name == "Michael Mann"
      },
      format: "genre CONTAINS[cd] 'DRAMA' OR director.name == 'Michael Mann'"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.year + 10 > 2000 }, format: "year + 10 > 2000"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.year - 1 == 1994 }, format: "year - 1 == 1994"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.rating * 2.0 >= 17.0 }, format: "rating * 2.0 >= 17.0"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { [1995, 2004].contains($0.year) }, format: "year IN {1995, 2004}"),
    PredicateCase(predicate: #Predicate<PredMovie> { $0.watched }, format: "watched == YES"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.year < 1990 || $0.year > 2005 || $0.watched },
      format: "year < 1990 OR year > 2005 OR watched == YES"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { ($0.year < 1990 || $0.watched) && $0.rating > 7.5 },
      format: "(year < 1990 OR watched == YES) AND rating > 7.5"),
    PredicateCase(
      predicate: #Predicate<PredMovie> { $0.year > predicateCutoff },
      format: "year > 1990"),
  ]

  func populatedContainer() throws -> PersistentContainer {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let model = try ObjectModel(PredMovie.self, PredDirector.self)
    let container = PersistentContainer(
      name: "Predicates", model: model, types: [PredMovie.self, PredDirector.self], registry: registry)
    container.storeDescriptions = [StoreDescription(type: .memory)]
    try container.loadPersistentStores()
    let context = container.viewContext
    let mann = PredDirector(context: context)
    mann.name = "Michael Mann"
    let scott = PredDirector(context: context)
    scott.name = "Ridley Scott"
    let rows: [(String, Int, String, Double, Bool, String?, PredDirector?)] = [
      ("Heat", 1995, "Crime Drama", 8.3, true, "A Los Angeles crime saga", mann),
      ("Thief", 1981, "Crime", 7.4, false, nil, mann),
      ("Collateral", 2004, "Thriller", 7.5, true, nil, mann),
      ("Alien", 1979, "Horror", 8.5, true, "In space no one can hear you scream", scott),
      ("The Martian", 2015, "Sci-Fi Drama", 8.0, false, "Bring him home", scott),
      ("The Searchers", 1956, "Western", 7.8, false, nil, nil),
      ("Amélie", 2001, "Romantic drama", 8.3, true, nil, nil),
    ]
    for (title, year, genre, rating, watched, tagline, director) in rows {
      let movie = PredMovie(context: context)
      movie.title = title
      movie.year = year
      movie.genre = genre
      movie.rating = rating
      movie.watched = watched
      movie.tagline = tagline
      movie.director = director
    }
    try context.save()
    return container
  }

  @Test(arguments: cases)
  func translatesToTheSameTreeAsTheFormat(_ testCase: PredicateCase) throws {
    let translated = try QueryPredicate(testCase.predicate)
    let parsed = try QueryPredicate(format: testCase.format)
    #expect(translated == parsed, "\(translated) vs \(parsed)")
  }

  @Test func fetchesTheSameObjectsAsTheFormat() throws {
    let container = try populatedContainer()
    let context = container.viewContext
    let sort = [QuerySort(\PredMovie.title)]
    var nonEmpty = 0
    for testCase in Self.cases {
      let viaPredicate = try context.fetch(FetchRequest<PredMovie>(testCase.predicate, sortDescriptors: sort)).map(\.title)
      let viaFormat = try context.fetch(FetchRequest<PredMovie>(format: testCase.format, sortDescriptors: sort)).map(\.title)
      #expect(viaPredicate == viaFormat, "\(testCase.format)")
      // The Foundation predicate evaluated in Swift agrees with the store.
      let all = try context.fetch(FetchRequest<PredMovie>(sortDescriptors: sort))
      let inSwift = try all.filter { try testCase.predicate.evaluate($0) }.map(\.title)
      #expect(viaPredicate == inSwift, "\(testCase.format)")
      if !viaPredicate.isEmpty && viaPredicate.count < all.count { nonEmpty += 1 }
    }
    #expect(nonEmpty >= 12)
  }

  @Test func theExampleFromTheDocumentationFetches() throws {
    let container = try populatedContainer()
    let request = try FetchRequest<PredMovie>(
      #Predicate<PredMovie> { $0.genre.localizedStandardContains("drama") || $0.director?.name == "Michael Mann" },
      sortDescriptors: [QuerySort(\PredMovie.title)])
    let titles = try container.viewContext.fetch(request).map(\.title)
    #expect(titles == ["Amélie", "Collateral", "Heat", "The Martian", "Thief"])
  }

  @Test func forcedUnwrapReadsLikeOptionalChaining() throws {
    let translated = try QueryPredicate(#Predicate<PredMovie> { $0.director!.name == "Ridley Scott" })
    #expect(translated == (try QueryPredicate(format: "director.name == 'Ridley Scott'")))
  }

  static let unsupported: [(Foundation.Predicate<PredMovie>, String)] = [
    (#Predicate<PredMovie> { ($0.tagline ?? "none") == "none" }, "PredicateExpressions.NilCoalesce"),
    (#Predicate<PredMovie> { ($0.year > 2000 ? $0.rating : 0.0) > 5.0 }, "PredicateExpressions.Conditional"),
    (#Predicate<PredMovie> { $0.year % 2 == 0 }, "PredicateExpressions.IntRemainder"),
    (#Predicate<PredMovie> { $0.title.count > 3 }, "PredicateExpressions.KeyPath"),
    (#Predicate<PredMovie> { $0.scratch == 1 }, "not an @Attribute or @Relationship property"),
    (
      #Predicate<PredMovie> { $0.director?.movies.contains { $0.year > 2000 } == true },
      "PredicateExpressions.SequenceContainsWhere"
    ),
  ]

  @Test func unsupportedConstructsAreNamed() {
    for (predicate, construct) in Self.unsupported {
      do {
        _ = try QueryPredicate(predicate)
        Issue.record("\(construct) translated")
      } catch let error as StoreError {
        #expect(error.code == .unsupported)
        #expect(error.message.contains(construct), "\(error.message)")
        #expect(error.message.contains("use a format string or Where<T>"))
      } catch {
        Issue.record("unexpected \(error)")
      }
    }
  }

  @Test func unsupportedConstructsFailTheRequestNotTheProcess() {
    expectStoreError(.unsupported) {
      try FetchRequest<PredMovie>(#Predicate<PredMovie> { ($0.tagline ?? "") == "" })
    }
  }
}
