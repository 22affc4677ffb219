import ArgumentParser
import Foundation
import StrataCLI
import StrataStoreKit

struct HistoryCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "history",
    abstract: "List a store's persistent history: each transaction's token, time, author, context and changes.")

  @OptionGroup var location: StoreLocation

  @Option(help: ArgumentHelp("Only transactions after this token (STORE:SEQUENCE, as printed).", valueName: "token"))
  var afterToken: String?

  @Option(help: ArgumentHelp("Leave out the transactions of this author.", valueName: "name"))
  var excludeAuthor: String?

  @Flag(help: "Print a JSON array of {token, timestamp, author, contextName, processID, inserted, updated, deleted}.")
  var json = false

  func validate() throws {
    if let afterToken, HistoryToken(string: afterToken) == nil {
      throw ValidationError("--after-token '\(afterToken)' is not a history token (STORE:SEQUENCE)")
    }
  }

  func run() throws {
    try runReportingErrors(tool: "strata") {
      let request = HistoryRequest(
        after: afterToken.flatMap(HistoryToken.init(string:)).map(HistoryCutoff.token),
        predicate: try excludeAuthor.map { try QueryPredicate(format: "author != %@", $0) })
      let after = afterToken.flatMap(HistoryToken.init(string:))
      let transactions = try location.withStore(tracksHistory: true) { store -> [HistoryTransaction] in
        do {
          guard case .transactions(let found) = try store.fetchHistory(request) else { return [] }
          if found.isEmpty { warnIfAhead(after, of: try store.currentHistoryToken(), tool: "strata") }
          return found
        } catch let error as StoreError {
          throw forCommandLine(error)
        }
      }
      let rows = transactions.map(HistoryRow.init)
      if json {
        print(try jsonString(rows))
      } else if rows.isEmpty {
        print("No history.")
      } else {
        print(
          textTable(
            headers: ["Token", "Time (UTC)", "Author", "Context", "PID", "Inserted", "Updated", "Deleted"],
            rows: rows.map {
              [
                $0.token, $0.timestamp, $0.author ?? "-", $0.contextName ?? "-", String($0.processID), String($0.inserted),
                String($0.updated), String($0.deleted),
              ]
            }))
      }
    }
  }
}

/// One transaction as the history command prints it.
struct HistoryRow: Encodable {
  var token: String
  var timestamp: String
  var author: String?
  var contextName: String?
  var processID: Int32
  var inserted: Int
  var updated: Int
  var deleted: Int

  init(_ transaction: HistoryTransaction) {
    token = transaction.token.description
    timestamp = transaction.timestamp.ISO8601Format()
    author = transaction.author
    contextName = transaction.contextName
    processID = transaction.processID
    inserted = transaction.count(of: .insert)
    updated = transaction.count(of: .update)
    deleted = transaction.count(of: .delete)
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(token, forKey: .token)
    try container.encode(timestamp, forKey: .timestamp)
    try container.encode(author, forKey: .author)
    try container.encode(contextName, forKey: .contextName)
    try container.encode(processID, forKey: .processID)
    try container.encode(inserted, forKey: .inserted)
    try container.encode(updated, forKey: .updated)
    try container.encode(deleted, forKey: .deleted)
  }

  enum CodingKeys: String, CodingKey {
    case token, timestamp, author, contextName, processID, inserted, updated, deleted
  }
}
