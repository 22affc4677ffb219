import Foundation
import StrataStoreKit

/// The links of one join-table relationship, indexed both ways: (owner source pk, owner target pk).
struct LinkTable: Sendable, Hashable {
  private(set) var forward: [Int64: Set<Int64>] = [:]
  private(set) var reverse: [Int64: Set<Int64>] = [:]

  var isEmpty: Bool { forward.isEmpty }

  mutating func insert(source: Int64, target: Int64) {
    forward[source, default: []].insert(target)
    reverse[target, default: []].insert(source)
  }

  mutating func remove(source: Int64, target: Int64) {
    forward[source]?.remove(target)
    if forward[source]?.isEmpty == true { forward[source] = nil }
    reverse[target]?.remove(source)
    if reverse[target]?.isEmpty == true { reverse[target] = nil }
  }

  mutating func removeAll(source: Int64) {
    for target in forward[source] ?? [] { remove(source: source, target: target) }
  }

  mutating func removeAll(target: Int64) {
    for source in reverse[target] ?? [] { remove(source: source, target: target) }
  }

  func targets(of source: Int64) -> [Int64] { (forward[source] ?? []).sorted() }
  func sources(of target: Int64) -> [Int64] { (reverse[target] ?? []).sorted() }

  /// Every (source, target) pair.
  var pairs: [(source: Int64, target: Int64)] {
    forward.flatMap { source, targets in targets.map { (source, $0) } }
  }
}

/// Everything a memory store holds at one moment. A value: copying it is cheap (copy-on-write), so a
/// save builds the next state on a copy and a pinned query generation keeps an old one.
struct MemoryState: Sendable {
  /// Rows per entity name, by primary key. Changing them drops ``derived``; `_modify` yields the stored
  /// dictionary, so a write stays in place (copy-on-write copies a table once per save, not per row).
  var rows: [String: [Int64: Snapshot]] {
    get { storedRows }
    _modify {
      derived = nil
      yield &storedRows
    }
  }
  private var storedRows: [String: [Int64: Snapshot]] = [:]
  /// What is computed from ``rows`` once and shared by every copy of this state: the to-many groups read
  /// through foreign keys. `nil` after a change to the rows until ``makeDerived()`` (a save or migration
  /// does it when it commits), so a cache never describes rows that changed after it was made.
  private(set) var derived: MemoryDerivedIndexes? = MemoryDerivedIndexes()

  /// Gives a state about to be committed a fresh, empty cache of what its rows imply.
  mutating func makeDerived() {
    if derived == nil { derived = MemoryDerivedIndexes() }
  }
  /// The last primary key assigned per entity name.
  var lastPrimaryKey: [String: Int64] = [:]
  /// Join-table links, keyed by the owning side's `Entity.relationship` (see `ObjectModel.joinTableOwner`).
  var links: [String: LinkTable] = [:]
  /// Ordered to-many relationships' lists: target keys in order by source key, keyed by ``orderKey(_:)``.
  /// Membership stays where it is for unordered relationships (the foreign key or the links); a list only
  /// orders it (``OrderedListChange/arrange(_:by:)``).
  var orders: [String: [Int64: [Int64]]] = [:]

  /// The key of `relationship`'s lists in ``orders``: its destination, inverse and name (a hierarchy's
  /// entities share the relationship and their keys are unique across it).
  static func orderKey(_ relationship: RelationshipDescription) -> String {
    "\(relationship.destination).\(relationship.inverse ?? "")<\(relationship.name)"
  }

  /// The stored snapshot of `id` when it is a permanent ID of store `storeIdentifier`.
  func snapshot(for id: ObjectID, storeIdentifier: String) -> Snapshot? {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return nil }
    return rows[id.entityName]?[pk]
  }

  /// Every row of `entityName` in primary-key order.
  func orderedRows(of entityName: String) -> [Snapshot] {
    guard let table = rows[entityName] else { return [] }
    return table.keys.sorted().compactMap { table[$0] }
  }

  /// Every row of the entities `entityNames` (an entity and its sub-entities, whose keys are unique across
  /// their hierarchy) in primary-key order.
  func orderedRows(of entityNames: [String]) -> [Snapshot] {
    guard entityNames.count > 1 else { return entityNames.first.map { orderedRows(of: $0) } ?? [] }
    return entityNames.flatMap { (rows[$0] ?? [:]).values }.sorted {
      ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0)
    }
  }

  /// The ID of the object with primary key `key` among `entityName` and its sub-entities (the entity it
  /// was inserted as), or an ID of `entityName` when there is no such row.
  func objectID(
    _ key: Int64, kindOf entityName: String, model: ObjectModel, storeIdentifier: String
  ) -> ObjectID {
    if model.inheritance.hasSubentities(entityName) {
      for entity in model.inheritance.entityAndDescendants(entityName) where rows[entity]?[key] != nil {
        return ObjectID(entityName: entity, storeIdentifier: storeIdentifier, primaryKey: key)
      }
    }
    return ObjectID(entityName: entityName, storeIdentifier: storeIdentifier, primaryKey: key)
  }

  static func linkKey(_ owner: (entity: String, relationship: String, isFlipped: Bool)) -> String {
    "\(owner.entity).\(owner.relationship)"
  }

  /// The targets of `relationship` of the object `id`: in list order for an ordered relationship, else
  /// in primary-key order.
  func relatedObjectIDs(
    of id: ObjectID, relationship: RelationshipDescription, model: ObjectModel, storeIdentifier: String
  ) -> [ObjectID] {
    let members = unorderedRelatedObjectIDs(
      of: id, relationship: relationship, model: model, storeIdentifier: storeIdentifier)
    guard relationship.isOrdered, let pk = id.primaryKey, let list = orders[Self.orderKey(relationship)]?[pk] else {
      return members
    }
    return OrderedListChange.arrange(members, by: list)
  }

  private func unorderedRelatedObjectIDs(
    of id: ObjectID, relationship: RelationshipDescription, model: ObjectModel, storeIdentifier: String
  ) -> [ObjectID] {
    guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey,
      rows[id.entityName]?[pk] != nil
    else { return [] }
    let destination = relationship.destination
    func makeID(_ key: Int64) -> ObjectID {
      objectID(key, kindOf: destination, model: model, storeIdentifier: storeIdentifier)
    }
    if !relationship.isToMany {
      guard let entity = model.entity(named: id.entityName), let index = entity.toOneIndex(named: relationship.name),
        let snapshot = rows[id.entityName]?[pk], index < snapshot.toOne.count, let target = snapshot.toOne[index]
      else { return [] }
      return [target]
    }
    if model.usesJoinTable(relationship) {
      let owner = model.joinTableOwner(of: id.entityName, relationship)
      guard let table = links[Self.linkKey(owner)] else { return [] }
      return (owner.isFlipped ? table.sources(of: pk) : table.targets(of: pk)).map(makeID)
    }
    guard let inverse = model.inverse(of: relationship),
      let inverseIndex = model.entity(named: destination)?.toOneIndex(named: inverse.name)
    else { return [] }
    if let derived {
      return derived.sources(of: id, through: inverse.name, index: inverseIndex, destination: destination) {
        foreignKeyGroups(destination: destination, index: inverseIndex, model: model)
      }
    }
    return orderedRows(of: model.inheritance.entityAndDescendants(destination)).filter { row in
      inverseIndex < row.toOne.count && row.toOne[inverseIndex] == id
    }.map(\.objectID)
  }

  /// The rows of `destination` (and its sub-entities) grouped by the object their to-one at `index`
  /// names, each group in primary-key order: every to-many read through that foreign key, in one scan.
  func foreignKeyGroups(destination: String, index: Int, model: ObjectModel) -> [ObjectID: [ObjectID]] {
    var groups: [ObjectID: [ObjectID]] = [:]
    for row in orderedRows(of: model.inheritance.entityAndDescendants(destination)) where index < row.toOne.count {
      if let owner = row.toOne[index] { groups[owner, default: []].append(row.objectID) }
    }
    return groups
  }
}

/// The foreign-key groups of one ``MemoryState``, made on first use and shared by the copies of that
/// state (readers on any thread): without them each `director.films` of a memory store scanned and
/// sorted every film.
final class MemoryDerivedIndexes: Sendable {
  private let groups = Locked<[String: [ObjectID: [ObjectID]]]>([:])

  /// The objects of `destination` whose to-one `inverse` (at `index`) names `owner`, in primary-key order;
  /// `make` computes every owner's group the first time the relationship is read.
  func sources(
    of owner: ObjectID, through inverse: String, index: Int, destination: String,
    make: () -> [ObjectID: [ObjectID]]
  ) -> [ObjectID] {
    let key = "\(destination).\(inverse)"
    if let found = groups.withLock({ $0[key] }) { return found[owner] ?? [] }
    let made = make()
    groups.withLock { $0[key] = made }
    return made[owner] ?? []
  }
}

/// Reads a ``MemoryState`` for the shared evaluator, grouping foreign keys once per relationship so that
/// `ANY movies.title == …` over every director costs one scan of the movies, not one per director.
final class MemoryEvaluationSource: EvaluationSource {
  private let state: MemoryState
  private let model: ObjectModel
  private let storeIdentifier: String
  private var inverseGroups: [String: [ObjectID: [ObjectID]]] = [:]

  init(state: MemoryState, model: ObjectModel, storeIdentifier: String) {
    self.state = state
    self.model = model
    self.storeIdentifier = storeIdentifier
  }

  func snapshot(for id: ObjectID) throws -> Snapshot? {
    state.snapshot(for: id, storeIdentifier: storeIdentifier)
  }

  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    guard relationship.isToMany, !relationship.isOrdered, !model.usesJoinTable(relationship),
      let inverse = model.inverse(of: relationship),
      let inverseIndex = model.entity(named: relationship.destination)?.toOneIndex(named: inverse.name)
    else {
      return state.relatedObjectIDs(of: id, relationship: relationship, model: model, storeIdentifier: storeIdentifier)
    }
    if let derived = state.derived {
      return derived.sources(of: id, through: inverse.name, index: inverseIndex, destination: relationship.destination) {
        state.foreignKeyGroups(destination: relationship.destination, index: inverseIndex, model: model)
      }
    }
    let key = "\(relationship.destination).\(inverse.name)"
    if let groups = inverseGroups[key] { return groups[id] ?? [] }
    let groups = state.foreignKeyGroups(destination: relationship.destination, index: inverseIndex, model: model)
    inverseGroups[key] = groups
    return groups[id] ?? []
  }
}
