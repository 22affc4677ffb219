import ArgumentParser
import Foundation
import Strata
import StrataCLI
import StrataMirroring
import StrataPostgresHub
import TaterRater

extension TaterRaterCommand {
  struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Sync the store with a PostgreSQL server that every replica shares: push, then pull.",
      discussion: """
        `tater-rater sync --server URI` runs one round (push the local ratings and notes, then pull \
        everyone else's) and remembers the server in the store, so a later `tater-rater sync` needs no \
        --server. A round also brings the server's own store up to date: `--store postgres --path URI` \
        (the same URI) lists the converged potatoes, and what is saved there syncs like a replica's. See `tater-rater sync round --help` for its flags (--server, --json, --watch, --for, --debounce).
        """,
      subcommands: [Round.self, Status.self, Conflicts.self, Rejected.self], defaultSubcommand: Round.self)
  }

  struct Round: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "One round: push the local changes, then pull the server's (what `tater-rater sync` runs).")

    @OptionGroup var storeOptions: StoreFlags
    @Option(
      help: ArgumentHelp(
        "The server: a libpq URI naming the database and the schema (postgresql://user@host/database/schema, or ?schema=name; default schema: taterrater_hub, beside the taterrater schema of --store postgres). Remembered in the store after a sync that reaches it.",
        valueName: "uri"))
    var server: String?
    @Flag(help: "Print {pushed, pulled, conflicts, rejected} as one JSON object (with --watch, one per event).")
    var json = false
    @Flag(
      help:
        "Stay connected and sync by itself: after local saves (this process's or another tater-rater's), once they have been quiet for --debounce seconds, and when the server announces new changes; print each event (push, pull, conflict, rejection)."
    )
    var watch = false
    @Option(
      help: ArgumentHelp("With --watch: seconds of quiet after a local save before it is pushed (0 to 60).", valueName: "seconds")
    )
    var debounce: Double = 0.05
    @OptionGroup var duration: WatchDuration

    func validate() throws {
      guard (0...60).contains(debounce) else { throw ValidationError("--debounce must be from 0 to 60 seconds") }
      if !watch && (duration.seconds != nil || debounce != 0.05) {
        throw ValidationError("--for and --debounce go with --watch")
      }
    }

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions, watching: watch)
        defer { rater.container.close() }
        let mirror = try openMirror(rater, server: server, registry: storeOptions.registry)
        if watch { return try watchAutomatically(mirror) }
        let report = try waitFor { try await mirror.sync() }
        if let server { try mirror.rememberHub(server) }
        if json {
          print(try jsonString(report))
        } else {
          print("pushed \(report.pushed), pulled \(report.pulled), conflicts \(report.conflicts), rejected \(report.rejected)")
        }
      }
    }

    /// Syncs automatically until `--for` ends (or Ctrl-C), printing each event; an unreachable server is
    /// an event, and the mirror tries again with a growing delay. The server is remembered after the first
    /// round that reached it.
    private func watchAutomatically(_ mirror: StoreMirror) throws {
      let events = mirror.events()
      let printer = Task { [json, server] in
        var remembered = server == nil
        for await event in events {
          if !remembered, event.kind == .pull, event.error == nil, let server {
            try? mirror.rememberHub(server)
            remembered = true
          }
          // A round that found nothing to push or pull says nothing.
          guard event.count > 0 || event.error != nil else { continue }
          printFlushed(json ? (try? compactJSON(event)) ?? "" : describe(event))
        }
      }
      if !json {
        printFlushed(
          "Syncing after each local save and each change on the server; every push, pull, conflict and rejection is printed…")
      }
      let (seconds, debounce) = (duration.seconds, Duration.milliseconds(Int((debounce * 1000).rounded())))
      try waitFor {
        let syncing = Task { await mirror.runAutomaticSync(debounce: debounce) }
        try await stopSignal(after: seconds)
        syncing.cancel()
        await syncing.value
      }
      try? waitFor { try await Task.sleep(for: .milliseconds(50)) }
      printer.cancel()
    }
  }

  struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Where this replica stands: the server, connected or offline, pending and rejected changes, positions, lag.")

    @OptionGroup var storeOptions: StoreFlags
    @Flag(
      help:
        "Print {server, connected, offlineReason, replica, pending, oldestPendingSeconds, rejected, lastPushedPosition, lastPulledPosition, serverPosition, lag} as JSON."
    )
    var json = false

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions, readingOnly: true)
        defer { rater.container.close() }
        let server = try StoreMirror.rememberedHub(of: rater.container)
        let mirror = try openMirror(rater, server: nil, required: false)
        let status = try waitFor { try await mirror.refreshStatus() }
        let shown = JSONSyncStatus(server: server.map(displayServer), status: status)
        if json { return print(try jsonString(shown)) }
        print("Server     \(shown.server ?? "none (run tater-rater sync --server URI)")")
        print("Connected  \(status.isConnected ? "yes" : "no\(status.offlineReason.map { ": \($0)" } ?? "")")")
        print("Replica    \(status.replicaID?.uuidString ?? "none yet (no sync)")")
        let oldest = status.oldestPendingAge.map { String(format: " (oldest %.0f s ago)", $0) } ?? ""
        print("Pending    \(status.pendingTransactions) local transaction\(status.pendingTransactions == 1 ? "" : "s")\(oldest)")
        print("Rejected   \(status.rejectedTransactions)")
        print("Pushed     through position \(status.lastPushedPosition)")
        print("Pulled     through position \(status.lastPulledPosition)")
        print("Lag        \(status.lag.map { "\($0) (server at \(status.hubPosition ?? 0))" } ?? "unknown")")
      }
    }
  }

  struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "List the conflicts the server resolved (the same field changed on two replicas, or an update of a deleted object).")

    @OptionGroup var storeOptions: StoreFlags
    @Flag(
      help:
        "Print a JSON array of {kind, rule, entity, object, field, losingValues, keptValues, winningReplica, winningPosition, losingReplica, losingPosition}."
    )
    var json = false

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions, readingOnly: true)
        defer { rater.container.close() }
        let mirror = try openMirror(rater, server: nil)
        let conflicts = try waitFor { try await mirror.conflicts() }.map(JSONConflict.init)
        if json { return print(try jsonString(conflicts)) }
        guard !conflicts.isEmpty else { return print("No conflicts.") }
        print(
          textTable(
            headers: ["Position", "Kind", "Rule", "Entity", "Field", "Losing values"],
            rows: conflicts.map {
              [
                String($0.winningPosition), $0.kind, $0.rule ?? "", $0.entity, $0.field ?? "",
                $0.losingValues.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value ?? "nil")" }.joined(separator: ", "),
              ]
            }))
      }
    }
  }

  struct Rejected: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List the local changes the server refused; --retry pushes them again, --discard forgets them.")

    @OptionGroup var storeOptions: StoreFlags
    @Flag(help: "Print a JSON array of {sequence, rejectedAt, reason, entities}; with --retry, the round's counts.")
    var json = false
    @Flag(help: "Push every rejected change again with its objects' current values, then pull.") var retry = false
    @Option(
      help: ArgumentHelp(
        "Forget the rejected change with this sequence (repeatable); its fields take the server's values again.",
        valueName: "sequence"))
    var discard: [Int64] = []

    func validate() throws {
      if retry && !discard.isEmpty { throw ValidationError("--retry and --discard cannot be used together") }
    }

    func run() throws {
      try runReportingErrors(tool: "tater-rater") {
        let rater = try openRater(storeOptions, readingOnly: !retry && discard.isEmpty)
        defer { rater.container.close() }
        let mirror = try openMirror(
          rater, server: nil, required: retry || !discard.isEmpty, registry: storeOptions.registry)
        if retry {
          let report = try waitFor { try await mirror.retryRejected() }
          return print(
            json
              ? try jsonString(report)
              : "pushed \(report.pushed), pulled \(report.pulled), conflicts \(report.conflicts), rejected \(report.rejected)")
        }
        if !discard.isEmpty {
          let known = Set(try mirror.rejected().map(\.localSequence))
          if let unknown = discard.first(where: { !known.contains($0) }) {
            throw UsageError("no rejected change has sequence \(unknown) (tater-rater sync rejected lists them)")
          }
          let dropped = try waitFor { [discard] in try await mirror.discardRejected(Set(discard)) }
          return print("Discarded \(dropped.count) rejected change\(dropped.count == 1 ? "" : "s")")
        }
        let rejected = try mirror.rejected().map(JSONRejected.init)
        if json { return print(try jsonString(rejected)) }
        guard !rejected.isEmpty else { return print("No rejected changes.") }
        print(
          textTable(
            headers: ["Sequence", "Rejected at", "Entities", "Reason"],
            rows: rejected.map { [String($0.sequence), $0.rejectedAt, $0.entities.joined(separator: ", "), $0.reason] }))
      }
    }
  }
}

/// The schema a server URI naming none uses: beside the app's own (`--store postgres` keeps its store in `taterrater`).
let defaultServerSchema = "taterrater_hub"

/// The mirror of `rater`'s store with the server `server`, else the one the store remembers. Without
/// either: a usage error when `required`, else a mirror whose hub says no server is known. Given `registry`,
/// each of its rounds also brings the server's own Strata store (in the hub's schema, beside its tables) up
/// to date, opened as this app opens any store, so `--store postgres --path URI` reads the converged potatoes
/// and its own saves are pushed like any replica's.
func openMirror(
  _ rater: PotatoRater, server: String?, required: Bool = true, registry: StoreRegistry? = nil
) throws -> StoreMirror {
  guard let location = try server ?? StoreMirror.rememberedHub(of: rater.container) else {
    if required { throw UsageError("no server to sync with: give --server URI (this store remembers none yet)") }
    return try StoreMirror(container: rater.container, hub: NoServer())
  }
  var serverStore: PostgresHub.ServerStoreOpener?
  if let registry {
    serverStore = { url in
      try PotatoRater.makeContainer(store: StoreDescription(type: .postgres, url: url), registry: registry)
    }
  }
  let hub = try PostgresHub(
    location: location, defaultSchema: defaultServerSchema, model: rater.container.model, serverStore: serverStore)
  return try StoreMirror(container: rater.container, hub: hub)
}

/// How output names a server: its URI without the password.
func displayServer(_ location: String) -> String {
  URL(string: location).map(StoreFlags.displayLocation(of:)) ?? "(an unreadable URI)"
}

/// The hub of a store that remembers no server: every request says so.
struct NoServer: MirrorHub {
  private var offline: MirrorError { .hubUnreachable("no server is remembered; run tater-rater sync --server URI") }
  func push(_ transaction: MirrorTransaction) async throws -> MirrorReceipt { throw offline }
  func pull(after position: Int64, limit: Int) async throws -> [MirrorLogEntry] { throw offline }
  func conflicts() async throws -> [MirrorConflict] { throw offline }
  func lastPosition() async throws -> Int64 { throw offline }
  func objects(_ ids: Set<UUID>) async throws -> [UUID: MirrorObject] { throw offline }
}

func describe(_ event: MirrorEvent) -> String {
  let milliseconds = Int((event.endedAt.timeIntervalSince(event.startedAt) * 1000).rounded())
  switch event.kind {
  case .rejection: return "rejected: \(event.error ?? "")"
  case .conflict: return "conflicts \(event.count)"
  case .push, .pull:
    let done = "\(event.kind.rawValue)ed \(event.count) (\(milliseconds) ms)"
    guard let error = event.error else { return done }
    return event.count == 0 ? "\(event.kind.rawValue) failed: \(error)" : "\(done), then failed: \(error)"
  }
}

func compactJSON(_ value: some Encodable) throws -> String {
  let encoder = JSONEncoder()
  encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
  encoder.dateEncodingStrategy = .iso8601
  return String(decoding: try encoder.encode(value), as: UTF8.self)
}

struct JSONSyncStatus: Encodable {
  var server: String?
  var status: MirrorStatus

  enum CodingKeys: String, CodingKey {
    case server, connected, offlineReason, replica, pending, oldestPendingSeconds, rejected, lastPushedPosition
    case lastPulledPosition, serverPosition, lag
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(server, forKey: .server)
    try container.encode(status.isConnected, forKey: .connected)
    try container.encode(status.offlineReason, forKey: .offlineReason)
    try container.encode(status.replicaID?.uuidString, forKey: .replica)
    try container.encode(status.pendingTransactions, forKey: .pending)
    try container.encode(status.oldestPendingAge.map { ($0 * 10).rounded() / 10 }, forKey: .oldestPendingSeconds)
    try container.encode(status.rejectedTransactions, forKey: .rejected)
    try container.encode(status.lastPushedPosition, forKey: .lastPushedPosition)
    try container.encode(status.lastPulledPosition, forKey: .lastPulledPosition)
    try container.encode(status.hubPosition, forKey: .serverPosition)
    try container.encode(status.lag, forKey: .lag)
  }
}

struct JSONConflict: Encodable {
  var kind: String
  var entity: String
  var object: String
  var field: String?
  var rule: String?
  var losingValues: [String: String?]
  var keptValues: [String: String?]?
  var winningReplica: String
  var winningPosition: Int64
  var losingReplica: String
  var losingPosition: Int64

  init(_ conflict: MirrorConflict) {
    kind = conflict.kind.rawValue
    entity = conflict.entityName
    object = conflict.globalID.uuidString
    field = conflict.field
    rule = conflict.rule?.rawValue
    losingValues = conflict.losingFields.mapValues(Self.text)
    keptValues = conflict.keptFields?.mapValues(Self.text)
    winningReplica = conflict.winningReplica.uuidString
    winningPosition = conflict.winningPosition
    losingReplica = conflict.losingReplica.uuidString
    losingPosition = conflict.losingPosition
  }

  enum CodingKeys: String, CodingKey {
    case kind, rule, entity, object, field, losingValues, keptValues, winningReplica, winningPosition, losingReplica
    case losingPosition
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(kind, forKey: .kind)
    try container.encode(rule, forKey: .rule)
    try container.encode(entity, forKey: .entity)
    try container.encode(object, forKey: .object)
    try container.encode(field, forKey: .field)
    try container.encode(losingValues, forKey: .losingValues)
    try container.encode(keptValues, forKey: .keptValues)
    try container.encode(winningReplica, forKey: .winningReplica)
    try container.encode(winningPosition, forKey: .winningPosition)
    try container.encode(losingReplica, forKey: .losingReplica)
    try container.encode(losingPosition, forKey: .losingPosition)
  }

  /// A field as text: a string as it is, another value as a literal, a reference by global identity.
  static func text(_ field: MirrorField) -> String? {
    switch field {
    case .value(.null): nil
    case .value(.string(let text)): text
    case .value(let value): value.description
    case .reference(let target): target?.uuidString
    case .references(let targets): targets.map(\.uuidString).joined(separator: ",")
    }
  }
}

struct JSONRejected: Encodable {
  var sequence: Int64
  var rejectedAt: String
  var reason: String
  var entities: [String]

  init(_ rejected: RejectedTransaction) {
    sequence = rejected.localSequence
    rejectedAt = ISO8601DateFormatter().string(from: rejected.rejectedAt)
    reason = rejected.reason
    entities = Array(Set(rejected.transaction.changes.map(\.entityName))).sorted()
  }
}
