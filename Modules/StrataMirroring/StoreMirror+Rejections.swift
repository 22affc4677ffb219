import Foundation
import Strata

/// A local transaction the hub refused: kept in the replica's rejected list, with the hub's reason, until
/// it is retried (``StoreMirror/retryRejected(_:)``) or discarded (``StoreMirror/discardRejected(_:)``).
/// The transactions after it were pushed as usual.
///
/// ```swift
/// for rejected in try mirror.rejected() { print(rejected.localSequence, rejected.reason) }
/// ```
public struct RejectedTransaction: Sendable, Hashable, Codable {
  /// The local history sequence of the transaction (its idempotency key with the replica).
  public var localSequence: Int64
  /// Why the hub refused it, one line.
  public var reason: String
  /// When the hub last refused it.
  public var rejectedAt: Date
  /// The transaction as it was pushed.
  public var transaction: MirrorTransaction

  /// A rejected transaction.
  ///
  /// ```swift
  /// let pushed = MirrorTransaction(replicaID: UUID(), localSequence: 4, basePosition: 0, changes: [])
  /// let rejected = RejectedTransaction(localSequence: 4, reason: "no entity Crate", rejectedAt: Date(), transaction: pushed)
  /// ```
  public init(localSequence: Int64, reason: String, rejectedAt: Date, transaction: MirrorTransaction) {
    self.localSequence = localSequence
    self.reason = reason
    self.rejectedAt = rejectedAt
    self.transaction = transaction
  }
}

extension StoreMirror {
  /// The local transactions the hub refused, oldest first. They are not pending: later transactions went
  /// on without them.
  ///
  /// ```swift
  /// let refused = try mirror.rejected()
  /// ```
  ///
  /// - Throws: a `StoreError` when the local store cannot be read.
  public func rejected() throws -> [RejectedTransaction] {
    let context = mirrorContext()
    return try context.performAndWait { try MirrorState(context).rejected }
  }

  /// Pushes the rejected transactions again (those with the given local sequences, or all), then pulls.
  /// Each is sent with its objects' current values (an object deleted since sends nothing) and the
  /// current pulled position as its base; one the hub accepts leaves the list, one it refuses again stays
  /// with the new reason.
  ///
  /// ```swift
  /// let report = try await mirror.retryRejected()
  /// print("accepted \(report.pushed), still refused \(report.rejected)")
  /// ```
  ///
  /// - Throws: the errors of ``sync()``.
  public func retryRejected(_ localSequences: Set<Int64>? = nil) async throws -> SyncReport {
    try await round { report in try await self.pushRejected(localSequences, into: &report) }
  }

  /// Removes rejected transactions from the list (those with the given local sequences, or all), undoes
  /// what they left on this replica, and returns them. The hub's current values come back, read with
  /// ``MirrorHub/objects(_:)``: an object such a transaction created that the hub does not hold is deleted,
  /// one it deleted that the hub holds comes back with the hub's values and relationships, and the fields
  /// it changed take the hub's values — except those a local transaction not pushed yet has changed since
  /// (that push carries them). All in one save of the mirror's (never pushed), with the list's change.
  ///
  /// ```swift
  /// let dropped = try await mirror.discardRejected([4])
  /// ```
  ///
  /// - Throws: ``MirrorError/hubUnreachable(_:)`` when the hub cannot be reached (nothing is changed); a
  ///   `StoreError` when the local store cannot be written.
  @discardableResult
  public func discardRejected(_ localSequences: Set<Int64>? = nil) async throws -> [RejectedTransaction] {
    let chosen = try rejected().filter { localSequences?.contains($0.localSequence) ?? true }
    guard !chosen.isEmpty else { return [] }
    let context = mirrorContext()
    let current: [UUID: MirrorObject]
    let referring: [UUID: MirrorObject]
    let adopted: [UUID: UUID]
    let neighbours: [UUID: Neighbour]
    do {
      let probe = mirrorContext()
      let named = Set(chosen.flatMap { $0.transaction.changes.map(\.globalID) })
      let identity = try probe.performAndWait {
        var state = try MirrorState(probe)
        return self.identity(of: try state.requireReplicaID(in: probe))
      }
      (adopted, neighbours) = try probe.performAndWait { try Self.neighbourhood(of: chosen, identity: identity, in: probe) }
      current = try await hub.objects(named.union(adopted.values).union(neighbours.keys))
      // The objects coming back (deleted here, held by the hub) lost the references to them that pulls
      // brought while their delete waited: the hub's objects naming them give those back.
      let comingBack = try probe.performAndWait {
        try Set(current.filter { try identity.liveObject($0.key, entity: $0.value.entityName, in: probe) == nil }.keys)
      }
      referring =
        comingBack.isEmpty
        ? [:]
        : try await hub.objects(referringTo: comingBack)
          .mapValues { MirrorObject(entityName: $0.entityName, fields: $0.fields.filter { $0.value.names(anyOf: comingBack) }) }
    } catch {
      note(error)
      throw error
    }
    let sequences = Set(chosen.map(\.localSequence))
    return try context.performAndWait {
      var state = try MirrorState(context)
      let dropped = state.rejected.filter { sequences.contains($0.localSequence) }
      guard !dropped.isEmpty else { return [] }
      let kept = state.rejected.filter { !sequences.contains($0.localSequence) }
      let replica = try state.requireReplicaID(in: context)
      let identity = identity(of: replica)
      var pending = PendingLocalWork()
      try pending.catchUp(after: state.acknowledged, in: context)
      var applier = PullApplier(context: context, model: container.model, identity: identity)
      try applier.notePending(pending.transactions, refused: kept)
      var references = referring.map {
        MirrorChange(globalID: $0.key, entityName: $0.value.entityName, kind: .update, fields: $0.value.fields)
      }
      // Objects related here to one a refused insert created, which the discard deletes: each takes the
      // hub's value of its side first, so that no delete rule of the deleted object reaches it.
      for (id, neighbour) in neighbours where neighbour.partners.contains(where: { current[$0] == nil }) {
        guard let object = current[id] else { continue }
        let fields = object.fields.filter { neighbour.fields.contains($0.key) }
        if !fields.isEmpty {
          references.append(MirrorChange(globalID: id, entityName: object.entityName, kind: .update, fields: fields))
        }
      }
      let undo = MirrorLogEntry(
        position: state.pulled, replicaID: replica, localSequence: 0,
        changes: try undoing(dropped, keeping: kept, hubHolds: current, adopted: adopted, identity: identity, in: context)
          + references)
      try applier.lookUp(namesIn: [undo][...])
      try applier.apply(undo, isOwn: false)
      try state.setRejected(kept, in: context)
      try context.save()
      return dropped
    }
  }

  /// An object related here to objects refused inserts created: which of them (`partners`), and its fields
  /// that relate it to them (their relationships' inverses).
  struct Neighbour {
    var fields: Set<String> = []
    var partners: Set<UUID> = []
  }

  /// For the objects `transactions` name: those that a pulled insert of their key took as its twin, by the
  /// identity they took (the hub's values of that identity come back to them), and the objects related here
  /// to those the transactions inserted, by global identity.
  private static func neighbourhood(
    of transactions: [RejectedTransaction], identity: GlobalIdentity, in context: ObjectContext
  ) throws -> (adopted: [UUID: UUID], neighbours: [UUID: Neighbour]) {
    var adopted: [UUID: UUID] = [:]
    var neighbours: [UUID: Neighbour] = [:]
    for change in transactions.flatMap(\.transaction.changes) {
      guard let local = identity.localObjectID(for: change.globalID), let object = try? context.existingObject(with: local),
        !object.isDeleted
      else { continue }
      if case .uuid(let taken)? = object.primitiveValue(forKey: MirrorModel.identityAttribute), taken != change.globalID {
        adopted[change.globalID] = taken
        continue
      }
      guard change.kind == .insert else { continue }
      for rel in object.entity.relationships {
        guard let inverse = rel.inverse else { continue }
        for other in object.related(rel) {
          guard let id = identity.globalID(of: other) else { continue }
          neighbours[id, default: Neighbour()].fields.insert(inverse)
          neighbours[id, default: Neighbour()].partners.insert(change.globalID)
        }
      }
    }
    return (adopted, neighbours)
  }

  /// The changes that set what `dropped` changed back to the hub's state `hub`: a hub's object as
  /// `restored` (every field when it is gone here, else the fields `dropped` changed), an object the hub
  /// does not hold as a delete — unless a rejected transaction still listed (`kept`) created it. An object a
  /// pulled insert took as its twin is named by the identity it took (`adopted`), and gets all its fields.
  private func undoing(
    _ dropped: [RejectedTransaction], keeping kept: [RejectedTransaction], hubHolds hub: [UUID: MirrorObject],
    adopted: [UUID: UUID], identity: GlobalIdentity, in context: ObjectContext
  ) throws -> [MirrorChange] {
    let createdByKept = Set(kept.flatMap { $0.transaction.changes.filter { $0.kind == .insert }.map(\.globalID) })
    var order: [UUID] = []
    var touched: [UUID: (entityName: String, fields: Set<String>?)] = [:]
    for change in dropped.flatMap(\.transaction.changes) where change.kind != .merged && change.kind != .restored {
      let id = adopted[change.globalID] ?? change.globalID
      if touched[id] == nil {
        order.append(id)
        touched[id] = (change.entityName, [])
      }
      // An insert or a delete changed every field.
      if change.kind == .update { touched[id]?.fields?.formUnion(change.fields.keys) } else { touched[id]?.fields = nil }
    }
    return try order.compactMap { id -> MirrorChange? in
      guard let (entityName, names) = touched[id] else { return nil }
      guard let object = hub[id] else {
        return createdByKept.contains(id) ? nil : MirrorChange(globalID: id, entityName: entityName, kind: .delete)
      }
      let isHere = try identity.liveObject(id, entity: object.entityName, in: context) != nil
      let fields = isHere ? object.fields.filter { names?.contains($0.key) ?? true } : object.fields
      return MirrorChange(globalID: id, entityName: object.entityName, kind: .restored, fields: fields)
    }
  }

  private func pushRejected(_ localSequences: Set<Int64>?, into report: inout SyncReport) async throws {
    try await reachHub()
    let retries = try refreshedRejections(localSequences)
    var accepted: [Int64: Int64] = [:]
    var refused: [RejectedTransaction] = []
    do {
      for transaction in retries {
        if let receipt = try await pushOrReject(transaction, into: &report, rejections: &refused) {
          accepted[transaction.localSequence] = receipt.position
        }
      }
    } catch {
      try recordRetries(accepted: accepted, refused: refused)
      throw error
    }
    try recordRetries(accepted: accepted, refused: refused)
  }

  /// The chosen rejected transactions with their objects' current values and the current base.
  private func refreshedRejections(_ localSequences: Set<Int64>?) throws -> [MirrorTransaction] {
    let context = mirrorContext()
    return try context.performAndWait {
      let state = try MirrorState(context)
      guard let replica = state.replicaID else { return [] }
      let identity = identity(of: replica)
      return try state.rejected.filter { localSequences?.contains($0.localSequence) ?? true }.map { entry in
        var transaction = entry.transaction
        transaction.basePosition = state.pulled
        // Not waiting, its fields took what pulls brought: the current base is theirs.
        transaction.fieldBases = [:]
        transaction.changes = try transaction.changes.compactMap { change in
          guard change.kind != .delete else { return change }
          guard let entity = container.model.entity(named: change.entityName),
            let object = try identity.liveObject(change.globalID, entity: entity.name, in: context)
          else { return nil }
          var current = change
          current.fields = currentFields(
            of: object, entity: entity, only: change.kind == .insert ? nil : Set(change.fields.keys), identity: identity)
          return current
        }
        return transaction
      }
    }
  }

  private func recordRetries(accepted: [Int64: Int64], refused: [RejectedTransaction]) throws {
    guard !accepted.isEmpty || !refused.isEmpty else { return }
    let context = mirrorContext()
    try context.performAndWait {
      var state = try MirrorState(context)
      let kept = state.rejected.filter { accepted[$0.localSequence] == nil }
      try state.setRejected(kept + refused, in: context)
      if let position = accepted.values.max() { try state.setPushed(position, in: context) }
      try context.save()
    }
  }
}
