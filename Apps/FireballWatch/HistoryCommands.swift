import ArgumentParser
import FireballWatch
import Foundation
import Strata
import StrataCLI

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
    @Flag(help: "Print a JSON array of {token, timestamp, author, contextName, processID, inserted, updated, deleted}.")
    var json = false

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let watch = try openWatch(storeOptions)
        let entries: [FireballHistoryEntry]
        do {
          entries = try watch.history(after: afterToken?.token, excludingAuthor: excludeAuthor)
        } catch let error as StoreError {
          throw forCommandLine(error)
        }
        if entries.isEmpty { warnIfAhead(afterToken?.token, of: try watch.currentHistoryToken(), tool: "fireball-watch") }
        if json {
          print(try jsonString(entries.map(JSONHistoryEntry.init)))
        } else if entries.isEmpty {
          print("No history.")
        } else {
          print(
            textTable(
              headers: ["Token", "Time (UTC)", "Author", "PID", "Inserted", "Updated", "Deleted"],
              rows: entries.map {
                [
                  $0.token, FireballDate.iso8601($0.timestamp), $0.author ?? "-", String($0.processID),
                  String($0.inserted), String($0.updated), String($0.deleted),
                ]
              }))
        }
      }
    }
  }

  struct Prune: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete the history before a token (which stays) or a date (yyyy-MM-dd HH:mm:ss or ISO 8601, UTC).")

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
    case token, timestamp, author, contextName, processID, inserted, updated, deleted
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(entry.token, forKey: .token)
    try container.encode(FireballDate.iso8601(entry.timestamp), forKey: .timestamp)
    try container.encode(entry.author, forKey: .author)
    try container.encode(entry.contextName, forKey: .contextName)
    try container.encode(entry.processID, forKey: .processID)
    try container.encode(entry.inserted, forKey: .inserted)
    try container.encode(entry.updated, forKey: .updated)
    try container.encode(entry.deleted, forKey: .deleted)
  }
}
