import Foundation
import StrataCore

/// The conflict policies on the hub (``MirrorPolicies``): a field changed on two replicas, and a delete
/// against an update.
extension HubLedger {
  /// Settles `name`, which the pusher changed to `pushed` while the hub holds another replica's change
  /// (`hubSide`) the pusher had not seen, by the entity's ``MirrorConflictPolicy``; records the conflict
  /// with the winner, the losing value and the value kept, and returns the value to keep.
  mutating func settle(
    _ name: String, of id: UUID, _ object: Object, pushed: MirrorField, hubSide: (replica: UUID, position: Int64),
    _ merge: inout Merge
  ) throws -> MirrorField {
    let previous = object.fields[name]
    let policy = policies.policy(for: object.entityName).conflicts
    var kept = pushed
    switch policy {
    case .laterPushWins: kept = pushed
    case .hubWins: kept = previous ?? pushed
    case .custom(let resolve), .resolver(_, let resolve):
      let base = try baseValue(of: id, field: name, at: self.base(of: id, field: name, merge), merge)
      let resolved = resolve(
        MirrorConflictValues(entityName: object.entityName, field: name, base: base, local: pushed, hub: previous))
      kept = fits(resolved, as: pushed, name, of: object.entityName) ? resolved : (previous ?? pushed)
    }
    let pusherWins = kept != previous
    var conflict = MirrorConflict(
      kind: .updateVersusUpdate, globalID: id, entityName: object.entityName, field: name,
      losingFields: pusherWins ? (previous.map { [name: $0] } ?? [:]) : [name: pushed],
      winningReplica: pusherWins ? merge.replica : hubSide.replica,
      winningPosition: pusherWins ? merge.position : hubSide.position,
      losingReplica: pusherWins ? hubSide.replica : merge.replica,
      losingPosition: pusherWins ? hubSide.position : merge.position)
    conflict.rule = policy.rule
    conflict.keptFields = [name: kept]
    merge.conflicts.append(conflict)
    return kept
  }

  /// The position the pusher's value of the field `name` of `id` was based on: the transaction's base, or
  /// the earlier one its replica gave for that field (``MirrorTransaction/fieldBases``).
  func base(of id: UUID, field name: String, _ merge: Merge) -> Int64 {
    min(merge.transaction.basePosition, merge.transaction.fieldBases[id]?[name] ?? .max)
  }

  /// Whether a resolver's value can be kept for `name`: the same kind of field as the pushed one, a value
  /// the attribute's rules accept, targets the hub holds alive.
  private func fits(_ field: MirrorField, as pushed: MirrorField, _ name: String, of entityName: String) -> Bool {
    switch (field, pushed) {
    case (.value(let value), .value):
      guard let attribute = model.entity(named: entityName)?.attribute(named: name) else { return false }
      return (try? Self.check(value, of: attribute, at: name)) != nil
    case (.reference(let target), .reference):
      return target.map { objects[$0]?.deletedAt == nil && objects[$0] != nil } ?? true
    case (.references(let targets), .references):
      return liveTargets(targets) == targets
    default:
      return false
    }
  }

  /// The value `name` of `id` had at position `base`: its last logged change at or before it (this ledger's
  /// log first, then the hub's stored entries), `nil` when there is none (created since, or never set).
  private func baseValue(of id: UUID, field name: String, at base: Int64, _ merge: Merge) throws -> MirrorField? {
    func value(in entry: MirrorLogEntry) -> MirrorField? {
      entry.changes.last { change in
        change.globalID == id && change.kind != .delete && change.kind != .merged && change.fields[name] != nil
      }?.fields[name]
    }
    for entry in log.reversed() where entry.position <= base {
      if let found = value(in: entry) { return found }
    }
    let older = min(base, (log.first?.position ?? base + 1) - 1)
    guard older > 0, let olderEntries = merge.olderEntries else { return nil }
    for entry in try olderEntries(id, older) {
      if let found = value(in: entry) { return found }
    }
    return nil
  }

  /// Under ``MirrorDeleteRule/updateWins``, a pushed delete of an object another replica changed after the
  /// deleter's base is not applied: recorded as a `deleteVersusUpdate` conflict the update won, and logged
  /// as restored (as a delete a Deny rule refuses). `false` when the delete goes on.
  mutating func keepUpdated(_ id: UUID, _ merge: inout Merge) -> Bool {
    guard let object = objects[id], object.deletedAt == nil,
      policies.policy(for: object.entityName).deleteVersusUpdate == .updateWins
    else { return false }
    let unseen = object.fieldPositions.filter { name, at in
      at > merge.transaction.basePosition && object.fieldReplicas[name] != merge.replica
    }
    guard let (name, at) = unseen.max(by: { $0.value < $1.value }), let updater = object.fieldReplicas[name] else {
      return false
    }
    var conflict = MirrorConflict(
      kind: .deleteVersusUpdate, globalID: id, entityName: object.entityName, field: nil, losingFields: [:],
      winningReplica: updater, winningPosition: at, losingReplica: merge.replica, losingPosition: merge.position)
    conflict.rule = .updateWins
    merge.conflicts.append(conflict)
    logRestore(id, &merge)
    return true
  }

  /// Under ``MirrorDeleteRule/updateWins``, an update of an object another replica deleted after the
  /// updater's base brings it back: the tombstone is lifted, the object keeps its last values with the
  /// update applied, and the entry logs it as restored. The objects that delete cascaded to come back with
  /// it, as they were (values and links; see `reviveCascaded`); links it cleared stay cleared; links to
  /// objects not alive are dropped. Not
  /// revived (`false`): an alias of a merged duplicate, an object whose to-one target is gone under a
  /// Cascade rule (it was deleted with it), or one whose unique key another live object now holds.
  mutating func revive(_ change: MirrorChange, _ merge: inout Merge) -> Bool {
    guard var object = objects[change.globalID], let deletedAt = object.deletedAt, object.mergedInto == nil,
      policies.policy(for: object.entityName).deleteVersusUpdate == .updateWins,
      deletedAt > merge.transaction.basePosition, object.deletedBy != merge.replica
    else { return false }
    let fields = object.fields.merging(change.fields) { $1 }
    for (name, field) in fields {
      guard case .reference(let target?) = field, objects[target]?.deletedAt != nil || objects[target] == nil else {
        continue
      }
      if inverseRule(of: name, in: object.entityName) == .cascade { return false }
    }
    let probe = MirrorChange(globalID: change.globalID, entityName: object.entityName, kind: .insert, fields: fields)
    guard liveObject(sharingAUniqueKeyWith: probe) == nil else { return false }
    let deleter = object.deletedBy ?? merge.replica
    object.deletedAt = nil
    object.deletedBy = nil
    for (name, field) in change.fields {
      object.fields[name] = field
      object.fieldPositions[name] = merge.position
      object.fieldReplicas[name] = merge.replica
    }
    store(object, as: change.globalID)
    let revived = [change.globalID] + reviveCascaded(from: change.globalID, deletedAt: deletedAt)
    for id in revived { dropLinksToTheDead(of: id) }
    var conflict = MirrorConflict(
      kind: .deleteVersusUpdate, globalID: change.globalID, entityName: object.entityName, field: nil,
      losingFields: [:], winningReplica: merge.replica, winningPosition: merge.position, losingReplica: deleter,
      losingPosition: deletedAt)
    conflict.rule = .updateWins
    merge.conflicts.append(conflict)
    for id in revived { logRestore(id, &merge) }
    return true
  }

  /// Lifts the tombstones of the objects the delete of `parent` at `deletedAt` cascaded to, and of those
  /// their deletes cascaded to, parents first; returns them. Cascaded to: deleted by the same push, with a
  /// to-one relationship naming the parent whose inverse's delete rule is Cascade (the deleter's own store
  /// cascaded too, so its push lists those deletes itself: a delete in the same push cannot be told from the
  /// cascade). An object deleted at another position stays deleted, and so does one whose unique key
  /// another live object holds now.
  private mutating func reviveCascaded(from parent: UUID, deletedAt: Int64) -> [UUID] {
    var revived: [UUID] = []
    var parents = [parent]
    while !parents.isEmpty {
      let current = parents.removeFirst()
      for id in referrers(of: current).sorted(by: Self.byIdentity) {
        guard var child = objects[id], child.deletedAt == deletedAt, child.mergedInto == nil,
          child.fields.contains(where: { name, field in
            field == .reference(current) && inverseRule(of: name, in: child.entityName) == .cascade
          })
        else { continue }
        let probe = MirrorChange(globalID: id, entityName: child.entityName, kind: .insert, fields: child.fields)
        guard liveObject(sharingAUniqueKeyWith: probe) == nil else { continue }
        child.deletedAt = nil
        child.deletedBy = nil
        store(child, as: id)
        revived.append(id)
        parents.append(id)
      }
    }
    return revived
  }

  /// Points the to-one references of `id` to objects not alive at nothing, and drops such objects from its
  /// lists.
  private mutating func dropLinksToTheDead(of id: UUID) {
    guard var object = objects[id] else { return }
    for (name, field) in object.fields {
      switch field {
      case .reference(let target?) where objects[target]?.deletedAt != nil || objects[target] == nil:
        object.fields[name] = .reference(nil)
      case .references(let targets): object.fields[name] = .references(liveTargets(targets))
      default: continue
      }
    }
    store(object, as: id)
  }
}
