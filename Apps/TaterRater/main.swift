import ArgumentParser
import Foundation
import Strata
import StrataCLI
import TaterRater

@main
struct TaterRaterCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "tater-rater",
    abstract: "Rate potato varieties in a Strata store, and watch the ratings change.",
    discussion: exitStatusHelp,
    version: strataVersion,
    subcommands: [Import.self, List.self, Rate.self, Note.self, Show.self, Watch.self])

  static func main() { mainReportingUsageErrors() }
}

struct JSONPotato: Encodable {
  var potato: PotatoRecord

  enum CodingKeys: String, CodingKey { case variety, crowdRating, userRating, notes }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(potato.variety, forKey: .variety)
    try container.encode((Double(potato.crowdRating) * 10).rounded() / 10, forKey: .crowdRating)
    try container.encode(potato.userRating, forKey: .userRating)
    try container.encode(potato.notes, forKey: .notes)
  }
}

struct JSONSection: Encodable {
  var name: String
  var potatoes: [JSONPotato]

  init(_ section: PotatoSection) {
    name = section.name
    potatoes = section.potatoes.map(JSONPotato.init)
  }
}

func openRater(_ options: StoreFlags, watching: Bool = false) throws -> PotatoRater {
  if options.startsFromPreview { return try PotatoRater.preview(registry: options.registry) }
  var description = try options.storeDescription(app: "tater-rater", fileName: "TaterRater.sqlite")
  description.options.postsRemoteChangeNotifications = watching
  return PotatoRater(container: try PotatoRater.makeContainer(store: description, registry: options.registry))
}

func crowd(_ potato: PotatoRecord) -> String { String(format: "%.1f", potato.crowdRating) }

func potatoTable(_ potatoes: [PotatoRecord]) -> [String] {
  textTable(
    headers: ["Variety", "Crowd", "Stars", "Notes"],
    rows: potatoes.map { [$0.variety, crowd($0), $0.stars, $0.notes ?? ""] }
  ).split(separator: "\n").map { String($0.reversed().drop { $0 == " " }.reversed()) }
}

func printSections(_ sections: [PotatoSection]) {
  guard !sections.isEmpty else { return print("No potatoes.") }
  let lines = potatoTable(sections.flatMap(\.potatoes))
  var row = 2
  print(lines[0..<2].joined(separator: "\n"))
  for section in sections {
    print("\n\(section.name)")
    for _ in section.potatoes {
      print(lines[row])
      row += 1
    }
  }
}

extension TaterRaterCommand {
  struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Import the potato varieties when the store has none (running it again adds nothing).")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: ArgumentHelp("Wait this long first, as a slow network would (0 to 3600).", valueName: "seconds"))
    var delay: Double = 0
    @Option(help: ArgumentHelp("Make the random crowd ratings repeat: the same seed gives the same ratings.", valueName: "n"))
    var seed: UInt64?

    func validate() throws {
      guard (0...3600).contains(delay) else { throw ValidationError("--delay must be from 0 to 3600 seconds") }
    }

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions)
        let progress = terminalProgress()
        let outcome = try waitFor { [delay, seed] in
          try await rater.importPotatoes(delay: .milliseconds(Int((delay * 1000).rounded())), seed: seed, progress: progress)
        }
        switch outcome {
        case .imported(let count):
          print("Imported \(count) potato\(count == 1 ? "" : "es")")
        case .alreadyImported(let count):
          print("The store already has \(count) potato\(count == 1 ? "" : "es"); nothing imported")
        }
      }
    }
  }

  struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the potatoes by variety.")

    @OptionGroup var storeOptions: StoreFlags
    @Flag(help: "Group the potatoes in sections by first letter (accents ignored: Épicure is under E).")
    var sections = false
    @Flag(help: "Print a JSON array of {variety, crowdRating, userRating, notes}; with --sections, of {name, potatoes}.")
    var json = false

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions)
        if sections {
          let sections = try rater.sections()
          if json {
            print(try jsonString(sections.map(JSONSection.init)))
          } else {
            printSections(sections)
          }
        } else {
          let potatoes = try rater.potatoes()
          if json {
            print(try jsonString(potatoes.map(JSONPotato.init)))
          } else if potatoes.isEmpty {
            print("No potatoes.")
          } else {
            print(potatoTable(potatoes).joined(separator: "\n"))
          }
        }
      }
    }
  }
}

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
    static let configuration = CommandConfiguration(abstract: "Write notes on a potato (empty text clears them).")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The potato's variety.") var variety: String
    @Argument(help: "The notes; \"\" clears them.") var text: String

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let potato = try openRater(storeOptions).note(variety, text: text)
        print(potato.notes.map { "Notes on \(potato.variety): \($0)" } ?? "Cleared the notes on \(potato.variety)")
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
        let potato = try openRater(storeOptions).potato(variety)
        if json {
          print(try jsonString(JSONPotato(potato: potato)))
        } else {
          print("Variety       \(potato.variety)")
          print("Crowd rating  \(crowd(potato))")
          print("Your rating   \(potato.userRating == 0 ? "not rated" : "\(potato.userRating)/5 \(potato.stars)")")
          print("Notes         \(potato.notes ?? "none")")
        }
      }
    }
  }

  struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List the potatoes, then print each change as it happens, also those other processes make.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(
      name: .customLong("for"),
      help: ArgumentHelp("Stop after this many seconds (default: at Ctrl-C).", valueName: "seconds"))
    var duration: Double?

    func validate() throws {
      if let duration, !(duration > 0 && duration <= 31_536_000) {
        throw ValidationError("--for must be more than 0 and at most 31536000 seconds")
      }
    }

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions, watching: true)
        defer { rater.container.close() }
        let watcher = PotatoWatcher(container: rater.container, report: printFlushed)
        let stop = DispatchSemaphore(value: 0)
        let signals = [SIGINT, SIGTERM].map { number in
          signal(number, SIG_IGN)
          let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
          source.setEventHandler { stop.signal() }
          source.resume()
          return source
        }
        printSections(try watcher.start())
        printFlushed("Watching for changes…")
        if let duration {
          _ = stop.wait(timeout: .now() + duration)
        } else {
          stop.wait()
        }
        watcher.stop()
        for source in signals { source.cancel() }
      }
    }
  }
}
