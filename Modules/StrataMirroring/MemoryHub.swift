import Foundation
import StrataCore
import Synchronization

/// A hub held in memory: the same merge rules as every hub (``HubLedger``), applied under a lock, for
/// fast deterministic simulations of many replicas. It can be switched off (``isReachable``) and told
/// to lose the reply of the next push after applying it, to test offline work and retries.
///
/// ```swift
/// let hub = MemoryHub(model: container.model)
/// let mirror = try StoreMirror(container: container, hub: hub)
/// hub.isReachable = false  // sync() now throws MirrorError.hubUnreachable
/// ```
public final class MemoryHub: MirrorHub {
  private struct State {
    var ledger: HubLedger
    /// The recorded name of each entity's conflict policy (see ``MirrorPolicies``).
    var policies: [String: String]
    var isReachable = true
    var losesReplies = 0
  }

  private let state: Locked<State>
  private let listeners: Locked<[UUID: AsyncStream<Int64>.Continuation]>
  /// The model this hub object was built with.
  private let model: ObjectModel
  /// The conflict rules this hub object merges its pushes by.
  private let policies: MirrorPolicies

  /// An empty hub for objects of `model`, settling conflicts by `policies` (default: the later push wins a
  /// field, a delete wins over an update), which it records.
  ///
  /// ```swift
  /// let hub = MemoryHub(model: try ObjectModel(Potato.self, Tasting.self))
  /// let strict = MemoryHub(model: model, policies: MirrorPolicies(defaultPolicy: MirrorPolicy(conflicts: .hubWins)))
  /// ```
  public init(model: ObjectModel, policies: MirrorPolicies = .standard) {
    state = Locked(
      State(
        ledger: HubLedger(model: model, policies: policies),
        policies: policies.recorded(for: MirrorModel.appEntities(of: model))))
    listeners = Locked([:])
    self.model = model
    self.policies = policies
  }

  /// Another hub object on `hub`'s state, as another process's `PostgresHub` on the same schema: its pushes
  /// are merged by `policies`, and it is refused, as `hub` is, when they differ from those the hub recorded;
  /// ``admit(replicaOf:)`` of a newer model upgrades the model of both.
  ///
  /// ```swift
  /// let hub = MemoryHub(model: model)
  /// let otherProcess = MemoryHub(sharing: hub, model: model, policies: MirrorPolicies(defaultPolicy: MirrorPolicy(conflicts: .hubWins)))
  /// ```
  public init(sharing hub: MemoryHub, model: ObjectModel, policies: MirrorPolicies = .standard) {
    state = hub.state
    listeners = hub.listeners
    self.model = model
    self.policies = policies
  }

  /// Whether pushes and pulls reach the hub; `false` makes them throw ``MirrorError/hubUnreachable(_:)``.
  public var isReachable: Bool {
    get { state.withLock { $0.isReachable } }
    set { state.withLock { $0.isReachable = newValue } }
  }

  /// Makes the next `count` pushes apply their transaction and then throw as if the reply was lost.
  ///
  /// ```swift
  /// hub.loseReplies(1)
  /// ```
  public func loseReplies(_ count: Int) {
    state.withLock { $0.losesReplies += count }
  }

  /// A copy of the hub's state: objects, log, idempotency keys and conflicts.
  public var ledger: HubLedger { state.withLock { $0.ledger } }

  /// Applies `transaction` once (see ``HubLedger/apply(_:)``); a new entry is announced to every
  /// ``newPositions()`` stream.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when switched off or losing this reply;
  ///   ``MirrorError/rejected(_:)`` when the transaction does not fit the hub's model.
  public func push(_ transaction: MirrorTransaction) async throws -> MirrorReceipt {
    let (receipt, losesReply) = try state.withLock { state in
      guard state.isReachable else { throw MirrorError.hubUnreachable("the memory hub is switched off") }
      try agreeOnPolicies(for: MirrorModel.appEntities(of: model), &state)
      state.ledger.policies = policies
      let receipt = try state.ledger.apply(transaction)
      let losesReply = state.losesReplies > 0
      if losesReply { state.losesReplies -= 1 }
      return (receipt, losesReply)
    }
    if !receipt.wasDuplicate {
      for listener in listeners.withLock({ Array($0.values) }) { listener.yield(receipt.position) }
    }
    if losesReply { throw MirrorError.hubUnreachable("the memory hub lost the reply to a push it applied") }
    return receipt
  }

  /// The position of every push the hub accepts from now on, as it accepts it.
  ///
  /// ```swift
  /// for await position in hub.newPositions() { print("the hub is at \(position)") }
  /// ```
  public func newPositions() -> AsyncStream<Int64> {
    let (stream, continuation) = AsyncStream.makeStream(of: Int64.self, bufferingPolicy: .bufferingNewest(16))
    let id = UUID()
    listeners.withLock { $0[id] = continuation }
    continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.removeValue(forKey: id) } }
    return stream
  }

  /// The log entries after `position`.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when switched off.
  public func pull(after position: Int64, limit: Int) async throws -> [MirrorLogEntry] {
    try state.withLock { state in
      guard state.isReachable else { throw MirrorError.hubUnreachable("the memory hub is switched off") }
      return state.ledger.entries(after: position, limit: limit)
    }
  }

  /// Every conflict resolved so far.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when switched off.
  public func conflicts() async throws -> [MirrorConflict] {
    try state.withLock { state in
      guard state.isReachable else { throw MirrorError.hubUnreachable("the memory hub is switched off") }
      return state.ledger.conflicts
    }
  }

  /// The live objects among `ids`, with their current fields.
  ///
  /// ```swift
  /// let id = UUID()  // an object's global identity, as a pulled entry names it
  /// let current = try await hub.objects([id])
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when switched off.
  public func objects(_ ids: Set<UUID>) async throws -> [UUID: MirrorObject] {
    try state.withLock { state in
      guard state.isReachable else { throw MirrorError.hubUnreachable("the memory hub is switched off") }
      return Self.live(ids, in: state.ledger)
    }
  }

  /// The live objects whose fields name one of `ids`, with their current fields.
  ///
  /// ```swift
  /// let id = UUID()  // an object's global identity, as a pulled entry names it
  /// let referring = try await hub.objects(referringTo: [id])
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when switched off.
  public func objects(referringTo ids: Set<UUID>) async throws -> [UUID: MirrorObject] {
    try state.withLock { state in
      guard state.isReachable else { throw MirrorError.hubUnreachable("the memory hub is switched off") }
      return Self.live(ids.flatMap { state.ledger.referrers(of: $0) }, in: state.ledger)
    }
  }

  /// The live objects of `ledger` among `ids`, as they travel.
  private static func live(_ ids: some Sequence<UUID>, in ledger: HubLedger) -> [UUID: MirrorObject] {
    var found: [UUID: MirrorObject] = [:]
    for id in ids {
      guard let object = ledger.objects[id], object.deletedAt == nil else { continue }
      found[id] = MirrorObject(entityName: object.entityName, fields: object.fields)
    }
    return found
  }

  /// Refuses a replica of another app's model than the hub's, or one whose hub object was given other
  /// conflict policies than the hub recorded (see ``MirrorHub/admit(replicaOf:)``); takes a newer version of
  /// the model as the hub's (the policies of its new entities recorded).
  ///
  /// ```swift
  /// try await hub.admit(replicaOf: container.model)
  /// ```
  ///
  /// - Throws: ``MirrorError/unsupported(_:)`` naming the entities of both models, or the entity whose
  ///   policies differ and both policies; nothing is changed.
  public func admit(replicaOf replica: ObjectModel) async throws {
    try state.withLock { state in
      if let reason = MirrorModel.mismatch(
        hub: MirrorModel.appEntities(of: state.ledger.model), other: MirrorModel.appEntities(of: replica),
        what: "this replica's model")
      {
        throw MirrorError.unsupported(reason)
      }
      let entities = Set(MirrorModel.appEntities(of: model) + MirrorModel.appEntities(of: replica))
      try agreeOnPolicies(for: entities.sorted(), &state)
      if MirrorModel.isNewer(replica, than: state.ledger.model) { state.ledger.adopt(replica) }
    }
  }

  /// Refuses this hub object when its policies for `entities` differ from those the hub recorded; records
  /// those of the entities the hub has no record of.
  private func agreeOnPolicies(for entities: [String], _ state: inout State) throws {
    let mine = policies.recorded(for: entities)
    if let reason = MirrorPolicies.disagreement(hub: state.policies, mine: mine) {
      throw MirrorError.unsupported(reason)
    }
    state.policies.merge(mine) { recorded, _ in recorded }
  }

  /// The last position given.
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when switched off.
  public func lastPosition() async throws -> Int64 {
    try state.withLock { state in
      guard state.isReachable else { throw MirrorError.hubUnreachable("the memory hub is switched off") }
      return state.ledger.lastPosition
    }
  }
}
