import ArgumentParser
import FaveFlicks
import Foundation
import Strata
import StrataCLI
import StrataCore

extension FaveFlicksCommand {
  struct Rate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rate every movie with this exact title, from 0 to 5 stars.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: "The title of the movie to rate.") var title: String
    @Option(help: "Stars, from 0 to 5.") var stars: Int

    func validate() throws {
      guard (0...5).contains(stars) else { throw ValidationError("--stars must be from 0 to 5, not \(stars)") }
    }

    func run() throws {
      try runReportingErrors(tool: "fave-flicks") {
        let count = try openLibrary(storeOptions).rate(title: title, stars: stars)
        print("Rated \(count) movie\(count == 1 ? "" : "s") titled \(title): \(stars) star\(stars == 1 ? "" : "s")")
      }
    }
  }

  struct Watched: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Record that you watched a movie.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: "The title of the movie you watched.") var title: String
    @Option(help: ArgumentHelp("When you watched it (default: today).", valueName: "YYYY-MM-DD")) var on: String?

    func run() throws {
      try runReportingErrors(tool: "fave-flicks") {
        let date = try on.map { try usageDate($0, flag: "--on") } ?? Date.now
        let times = try openLibrary(storeOptions).watched(title: title, on: date)
        print("Watched \(title) on \(ReleaseDate.format(date)) (\(times) time\(times == 1 ? "" : "s"))")
      }
    }
  }

  struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Migrate the store to this version's model, or show what that would change.",
      discussion: "Every command migrates a store written by an earlier version when it opens it; this one does only that.")

    @OptionGroup var storeOptions: StoreFlags
    @Flag(help: "Print what the migration would change, and change nothing.") var dryRun = false

    func run() throws {
      try runReportingErrors(tool: "fave-flicks") {
        guard !storeOptions.startsFromPreview else {
          print("A \(storeOptions.store) store keeps nothing between runs: there is nothing to migrate.")
          return
        }
        let description = try storeOptions.storeDescription(app: "fave-flicks", fileName: "FaveFlicks.sqlite", entity: "Movie")
        let location = StoreFlags.displayLocation(of: description)
        guard let preview = try MovieLibrary.pendingMigration(store: description, registry: storeOptions.registry) else {
          print("\(location) has this version's model: nothing to migrate.")
          return
        }
        print(dryRun ? "Migrating \(location) would change:" : "Migrating \(location):")
        for line in preview.lines { print("  \(line)") }
        guard !dryRun else { return }
        _ = try openLibrary(storeOptions)
        print("Done.")
      }
    }
  }

  struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete every movie with this exact title.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: "The title of the movie to delete.") var title: String

    func run() throws {
      try runReportingErrors(tool: "fave-flicks") {
        let count = try openLibrary(storeOptions).delete(title: title)
        print("Deleted \(count) movie\(count == 1 ? "" : "s") titled \(title)")
      }
    }
  }
}
