import ArgumentParser
import FireballWatch
import Foundation
import Strata
import StrataCLI

extension FireballWatchCommand {
  struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Import JPL fireball data (default: the bundled snapshot); fireballs already stored are updated, not repeated.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: ArgumentHelp("A JPL Fireball API response saved as JSON.", valueName: "path")) var file: String?
    @Option(
      help: ArgumentHelp("Fetch a JPL Fireball API response, e.g. https://ssd-api.jpl.nasa.gov/fireball.api", valueName: "url"))
    var url: String?
    @Flag(help: "Print {inserted, updated, unchanged} as JSON.") var json = false

    func validate() throws {
      if file != nil, url != nil { throw ValidationError("give --file or --url, not both") }
      if let url {
        // Plain http only for this machine (a local mirror of the API, a test server): never across a network.
        let loopback = ["localhost", "127.0.0.1", "::1", "[::1]"]
        guard let parsed = URL(string: url), let host = parsed.host,
          parsed.scheme?.lowercased() == "https" || (parsed.scheme?.lowercased() == "http" && loopback.contains(host))
        else {
          throw ValidationError("--url '\(url)' is not an https address (plain http only for localhost)")
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
            "Imported \(plural(total, "fireball")): \(summary.inserted) inserted, \(summary.updated) updated, \(summary.unchanged) unchanged"
          )
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
        let fireballs = try openWatch(storeOptions, readingOnly: true).fireballs(
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
    @Argument(help: ArgumentHelp("When it was seen, as yyyy-MM-dd HH:mm:ss or ISO 8601 (UTC).", valueName: "date"))
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
        let groups = try openWatch(storeOptions, readingOnly: true).groups()
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
