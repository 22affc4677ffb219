import Foundation
import Strata
import StrataCore
import StrataMirroring
import Synchronization

/// A hub in a PostgreSQL schema: the merge rules of every hub (`HubLedger`) applied inside one
/// PostgreSQL transaction per push, with the idempotency key written in that same transaction.
///
/// Its tables, created on first use in the schema it is given:
/// - `strata_mirror_log(position, replica, local_sequence, changes)`: the total order replicas pull;
/// - `strata_mirror_keys(replica, local_sequence, position, receipt)`: one row per applied local
///   transaction, the idempotency key (a retry returns `receipt` and applies nothing);
/// - `strata_mirror_objects(id, entity, deleted_at, state)`: each object's current fields with the
///   position and replica of each field's last change, tombstones included;
/// - `strata_mirror_conflicts(id, position, conflict)`: every resolved conflict;
/// - `strata_mirror_model(key, value)`: the hub's model (the newest version admitted) and each entity's
///   conflict policy, which every replica's hub object must match.
/// Payloads are JSON text. Pushes are serialized by an exclusive lock on the log table.
///
/// ```swift
/// let hub = try PostgresHub(uri: "postgresql:///potatoes?host=/run/postgresql", schema: "mirror", model: container.model)
/// let mirror = try StoreMirror(container: container, hub: hub)
/// ```
public final class PostgresHub: MirrorHub {
  private struct State {
    var connection: HubConnection?
    var losesReplies = 0
    /// The ledger as this hub's last committed push left it (its objects and their index of references, as
    /// of its `lastPosition`). Pushes are serialized by the log's lock and each adds a log entry, so while the
    /// log still ends at that position nobody else has pushed: the next push goes on with it instead of
    /// reading and decoding every object again. Taken out while a push runs (so that it is changed in place,
    /// not copied), and put back only once that push has committed.
    var ledger: HubLedger?
    /// The hub's model as its schema records it when this hub last looked (on connecting, and each push
    /// compares its fingerprint).
    var stored: StoredModel?

    /// Takes `model` as the hub's; a kept ledger of another model is dropped.
    mutating func take(_ model: StoredModel) {
      if model.fingerprint != stored?.fingerprint { ledger = nil }
      stored = model
    }
  }

  /// The model recorded in the hub's schema: the newest version of the app's model admitted.
  private struct StoredModel: Sendable {
    var fingerprint: String
    var model: ObjectModel
  }

  private let uri: String
  private let schema: String
  /// The URI's password in the forms an error message could quote it, to hide it there.
  private let secrets: [String]
  private let model: ObjectModel
  private let policies: MirrorPolicies
  private let state = Locked(State())
  private let serverStore: ServerStoreOpener?

  /// Opens the app's container on the server's own Strata store at the URL it is given (``storeLocation``),
  /// with the app's types and migrations, as the app opens any store.
  public typealias ServerStoreOpener = @Sendable (URL) throws -> PersistentContainer

  /// A hub in `schema` of the database `uri` names (a libpq URI or key/value string), settling conflicts by
  /// `policies`. The merge runs in the pushing process, so every process that builds this hub must give the
  /// same policies: the schema records them, and a hub given others is refused when it connects. Nothing
  /// connects until the first call.
  ///
  /// ```swift
  /// let policies = MirrorPolicies(entities: ["Tasting": MirrorPolicy(conflicts: .hubWins)])
  /// let hub = try PostgresHub(uri: "postgresql:///potatoes", schema: "mirror", model: model, policies: policies)
  /// ```
  ///
  /// With `serverStore`, every round a replica of this hub object ends brings the server's own Strata store
  /// up to date (``roundEnded(by:)``), so that an app pointed at the server sees the converged data without
  /// a step of its own.
  ///
  /// - Throws: `MirrorError.unsupported` for a schema name that is not a plain identifier.
  public init(
    uri: String, schema: String, model: ObjectModel, policies: MirrorPolicies = .standard,
    serverStore: ServerStoreOpener? = nil
  ) throws {
    guard let first = schema.first, first.isLetter || first == "_",
      schema.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }), schema.count <= 63
    else {
      throw MirrorError.unsupported("the hub schema '\(schema)' is not a plain identifier (letters, digits, _)")
    }
    self.uri = uri
    self.schema = schema
    self.model = model
    self.policies = policies
    self.serverStore = serverStore
    let components = URLComponents(string: uri)
    secrets = [components?.password, components?.percentEncodedPassword].compactMap { $0 }.filter { !$0.isEmpty }
  }

  /// A hub at `location`, a libpq URI naming the database and the schema as a PostgreSQL store's
  /// location does: the schema is the path's second component (`postgresql://host/database/schema`) or
  /// the `schema` query item, else `defaultSchema`. Nothing connects until the first call.
  ///
  /// ```swift
  /// let hub = try PostgresHub(location: "postgresql://db.example.com/potatoes?schema=mirror", defaultSchema: "taterrater", model: model)
  /// ```
  ///
  /// - Throws: `MirrorError.unsupported` for a location that is not a `postgresql://` URI, whose path has
  ///   more than two components, or whose schema is not a plain identifier; the message never holds the
  ///   password.
  public convenience init(
    location: String, defaultSchema: String, model: ObjectModel, policies: MirrorPolicies = .standard,
    serverStore: ServerStoreOpener? = nil
  ) throws {
    guard var components = URLComponents(string: location), components.scheme == "postgresql" || components.scheme == "postgres"
    else {
      throw MirrorError.unsupported(
        "the hub location is not a PostgreSQL URI (expected postgresql://user@host:port/database/schema or ?schema=name)")
    }
    var schema = defaultSchema
    let parts = components.path.split(separator: "/")
    guard parts.count <= 2 else { throw MirrorError.unsupported("the hub URI's path must be /database or /database/schema") }
    if parts.count == 2 {
      schema = String(parts[1])
      components.path = "/" + parts[0]
    }
    var items = components.queryItems ?? []
    if let index = items.firstIndex(where: { $0.name == "schema" }) {
      schema = items.remove(at: index).value ?? defaultSchema
    }
    components.queryItems = items.isEmpty ? nil : items
    try self.init(
      uri: components.string ?? location, schema: schema, model: model, policies: policies, serverStore: serverStore)
  }
  /// Where an ordinary Strata PostgreSQL store beside the hub's tables lives: the hub's database URI with
  /// its schema as the `schema` query item. Open a container there (`StoreDescription(type: .postgres,
  /// url: hub.storeLocation)`) and mirror it like any replica to keep the converged data readable on the
  /// server by `strata fetch` and by apps pointed at it; hold ``withServerStoreLock(_:)`` while it syncs.
  ///
  /// ```swift
  /// let hub = try PostgresHub(uri: "postgresql:///potatoes", schema: "mirror", model: container.model)
  /// let server = StoreDescription(type: .postgres, url: hub.storeLocation)
  /// ```
  public var storeLocation: URL {
    var components = URLComponents(string: uri) ?? URLComponents()
    components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "schema", value: schema)]
    return components.url ?? URL(filePath: "/")
  }

  /// Brings the server's own Strata store up to date after a round of `replica` (given a `serverStore`
  /// opener): under ``withServerStoreLock(_:)``, the store at ``storeLocation`` is opened and synced as a
  /// replica of this hub, then closed. A round of that store itself, or a hub without an opener, does nothing.
  ///
  /// ```swift
  /// try await hub.roundEnded(by: mirror)  // StoreMirror calls it after each round
  /// ```
  ///
  /// - Throws: what opening or syncing the server store throws.
  public func roundEnded(by replica: StoreMirror) async throws {
    guard let serverStore, replica.container.storeDescriptions.first?.url != storeLocation else { return }
    let location = storeLocation
    try await withServerStoreLock {
      let server = try serverStore(location)
      defer { server.close() }
      _ = try await StoreMirror(container: server, hub: self).sync()
    }
  }

  /// Runs `body` while this process holds the hub's server-store lock, a PostgreSQL advisory lock on its
  /// own connection: one process at a time syncs the store at ``storeLocation``; another waits.
  ///
  /// ```swift
  /// let hub = try PostgresHub(uri: "postgresql:///potatoes", schema: "mirror", model: container.model)
  /// let report = try await hub.withServerStoreLock { try await StoreMirror(container: container, hub: hub).sync() }
  /// ```
  ///
  /// - Throws: `MirrorError.hubUnreachable` when the server cannot be reached, or what `body` throws.
  public func withServerStoreLock<R>(_ body: () async throws -> R) async throws -> R {
    let connection: HubConnection
    do {
      connection = try HubConnection(uri)
      try connection.query("SELECT pg_advisory_lock(hashtext($1))", ["strata_mirror_server/" + schema])
    } catch let error as MirrorError {
      throw hidingSecrets(error)
    }
    // Closing the connection releases the lock, also when `body` throws.
    defer { withExtendedLifetime(connection) {} }
    return try await body()
  }

  /// Makes the next `count` pushes commit and then throw as if the reply was lost (for tests).
  ///
  /// ```swift
  /// hub.loseReplies(1)
  /// ```
  public func loseReplies(_ count: Int) {
    state.withLock { $0.losesReplies += count }
  }

  /// Applies `transaction` in one PostgreSQL transaction, exactly once.
  ///
  /// - Throws: `MirrorError.hubUnreachable` when the server cannot be reached,
  ///   `MirrorError.hubFailed` when it fails the statements (nothing is applied).
  public func push(_ transaction: MirrorTransaction) async throws -> MirrorReceipt {
    try withConnection { connection, state in
      var ledger = state.ledger
      state.ledger = nil
      let receipt: MirrorReceipt
      do {
        receipt = try apply(transaction, on: connection, ledger: &ledger, stored: &state.stored)
      } catch {
        connection.rollBack()
        // A refused push left the ledger as it was (`apply` gives it back): the next push goes on with it.
        if case MirrorError.rejected = error { state.ledger = ledger }
        throw error
      }
      // Committed: the ledger as this push left it is the next push's, while the log ends here.
      state.ledger = ledger
      MirrorFailpoint.reach(.afterHubCommit)
      if state.losesReplies > 0 {
        state.losesReplies -= 1
        throw MirrorError.hubUnreachable("the reply to a committed push was lost (a test fault)")
      }
      return receipt
    }
  }

  /// The log entries after `position`, at most `limit`.
  ///
  /// - Throws: `MirrorError.hubUnreachable` or `MirrorError.hubFailed`.
  public func pull(after position: Int64, limit: Int) async throws -> [MirrorLogEntry] {
    try withConnection { connection, _ in
      try connection.query(
        "SELECT changes FROM \(table("log")) WHERE position > $1 ORDER BY position LIMIT $2",
        [String(position), String(max(0, limit))]
      ).map { try decode(MirrorLogEntry.self, $0.first ?? nil) }
    }
  }

  /// Every conflict resolved, in order.
  ///
  /// - Throws: `MirrorError.hubUnreachable` or `MirrorError.hubFailed`.
  public func conflicts() async throws -> [MirrorConflict] {
    try withConnection { connection, _ in
      try connection.query("SELECT conflict FROM \(table("conflicts")) ORDER BY id").map {
        try decode(MirrorConflict.self, $0.first ?? nil)
      }
    }
  }

  /// The last position given, 0 before the first push.
  ///
  /// - Throws: `MirrorError.hubUnreachable` or `MirrorError.hubFailed`.
  public func lastPosition() async throws -> Int64 {
    try withConnection { connection, _ in
      let last = try connection.query("SELECT coalesce(max(position), 0) FROM \(table("log"))").first?.first ?? nil
      return last.flatMap { Int64($0) } ?? 0
    }
  }

  /// Refuses a replica of another app's model, or one whose hub object was given other conflict policies:
  /// the hub's schema records the newest model it admitted and each entity's policy (checked when this hub
  /// connects). A replica of a newer version of the model (see `MirrorModel.isNewer(_:than:)`) makes it the
  /// hub's: pushes are checked against it from then on. Connects first.
  ///
  /// ```swift
  /// try await hub.admit(replicaOf: container.model)
  /// ```
  ///
  /// - Throws: `MirrorError.unsupported` naming the entities of both models, or the entity whose policies
  ///   differ and both policies (nothing is written); `MirrorError.hubUnreachable` when the server cannot be
  ///   reached.
  public func admit(replicaOf replica: ObjectModel) async throws {
    try withConnection { connection, state in
      let hubModel = state.stored?.model ?? model
      if let reason = MirrorModel.mismatch(
        hub: MirrorModel.appEntities(of: hubModel), other: MirrorModel.appEntities(of: replica),
        what: "this replica's model")
      {
        throw MirrorError.unsupported(reason)
      }
      let entities = Set(MirrorModel.appEntities(of: model) + MirrorModel.appEntities(of: replica))
      let more = entities.count > MirrorModel.appEntities(of: model).count
      guard more || MirrorModel.isNewer(replica, than: hubModel) else { return }
      try inModelTransaction(connection) {
        if more { try agreeOnPolicies(connection, entities: entities.sorted()) }
        guard MirrorModel.isNewer(replica, than: try readModel(connection).model) else { return }
        try record(replica, connection, replacing: true)
      }
      state.take(try readModel(connection))
    }
  }

  /// The live objects' current fields, by global identity (what every replica converges to).
  ///
  /// - Throws: `MirrorError.hubUnreachable` or `MirrorError.hubFailed`.
  public func liveObjects() throws -> [UUID: HubLedger.Object] {
    try withConnection { connection, _ in try loadObjects(connection).filter { $0.value.deletedAt == nil } }
  }

  /// The live objects among `ids`, with their current fields: only their rows are read, by primary key.
  ///
  /// ```swift
  /// let hub = try PostgresHub(uri: "postgresql:///potatoes", schema: "mirror", model: model)
  /// let id = UUID()  // an object's global identity, as a pulled entry names it
  /// let variety = try await hub.objects([id])[id]?.fields["variety"]  // nil: deleted or never pushed
  /// ```
  ///
  /// - Throws: `MirrorError.hubUnreachable` or `MirrorError.hubFailed`.
  public func objects(_ ids: Set<UUID>) async throws -> [UUID: MirrorObject] {
    guard !ids.isEmpty else { return [:] }
    return try withConnection { connection, _ in
      let wanted = "{" + ids.map(\.uuidString).sorted().joined(separator: ",") + "}"
      var found: [UUID: MirrorObject] = [:]
      for (id, object) in try loadObjects(connection, where: "id = ANY($1::uuid[]) AND deleted_at IS NULL", [wanted]) {
        found[id] = MirrorObject(entityName: object.entityName, fields: object.fields)
      }
      return found
    }
  }

  /// The live objects whose fields name one of `ids`: one scan of the objects' states for the identities'
  /// text (an object that names one only in its bookkeeping is read and left out).
  ///
  /// ```swift
  /// let sticker = UUID()  // a sticker's global identity
  /// let referring = try await hub.objects(referringTo: [sticker])
  /// ```
  ///
  /// - Throws: `MirrorError.hubUnreachable` or `MirrorError.hubFailed`.
  public func objects(referringTo ids: Set<UUID>) async throws -> [UUID: MirrorObject] {
    guard !ids.isEmpty else { return [:] }
    return try withConnection { connection, _ in
      let patterns = "{" + ids.map { "\"%\($0.uuidString)%\"" }.sorted().joined(separator: ",") + "}"
      var found: [UUID: MirrorObject] = [:]
      for (id, object) in try loadObjects(connection, where: "deleted_at IS NULL AND state ILIKE ANY($1::text[])", [patterns])
      where object.fields.values.contains(where: { $0.names(anyOf: ids) }) {
        found[id] = MirrorObject(entityName: object.entityName, fields: object.fields)
      }
      return found
    }
  }

  /// The hub's last position each time a push commits: a connection of its own `LISTEN`s on the
  /// schema's channel (every push sends `NOTIFY` with its position inside its transaction) and is read
  /// every 10 ms. On each (re)connection the stream yields the last position, since announcements made
  /// while nobody listened are lost; an unreachable server is tried again every second. Each call opens
  /// its own connection, closed when the caller stops iterating.
  ///
  /// ```swift
  /// for await position in hub.newPositions() { print("the hub is at \(position)") }
  /// ```
  public func newPositions() -> AsyncStream<Int64> {
    let (stream, continuation) = AsyncStream.makeStream(of: Int64.self, bufferingPolicy: .bufferingNewest(16))
    let (uri, channel, lastPositionSQL) = (uri, channel, "SELECT coalesce(max(position), 0) FROM \(table("log"))")
    let task = Task(executorPreference: MirrorExecutor.shared) {
      var listener: HubConnection?
      while !Task.isCancelled {
        if listener?.isBroken ?? true {
          listener = nil
          do {
            let connection = try HubConnection(uri)
            try connection.query("LISTEN \"\(channel)\"")
            listener = connection
            // The log table may not exist before the first push: then there is nothing to pull.
            if let last = try? connection.query(lastPositionSQL).first?.first ?? nil, let position = Int64(last) {
              continuation.yield(position)
            }
          } catch {
            try? await Task.sleep(for: .seconds(1))
            continue
          }
        }
        for payload in listener?.drainNotifications() ?? [] {
          if let position = Int64(payload) { continuation.yield(position) }
        }
        try? await Task.sleep(for: .milliseconds(10))
      }
      continuation.finish()
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
  }

  // MARK: Inside a transaction

  /// Applies `transaction` in a transaction of its own, committed on return, in two round trips: one pipeline
  /// begins, locks the log and reads the key and the last position; the other writes what the ledger
  /// changed, the log entry, the conflicts and the key, notifies, and commits. The caller rolls back when
  /// it throws. `ledger` is the one the last push of this hub left (`nil`: none); on return, the one to
  /// keep (`nil` when the push applied nothing new), also when the ledger refused the transaction (it is
  /// left as it was).
  private func apply(
    _ transaction: MirrorTransaction, on connection: HubConnection, ledger kept: inout HubLedger?,
    stored: inout StoredModel?
  ) throws -> MirrorReceipt {
    let key = [transaction.replicaID.uuidString, String(transaction.localSequence)]
    let opened = try connection.pipeline([
      ("BEGIN", []),
      ("LOCK TABLE \(table("log")) IN EXCLUSIVE MODE", []),
      (
        "SELECT (SELECT receipt FROM \(table("keys")) WHERE replica = $1 AND local_sequence = $2), "
          + "(SELECT coalesce(max(position), 0) FROM \(table("log"))), "
          + "(SELECT value FROM \(table("model")) WHERE key = 'fingerprint')", key
      ),
    ])
    let read = opened.last?.first ?? []
    if let stored = read.first ?? nil {
      var receipt = try decode(MirrorReceipt.self, stored)
      receipt.wasDuplicate = true
      MirrorFailpoint.reach(.beforeHubCommit)
      try connection.query("COMMIT")
      return receipt
    }
    let lastPosition = read.count == 3 ? read[1].flatMap { Int64($0) } ?? 0 : 0
    // Another replica's admit may have made a newer version of the model the hub's.
    if read.count == 3, let fingerprint = read[2], fingerprint != stored?.fingerprint {
      stored = try readModel(connection)
      kept = nil
    }
    var ledger: HubLedger
    if var cached = kept.take(), cached.lastPosition <= lastPosition {
      // Other processes pushed since this one's last push: their log entries name every object they changed
      // (a delete rule's effects and a merge's alias included); only those are read again.
      let changed =
        cached.lastPosition == lastPosition
        ? [:]
        : try loadObjects(
          connection,
          where: "id IN (SELECT (c->>'globalID')::uuid FROM \(table("log")), "
            + "json_array_elements(changes::json->'changes') AS c WHERE position > $1)", [String(cached.lastPosition)])
      cached.catchUp(with: changed, through: lastPosition)
      ledger = consume cached
    } else {
      ledger = HubLedger(
        model: stored?.model ?? model, objects: try loadObjects(connection), lastPosition: lastPosition,
        policies: policies)
    }
    let receipt: MirrorReceipt
    do {
      receipt = try ledger.apply(transaction) { id, position in
        // Only a custom resolver's base value asks: the stored entries naming the object, newest first.
        try connection.query(
          "SELECT changes FROM \(self.table("log")) WHERE position <= $1 AND strpos(changes, $2) > 0 ORDER BY position DESC",
          [String(position), id.uuidString]
        ).map { try self.decode(MirrorLogEntry.self, $0.first ?? nil) }
      }
    } catch MirrorError.rejected(let reason) {
      kept = ledger
      throw MirrorError.rejected(reason)
    }
    var objects: [[String?]] = []
    for id in ledger.changedObjects {
      guard let object = ledger.objects[id] else { continue }
      objects.append([id.uuidString, object.entityName, object.deletedAt.map(String.init), try HubJSON.encode(object)])
    }
    let entries = try ledger.log.map {
      [String($0.position), $0.replicaID.uuidString, String($0.localSequence), try HubJSON.encode($0)]
    }
    let conflicts = try ledger.conflicts.map { [String($0.winningPosition), try encode($0)] }
    var statements =
      insertions(
        into: "objects", columns: "id, entity, deleted_at, state", types: ["uuid", "text", "bigint", "text"], rows: objects,
        then: "ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at, state = excluded.state")
      + insertions(
        into: "log", columns: "position, replica, local_sequence, changes", types: ["bigint", "uuid", "bigint", "text"],
        rows: entries)
      // One statement per batch, its rows in order: the conflicts' serial ids keep the order they were resolved in.
      + insertions(into: "conflicts", columns: "position, conflict", types: ["bigint", "text"], rows: conflicts)
    statements.append(
      (
        "INSERT INTO \(table("keys")) (replica, local_sequence, position, receipt) VALUES ($1, $2, $3, $4)",
        key + [String(receipt.position), try encode(receipt)]
      ))
    // Delivered to the listeners when (and only if) this transaction commits.
    statements.append(("SELECT pg_notify($1, $2)", [channel, String(receipt.position)]))
    statements.append(("COMMIT", []))
    try connection.pipeline(statements, beforeLast: { MirrorFailpoint.reach(.beforeHubCommit) })
    kept = consume ledger
    return receipt
  }

  /// The statements inserting `rows` into the hub's table `name`, many rows each (at most
  /// `rowsPerInsertion`), each value cast to its column's type in `types`, `then` after each.
  private func insertions(
    into name: String, columns: String, types: [String], rows: [[String?]], then suffix: String = ""
  ) -> [HubConnection.Statement] {
    stride(from: 0, to: rows.count, by: Self.rowsPerInsertion).map { start in
      let batch = rows[start..<min(start + Self.rowsPerInsertion, rows.count)]
      let values = batch.indices.map { row in
        let first = (row - start) * types.count
        return "(" + types.enumerated().map { "$\(first + $0.offset + 1)::\($0.element)" }.joined(separator: ", ") + ")"
      }
      return (
        "INSERT INTO \(table(name)) (\(columns)) VALUES \(values.joined(separator: ", ")) \(suffix)",
        Array(batch.joined())
      )
    }
  }

  /// How many rows one `INSERT` of a push writes: well below PostgreSQL's 65,535 parameters a statement.
  private static let rowsPerInsertion = 1_000

  /// Every object, tombstones included (the delete rules look for the live objects that reference a deleted
  /// one): read when another process pushed since this hub's last push.
  /// `condition` (with its `parameters`) reads only the rows it holds.
  private func loadObjects(
    _ connection: HubConnection, where condition: String? = nil, _ parameters: [String?] = []
  ) throws -> [UUID: HubLedger.Object] {
    var objects: [UUID: HubLedger.Object] = [:]
    let filter = condition.map { " WHERE \($0)" } ?? ""
    for row in try connection.query("SELECT id, state FROM \(table("objects"))\(filter)", parameters) {
      guard row.count == 2, let id = row[0].flatMap(UUID.init(uuidString:)) else { continue }
      objects[id] = try decode(HubLedger.Object.self, row[1])
    }
    return objects
  }

  // MARK: Connection

  /// Runs `body` on the kept connection, connecting first when there is none or it broke. When a kept
  /// connection turns out dropped by the server (it restarted, or closed an idle session), `body` runs once
  /// more on a new connection: every request is safe to repeat (reads, and pushes, which the idempotency key
  /// applies once even when the first attempt's `COMMIT` got through).
  private func withConnection<R: Sendable>(_ body: (HubConnection, inout State) throws -> R) throws -> R {
    do {
      return try state.withLock { state in
        let reused = !(state.connection?.isBroken ?? true)
        do {
          return try attempt(body, &state)
        } catch MirrorError.hubUnreachable where reused && state.connection?.isBroken == true {
          return try attempt(body, &state)
        }
      }
    } catch let error as MirrorError {
      throw hidingSecrets(error)
    }
  }

  private func attempt<R: Sendable>(_ body: (HubConnection, inout State) throws -> R, _ state: inout State) throws -> R {
    if state.connection?.isBroken ?? true {
      state.connection = nil
      let connection = try HubConnection(uri)
      state.take(try createTables(connection))
      state.connection = connection
    }
    guard let connection = state.connection else { throw MirrorError.hubUnreachable("no connection") }
    return try body(connection, &state)
  }

  /// `error` with the URI's password, should libpq quote it, written as `***`.
  private func hidingSecrets(_ error: MirrorError) -> MirrorError {
    func hide(_ text: String) -> String { secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: "***") } }
    switch error {
    case .hubUnreachable(let reason): return .hubUnreachable(hide(reason))
    case .hubFailed(let reason): return .hubFailed(hide(reason))
    case .unsupported, .syncInProgress, .rejected: return error
    }
  }

  /// Refuses a schema this hub must not write to, before writing anything: a hub of another app's model
  /// (its `strata_mirror_model` names its entities), a Strata store of another app's model
  /// (`_strata_metadata`), or tables that are neither. Versions of one app's model are accepted (see
  /// `MirrorModel.mismatch`). Returns whether the hub's model is recorded.
  private func checkSchema(_ connection: HubConnection) throws -> Bool {
    let tables = Set(
      try connection.query(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
          + "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')", [schema]
      ).compactMap { $0.first ?? nil })
    let mine = MirrorModel.appEntities(of: model)
    if tables.contains("strata_mirror_model") {
      let rows = try connection.query("SELECT key, value FROM \(table("model"))")
      let record = Dictionary(rows.compactMap { row in row.count == 2 ? row[0].map { ($0, row[1] ?? "") } : nil }) { $1 }
      if let entities = record["entities"], record["fingerprint"] != model.fingerprint,
        let reason = MirrorModel.mismatch(
          hub: entities.split(separator: ",").map(String.init), other: mine, what: "this replica's model",
          hubName: "the hub's in schema '\(schema)'")
      {
        throw MirrorError.unsupported(reason)
      }
      return record["entities"] != nil
    }
    if tables.contains("_strata_metadata") {
      let json = try connection.query("SELECT value FROM \"\(schema)\"._strata_metadata WHERE key = 'model'").first?.first ?? nil
      if let json, let stored = try? ObjectModel.decode(jsonData: Data(json.utf8)),
        let reason = MirrorModel.mismatch(
          hub: mine, other: MirrorModel.appEntities(of: stored), what: "the Strata store in schema '\(schema)'")
      {
        throw MirrorError.unsupported(reason)
      }
      return false
    }
    let others = tables.filter { !$0.hasPrefix("strata_mirror_") }
    guard others.isEmpty else {
      throw MirrorError.unsupported(
        "the schema '\(schema)' holds \(others.count) \(others.count == 1 ? "table" : "tables") that are neither a mirror hub "
          + "nor a Strata store (\(others.sorted().prefix(3).joined(separator: ", "))); nothing was changed")
    }
    return false
  }

  /// Creates the hub's tables when they are missing, records the model and the policies when the schema
  /// holds no record of them (or of some of the model's entities), and refuses this hub when its policies
  /// differ from the recorded ones; returns the hub's model.
  private func createTables(_ connection: HubConnection) throws -> StoredModel {
    // `IF NOT EXISTS` notices ("already exists, skipping") would go to standard error on every connection.
    try connection.query("SET client_min_messages TO warning")
    let recorded = try checkSchema(connection)
    try connection.query("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"")
    try connection.query(
      "CREATE TABLE IF NOT EXISTS \(table("log")) (position bigint PRIMARY KEY, replica uuid NOT NULL, "
        + "local_sequence bigint NOT NULL, changes text NOT NULL)")
    try connection.query(
      "CREATE TABLE IF NOT EXISTS \(table("keys")) (replica uuid NOT NULL, local_sequence bigint NOT NULL, "
        + "position bigint NOT NULL, receipt text NOT NULL, PRIMARY KEY (replica, local_sequence))")
    try connection.query(
      "CREATE TABLE IF NOT EXISTS \(table("objects")) (id uuid PRIMARY KEY, entity text NOT NULL, "
        + "deleted_at bigint, state text NOT NULL)")
    try connection.query(
      "CREATE TABLE IF NOT EXISTS \(table("conflicts")) (id bigserial PRIMARY KEY, position bigint NOT NULL, "
        + "conflict text NOT NULL)")
    try connection.query("CREATE TABLE IF NOT EXISTS \(table("model")) (key text PRIMARY KEY, value text NOT NULL)")
    return try inModelTransaction(connection) {
      // The model the hub was created with (or first reached with, for a hub made before the record existed).
      if !recorded { try record(model, connection, replacing: false) }
      try agreeOnPolicies(connection, entities: MirrorModel.appEntities(of: model))
      return try readModel(connection)
    }
  }

  /// Runs `body` in a transaction of its own holding the model table's lock (one replica at a time records
  /// or compares), committed when it returns, rolled back when it throws.
  private func inModelTransaction<R>(_ connection: HubConnection, _ body: () throws -> R) throws -> R {
    try connection.query("BEGIN")
    do {
      try connection.query("LOCK TABLE \(table("model")) IN SHARE ROW EXCLUSIVE MODE")
      let result = try body()
      try connection.query("COMMIT")
      return result
    } catch {
      connection.rollBack()
      throw error
    }
  }

  /// Writes `recorded` as the hub's model (`replacing` one already there, else only where there is none).
  private func record(_ recorded: ObjectModel, _ connection: HubConnection, replacing: Bool) throws {
    let record = [
      ("format", "strata-mirror-hub-1"), ("fingerprint", recorded.fingerprint),
      ("entities", MirrorModel.appEntities(of: recorded).joined(separator: ",")),
      ("model", String(decoding: try recorded.jsonData(), as: UTF8.self)),
    ]
    for (key, value) in record {
      try connection.query(
        "INSERT INTO \(table("model")) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO "
          + (replacing ? "UPDATE SET value = excluded.value" : "NOTHING"), [key, value])
    }
  }

  /// The hub's model as its schema records it (this hub's own when the record cannot be read).
  private func readModel(_ connection: HubConnection) throws -> StoredModel {
    let rows = try connection.query("SELECT key, value FROM \(table("model")) WHERE key IN ('fingerprint', 'model')")
    let record = Dictionary(rows.compactMap { row in row.count == 2 ? row[0].map { ($0, row[1] ?? "") } : nil }) { $1 }
    guard let json = record["model"], let decoded = try? ObjectModel.decode(jsonData: Data(json.utf8)) else {
      return StoredModel(fingerprint: model.fingerprint, model: model)
    }
    return StoredModel(fingerprint: record["fingerprint"] ?? decoded.fingerprint, model: decoded)
  }

  /// Refuses this hub when its policy for one of `entities` differs from the one the hub's schema recorded
  /// (`strata_mirror_model`, key `policies`: each entity's ``MirrorPolicy/recordedName`` as JSON); records
  /// those of the entities it has no record of. Runs inside `inModelTransaction`.
  private func agreeOnPolicies(_ connection: HubConnection, entities: [String]) throws {
    let text = try connection.query("SELECT value FROM \(table("model")) WHERE key = 'policies'").first?.first ?? nil
    let recorded = try text.map { try decode([String: String].self, $0) } ?? [:]
    let mine = policies.recorded(for: entities)
    if let reason = MirrorPolicies.disagreement(hub: recorded, mine: mine) {
      throw MirrorError.unsupported(reason)
    }
    let merged = recorded.merging(mine) { kept, _ in kept }
    guard merged != recorded else { return }
    try connection.query(
      "INSERT INTO \(table("model")) (key, value) VALUES ('policies', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      [try encode(merged)])
  }

  private func table(_ name: String) -> String { "\"\(schema)\".strata_mirror_\(name)" }

  /// The schema's notification channel; PostgreSQL keeps 63 bytes of a channel name (the schema is ASCII).
  private var channel: String { String("strata_mirror_\(schema)".prefix(63)) }

  private func encode(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return String(decoding: try encoder.encode(value), as: UTF8.self)
  }

  private func decode<T: Decodable>(_ type: T.Type, _ text: String?) throws -> T {
    guard let text else { throw MirrorError.hubFailed("a hub row holds no \(type)") }
    return try JSONDecoder().decode(type, from: Data(text.utf8))
  }
}

/// Makes ``PostgresHub``s for `postgresql://` and `postgres://` locations, for
/// `PersistentContainer.startMirroring(hubs:)`.
///
/// ```swift
/// let mirror = try container.startMirroring(hubs: [PostgresHubFactory(defaultSchema: "potatoes_hub")])
/// ```
public struct PostgresHubFactory: MirrorHubFactory {
  /// The schema of a location that names none.
  public let defaultSchema: String
  /// The conflict rules of the hubs it makes (every replica must be given the same).
  public let policies: MirrorPolicies
  /// How its hubs open the server's own Strata store to keep it up to date after each round (`nil`: they
  /// leave it alone).
  public let serverStore: PostgresHub.ServerStoreOpener?

  /// A factory whose hubs use `defaultSchema` when a location names no schema, settle conflicts by
  /// `policies` and, given `serverStore`, keep the server's own Strata store up to date.
  ///
  /// ```swift
  /// let hubs = PostgresHubFactory(defaultSchema: "potatoes_hub", policies: MirrorPolicies(entities: ["Tasting": MirrorPolicy(conflicts: .hubWins)]))
  /// ```
  public init(defaultSchema: String, policies: MirrorPolicies = .standard, serverStore: PostgresHub.ServerStoreOpener? = nil) {
    self.defaultSchema = defaultSchema
    self.policies = policies
    self.serverStore = serverStore
  }

  public func accepts(_ location: String) -> Bool {
    location.hasPrefix("postgresql://") || location.hasPrefix("postgres://")
  }

  public func makeHub(at location: String, model: ObjectModel) throws -> any MirrorHub {
    try PostgresHub(
      location: location, defaultSchema: defaultSchema, model: model, policies: policies, serverStore: serverStore)
  }
}
