import ArgumentParser
import FireballWatch
import Foundation
import Strata
import StrataCLI

@main
struct FireballWatchCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "fireball-watch",
    abstract: "Keep NASA/JPL fireball reports in a Strata store, and group them.",
    subcommands: [Import.self, List.self, Delete.self, Group.self, Groups.self])

  static func main() { mainReportingUsageErrors() }
}

struct FireballDateArgument: ExpressibleByArgument {
  var date: Date

  init?(argument: String) {
    guard let date = FireballDate.parse(argument) else { return nil }
    self.date = date
  }
}

struct JSONFireball: Encodable {
  var fireball: FireballRecord

  enum CodingKeys: String, CodingKey {
    case dateTimeStamp, radiatedEnergy, impactEnergy, latitude, longitude, altitude, velocity
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(FireballDate.iso8601(fireball.dateTimeStamp), forKey: .dateTimeStamp)
    try container.encode(fireball.radiatedEnergy, forKey: .radiatedEnergy)
    try container.encode(fireball.impactEnergy, forKey: .impactEnergy)
    try container.encode(fireball.latitude, forKey: .latitude)
    try container.encode(fireball.longitude, forKey: .longitude)
    try container.encode(fireball.altitude, forKey: .altitude)
    try container.encode(fireball.velocity, forKey: .velocity)
  }
}

func openWatch(_ options: StoreFlags) throws -> FireballWatch {
  StoreFlags.registerBackends()
  if options.isMemory { return try FireballWatch.preview() }
  let description = try options.storeDescription(app: "fireball-watch", fileName: "FireballWatch.sqlite")
  return FireballWatch(container: try FireballWatch.makeContainer(store: description))
}

func number(_ value: Double?) -> String { value.map { String(format: "%g", $0) } ?? "-" }

func coordinate(_ value: Double?, _ positive: String, _ negative: String) -> String {
  value.map { "\(number(abs($0)))\($0 < 0 ? negative : positive)" } ?? "-"
}

func fireballTable(_ fireballs: [FireballRecord]) -> String {
  textTable(
    headers: ["Date (UTC)", "Energy (10^10 J)", "Impact (kt)", "Lat", "Lon", "Alt (km)", "Vel (km/s)"],
    rows: fireballs.map {
      [
        FireballDate.string(from: $0.dateTimeStamp), number($0.radiatedEnergy), number($0.impactEnergy),
        coordinate($0.latitude, "N", "S"), coordinate($0.longitude, "E", "W"), number($0.altitude), number($0.velocity),
      ]
    })
}

func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

extension FireballWatchCommand {
  struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Import JPL fireball data (default: the bundled snapshot); fireballs already stored are updated, not repeated.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: ArgumentHelp("A JPL Fireball API response saved as JSON.", valueName: "path")) var file: String?
    @Option(help: ArgumentHelp("Fetch a JPL Fireball API response, e.g. https://ssd-api.jpl.nasa.gov/fireball.api", valueName: "url"))
    var url: String?
    @Flag(help: "Print {inserted, updated, unchanged} as JSON.") var json = false

    func validate() throws {
      if file != nil, url != nil { throw ValidationError("give --file or --url, not both") }
      if let url {
        guard let parsed = URL(string: url), ["https", "http"].contains(parsed.scheme?.lowercased()), parsed.host != nil else {
          throw ValidationError("--url '\(url)' is not an https address")
        }
      }
    }

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let watch = try openWatch(storeOptions)
        let source = file.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) } ?? url.flatMap(URL.init(string:))
        let progress = terminalProgress()
        let summary = try waitFor { try await watch.importFireballs(from: source, progress: progress) }
        if json {
          print(try jsonString(summary))
        } else {
          let total = summary.inserted + summary.updated + summary.unchanged
          print(
            "Imported \(plural(total, "fireball")): \(summary.inserted) inserted, \(summary.updated) updated, \(summary.unchanged) unchanged")
        }
      }
    }
  }

  struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the fireballs, newest first unless sorted otherwise.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: ArgumentHelp("Show at most this many.", valueName: "n")) var limit: Int?
    @Option(help: ArgumentHelp("Only fireballs with at least this impact energy, in kilotons.", valueName: "kt"))
    var minImpact: Double?
    @Option(help: "date (newest first), energy or impact (largest first).") var sort: FireballSort = .date
    @Flag(
      help:
        "Print a JSON array of {dateTimeStamp (ISO 8601, UTC), radiatedEnergy, impactEnergy, latitude, longitude, altitude, velocity}; unknown values are null."
    )
    var json = false

    func validate() throws {
      if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
      if let minImpact, !minImpact.isFinite { throw ValidationError("--min-impact must be a number") }
    }

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let fireballs = try openWatch(storeOptions).fireballs(
          FireballQuery(sort: sort, minimumImpactEnergy: minImpact, limit: limit))
        if json {
          print(try jsonString(fireballs.map(JSONFireball.init)))
        } else if fireballs.isEmpty {
          print("No fireballs.")
        } else {
          print(fireballTable(fireballs))
        }
      }
    }
  }

  struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete one fireball; the groups holding it count one fewer.")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: ArgumentHelp("When it was seen, as yyyy-MM-dd HH:mm:ss (UTC).", valueName: "date"))
    var date: FireballDateArgument

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let fireball = try openWatch(storeOptions).delete(at: date.date)
        print("Deleted the fireball of \(FireballDate.string(from: fireball.dateTimeStamp))")
      }
    }
  }

  struct Groups: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the groups with how many fireballs each holds.")

    @OptionGroup var storeOptions: StoreFlags
    @Flag(help: "Print a JSON array of {name, fireballCount}.") var json = false

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let groups = try openWatch(storeOptions).groups()
        if json {
          print(try jsonString(groups))
        } else if groups.isEmpty {
          print("No groups.")
        } else {
          print(textTable(headers: ["Group", "Fireballs"], rows: groups.map { [$0.name, String($0.fireballCount)] }))
        }
      }
    }
  }
}

extension FireballSort: ExpressibleByArgument {}


extension FireballWatchCommand {
  struct Group: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Make groups of fireballs and put fireballs in them or take them out.",
      subcommands: [Create.self, Add.self, Remove.self])
  }
}

extension FireballWatchCommand.Group {
  struct Create: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Make an empty group.")

    @OptionGroup var storeOptions: StoreFlags
    @Argument(help: "The group's name, unique among groups.") var name: String

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let group = try openWatch(storeOptions).createGroup(name)
        print("Created group '\(group.name)'")
      }
    }
  }

  struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Put fireballs in a group.")

    @OptionGroup var storeOptions: StoreFlags
    @OptionGroup var members: GroupMembers

    func run() throws {
      try members.edit(storeOptions) { watch, dates, name in try watch.add(dates, toGroup: name) }
    }
  }

  struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Take fireballs out of a group.")

    @OptionGroup var storeOptions: StoreFlags
    @OptionGroup var members: GroupMembers

    func run() throws {
      try members.edit(storeOptions) { watch, dates, name in try watch.remove(dates, fromGroup: name) }
    }
  }
}

struct GroupMembers: ParsableArguments {
  @Argument(help: "The group's name.") var name: String
  @Argument(help: ArgumentHelp("When each fireball was seen, as yyyy-MM-dd HH:mm:ss (UTC).", valueName: "date"))
  var dates: [FireballDateArgument]

  func validate() throws {
    if dates.isEmpty { throw ValidationError("give at least one <date>") }
  }

  func edit(
    _ storeOptions: StoreFlags, _ change: (FireballWatch, [Date], String) throws -> FireballGroupRecord
  ) throws {
    try runReportingErrors(tool: "fireball-watch") {
      let group = try change(try openWatch(storeOptions), dates.map(\.date), name)
      print("Group '\(group.name)' holds \(plural(group.fireballCount, "fireball"))")
    }
  }
}
