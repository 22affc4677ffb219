import Foundation
import StrataCore

/// The shared side of mirroring: it applies each replica transaction once, merges it field by field and
/// gives every accepted transaction a position in one total order that replicas pull.
///
/// A hub is injected by the composition root (an app, a tool or a test); the mirroring engine never
/// imports a backend.
///
/// ```swift
/// let hub = MemoryHub(model: container.model)
/// let mirror = try StoreMirror(container: container, hub: hub)
/// let report = try await mirror.sync()
/// ```
public protocol MirrorHub: Sendable {
  /// Applies `transaction` in one hub transaction, exactly once: a second push with the same
  /// (replica, local sequence) returns the first receipt and changes nothing.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached;
  ///   ``MirrorError/rejected(_:)`` when the hub refuses this transaction (it applies nothing of it, and
  ///   the replica goes on with its next one).
  func push(_ transaction: MirrorTransaction) async throws -> MirrorReceipt

  /// The log entries after `position`, in order, at most `limit` of them.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached.
  func pull(after position: Int64, limit: Int) async throws -> [MirrorLogEntry]

  /// Every conflict the hub resolved, in the order of the positions that resolved them.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached.
  func conflicts() async throws -> [MirrorConflict]

  /// The hub's current state of the objects `ids` names: each live one's entity and fields as they travel;
  /// a deleted or unknown identity is absent. A replica reads them to undo what a discarded rejection left
  /// on it (``StoreMirror/discardRejected(_:)``). The default throws ``MirrorError/unsupported(_:)``.
  ///
  /// ```swift
  /// let id = UUID()  // an object's global identity, as a pulled entry names it
  /// let current = try await hub.objects([id])
  /// if let potato = current[id] { print(potato.entityName, potato.fields["variety"] ?? .value(.null)) }
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached.
  func objects(_ ids: Set<UUID>) async throws -> [UUID: MirrorObject]

  /// The hub's live objects whose fields name one of `ids` (a to-one's target, a to-many's member), each
  /// with its entity and fields. A replica that brings back an object it had deleted (a discarded rejected
  /// delete) reads them to bring back the references to it, which its pulls left out while the delete was
  /// waiting. The default throws ``MirrorError/unsupported(_:)``.
  ///
  /// ```swift
  /// let sticker = UUID()  // a sticker's global identity
  /// let referring = try await hub.objects(referringTo: [sticker])
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached.
  func objects(referringTo ids: Set<UUID>) async throws -> [UUID: MirrorObject]

  /// Called by a replica's ``StoreMirror`` at the end of each of its rounds that succeeded: a hub that keeps
  /// something of its own from the log (the PostgreSQL hub's server store) brings it up to date here, and
  /// its error is the round's. The default does nothing.
  ///
  /// ```swift
  /// try await hub.roundEnded(by: mirror)
  /// ```
  func roundEnded(by replica: StoreMirror) async throws

  /// The last position the hub gave, 0 before the first push: how far replicas can pull.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached.
  func lastPosition() async throws -> Int64

  /// A stream of the hub's last position each time it moves on (another push was accepted), for a
  /// replica to pull without waiting (``StoreMirror/startAutomaticSync(debounce:maximumBackoff:)``). It
  /// may skip positions and repeat one; it ends when the caller stops iterating. The default asks
  /// ``lastPosition()`` every second; a hub that can announce its pushes does better.
  ///
  /// ```swift
  /// for await position in hub.newPositions() { print("the hub is at \(position)") }
  /// ```
  func newPositions() -> AsyncStream<Int64>

  /// Refuses a replica of another app's model: `StoreMirror` asks once, before its first request that
  /// could write anything. Models are versions of one app's when one's entity names hold all of the
  /// other's (the mirror's state entity aside); a hub that keeps a model takes a newer version as its own
  /// here, and refuses an older replica's pushes that lack what the newer one requires per transaction
  /// (``MirrorError/rejected(_:)``). `MemoryHub` and `PostgresHub` also refuse a replica whose hub object
  /// was given other conflict policies than they recorded. The default accepts every model.
  ///
  /// ```swift
  /// try await hub.admit(replicaOf: container.model)
  /// ```
  ///
  /// - Throws: ``MirrorError/unsupported(_:)`` naming the entities of both models, or an entity and both
  ///   policies; ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached to tell.
  func admit(replicaOf model: ObjectModel) async throws
}

extension MirrorHub {
  /// Accepts every model (a hub that keeps no model of its own cannot tell).
  ///
  /// ```swift
  /// try await hub.admit(replicaOf: container.model)
  /// ```
  public func admit(replicaOf model: ObjectModel) async throws {}

  /// Asks ``lastPosition()`` every second and yields it when it changed (an unreachable hub is asked
  /// again a second later).
  ///
  /// ```swift
  /// for await position in hub.newPositions() { print("the hub is at \(position)") }
  /// ```
  public func newPositions() -> AsyncStream<Int64> {
    let (stream, continuation) = AsyncStream.makeStream(of: Int64.self, bufferingPolicy: .bufferingNewest(1))
    let task = Task(executorPreference: MirrorExecutor.shared) {
      var last: Int64?
      while !Task.isCancelled {
        if let position = try? await lastPosition(), position != last {
          last = position
          continuation.yield(position)
        }
        try? await Task.sleep(for: .seconds(1))
      }
      continuation.finish()
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
  }

  /// Throws ``MirrorError/unsupported(_:)``: a hub that does not implement it cannot tell its objects.
  ///
  /// ```swift
  /// let id = UUID()  // an object's global identity, as a pulled entry names it
  /// let current = try await hub.objects([id])
  /// ```
  public func objects(_ ids: Set<UUID>) async throws -> [UUID: MirrorObject] {
    throw MirrorError.unsupported("this hub cannot read back its objects (\(type(of: self)) does not implement objects(_:))")
  }

  /// Does nothing: a hub that keeps nothing of its own from the log has nothing to bring up to date.
  ///
  /// ```swift
  /// try await hub.roundEnded(by: mirror)
  /// ```
  public func roundEnded(by replica: StoreMirror) async throws {}

  /// Throws ``MirrorError/unsupported(_:)``: a hub that does not implement it cannot tell its objects.
  ///
  /// ```swift
  /// let id = UUID()  // an object's global identity, as a pulled entry names it
  /// let referring = try await hub.objects(referringTo: [id])
  /// ```
  public func objects(referringTo ids: Set<UUID>) async throws -> [UUID: MirrorObject] {
    throw MirrorError.unsupported(
      "this hub cannot read back its objects (\(type(of: self)) does not implement objects(referringTo:))")
  }
}

/// The value of one mirrored field: an attribute's value, a to-one relationship's target by global
/// identity (`nil` for no target), or the targets of a to-many relationship that travels (an ordered one,
/// in its order; one side of a many-to-many pair, sorted by identity when it is not ordered).
///
/// ```swift
/// let name = MirrorField.value(.string("Russet"))
/// let shelf = MirrorField.reference(UUID())
/// let tastings = MirrorField.references([UUID(), UUID()])
/// ```
public enum MirrorField: Sendable, Hashable, Codable {
  /// An attribute's stored value.
  case value(Value)
  /// A to-one relationship's target, by global identity.
  case reference(UUID?)
  /// A to-many relationship's targets, by global identity: in order for an ordered relationship.
  case references([UUID])
}

extension MirrorField {
  /// Whether the field is a reference to, or a list holding, one of `ids`.
  ///
  /// ```swift
  /// let id = UUID()
  /// let pointsAtIt = MirrorField.reference(id).names(anyOf: [id])  // true
  /// ```
  public func names(anyOf ids: Set<UUID>) -> Bool {
    switch self {
    case .value: false
    case .reference(let target): target.map(ids.contains) ?? false
    case .references(let targets): targets.contains(where: ids.contains)
    }
  }
}

/// One live object as the hub holds it: its entity and the current value of each field that travels.
///
/// ```swift
/// let potato = MirrorObject(entityName: "Potato", fields: ["variety": .value(.string("Russet"))])
/// ```
public struct MirrorObject: Sendable, Hashable, Codable {
  /// The object's entity.
  public var entityName: String
  /// The current value of each field, by attribute or relationship name.
  public var fields: [String: MirrorField]

  /// An object of `entityName` with `fields`.
  ///
  /// ```swift
  /// let potato = MirrorObject(entityName: "Potato", fields: ["variety": .value(.string("Russet"))])
  /// ```
  public init(entityName: String, fields: [String: MirrorField]) {
    self.entityName = entityName
    self.fields = fields
  }
}

/// What happened to one object in a mirrored transaction.
///
/// ```swift
/// let kind = MirrorChange.Kind.update
/// ```
public struct MirrorChange: Sendable, Hashable, Codable {
  /// Insert, update or delete.
  public enum Kind: String, Sendable, Hashable, Codable {
    /// The object was created; `fields` holds every persistent attribute and to-one relationship.
    case insert
    /// The object changed; `fields` holds only the changed fields.
    case update
    /// The object was deleted (a tombstone); `fields` is empty.
    case delete
    /// The object was a second creation of a unique key another replica had created first: the hub merged
    /// it into that object, named by `fields["into"]` (a reference). Only the hub's log holds this kind.
    case merged
    /// A delete the hub refused (a Deny rule: the object still had related objects): the object is alive
    /// again, `fields` holds all its fields. The replica that deleted it creates it again under the same
    /// identity. Only the hub's log holds this kind.
    case restored
  }

  /// The object's global identity, given by the replica that created it.
  public var globalID: UUID
  /// The object's entity.
  public var entityName: String
  /// Insert, update or delete.
  public var kind: Kind
  /// The fields that travel, by attribute or relationship name.
  public var fields: [String: MirrorField]

  /// A change of the object `globalID` of `entityName`.
  ///
  /// ```swift
  /// let change = MirrorChange(globalID: UUID(), entityName: "Potato", kind: .update, fields: ["variety": .value(.string("Russet"))])
  /// ```
  public init(globalID: UUID, entityName: String, kind: Kind, fields: [String: MirrorField] = [:]) {
    self.globalID = globalID
    self.entityName = entityName
    self.kind = kind
    self.fields = fields
  }
}

/// One local transaction of a replica, as pushed to the hub.
///
/// ```swift
/// let pushed = MirrorTransaction(replicaID: UUID(), localSequence: 7, basePosition: 12, changes: [])
/// ```
public struct MirrorTransaction: Sendable, Hashable, Codable {
  /// The replica that made the transaction.
  public var replicaID: UUID
  /// The local history sequence of the transaction; with `replicaID`, the idempotency key.
  public var localSequence: Int64
  /// The last hub position the replica had pulled when it pushed: the base of the three-way merge.
  public var basePosition: Int64
  /// Earlier bases of single fields, by global identity and field name: a field whose pulled change the
  /// replica left alone because a local change of it was waiting to be pushed is based on the position
  /// before that pulled change, not on `basePosition`.
  public var fieldBases: [UUID: [String: Int64]] = [:]
  /// The changed objects, in the order the local transaction listed them.
  public var changes: [MirrorChange]

  private enum CodingKeys: String, CodingKey {
    case replicaID, localSequence, basePosition, fieldBases, changes
  }

  /// A transaction of `replicaID`.
  ///
  /// ```swift
  /// let pushed = MirrorTransaction(replicaID: UUID(), localSequence: 7, basePosition: 12, changes: [])
  /// ```
  public init(replicaID: UUID, localSequence: Int64, basePosition: Int64, changes: [MirrorChange]) {
    self.replicaID = replicaID
    self.localSequence = localSequence
    self.basePosition = basePosition
    self.changes = changes
  }

  /// Decodes a transaction; one written before `fieldBases` existed has none.
  ///
  /// ```swift
  /// let transaction = try JSONDecoder().decode(MirrorTransaction.self, from: data)
  /// ```
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    replicaID = try container.decode(UUID.self, forKey: .replicaID)
    localSequence = try container.decode(Int64.self, forKey: .localSequence)
    basePosition = try container.decode(Int64.self, forKey: .basePosition)
    fieldBases = try container.decodeIfPresent([UUID: [String: Int64]].self, forKey: .fieldBases) ?? [:]
    changes = try container.decode([MirrorChange].self, forKey: .changes)
  }
}

/// The hub's answer to a push.
///
/// ```swift
/// let pushed = MirrorTransaction(replicaID: UUID(), localSequence: 1, basePosition: 0, changes: [])
/// let receipt = try await hub.push(pushed)
/// print(receipt.position, receipt.conflicts.count)
/// ```
public struct MirrorReceipt: Sendable, Hashable, Codable {
  /// The position the transaction was given.
  public var position: Int64
  /// Whether this push was a retry of an already applied transaction (nothing was applied again).
  public var wasDuplicate: Bool
  /// The conflicts resolved while applying the transaction.
  public var conflicts: [MirrorConflict]

  /// A receipt for the transaction at `position`.
  ///
  /// ```swift
  /// let receipt = MirrorReceipt(position: 3, wasDuplicate: false, conflicts: [])
  /// ```
  public init(position: Int64, wasDuplicate: Bool, conflicts: [MirrorConflict]) {
    self.position = position
    self.wasDuplicate = wasDuplicate
    self.conflicts = conflicts
  }
}

/// One accepted transaction in the hub's total order: the changes as the hub applied them (after the
/// merge and the delete rules), which every replica replays.
///
/// ```swift
/// for entry in try await hub.pull(after: 0, limit: 100) { print(entry.position, entry.changes.count) }
/// ```
public struct MirrorLogEntry: Sendable, Hashable, Codable {
  /// The entry's position; positions start at 1 and have no gaps.
  public var position: Int64
  /// The replica that pushed the transaction.
  public var replicaID: UUID
  /// The replica's local sequence of the transaction.
  public var localSequence: Int64
  /// The resulting changes: merged values, tombstones and the effects of delete rules.
  public var changes: [MirrorChange]

  /// An entry at `position`.
  ///
  /// ```swift
  /// let entry = MirrorLogEntry(position: 1, replicaID: UUID(), localSequence: 1, changes: [])
  /// ```
  public init(position: Int64, replicaID: UUID, localSequence: Int64, changes: [MirrorChange]) {
    self.position = position
    self.replicaID = replicaID
    self.localSequence = localSequence
    self.changes = changes
  }
}

/// A conflict the hub resolved: the same field changed by two replicas, or an object updated by one
/// replica and deleted by another.
///
/// ```swift
/// for conflict in try await mirror.conflicts() where conflict.kind == .deleteVersusUpdate {
///   print(conflict.entityName, conflict.losingFields)
/// }
/// ```
public struct MirrorConflict: Sendable, Hashable, Codable {
  /// What collided.
  public enum Kind: String, Sendable, Hashable, Codable {
    /// The same field changed on two replicas; the entity's ``MirrorConflictPolicy`` settled it.
    case updateVersusUpdate
    /// An object updated on one replica and deleted on another; the entity's ``MirrorDeleteRule`` settled it.
    case deleteVersusUpdate
    /// A delete refused by a Deny rule: the object still had related objects on the hub (`field` names the
    /// relationship that denied it); the object stays, and is restored on the replica that deleted it.
    case deleteDenied
  }

  /// The rule that settled a conflict.
  public enum Rule: String, Sendable, Hashable, Codable {
    /// ``MirrorConflictPolicy/laterPushWins``.
    case laterPushWins
    /// ``MirrorConflictPolicy/hubWins``.
    case hubWins
    /// ``MirrorConflictPolicy/custom(_:)``: the resolver's value was kept.
    case custom
    /// ``MirrorDeleteRule/deleteWins``.
    case deleteWins
    /// ``MirrorDeleteRule/updateWins``.
    case updateWins
    /// A Deny delete rule kept the object.
    case deny
  }

  /// What collided.
  public var kind: Kind
  /// The rule that settled it (`nil` in conflicts recorded before rules were recorded: the standard rules).
  public var rule: Rule? = nil
  /// The values kept, by field name, for a field conflict (the winner's value, or a custom resolver's).
  public var keptFields: [String: MirrorField]? = nil
  /// The object's global identity.
  public var globalID: UUID
  /// The object's entity.
  public var entityName: String
  /// The field (update/update) — `nil` for delete/update.
  public var field: String?
  /// The values that lost, by field name (none when a delete lost).
  public var losingFields: [String: MirrorField]
  /// The replica whose change won, and the position it was given.
  public var winningReplica: UUID
  /// The position of the winning change.
  public var winningPosition: Int64
  /// The replica whose change lost.
  public var losingReplica: UUID
  /// The position of the losing change (for a change that was never applied, the position of the push
  /// that carried it).
  public var losingPosition: Int64

  /// A recorded conflict.
  ///
  /// ```swift
  /// let conflict = MirrorConflict(
  ///   kind: .updateVersusUpdate, globalID: UUID(), entityName: "Potato", field: "variety",
  ///   losingFields: ["variety": .value(.string("Russet"))], winningReplica: UUID(), winningPosition: 9,
  ///   losingReplica: UUID(), losingPosition: 8)
  /// ```
  public init(
    kind: Kind, globalID: UUID, entityName: String, field: String?, losingFields: [String: MirrorField],
    winningReplica: UUID, winningPosition: Int64, losingReplica: UUID, losingPosition: Int64
  ) {
    self.kind = kind
    self.globalID = globalID
    self.entityName = entityName
    self.field = field
    self.losingFields = losingFields
    self.winningReplica = winningReplica
    self.winningPosition = winningPosition
    self.losingReplica = losingReplica
    self.losingPosition = losingPosition
  }
}

/// The errors of mirroring.
///
/// ```swift
/// do { _ = try await mirror.sync() } catch MirrorError.hubUnreachable(let reason) { print("offline: \(reason)") }
/// ```
public enum MirrorError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The hub could not be reached; nothing was lost and the next sync resumes.
  case hubUnreachable(String)
  /// The local store or its model cannot be mirrored (the reason says what to change).
  case unsupported(String)
  /// Another sync of the same mirror is running.
  case syncInProgress
  /// The hub was reached but failed the request (the reason is the hub's message); nothing was applied.
  case hubFailed(String)
  /// The hub refused one pushed transaction (it does not fit the hub's model: an unknown entity or
  /// field, a value of the wrong type or out of its bounds; or it would give an object a unique key another
  /// live object holds); nothing of it was applied. The replica keeps
  /// it in its rejected list (``StoreMirror/rejected()``) and goes on with its next transaction.
  case rejected(String)

  /// One line for a person.
  public var description: String {
    switch self {
    case .hubUnreachable(let reason): "offline: the mirror hub cannot be reached (\(reason)); local saves are kept"
    case .unsupported(let reason): "cannot mirror this store: \(reason)"
    case .syncInProgress: "a sync of this store is already running"
    case .hubFailed(let reason): "the mirror hub failed the request: \(reason)"
    case .rejected(let reason): "the mirror hub refused the transaction: \(reason)"
    }
  }
}
