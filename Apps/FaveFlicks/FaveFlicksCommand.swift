import ArgumentParser
import FaveFlicks
import Foundation
import Strata
import StrataCLI
import StrataCore

@main
struct FaveFlicksCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "fave-flicks",
    abstract: "Keep a list of favourite movies in a Strata store.",
    discussion: exitStatusHelp,
    version: strataVersion,
    subcommands: [Add.self, List.self, Rate.self, Watched.self, Poster.self, Delete.self, Migrate.self])

  static func main() { mainReportingUsageErrors() }
}

struct JSONMovie: Encodable {
  var title: String
  var genre: String
  var releaseDate: String
  var updatedAt: String?
  var rating: Int
  var watches: Int
  var seasons: Int?

  init(_ movie: MovieRecord) {
    seasons = movie.seasons
    title = movie.title
    genre = movie.genre
    releaseDate = ReleaseDate.format(movie.releaseDate)
    updatedAt = movie.updatedAt.map { $0.formatted(.iso8601) }
    rating = movie.rating
    watches = movie.watchCount
  }
}

/// The day a date flag names; a value that is not one is a usage error naming the flag.
func usageDate(_ text: String, flag: String) throws -> Date {
  do {
    return try ReleaseDate.parse(text, field: "\(flag) date", key: flag)
  } catch let error as StoreError {
    throw UsageError(error.message)
  }
}

func openLibrary(_ options: StoreFlags, readingOnly: Bool = false) throws -> MovieLibrary {
  if options.startsFromPreview { return try MovieLibrary.preview(registry: options.registry) }
  let description = try options.storeDescription(
    app: "fave-flicks", fileName: "FaveFlicks.sqlite", entity: "Movie", forReadingOnly: readingOnly)
  StoreFlags.noteOpening(description)
  return MovieLibrary(
    container: try MovieLibrary.makeContainer(
      store: description, registry: options.registry, migrationProgress: terminalMigrationProgress()))
}

extension FaveFlicksCommand {
  struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add a movie.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: "The movie's title.") var title: String
    @Option(help: "The movie's genre, e.g. \"Action, Comedy\".") var genre: String
    @Option(help: ArgumentHelp("The release date.", valueName: "YYYY-MM-DD")) var releaseDate: String
    @Option(help: "Add a series of this many seasons rather than a film.") var seasons: Int?

    func run() throws {
      try runReportingErrors(tool: "fave-flicks") {
        let date = try usageDate(releaseDate, flag: "--release-date")
        let movie = try openLibrary(storeOptions).add(title: title, genre: genre, releaseDate: date, seasons: seasons)
        let kind = movie.seasons.map { ", a series of \($0) season\($0 == 1 ? "" : "s")" } ?? ""
        print("Added \(movie.title) (\(movie.genre), \(ReleaseDate.format(movie.releaseDate))\(kind))")
      }
    }
  }

  struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List movies by title.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: "Only movies whose genre contains this text (case and accents ignored).") var genreContains: String?
    @Option(help: "Only movies whose title contains this text (case and accents ignored: \"amelie\" finds \"Amélie\").")
    var search: String?
    @Flag(help: "Print a JSON array of {title, genre, releaseDate, updatedAt, rating, watches, seasons (series only)}.")
    var json = false

    func run() throws {
      try runReportingErrors(tool: "fave-flicks") {
        let movies = try openLibrary(storeOptions, readingOnly: true).list(genreContaining: genreContains, titleMatching: search)
        if json {
          print(try jsonString(movies.map(JSONMovie.init)))
        } else if movies.isEmpty {
          print("No movies.")
        } else {
          print(
            textTable(
              headers: ["Title", "Genre", "Released", "Rating", "Watched"],
              rows: movies.map {
                [
                  $0.title, $0.genre, ReleaseDate.format($0.releaseDate), String(repeating: "*", count: $0.rating),
                  String($0.watchCount),
                ]
              }))
        }
      }
    }
  }
}
