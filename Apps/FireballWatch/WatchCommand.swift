import ArgumentParser
import FireballWatch
import Foundation
import Strata
import StrataCLI

extension FireballWatchCommand {
  struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "Print the changes other processes make, as they make them (edits by FireballWatch itself are skipped); stops on Ctrl-C.")

    @OptionGroup var storeOptions: StoreFlags
    @OptionGroup var duration: WatchDuration
    @Flag(
      help:
        "Print one JSON object per change: {change, entity, dateTimeStamp, impactEnergy} or {change, entity, name, fireballCount}."
    )
    var json = false

    func run() throws {
      try runReportingErrors(tool: "fireball-watch") {
        let watch = try openWatch(storeOptions)
        // The token of a store lives under $XDG_DATA_HOME/fireball-watch/, named by the store's identifier
        // (any backend); one of a store that starts afresh in every process (memory) is not kept.
        let tokenFile =
          storeOptions.startsFromPreview
          ? nil
          : watch.container.storeIdentifier.map {
            FireballHistoryWatcher.tokenFile(
              in: PersistentContainer.defaultDirectoryURL().appending(path: "fireball-watch", directoryHint: .isDirectory),
              storeIdentifier: $0)
          }
        // Where earlier versions kept it: next to a file store.
        let legacyTokenFile = watch.container.storeURL.flatMap {
          $0.isFileURL ? $0.deletingLastPathComponent().appending(path: $0.lastPathComponent + ".watch-token") : nil
        }
        let watcher = try FireballHistoryWatcher(watch: watch, tokenFile: tokenFile, legacyTokenFile: legacyTokenFile)
        let report = ChangeReport(json: json)
        let changes = watch.container.persistentStoreRemoteChanges()
        report.warn(watcher.warnings)
        try report.print(watcher.catchUp(), warnings: watcher.warnings)
        if !json { printFlushed("Watching for changes… (Ctrl-C stops)") }
        let duration = self.duration.seconds
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

  /// One change as JSON, with the value types `list --json` and `groups --json` use (numbers as numbers).
  private func line(_ change: FireballChange) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    switch change {
    case .fireball(let kind, let date, let impact):
      let object = JSONFireballChange(
        change: kind.rawValue, entity: "Fireball", dateTimeStamp: date.map(FireballDate.iso8601), impactEnergy: impact)
      return String(decoding: try encoder.encode(object), as: UTF8.self)
    case .group(let kind, let name, let count):
      let object = JSONGroupChange(change: kind.rawValue, entity: "FireballGroup", name: name, fireballCount: count)
      return String(decoding: try encoder.encode(object), as: UTF8.self)
    }
  }
}

/// A fireball change as `watch --json` prints it; a value history did not keep is `null`.
struct JSONFireballChange: Encodable {
  var change: String
  var entity: String
  var dateTimeStamp: String?
  var impactEnergy: Double?

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(change, forKey: .change)
    try container.encode(entity, forKey: .entity)
    try container.encode(dateTimeStamp, forKey: .dateTimeStamp)
    try container.encode(impactEnergy, forKey: .impactEnergy)
  }

  enum CodingKeys: String, CodingKey { case change, entity, dateTimeStamp, impactEnergy }
}

/// A group change as `watch --json` prints it.
struct JSONGroupChange: Encodable {
  var change: String
  var entity: String
  var name: String?
  var fireballCount: Int64?

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(change, forKey: .change)
    try container.encode(entity, forKey: .entity)
    try container.encode(name, forKey: .name)
    try container.encode(fireballCount, forKey: .fireballCount)
  }

  enum CodingKeys: String, CodingKey { case change, entity, name, fireballCount }
}
