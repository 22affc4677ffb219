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
    discussion: exitStatusHelp,
    version: strataVersion,
    subcommands: [Import.self, List.self, Delete.self, Group.self, Groups.self, History.self, Watch.self])

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
  if options.startsFromPreview { return try FireballWatch.preview(registry: options.registry) }
  let description = try options.storeDescription(app: "fireball-watch", fileName: "FireballWatch.sqlite")
  return FireballWatch(container: try FireballWatch.makeContainer(store: description, registry: options.registry))
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
    @Option(
      help: ArgumentHelp("Fetch a JPL Fireball API response, e.g. https://ssd-api.jpl.nasa.gov/fireball.api", valueName: "url"))
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

struct HistoryCutoffArgument: ExpressibleByArgument {
  var cutoff: HistoryCutoff

  init?(argument: String) {
    if let date = FireballDate.parse(argument) {
      cutoff = .date(date)
    } else if let token = HistoryToken(string: argument) {
      cutoff = .token(token)
    } else {
      return nil
    }
  }
}

struct HistoryTokenArgument: ExpressibleByArgument {
  var token: HistoryToken

  init?(argument: String) {
    guard let token = HistoryToken(string: argument) else { return nil }
    self.token = token
  }
}

extension FireballWatchCommand {
  struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Show the store's history of changes, or prune it.",
      subcommands: [Show.self, Prune.self], defaultSubcommand: Show.self)
  }

  struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "Print the changes other processes make, as they make them (edits by FireballWatch itself are skipped); stops on Ctrl-C.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(name: .customLong("for"), help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?
    @Flag(
      help:
        "Print one JSON object per change: {change, entity, dateTimeStamp, impactEnergy} or {change, entity, name, fireballCount}."
    )
    var json = false

    func validate() throws {
      if let duration, !(duration > 0 && duration.isFinite) {
        throw ValidationError("--for must be a positive number of seconds")
      }
    }

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let watch = try openWatch(storeOptions)
        let tokenFile = watch.container.storeURL.map {
          $0.deletingLastPathComponent().appending(path: $0.lastPathComponent + ".watch-token")
        }
        let watcher = try FireballHistoryWatcher(watch: watch, tokenFile: tokenFile)
        let report = ChangeReport(json: json)
        let changes = watch.container.persistentStoreRemoteChanges()
        report.warn(watcher.warnings)
        try report.print(watcher.catchUp(), warnings: watcher.warnings)
        if !json { printFlushed("Watching for changes… (Ctrl-C stops)") }
        let duration = self.duration
        try waitFor {
          try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
              for await _ in changes { try report.print(watcher.catchUp(), warnings: watcher.warnings) }
            }
            group.addTask { try await stopSignal(after: duration) }
            try await group.next()
            group.cancelAll()
          }
        }
      }
    }
  }
}

/// Returns after `duration` seconds, or at Ctrl-C (SIGINT) or SIGTERM; never without either.
func stopSignal(after duration: Double?) async throws {
  let stop = AsyncStream<Void> { continuation in
    let sources = SignalSources()
    for number in [SIGINT, SIGTERM] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { continuation.yield() }
      source.resume()
      sources.held.append(source)
    }
    continuation.onTermination = { _ in sources.cancel() }
    if let duration {
      DispatchQueue.global().asyncAfter(deadline: .now() + duration) { continuation.yield() }
    }
  }
  for await _ in stop { return }
}

/// The signal sources of ``stopSignal(after:)``, kept alive until its stream ends.
final class SignalSources: @unchecked Sendable {
  var held: [any DispatchSourceSignal] = []

  func cancel() {
    for source in held { source.cancel() }
  }
}

/// Prints what ``FireballHistoryWatcher`` reports, a line per change, and each warning once.
final class ChangeReport: @unchecked Sendable {
  let json: Bool
  private var warned = 0

  init(json: Bool) {
    self.json = json
  }

  func warn(_ warnings: [String]) {
    for warning in warnings.dropFirst(warned) {
      FileHandle.standardError.write(Data("fireball-watch: warning: \(warning)\n".utf8))
    }
    warned = warnings.count
  }

  func print(_ changes: [FireballChange], warnings: [String]) throws {
    warn(warnings)
    for change in changes { printFlushed(json ? try line(change) : text(change)) }
  }

  private func text(_ change: FireballChange) -> String {
    switch change {
    case .fireball(let kind, let date, let impact):
      "\(kind.rawValue) fireball \(date.map(FireballDate.string(from:)) ?? "(unknown date)") impact \(number(impact)) kt"
    case .group(let kind, let name, let count):
      "\(kind.rawValue) group '\(name ?? "(unknown)")'\(count.map { " now holds \(plural(Int($0), "fireball"))" } ?? "")"
    }
  }

  private func line(_ change: FireballChange) throws -> String {
    var object: [String: String?] = [:]
    switch change {
    case .fireball(let kind, let date, let impact):
      object = [
        "change": kind.rawValue, "entity": "Fireball", "dateTimeStamp": date.map(FireballDate.iso8601),
        "impactEnergy": impact.map { "\($0)" },
      ]
    case .group(let kind, let name, let count):
      object = ["change": kind.rawValue, "entity": "FireballGroup", "name": name, "fireballCount": count.map { "\($0)" }]
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(object), as: UTF8.self)
  }
}

extension FireballWatchCommand.History {
  struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "show",
      abstract: "List the transactions: token, time, author and how many objects each inserted, updated and deleted.")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: ArgumentHelp("Only transactions after this token (as printed in the token column).", valueName: "token"))
    var afterToken: HistoryTokenArgument?
    @Option(help: ArgumentHelp("Leave out the transactions of this author, e.g. FireballWatch.", valueName: "name"))
    var excludeAuthor: String?
    @Flag(help: "Print a JSON array of {token, timestamp, author, contextName, inserted, updated, deleted}.") var json = false

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let entries = try openWatch(storeOptions).history(after: afterToken?.token, excludingAuthor: excludeAuthor)
        if json {
          print(try jsonString(entries.map(JSONHistoryEntry.init)))
        } else if entries.isEmpty {
          print("No history.")
        } else {
          print(
            textTable(
              headers: ["Token", "Time (UTC)", "Author", "Inserted", "Updated", "Deleted"],
              rows: entries.map {
                [
                  $0.token, FireballDate.string(from: $0.timestamp), $0.author ?? "-", String($0.inserted), String($0.updated),
                  String($0.deleted),
                ]
              }))
        }
      }
    }
  }

  struct Prune: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete the history before a token (which stays) or a date (yyyy-MM-dd HH:mm:ss, UTC).")

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: ArgumentHelp("A token as printed by 'history', or a date.", valueName: "token-or-date"))
    var before: HistoryCutoffArgument

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let pruned = try openWatch(storeOptions).pruneHistory(before: before.cutoff)
        print("Pruned \(plural(pruned, "transaction"))")
      }
    }
  }
}

struct JSONHistoryEntry: Encodable {
  var entry: FireballHistoryEntry

  enum CodingKeys: String, CodingKey {
    case token, timestamp, author, contextName, inserted, updated, deleted
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(entry.token, forKey: .token)
    try container.encode(FireballDate.iso8601(entry.timestamp), forKey: .timestamp)
    try container.encode(entry.author, forKey: .author)
    try container.encode(entry.contextName, forKey: .contextName)
    try container.encode(entry.inserted, forKey: .inserted)
    try container.encode(entry.updated, forKey: .updated)
    try container.encode(entry.deleted, forKey: .deleted)
  }
}
