import Foundation
import Strata
import StrataStoreKit

/// Deterministic sample data: the same objects, IDs and dates on every run and every backend.
public enum SampleData {
  static func date(_ text: String) -> Date {
    let parts = text.split(separator: "-").compactMap { Int($0) }
    var components = DateComponents()
    components.year = parts[0]
    components.month = parts[1]
    components.day = parts[2]
    components.hour = 12
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
    return calendar.date(from: components) ?? Date(timeIntervalSince1970: 0)
  }

  static func uuid(_ n: Int) -> UUID {
    UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n)) ?? UUID()
  }

  struct FilmRow {
    var title: String
    var year: Int16
    var rating: Double
    var runtime: Int32
    var boxOffice: Int64
    var budget: Decimal?
    var released: Bool
    var releaseDate: String?
    var genre: String?
    var director: String?
    var studio: String?
    var actors: [String]
  }

  static let films: [FilmRow] = [
    FilmRow(
      title: "Heat", year: 1995, rating: 8.3, runtime: 170, boxOffice: 187_436_818, budget: 60_000_000, released: true,
      releaseDate: "1995-12-15", genre: "Crime", director: "Michael Mann", studio: "Warner",
      actors: ["Al Pacino", "Robert De Niro"]),
    FilmRow(
      title: "Collateral", year: 2004, rating: 7.5, runtime: 120, boxOffice: 220_939_529, budget: 65_000_000, released: true,
      releaseDate: "2004-08-06", genre: "Thriller", director: "Michael Mann", studio: "Warner", actors: []),
    FilmRow(
      title: "Amélie", year: 2001, rating: 8.3, runtime: 122, boxOffice: 174_000_000, budget: nil, released: true,
      releaseDate: "2001-04-25", genre: "Comedy", director: "Jean-Pierre Jeunet", studio: "UGC", actors: ["Audrey Tautou"]),
    FilmRow(
      title: "Delicatessen", year: 1991, rating: 7.6, runtime: 99, boxOffice: 1_800_000, budget: nil, released: true,
      releaseDate: "1991-04-17", genre: "comedy", director: "Jean-Pierre Jeunet", studio: "UGC", actors: []),
    FilmRow(
      title: "Parasite", year: 2019, rating: 8.5, runtime: 132, boxOffice: 258_000_000, budget: 11_400_000, released: true,
      releaseDate: "2019-05-30", genre: "Thriller", director: "Bong Joon-ho", studio: nil, actors: ["Song Kang-ho"]),
    FilmRow(
      title: "Memories of Murder", year: 2003, rating: 8.1, runtime: 131, boxOffice: 1_500_000, budget: nil, released: true,
      releaseDate: "2003-05-02", genre: "Crime", director: "Bong Joon-ho", studio: nil, actors: ["Song Kang-ho"]),
    FilmRow(
      title: "Untitled Project", year: 2027, rating: 0, runtime: 0, boxOffice: 0, budget: nil, released: false,
      releaseDate: nil, genre: nil, director: nil, studio: nil, actors: []),
    FilmRow(
      title: "File2", year: 2010, rating: 5.0, runtime: 90, boxOffice: 10, budget: nil, released: false,
      releaseDate: nil, genre: "Documentary", director: nil, studio: "Warner", actors: []),
    FilmRow(
      title: "file10", year: 2011, rating: 5.5, runtime: 91, boxOffice: 20, budget: nil, released: false,
      releaseDate: nil, genre: "Documentary", director: nil, studio: "Warner", actors: []),
    FilmRow(
      title: "Straße", year: 2015, rating: 6.0, runtime: 100, boxOffice: 30, budget: nil, released: true,
      releaseDate: "2015-01-01", genre: "Drama", director: nil, studio: nil, actors: ["Robert De Niro"]),
  ]

  static let directors: [(name: String, country: String?)] = [
    ("Michael Mann", "USA"), ("Jean-Pierre Jeunet", "France"), ("Bong Joon-ho", "Korea"), ("Nobody", nil),
  ]
  static let studios: [(name: String, founded: String?)] = [("Warner", "1923-04-04"), ("UGC", nil), ("Empty Studio", nil)]
  static let actors: [(name: String, imdbID: String?)] = [
    ("Al Pacino", "nm0000199"), ("Robert De Niro", "nm0000134"), ("Audrey Tautou", nil), ("Song Kang-ho", nil),
    ("Zoë Kravitz", "nm0005139"),
    // Actors without films, for Unicode: "ë" decomposed (e + U+0308) beside Kravitz's precomposed one,
    // Turkish dotted İ and dotless ı, Han, Hangul, Greek with tonos, an emoji ZWJ sequence with a skin tone.
    (zoeSaldana, "nm0757855"), ("İlker Kaleli", nil), ("Kıvanç Tatlıtuğ", nil), ("宋康昊", nil), ("배두나", nil),
    ("Μελίνα Μερκούρη", nil), ("👩🏽‍🚀 Astronaut", nil),
  ]
  /// "Zoë Saldaña" with its "ë" decomposed: "e" followed by U+0308 COMBINING DIAERESIS.
  public static let zoeSaldana = "Zoe\u{308} Saldaña"

  /// Inserts the sample objects into `context` and saves.
  public static func insert(into context: ObjectContext) throws {
    var directorsByName: [String: Director] = [:]
    for row in directors {
      let director = Director(context: context)
      director.name = row.name
      director.country = row.country
      directorsByName[row.name] = director
    }
    var studiosByName: [String: Studio] = [:]
    for row in studios {
      let studio = Studio(context: context)
      studio.name = row.name
      studio.founded = row.founded.map(date)
      studiosByName[row.name] = studio
    }
    var actorsByName: [String: Actor] = [:]
    for row in actors {
      let actor = Actor(context: context)
      actor.name = row.name
      actor.imdbID = row.imdbID
      actorsByName[row.name] = actor
    }
    for (i, row) in films.enumerated() {
      let film = Film(context: context)
      film.title = row.title
      film.year = row.year
      film.rating = row.rating
      film.score = Float(row.rating) / 2
      film.runtime = row.runtime
      film.boxOffice = row.boxOffice
      film.budget = row.budget
      film.released = row.released
      film.releaseDate = row.releaseDate.map(date)
      film.genre = row.genre
      film.uuid = uuid(i + 1)
      film.homepage = row.title == "Parasite" ? URL(string: "https://parasite.example/film") : nil
      film.poster = row.title == "Heat" ? Data([1, 2, 3, 255]) : nil
      film.director = row.director.flatMap { directorsByName[$0] }
      film.studio = row.studio.flatMap { studiosByName[$0] }
      film.actors = Set(row.actors.compactMap { actorsByName[$0] })
    }
    try context.save()
  }
}
