import ArgumentParser
import BubbleTeaFinder
import Foundation
import Strata
import StrataCLI

@main
struct BubbleTeaFinderCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "bubble-tea-finder",
    abstract: "Find bubble tea in New York: Foursquare venues in a Strata store.",
    discussion: exitStatusHelp,
    version: strataVersion,
    subcommands: [Seed.self, List.self, Stats.self, FavoriteAll.self, Delete.self])

  static func main() { mainReportingUsageErrors() }
}

extension PriceCategory: ExpressibleByArgument {}
extension VenueSort: ExpressibleByArgument {}

func openFinder(_ options: StoreFlags, readingOnly: Bool = false) throws -> VenueFinder {
  if options.startsFromPreview { return try VenueFinder.preview(registry: options.registry) }
  let description = try options.storeDescription(
    app: "bubble-tea-finder", fileName: "BubbleTeaFinder.sqlite", entity: "Venue", forReadingOnly: readingOnly)
  StoreFlags.noteOpening(description)
  return VenueFinder(container: try VenueFinder.makeContainer(store: description, registry: options.registry))
}

extension BubbleTeaFinderCommand {
  struct Seed: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Import the venues when the store has none (running it again adds nothing).")

    @OptionGroup var storeOptions: StoreFlags
    @Option(
      help: ArgumentHelp(
        "A Foursquare venues/search response to import instead of the bundled New York venues.", valueName: "path"))
    var file: String?

    func run() throws {
      try runReportingErrors(tool: "bubble-tea-finder") {
        let url = file.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        switch try openFinder(storeOptions).seed(from: url) {
        case .imported(let count, let file):
          print("Imported \(count) venue\(count == 1 ? "" : "s") from \(file)")
        case .alreadySeeded(let count):
          print("The store already has \(count) venue\(count == 1 ? "" : "s"); nothing imported")
        }
      }
    }
  }

  struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List venues, filtered and sorted.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: "Only venues in this price category.") var price: PriceCategory?
    @Flag(help: "Only venues with special offers.") var deals = false
    @Flag(help: "Only venues less than \(VenueFilter.walkingDistance) m away.") var walking = false
    @Flag(help: "Only venues with tips.") var tips = false
    @Option(help: "Only venues with a Foursquare category of this name (any case, accents or not).") var category: String?
    @Option(help: "The order: name, name-desc, distance or price.") var sort: VenueSort = .name
    @Flag(help: "Fetch with an asynchronous fetch request, read in chunks on a background context.")
    var async = false
    @Flag(help: "Print a JSON array of venues (name, priceCategory, categories, specialCount, distance, favorite, …).")
    var json = false

    func run() throws {
      try runReportingErrors(tool: "bubble-tea-finder") {
        let filter = VenueFilter(price: price, deals: deals, walking: walking, tips: tips, category: category)
        let finder = try openFinder(storeOptions, readingOnly: true)
        let venues =
          async
          ? try waitFor { [sort] in try await finder.venuesAsynchronously(filter: filter, sort: sort) }
          : try finder.venues(filter: filter, sort: sort)
        if json {
          print(try jsonString(venues))
        } else if venues.isEmpty {
          print("No venues.")
        } else {
          print(
            textTable(
              headers: ["Name", "Price", "Deals", "Distance", "Tips", "Address"],
              rows: venues.map { venue in
                [
                  venue.name, venue.priceCategory ?? "", "\(venue.specialCount)",
                  venue.distance.map { "\($0) m" } ?? "", venue.tipCount.map(String.init) ?? "",
                  [venue.address, venue.city].compactMap { $0 }.joined(separator: ", "),
                ]
              }))
        }
      }
    }
  }
}

extension BubbleTeaFinderCommand {
  struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Count the venues in each price category and the deals on offer.")

    @OptionGroup var storeOptions: StoreFlags
    @Flag(help: "Print {\"venues\", \"cheap\", \"moderate\", \"expensive\", \"deals\"} as JSON.") var json = false

    func run() throws {
      try runReportingErrors(tool: "bubble-tea-finder") {
        let stats = try openFinder(storeOptions, readingOnly: true).stats()
        if json {
          print(try jsonString(stats))
        } else {
          print(
            textTable(
              headers: ["Venues", "$", "$$", "$$$", "Deals"],
              rows: [[stats.venues, stats.cheap, stats.moderate, stats.expensive, stats.deals].map(String.init)]))
        }
      }
    }
  }

  struct FavoriteAll: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "favorite-all", abstract: "Mark every venue a favorite with one batch update.")

    @OptionGroup var storeOptions: StoreFlags

    func run() throws {
      try runReportingErrors(tool: "bubble-tea-finder") {
        print("Records updated \(try openFinder(storeOptions).favoriteAll())")
      }
    }
  }

  struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete the venues matching a predicate with one batch delete.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(
      name: .customLong("where"),
      help: ArgumentHelp("The venues to delete, e.g. \"stats.tipCount == 0\".", valueName: "predicate"))
    var predicate: String

    func run() throws {
      try runReportingErrors(tool: "bubble-tea-finder") {
        print("Records deleted \(try openFinder(storeOptions).deleteVenues(where: predicate))")
      }
    }
  }
}
