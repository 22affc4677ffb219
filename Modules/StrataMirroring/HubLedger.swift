import Foundation
import StrataCore

/// The hub's state and its merge rules, as a value: current objects with the position and replica of
/// each field's last change, tombstones, the log, the idempotency keys and the recorded conflicts.
///
/// A hub keeps one ledger and applies each push to it inside one of its own transactions; the rules
/// (three-way merge per field, conflicts settled by the entities' ``MirrorPolicies``, delete rules,
/// exactly once) live here, written once for every hub.
///
/// ```swift
/// var ledger = HubLedger(model: container.model)
/// let receipt = try ledger.apply(MirrorTransaction(replicaID: UUID(), localSequence: 1, basePosition: 0, changes: []))
/// ```
public struct HubLedger: Sendable {
  /// One object as the hub holds it.
  public struct Object: Sendable, Hashable, Codable {
    /// The object's entity.
    public var entityName: String
    /// The current value of every field.
    public var fields: [String: MirrorField]
    /// The position of each field's last change.
    public var fieldPositions: [String: Int64]
    /// The replica of each field's last change.
    public var fieldReplicas: [String: UUID]
    /// The position of the delete, for a tombstone.
    public var deletedAt: Int64?
    /// The replica whose push deleted it, for a tombstone.
    public var deletedBy: UUID?
    /// For an object another replica had already created under the same unique key: the survivor this
    /// identity now names (the object itself is a tombstone that is never alive again).
    public var mergedInto: UUID? = nil
  }

  /// The values of one uniqueness constraint of an entity, as one object holds them.
  struct UniqueKey: Sendable, Hashable {
    var entityName: String
    var constraint: [String]
    var values: [MirrorField]
  }

  /// The idempotency key of a pushed transaction.
  public struct Key: Sendable, Hashable, Codable {
    /// The pushing replica.
    public var replicaID: UUID
    /// Its local history sequence.
    public var localSequence: Int64
  }

  /// The objects by global identity, tombstones included.
  public private(set) var objects: [UUID: Object] = [:]
  /// For each object, the objects whose fields name it (a to-one target or a list member), tombstones
  /// included: the delete rules, Deny and the ordered lists find who points at an object here instead of
  /// looking through every object.
  private var referrers: [UUID: Set<UUID>] = [:]
  /// The objects holding each key of their entity's uniqueness constraints (every field of the constraint
  /// set, none null), tombstones left out: a pushed insert finds the object whose key it repeats here
  /// instead of looking through every object.
  private(set) var uniqueKeys: [UniqueKey: Set<UUID>] = [:]
  /// The objects this ledger changed since it was made or since ``forgetApplied()``: what a hub that stores
  /// its objects writes back.
  public internal(set) var changedObjects: Set<UUID> = []
  /// The objects a change of this push touched, with the targets they named before and after: the owners
  /// among them are the only ones whose ordered lists the push can have changed.
  var orderCandidates: Set<UUID> = []
  /// What the push under way changed, to undo it when the push is refused.
  var journal = Journal()
  /// The accepted transactions this ledger applied or was given, in order.
  public private(set) var log: [MirrorLogEntry] = []
  /// The last position given, 0 before the first push.
  public private(set) var lastPosition: Int64 = 0
  /// The receipt of every applied (replica, local sequence).
  public private(set) var receipts: [Key: MirrorReceipt] = [:]
  /// Every conflict resolved, in order.
  public private(set) var conflicts: [MirrorConflict] = []
  /// The hub's model: the newest version of the app's model it has admitted.
  private(set) var model: ObjectModel
  /// The conflict rules, per entity (a hub shared by several processes sets those of the pushing one).
  public internal(set) var policies: MirrorPolicies

  /// An empty ledger for objects of `model` (its delete rules are applied on the hub), settling conflicts
  /// by `policies`.
  ///
  /// ```swift
  /// var ledger = HubLedger(model: container.model, policies: MirrorPolicies(entities: ["Tasting": MirrorPolicy(conflicts: .hubWins)]))
  /// ```
  public init(model: ObjectModel, policies: MirrorPolicies = .standard) {
    self.model = model
    self.policies = policies
  }

  /// A ledger that goes on from a hub's stored state: the objects a push may touch (with every live
  /// object that may reference them, for the delete rules) and the last position given. Its `log`,
  /// `receipts` and `conflicts` then hold only what it applies.
  ///
  /// ```swift
  /// var ledger = HubLedger(model: container.model, objects: [:], lastPosition: 41)
  /// ```
  public init(model: ObjectModel, objects: [UUID: Object], lastPosition: Int64, policies: MirrorPolicies = .standard) {
    self.model = model
    self.policies = policies
    self.objects = objects
    self.lastPosition = lastPosition
    for (id, object) in objects {
      for target in Self.targets(of: object) { referrers[target, default: []].insert(id) }
      for key in uniqueKeys(of: object) { uniqueKeys[key, default: []].insert(id) }
    }
  }

  /// Takes `newer` as the hub's model (a newer version of the app's: see `MirrorModel.isNewer(_:than:)`),
  /// with the index of unique keys rebuilt for its uniqueness constraints.
  mutating func adopt(_ newer: ObjectModel) {
    model = newer
    uniqueKeys = [:]
    for (id, object) in objects {
      for key in uniqueKeys(of: object) { uniqueKeys[key, default: []].insert(id) }
    }
  }

  /// Every object whose fields name `id`, tombstones included.
  func referrers(of id: UUID) -> Set<UUID> { referrers[id] ?? [] }

  /// Forgets what this ledger applied — its log, receipts, conflicts and changed objects — and keeps its
  /// objects and last position: a hub that stores each push's results itself can go on with the same
  /// ledger for its next push.
  ///
  /// ```swift
  /// var ledger = HubLedger(model: container.model, objects: [:], lastPosition: 41)
  /// ledger.forgetApplied()  // ledger.log.isEmpty, ledger.lastPosition == 41
  /// ```
  public mutating func forgetApplied() {
    log = []
    receipts = [:]
    conflicts = []
    changedObjects = []
  }

  /// Goes on to `lastPosition` with `objects`, the current states of the objects changed after this
  /// ledger's last position (by other processes pushing to the same hub): a hub shared by several
  /// processes keeps its ledger and reads only what the others changed, instead of every object again.
  /// What it applied before is forgotten, as with ``forgetApplied()``.
  ///
  /// ```swift
  /// var ledger = HubLedger(model: container.model, objects: [:], lastPosition: 41)
  /// ledger.catchUp(with: [:], through: 43)  // ledger.lastPosition == 43
  /// ```
  public mutating func catchUp(with objects: [UUID: Object], through lastPosition: Int64) {
    for (id, object) in objects { replace(id, with: object) }
    self.lastPosition = max(self.lastPosition, lastPosition)
    forgetApplied()
    journal = Journal()
    orderCandidates = []
  }

  /// Sets the object `id` to `object`, keeping the index of references up to date.
  mutating func store(_ object: Object, as id: UUID) { replace(id, with: object) }

  /// Sets the object `id` to `object` (`nil`: removes it), keeping the indexes up to date and noting its
  /// previous state in the journal.
  mutating func replace(_ id: UUID, with object: Object?) {
    let old = objects[id]
    guard old != object else { return }
    if journal.before.index(forKey: id) == nil { journal.before[id] = .some(old) }
    let before = old.map(Self.targets(of:)) ?? []
    let after = object.map(Self.targets(of:)) ?? []
    for target in before.subtracting(after) {
      referrers[target]?.remove(id)
      if referrers[target]?.isEmpty == true { referrers[target] = nil }
    }
    for target in after.subtracting(before) { referrers[target, default: []].insert(id) }
    let keysBefore = old.map(uniqueKeys(of:)) ?? []
    let keysAfter = object.map(uniqueKeys(of:)) ?? []
    if keysBefore != keysAfter {
      for key in keysBefore {
        uniqueKeys[key]?.remove(id)
        if uniqueKeys[key]?.isEmpty == true { uniqueKeys[key] = nil }
      }
      for key in keysAfter { uniqueKeys[key, default: []].insert(id) }
      if !keysAfter.isEmpty { journal.tookKeys.insert(id) }
    }
    objects[id] = object
    if changedObjects.insert(id).inserted { journal.newlyChanged.insert(id) }
    orderCandidates.insert(id)
    orderCandidates.formUnion(before)
    orderCandidates.formUnion(after)
  }

  /// The live objects whose fields name `id`, by identity.
  func referring(to id: UUID) -> [UUID] {
    (referrers[id] ?? []).filter { objects[$0]?.deletedAt == nil }.sorted(by: Self.byIdentity)
  }

  /// Every object a field of `object` names.
  static func targets(of object: Object) -> Set<UUID> {
    var targets: Set<UUID> = []
    for field in object.fields.values {
      switch field {
      case .reference(let target?): targets.insert(target)
      case .references(let list): targets.formUnion(list)
      default: continue
      }
    }
    return targets
  }

  /// The live (not deleted) objects.
  public var liveObjects: [UUID: Object] { objects.filter { $0.value.deletedAt == nil } }

  /// Applies `transaction` once: a retry of an applied (replica, local sequence) returns the first
  /// receipt, marked as a duplicate, and changes nothing.
  ///
  /// ```swift
  /// var ledger = HubLedger(model: container.model)
  /// let pushed = MirrorTransaction(replicaID: UUID(), localSequence: 1, basePosition: 0, changes: [])
  /// let first = try ledger.apply(pushed)
  /// let again = try ledger.apply(pushed)  // again.wasDuplicate, again.position == first.position
  /// ```
  ///
  /// - Throws: ``MirrorError/rejected(_:)`` when the transaction does not fit the ledger's model (an
  ///   unknown entity or field, a value of the wrong type or out of its bounds, no value for a required
  ///   attribute), or when, once all of it is applied, an object holds a unique key it did not hold before
  ///   and another live object holds too; the ledger is left as it was and the key stays free, so a retry
  ///   is judged again.
  public mutating func apply(_ transaction: MirrorTransaction) throws -> MirrorReceipt {
    try apply(transaction, olderEntries: nil)
  }

  /// Applies `transaction` once, as ``apply(_:)``, for a ledger that goes on from a hub's stored state:
  /// `olderEntries(id, position)` gives the stored log entries at or before `position` that name the
  /// object `id`, newest first — the base values a custom resolver (``MirrorConflictPolicy/custom(_:)``)
  /// is given. It is called only for such a conflict.
  ///
  /// ```swift
  /// var ledger = HubLedger(model: container.model, objects: [:], lastPosition: 41)
  /// let pushed = MirrorTransaction(replicaID: UUID(), localSequence: 1, basePosition: 40, changes: [])
  /// let receipt = try ledger.apply(pushed) { id, position in [] }
  /// ```
  ///
  /// - Throws: ``MirrorError/rejected(_:)`` as ``apply(_:)``; what `olderEntries` throws (the ledger is
  ///   left as it was; the hub rolls its transaction back).
  public mutating func apply(
    _ transaction: MirrorTransaction, olderEntries: ((UUID, Int64) throws -> [MirrorLogEntry])?
  ) throws -> MirrorReceipt {
    let key = Key(replicaID: transaction.replicaID, localSequence: transaction.localSequence)
    if var receipt = receipts[key] {
      receipt.wasDuplicate = true
      return receipt
    }
    try check(transaction)
    orderCandidates = []
    journal = Journal()
    defer { journal = Journal() }
    var merge = Merge(position: lastPosition + 1, transaction: transaction, olderEntries: olderEntries)
    do {
      // A Deny rule is not broken by related objects the same transaction deletes.
      merge.sparing = Set(transaction.changes.filter { $0.kind == .delete }.map { survivor(of: $0.globalID) })
      // Inserts first: a change of the same local transaction may reference an object listed after it.
      let ordered = transaction.changes.filter { $0.kind == .insert } + transaction.changes.filter { $0.kind != .insert }
      for var change in ordered {
        resolveMerged(&change)
        dropUnknownReferences(of: &change)
        switch change.kind {
        case .insert: try insert(change, &merge)
        case .update: try update(change, &merge)
        case .delete: deleteUnlessDenied(change.globalID, &merge)
        case .merged, .restored: break
        }
      }
      normalizeOrders(&merge)
      // Judged once the whole transaction is applied: it may free a key and take it in any order.
      if let taken = keyTakenFromAnother() { throw MirrorError.rejected(taken) }
    } catch {
      rollBack()
      throw error
    }
    lastPosition = merge.position
    log.append(
      MirrorLogEntry(
        position: merge.position, replicaID: transaction.replicaID, localSequence: transaction.localSequence,
        changes: merge.logged))
    conflicts += merge.conflicts
    let receipt = MirrorReceipt(position: merge.position, wasDuplicate: false, conflicts: merge.conflicts)
    receipts[key] = receipt
    return receipt
  }

  /// The log entries after `position`, at most `limit`.
  ///
  /// ```swift
  /// let ledger = HubLedger(model: container.model)
  /// let entries = ledger.entries(after: 0, limit: 500)
  /// ```
  public func entries(after position: Int64, limit: Int) -> [MirrorLogEntry] {
    let first = log.partitionPoint { $0.position <= position }
    return Array(log[first...].prefix(max(0, limit)))
  }

  struct Merge {
    let position: Int64
    let transaction: MirrorTransaction
    let olderEntries: ((UUID, Int64) throws -> [MirrorLogEntry])?
    var logged: [MirrorChange] = []
    var conflicts: [MirrorConflict] = []
    var sparing: Set<UUID> = []
    var replica: UUID { transaction.replicaID }
  }

  /// A replica reads an object's values when it pushes, not when its transaction was made: an insert or
  /// update can name a target whose own insert comes in a later transaction of the same push. Such a
  /// reference is not applied (an insert gets no target); the later transaction that set it carries it
  /// again once the target exists.
  private func dropUnknownReferences(of change: inout MirrorChange) {
    for (name, field) in change.fields {
      switch field {
      case .reference(let target?) where objects[target] == nil:
        change.fields[name] = change.kind == .insert ? .reference(nil) : nil
      case .references(let targets):
        change.fields[name] = .references(targets.filter { objects[$0] != nil })
      default: continue
      }
    }
  }

  private mutating func insert(_ change: MirrorChange, _ merge: inout Merge) throws {
    if objects[change.globalID] != nil {
      try update(change, &merge)
      return
    }
    if let survivor = liveObject(sharingAUniqueKeyWith: change, keptAfter: merge.transaction) {
      try mergeDuplicate(change, into: survivor, &merge)
      return
    }
    var object = Object(entityName: change.entityName, fields: [:], fieldPositions: [:], fieldReplicas: [:])
    for (name, var field) in change.fields {
      if case .references(let targets) = field {
        let live = liveTargets(targets)
        let manyToMany = isManyToMany(name, of: change.entityName)
        field = .references(manyToMany && !isOrdered(name, of: change.entityName) ? live.sorted(by: Self.byIdentity) : live)
        for member in live where manyToMany {
          object.fieldPositions[Self.memberKey(name, member)] = merge.position
          object.fieldReplicas[Self.memberKey(name, member)] = merge.replica
        }
      }
      object.fields[name] = field
      object.fieldPositions[name] = merge.position
      object.fieldReplicas[name] = merge.transaction.replicaID
    }
    store(object, as: change.globalID)
    var logged = MirrorChange(globalID: change.globalID, entityName: change.entityName, kind: .insert, fields: object.fields)
    if resolveReferences(of: change.globalID, &logged, &merge) {
      merge.logged.append(logged)
    } else {
      // A reference to a deleted object whose delete rule cascades: the new object goes with it.
      merge.logged.append(logged)
      delete(change.globalID, &merge, conflictWithUpdates: false)
    }
  }

  /// Uniqueness across replicas: two replicas that create the same unique key end with one object. The
  /// later one's identity becomes an alias of the survivor (logged as `merged`, so that its replica renames
  /// its object), and its fields merge into the survivor as an update with the usual rules — against a new
  /// object's values as the base: a field the duplicate left at its initial value (an attribute's default,
  /// no target) changed nothing, so it never overwrites what the survivor's replicas set.
  private mutating func mergeDuplicate(_ change: MirrorChange, into survivor: UUID, _ merge: inout Merge) throws {
    let entity = model.entity(named: change.entityName)
    let changed = change.fields.filter { name, field in
      switch field {
      case .reference(let target): return target != nil
      case .references(let targets): return !targets.isEmpty
      case .value(let value): return value != (entity?.attribute(named: name)?.initialValue ?? .null)
      }
    }
    store(
      Object(
        entityName: change.entityName, fields: [:], fieldPositions: [:], fieldReplicas: [:], deletedAt: merge.position,
        deletedBy: merge.transaction.replicaID, mergedInto: survivor),
      as: change.globalID)
    merge.logged.append(
      MirrorChange(
        globalID: change.globalID, entityName: change.entityName, kind: .merged, fields: ["into": .reference(survivor)]))
    try update(MirrorChange(globalID: survivor, entityName: change.entityName, kind: .update, fields: changed), &merge)
  }

  /// The live object of the change's entity holding the same values for one of its uniqueness constraints
  /// (of several, the first by identity), found in the index of unique keys.
  func liveObject(sharingAUniqueKeyWith change: MirrorChange) -> UUID? {
    for key in Self.uniqueKeys(of: change.entityName, fields: change.fields, in: model) {
      if let match = uniqueKeys[key]?.filter({ objects[$0]?.deletedAt == nil }).min(by: Self.byIdentity) {
        return match
      }
    }
    return nil
  }

  /// The keys `object` holds for its entity's uniqueness constraints; none for a tombstone.
  func uniqueKeys(of object: Object) -> [UniqueKey] {
    object.deletedAt == nil ? Self.uniqueKeys(of: object.entityName, fields: object.fields, in: model) : []
  }

  /// The keys of `fields` for the uniqueness constraints of the entity `entityName`: one per constraint
  /// whose fields are all set and none null.
  static func uniqueKeys(of entityName: String, fields: [String: MirrorField], in model: ObjectModel) -> [UniqueKey] {
    guard let constraints = model.entity(named: entityName)?.uniquenessConstraints, !constraints.isEmpty else { return [] }
    return constraints.compactMap { constraint in
      var values: [MirrorField] = []
      for name in constraint {
        guard let field = fields[name], field != .value(.null) else { return nil }
        values.append(field)
      }
      return UniqueKey(entityName: entityName, constraint: constraint, values: values)
    }
  }

  /// A change with identities merged into survivors replaced by the survivors.
  private func resolveMerged(_ change: inout MirrorChange) {
    change.globalID = survivor(of: change.globalID)
    for (name, field) in change.fields {
      switch field {
      case .reference(let target?): change.fields[name] = .reference(survivor(of: target))
      case .references(let targets):
        var seen: Set<UUID> = []
        change.fields[name] = .references(targets.map(survivor(of:)).filter { seen.insert($0).inserted })
      default: continue
      }
    }
  }

  func survivor(of id: UUID) -> UUID {
    var current = id
    var seen: Set<UUID> = []
    while let next = objects[current]?.mergedInto, seen.insert(current).inserted { current = next }
    return current
  }

  private mutating func update(_ change: MirrorChange, _ merge: inout Merge) throws {
    let replica = merge.transaction.replicaID
    guard var object = objects[change.globalID] else { return }
    if let deletedAt = object.deletedAt {
      guard !change.fields.isEmpty, !revive(change, &merge) else { return }
      var conflict = MirrorConflict(
        kind: .deleteVersusUpdate, globalID: change.globalID, entityName: object.entityName, field: nil,
        losingFields: change.fields, winningReplica: object.deletedBy ?? replica,
        winningPosition: deletedAt, losingReplica: replica, losingPosition: merge.position)
      conflict.rule = .deleteWins
      merge.conflicts.append(conflict)
      return
    }
    var applied: [String: MirrorField] = [:]
    for name in change.fields.keys.sorted() {
      guard var field = change.fields[name] else { continue }
      if case .references(let incoming) = field, isManyToMany(name, of: object.entityName) {
        // Set union of adds minus removes: each member is a field of its own (see `mergedMembers`).
        field = .references(mergedMembers(name, incoming: incoming, of: &object, change.globalID, merge))
        if object.fields[name] != field {
          object.fields[name] = field
          object.fieldPositions[name] = merge.position
          object.fieldReplicas[name] = replica
          applied[name] = field
        }
        continue
      }
      let previous = object.fields[name]
      if previous == field { continue }
      if let at = object.fieldPositions[name], at > base(of: change.globalID, field: name, merge),
        let other = object.fieldReplicas[name], other != replica
      {
        let kept = try settle(name, of: change.globalID, object, pushed: field, hubSide: (other, at), &merge)
        if kept == previous {
          // The pusher's value lost: the entry sends the hub's value back, so its replica takes it too.
          applied[name] = kept
          continue
        }
        field = kept
      }
      object.fields[name] = field
      object.fieldPositions[name] = merge.position
      object.fieldReplicas[name] = replica
      applied[name] = field
    }
    store(object, as: change.globalID)
    guard !applied.isEmpty else { return }
    var logged = MirrorChange(globalID: change.globalID, entityName: object.entityName, kind: .update, fields: applied)
    let keeps = resolveReferences(of: change.globalID, &logged, &merge)
    merge.logged.append(logged)
    if !keeps { delete(change.globalID, &merge, conflictWithUpdates: false) }
  }

  /// Points references to deleted objects at nothing; `false` when one of them cascades (the referencing
  /// object must be deleted too).
  private mutating func resolveReferences(of id: UUID, _ logged: inout MirrorChange, _ merge: inout Merge) -> Bool {
    guard var object = objects[id] else { return true }
    var keeps = true
    for (name, field) in logged.fields {
      guard case .reference(let target?) = field, let targetObject = objects[target], targetObject.deletedAt != nil
      else { continue }
      if inverseRule(of: name, in: object.entityName) == .cascade { keeps = false }
      object.fields[name] = .reference(nil)
      logged.fields[name] = .reference(nil)
    }
    store(object, as: id)
    return keeps
  }

  mutating func delete(_ id: UUID, _ merge: inout Merge, conflictWithUpdates: Bool) {
    guard var object = objects[id], object.deletedAt == nil else { return }
    let replica = merge.transaction.replicaID
    object.deletedAt = merge.position
    object.deletedBy = replica
    store(object, as: id)
    if conflictWithUpdates {
      let unseen = object.fieldPositions.filter { name, at in
        at > merge.transaction.basePosition && object.fieldReplicas[name] != replica
      }
      if let (name, at) = unseen.max(by: { $0.value < $1.value }), let loser = object.fieldReplicas[name] {
        var conflict = MirrorConflict(
          kind: .deleteVersusUpdate, globalID: id, entityName: object.entityName, field: nil,
          losingFields: object.fields.filter { unseen[$0.key] != nil }, winningReplica: replica,
          winningPosition: merge.position, losingReplica: loser, losingPosition: at)
        conflict.rule = .deleteWins
        merge.conflicts.append(conflict)
      }
    }
    // The delete rules, children first, so a replica replaying the entry never deletes a parent that
    // still has children it would have to cascade or nullify on its own.
    for otherID in referring(to: id) {
      guard let other = objects[otherID], other.deletedAt == nil else { continue }
      let referencing = other.fields.keys.sorted().filter { other.fields[$0] == .reference(id) }
      if referencing.contains(where: { inverseRule(of: $0, in: other.entityName) == .cascade }) {
        delete(otherID, &merge, conflictWithUpdates: false)
        continue
      }
      let listing = other.fields.keys.sorted().filter { Self.list(other.fields[$0])?.contains(id) == true }
      guard !referencing.isEmpty || !listing.isEmpty else { continue }
      var nullified = other
      var fields: [String: MirrorField] = [:]
      for name in referencing {
        nullified.fields[name] = .reference(nil)
        nullified.fieldPositions[name] = merge.position
        nullified.fieldReplicas[name] = replica
        fields[name] = .reference(nil)
      }
      for name in listing {
        let remaining = MirrorField.references((Self.list(other.fields[name]) ?? []).filter { $0 != id })
        nullified.fields[name] = remaining
        nullified.fieldPositions[name] = merge.position
        nullified.fieldReplicas[name] = replica
        nullified.fieldPositions[Self.memberKey(name, id)] = merge.position
        nullified.fieldReplicas[Self.memberKey(name, id)] = replica
        fields[name] = remaining
      }
      store(nullified, as: otherID)
      merge.logged.append(MirrorChange(globalID: otherID, entityName: other.entityName, kind: .update, fields: fields))
    }
    merge.logged.append(MirrorChange(globalID: id, entityName: object.entityName, kind: .delete))
  }

  func inverseRule(of relationship: String, in entityName: String) -> DeleteRule? {
    guard let rel = model.entity(named: entityName)?.relationship(named: relationship), let inverse = rel.inverse else {
      return nil
    }
    return model.entity(named: rel.destination)?.relationship(named: inverse)?.deleteRule
  }
}

extension Array {
  /// The index of the first element for which `belongsBefore` is false, in an array where every element for
  /// which it is true comes first.
  fileprivate func partitionPoint(_ belongsBefore: (Element) -> Bool) -> Int {
    var low = 0
    var high = count
    while low < high {
      let mid = (low + high) / 2
      if belongsBefore(self[mid]) { low = mid + 1 } else { high = mid }
    }
    return low
  }
}
