import Foundation
import StrataCore

/// The rules of to-many relationships and of Deny on the hub.
extension HubLedger {
  /// The per-member key of a many-to-many list: each member's presence is merged as a field of its own.
  static func memberKey(_ name: String, _ member: UUID) -> String { "\(name)/\(member.uuidString)" }

  /// The order of identities every list and walk of the hub uses: that of their `uuidString`s (hex digits
  /// sort as the bytes they write), compared on the bytes without making the strings.
  static func byIdentity(_ a: UUID, _ b: UUID) -> Bool {
    withUnsafeBytes(of: a.uuid) { left in withUnsafeBytes(of: b.uuid) { right in left.lexicographicallyPrecedes(right) } }
  }

  static func list(_ field: MirrorField?) -> [UUID]? {
    if case .references(let targets)? = field { return targets }
    return nil
  }

  func relationship(_ name: String, of entityName: String) -> RelationshipDescription? {
    model.entity(named: entityName)?.relationship(named: name)
  }

  func isManyToMany(_ name: String, of entityName: String) -> Bool {
    relationship(name, of: entityName).map { model.isManyToMany($0) } ?? false
  }

  func isOrdered(_ name: String, of entityName: String) -> Bool {
    relationship(name, of: entityName)?.isOrdered ?? false
  }

  /// `targets` without repeats and without objects that are not alive on the hub.
  func liveTargets(_ targets: [UUID]) -> [UUID] {
    var seen: Set<UUID> = []
    return targets.filter { objects[$0]?.deletedAt == nil && objects[$0] != nil && seen.insert($0).inserted }
  }

  /// A many-to-many list merged member by member, as fields are: a member whose presence another replica
  /// changed after the pusher's base keeps the hub's answer (the pusher had not seen it: its list is not a
  /// removal of an addition it never saw, nor an addition of a member removed since); any other difference
  /// is the pusher's add or remove. So adds on both sides both survive, and a remove on one side survives an
  /// add of other members on the other. An ordered list takes the pusher's order for the members it lists,
  /// the others after them in the hub's order.
  func mergedMembers(_ name: String, incoming: [UUID], of object: inout Object, _ id: UUID, _ merge: Merge) -> [UUID] {
    let base = base(of: id, field: name, merge)
    let live = liveTargets(incoming)
    let current = Self.list(object.fields[name]) ?? []
    let incomingSet = Set(live)
    var members = Set(current)
    for member in incomingSet.symmetricDifference(members).sorted(by: Self.byIdentity) {
      let key = Self.memberKey(name, member)
      if let at = object.fieldPositions[key], at > base,
        object.fieldReplicas[key] != merge.replica
      {
        continue
      }
      if incomingSet.contains(member) { members.insert(member) } else { members.remove(member) }
      object.fieldPositions[key] = merge.position
      object.fieldReplicas[key] = merge.replica
    }
    guard isOrdered(name, of: object.entityName) else { return members.sorted(by: Self.byIdentity) }
    let listed = live.filter { members.contains($0) }
    let placed = Set(listed)
    return listed + current.filter { members.contains($0) && !placed.contains($0) }
  }

  /// Ordered to-many relationships with a to-one inverse: the members are the objects whose to-one points at
  /// the owner; the list keeps the last pushed order of those still members (a member gone leaves it), and
  /// the members it lacks (added since, or by another replica) go after them, by identity. Run at the end of
  /// every push, so that the log holds each owner's resulting order.
  mutating func normalizeOrders(_ merge: inout Merge) {
    let candidates = orderCandidates
    orderCandidates = []
    var ordered: [(owner: String, relationship: String, destination: String, inverse: String)] = []
    for entity in model.entities {
      for rel in entity.toManyRelationships where MirrorModel.isOrderedOneToMany(rel, in: model) {
        if let inverse = rel.inverse { ordered.append((entity.name, rel.name, rel.destination, inverse)) }
      }
    }
    guard !ordered.isEmpty else { return }
    let owners = Set(ordered.map(\.owner))
    // Only an owner this push touched, or one a touched member named before or after, can have changed.
    for id in candidates.sorted(by: Self.byIdentity) {
      guard var object = objects[id], object.deletedAt == nil, owners.contains(object.entityName) else { continue }
      var fields: [String: MirrorField] = [:]
      for list in ordered where list.owner == object.entityName {
        let belonging = Set(
          referring(to: id).filter { member in
            guard let other = objects[member] else { return false }
            return other.entityName == list.destination && other.fields[list.inverse] == .reference(id)
          })
        let current = Self.list(object.fields[list.relationship]) ?? []
        var seen: Set<UUID> = []
        var order = current.filter { belonging.contains($0) && seen.insert($0).inserted }
        order += belonging.subtracting(seen).sorted(by: Self.byIdentity)
        guard order != current || object.fields[list.relationship] == nil else { continue }
        object.fields[list.relationship] = .references(order)
        object.fieldPositions[list.relationship] = merge.position
        object.fieldReplicas[list.relationship] = merge.replica
        fields[list.relationship] = .references(order)
      }
      guard !fields.isEmpty else { continue }
      store(object, as: id)
      merge.logged.append(MirrorChange(globalID: id, entityName: object.entityName, kind: .update, fields: fields))
    }
    orderCandidates = []
  }

  /// Deletes `id` with its delete rules, unless a Deny rule forbids it (see `denial(of:sparing:visited:)`):
  /// then the delete is dropped, recorded as a `deleteDenied` conflict, and the log restores the object and
  /// the links to it, so the replica that deleted it gets it back.
  mutating func deleteUnlessDenied(_ id: UUID, _ merge: inout Merge) {
    guard let object = objects[id], object.deletedAt == nil else { return }
    var visited: Set<UUID> = []
    guard let denied = denial(of: id, sparing: merge.sparing, visited: &visited) else {
      if !keepUpdated(id, &merge) { delete(id, &merge, conflictWithUpdates: true) }
      return
    }
    let blocker = objects[denied.by]
    let last = blocker?.fieldPositions.max { $0.value < $1.value }
    var conflict = MirrorConflict(
      kind: .deleteDenied, globalID: id, entityName: object.entityName, field: denied.relationship, losingFields: [:],
      winningReplica: last.flatMap { blocker?.fieldReplicas[$0.key] } ?? merge.replica,
      winningPosition: last?.value ?? merge.position, losingReplica: merge.replica, losingPosition: merge.position)
    conflict.rule = .deny
    merge.conflicts.append(conflict)
    logRestore(id, &merge)
  }

  /// Logs a delete the hub did not apply as undone: a `restored` change with all the object's fields, then
  /// an update of every live object linked to it with those links, so the replica that deleted it gets it
  /// back as the hub holds it.
  func logRestore(_ id: UUID, _ merge: inout Merge) {
    guard let object = objects[id] else { return }
    merge.logged.append(MirrorChange(globalID: id, entityName: object.entityName, kind: .restored, fields: object.fields))
    for otherID in referring(to: id) {
      guard let other = objects[otherID], otherID != id else { continue }
      let links = other.fields.filter { _, field in field == .reference(id) || Self.list(field)?.contains(id) == true }
      guard !links.isEmpty else { continue }
      merge.logged.append(MirrorChange(globalID: otherID, entityName: other.entityName, kind: .update, fields: links))
    }
  }

  /// The relationship and the live object that forbid deleting `id`: an object related to it (or to an
  /// object its delete cascades to) through a relationship whose delete rule is Deny, unless the same
  /// transaction deletes that object too (`sparing`). `nil` when the delete may go on.
  func denial(of id: UUID, sparing: Set<UUID>, visited: inout Set<UUID>) -> (relationship: String, by: UUID)? {
    guard visited.insert(id).inserted, let object = objects[id], let entity = model.entity(named: object.entityName)
    else { return nil }
    for rel in entity.relationships where rel.deleteRule == .deny || rel.deleteRule == .cascade {
      let inverse = model.inverse(of: rel)
      // The hub cascades over to-one inverses only (see `delete`); Deny holds over every kind.
      if rel.deleteRule == .cascade && inverse?.isToMany != false { continue }
      for target in related(id, object, rel, inverse) where !sparing.contains(target) {
        if rel.deleteRule == .deny { return ("\(entity.name).\(rel.name)", target) }
        if let found = denial(of: target, sparing: sparing, visited: &visited) { return found }
      }
    }
    return nil
  }

  /// The live objects `object` (named `id`) is related to through `rel`.
  private func related(
    _ id: UUID, _ object: Object, _ rel: RelationshipDescription, _ inverse: RelationshipDescription?
  )
    -> [UUID]
  {
    if !rel.isToMany {
      guard case .reference(let target?)? = object.fields[rel.name] else { return [] }
      return liveTargets([target])
    }
    if let own = Self.list(object.fields[rel.name]), inverse?.isToMany == true { return liveTargets(own) }
    guard let inverse else { return [] }
    return referring(to: id).filter { otherID in
      guard let other = objects[otherID], other.entityName == rel.destination else { return false }
      return other.fields[inverse.name] == .reference(id) || Self.list(other.fields[inverse.name])?.contains(id) == true
    }
  }
}
