import Foundation
import StrataCore

/// Uniqueness on the hub: a push may not leave two live objects holding the same unique key.
extension HubLedger {
  /// What one push changed so far: each object's state before its first change (`nil`: it did not exist),
  /// the objects it added to `changedObjects`, and those whose unique keys it changed to some.
  struct Journal {
    var before: [UUID: Object?] = [:]
    var newlyChanged: Set<UUID> = []
    var tookKeys: Set<UUID> = []
  }

  /// Puts back every object the push under way changed, with the indexes, as they were before it.
  mutating func rollBack() {
    let undone = journal
    for (id, old) in undone.before { replace(id, with: old) }
    for id in undone.newlyChanged { changedObjects.remove(id) }
    journal = Journal()
  }

  /// Why the push under way cannot stay: an object it changed holds a key it did not hold before (a new
  /// object, one brought back, a changed field of the constraint, a conflict's kept value) while another
  /// live object holds that key too. `nil` when there is none. Keys both held before are left alone.
  func keyTakenFromAnother() -> String? {
    var found: (id: UUID, key: UniqueKey)?
    for id in journal.tookKeys {
      guard let object = objects[id], object.deletedAt == nil, let old = journal.before[id] else { continue }
      for key in uniqueKeys(of: object) {
        guard let holders = uniqueKeys[key], holders.count > 1,
          holders.contains(where: { $0 != id && objects[$0]?.deletedAt == nil }),
          !(old.map(uniqueKeys(of:))?.contains(key) ?? false)
        else { continue }
        if found.map({ Self.byIdentity(id, $0.id) }) ?? true { found = (id, key) }
      }
    }
    // Of several, the first object by identity: the same reason on every hub.
    return found.map { "\(Self.describe($0.key)) is already held by another object" }
  }

  /// The live object of the change's entity holding the same values for one of its uniqueness constraints
  /// and still holding them once `transaction`'s own changes of it are applied (a transaction may rename or
  /// delete an object and create another with its old key); of several, the first by identity.
  func liveObject(sharingAUniqueKeyWith change: MirrorChange, keptAfter transaction: MirrorTransaction) -> UUID? {
    for key in Self.uniqueKeys(of: change.entityName, fields: change.fields, in: model) {
      let holders = (uniqueKeys[key] ?? []).filter { objects[$0]?.deletedAt == nil && keeps(key, $0, after: transaction) }
      if let match = holders.min(by: Self.byIdentity) { return match }
    }
    return nil
  }

  /// Whether the object `id` holds `key` once the changes `transaction` makes to it are applied.
  private func keeps(_ key: UniqueKey, _ id: UUID, after transaction: MirrorTransaction) -> Bool {
    guard let object = objects[id] else { return false }
    var fields = object.fields
    for change in transaction.changes where survivor(of: change.globalID) == id {
      switch change.kind {
      case .delete: return false
      case .insert, .update: fields.merge(change.fields) { $1 }
      case .merged, .restored: continue
      }
    }
    return Self.uniqueKeys(of: object.entityName, fields: fields, in: model).contains(key)
  }

  /// A key as a person reads it: `Variety.name "Kestrel"`, `Tasting.(potato, day) (…, …)`.
  static func describe(_ key: UniqueKey) -> String {
    let values = key.values.map { field -> String in
      switch field {
      case .value(let value): return value.description
      case .reference(let target): return target?.uuidString ?? "nil"
      case .references(let targets): return "[" + targets.map(\.uuidString).joined(separator: ", ") + "]"
      }
    }
    func grouped(_ items: [String]) -> String { items.count == 1 ? items[0] : "(" + items.joined(separator: ", ") + ")" }
    return "\(key.entityName).\(grouped(key.constraint)) \(grouped(values))"
  }
}
