import Foundation
import Strata

extension StoreMirror {
  /// The local transactions to push, built from the history after the acknowledged token.
  struct Outbox {
    var transactions: [(token: HistoryToken, transaction: MirrorTransaction)] = []
    /// The last history token read, the mirror's own transactions included.
    var scannedThrough: HistoryToken?
    /// How many of the mirror's own transactions the read skipped.
    var skipped = 0
  }

  /// Pushes the outbox one transaction at a time; records the acknowledged token (and the last pushed
  /// position) in the local store after the last success, also when a later push fails. A transaction
  /// the hub refuses is kept in the rejected list, saved with the acknowledged token that passes it, and
  /// the push goes on. The hub is reached before anything local is written: offline, the store is left
  /// as it was.
  func push(into report: inout SyncReport) async throws {
    try await reachHub()
    try reach(.beforePush)
    let outbox = try prepareOutbox()
    var acknowledged: (token: HistoryToken, position: Int64?)?
    var rejections: [RejectedTransaction] = []
    do {
      for (token, transaction) in outbox.transactions {
        if let receipt = try await pushOrReject(transaction, into: &report, rejections: &rejections) {
          acknowledged = (token, receipt.position)
          try reach(.afterPush)
        } else {
          acknowledged = (token, acknowledged?.position)
        }
      }
    } catch let killed as MirrorFailpoint.Killed {
      // A test's kill: a killed process records nothing more.
      throw killed
    } catch {
      if let acknowledged { try recordAcknowledged(acknowledged.token, position: acknowledged.position, rejections: rejections) }
      throw error
    }
    // The mirror's own transactions need no acknowledgment: skipping a few on every read is cheaper than a
    // save of the token (itself one more transaction of the mirror) after every sync.
    if let last = outbox.scannedThrough, !outbox.transactions.isEmpty || outbox.skipped > 32 {
      try recordAcknowledged(last, position: acknowledged?.position, rejections: rejections)
    }
  }

  /// Pushes one transaction; `nil` when the hub refused it (then added to `rejections`, counted and
  /// reported as an event).
  func pushOrReject(
    _ transaction: MirrorTransaction, into report: inout SyncReport, rejections: inout [RejectedTransaction]
  ) async throws -> MirrorReceipt? {
    let started = Date()
    do {
      let receipt = try await hub.push(transaction)
      report.pushed += 1
      report.conflicts += receipt.conflicts.count
      noteHubPosition(receipt.position)
      return receipt
    } catch MirrorError.rejected(let reason) {
      rejections.append(
        RejectedTransaction(
          localSequence: transaction.localSequence, reason: reason, rejectedAt: started, transaction: transaction))
      report.rejected += 1
      emit(MirrorEvent(kind: .rejection, count: 1, startedAt: started, error: reason))
      return nil
    }
  }

  private func recordAcknowledged(_ token: HistoryToken, position: Int64?, rejections: [RejectedTransaction]) throws {
    let context = mirrorContext()
    try context.performAndWait {
      var state = try MirrorState(context)
      if state.acknowledged.map({ $0.sequence < token.sequence }) ?? true {
        try state.setAcknowledged(token, position: position, in: context)
      }
      if !rejections.isEmpty { try state.setRejected(state.rejected + rejections, in: context) }
      if context.hasChanges { try context.save() }
    }
  }

  /// Reads the history after the acknowledged token and turns each local transaction into a
  /// `MirrorTransaction`. Global identities need no write (see `GlobalIdentity`), so a retry sends the
  /// same identities and the app's objects keep their versions.
  func prepareOutbox() throws -> Outbox {
    let context = mirrorContext()
    return try context.performAndWait {
      var state = try MirrorState(context)
      let replica = try state.requireReplicaID(in: context)
      if context.hasChanges { try context.save() }
      let identity = identity(of: replica)
      guard case .transactions(let all) = try context.execute(.fetchHistory(after: state.acknowledged)) else {
        return Outbox()
      }
      var outbox = Outbox(scannedThrough: all.last?.token, skipped: all.count { $0.author == Self.author })
      for transaction in all where transaction.author != Self.author {
        let changes = transaction.changes.compactMap { mirrorChange(for: $0, identity: identity, in: context) }
        var pushed = MirrorTransaction(
          replicaID: replica, localSequence: transaction.token.sequence, basePosition: state.pulled, changes: changes)
        pushed.fieldBases = Self.fieldBases(of: changes, state.fieldBases)
        outbox.transactions.append((transaction.token, pushed))
      }
      // Nothing waits any more: no pull leaves a field alone, and no base of one is needed.
      if outbox.transactions.isEmpty && !state.fieldBases.isEmpty {
        try state.setFieldBases([:], in: context)
        try context.save()
      }
      return outbox
    }
  }

  /// The recorded field bases (`MirrorState.fieldBases`) of the fields `changes` carry.
  static func fieldBases(of changes: [MirrorChange], _ recorded: [UUID: [String: Int64]]) -> [UUID: [String: Int64]] {
    var bases: [UUID: [String: Int64]] = [:]
    for change in changes {
      guard let fields = recorded[change.globalID] else { continue }
      let carried = fields.filter { change.fields[$0.key] != nil }
      if !carried.isEmpty { bases[change.globalID] = carried }
    }
    return bases
  }

  /// The change as it travels: an insert with every field, an update with the changed fields, a delete
  /// as a tombstone. `nil` for an object gone since (a later transaction deletes it) or never pushed.
  private func mirrorChange(for change: HistoryChange, identity: GlobalIdentity, in context: ObjectContext) -> MirrorChange? {
    guard let entity = container.model.entity(named: change.objectID.entityName), entity.name != MirrorModel.stateEntity
    else { return nil }
    if change.changeType == .delete {
      guard let id = identity.globalID(of: change.objectID, stored: change.tombstone[MirrorModel.identityAttribute])
      else { return nil }
      return MirrorChange(globalID: id, entityName: entity.name, kind: .delete)
    }
    guard let object = try? context.existingObject(with: change.objectID), !object.isDeleted else { return nil }
    let fields = currentFields(
      of: object, entity: entity, only: change.changeType == .insert ? nil : Set(change.updatedProperties), identity: identity)
    if change.changeType == .update && fields.isEmpty { return nil }
    guard let id = identity.globalID(of: object)
    else { return nil }
    return MirrorChange(
      globalID: id, entityName: entity.name, kind: change.changeType == .insert ? .insert : .update,
      fields: fields)
  }

  /// The object's fields as they travel now (all of them, or those named in `only`): attribute values,
  /// to-one targets by global identity, and the lists of the to-many relationships that travel.
  func currentFields(
    of object: ManagedObject, entity: EntityDescription, only names: Set<String>?, identity: GlobalIdentity
  ) -> [String: MirrorField] {
    let (attributes, references, lists) = MirrorModel.fields(of: entity, in: container.model)
    var fields: [String: MirrorField] = [:]
    for name in attributes where names?.contains(name) ?? true {
      fields[name] = .value(object.primitiveValue(forKey: name) ?? .null)
    }
    for name in references where names?.contains(name) ?? true {
      let target = object.value(forKey: name) as? ManagedObject
      fields[name] = .reference(target.flatMap(identity.globalID(of:)))
    }
    for name in lists where names?.contains(name) ?? true {
      guard let rel = entity.relationship(named: name) else { continue }
      let ids = object.related(rel).compactMap(identity.globalID(of:))
      fields[name] = .references(rel.isOrdered ? ids : ids.sorted(by: HubLedger.byIdentity))
    }
    return fields
  }
}
