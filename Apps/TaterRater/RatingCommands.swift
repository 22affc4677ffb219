import ArgumentParser
import Foundation
import Strata
import StrataCLI
import TaterRater

extension TaterRaterCommand {
  struct Rate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Give a potato your own rating, 0 to 5 stars.")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The potato's variety (case and accents ignored when nothing matches exactly).") var variety: String
    @Argument(help: "Your rating: 0 (none) to 5 stars.") var stars: Int

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let potato = try openRater(storeOptions).rate(variety, stars: stars)
        print("Rated \(potato.variety) \(potato.userRating)/5 \(potato.stars)".trimmingCharacters(in: .whitespaces))
      }
    }
  }

  struct Note: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Add tasting notes to a potato, one per line (empty text clears them).")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The potato's variety.") var variety: String
    @Argument(help: "The notes, one per line; \"\" clears every note.") var text: String

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let potato = try openRater(storeOptions).note(variety, text: text)
        print(
          potato.notes.map { "Notes on \(potato.variety): \($0.replacingOccurrences(of: "\n", with: "; "))" }
            ?? "Cleared the notes on \(potato.variety)")
      }
    }
  }

  struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one potato.")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The potato's variety.") var variety: String
    @Flag(help: "Print {variety, crowdRating, userRating, notes} as JSON.") var json = false

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let potato = try openRater(storeOptions, readingOnly: true).potato(variety)
        if json {
          print(try jsonString(JSONPotato(potato: potato)))
        } else {
          print("Variety       \(potato.variety)")
          print("Crowd rating  \(crowd(potato))")
          print("Your rating   \(potato.userRating == 0 ? "not rated" : "\(potato.userRating)/5 \(potato.stars)")")
          print("Notes         \((potato.notes ?? "none").replacingOccurrences(of: "\n", with: "\n              "))")
        }
      }
    }
  }

  struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List the potatoes, then print each change as it happens, also those other processes make.")

    @OptionGroup var storeOptions: StoreFlags
    @OptionGroup var duration: WatchDuration

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions, watching: true)
        defer { rater.container.close() }
        let watcher = PotatoWatcher(container: rater.container, report: printFlushed)
        printSections(try watcher.start())
        printFlushed("Watching for changes…")
        let seconds = duration.seconds
        try waitFor { try await stopSignal(after: seconds) }
        watcher.stop()
      }
    }
  }
}
