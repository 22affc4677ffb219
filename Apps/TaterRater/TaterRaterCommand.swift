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
    subcommands: [Import.self, List.self, Rate.self, Note.self, Show.self, Watch.self, Sync.self])

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

func openRater(_ options: StoreFlags, watching: Bool = false, readingOnly: Bool = false) throws -> PotatoRater {
  if options.startsFromPreview { return try PotatoRater.preview(registry: options.registry) }
  var description = try options.storeDescription(
    app: "tater-rater", fileName: "TaterRater.sqlite", entity: "Potato", forReadingOnly: readingOnly)
  StoreFlags.noteOpening(description)
  description.options.postsRemoteChangeNotifications = watching
  return PotatoRater(
    container: try PotatoRater.makeContainer(
      store: description, registry: options.registry, migrationProgress: terminalMigrationProgress()))
}

func crowd(_ potato: PotatoRecord) -> String { String(format: "%.1f", potato.crowdRating) }

func potatoTable(_ potatoes: [PotatoRecord]) -> [String] {
  textTable(
    headers: ["Variety", "Crowd", "Stars", "Notes"],
    rows: potatoes.map { [$0.variety, crowd($0), $0.stars, $0.notes?.replacingOccurrences(of: "\n", with: "; ") ?? ""] }
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
        let rater = try openRater(storeOptions, readingOnly: true)
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
