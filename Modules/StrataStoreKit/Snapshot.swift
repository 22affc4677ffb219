import Foundation

/// What a store knows of one object at one moment: its ID, row version, attribute values and to-one targets.
///
/// `attributes` is aligned with `EntityDescription.attributes` (transient attributes hold `.null`);
/// `toOne` is aligned with `EntityDescription.toOneRelationships`. To-many targets are not part of a
/// snapshot: contexts load them on demand with ``PersistentStore/relatedObjectIDs(of:relationship:generation:)``.
public struct Snapshot: Sendable, Hashable {
  /// The object's ID (always permanent: snapshots come from a store).
  public var objectID: ObjectID
  /// Incremented by the store on every write of the object; used for optimistic locking.
  public var version: Int64
  /// Every attribute value, aligned with `EntityDescription.attributes`, in the entity's typed layout when
  /// the store made them so (`AttributeValues`, shared with the objects made from the snapshot).
  public var attributes: AttributeValues
  /// Every to-one target, aligned with `EntityDescription.toOneRelationships`.
  public var toOne: [ObjectID?]

  /// A snapshot of the object `objectID` at row version `version`.
  ///
  /// ```swift
  /// let film = EntityDescription(name: "Film", attributes: [AttributeDescription(name: "title", type: .string)])
  /// var values = AttributeValues(layout: film.valueLayout)
  /// values[0] = .string("Alien")
  /// let filmID = ObjectID(entityName: "Film", storeIdentifier: "S", primaryKey: 1)
  /// let snapshot = Snapshot(objectID: filmID, version: 1, attributes: values, toOne: [])
  /// ```
  public init(objectID: ObjectID, version: Int64, attributes: AttributeValues, toOne: [ObjectID?]) {
    self.objectID = objectID
    self.version = version
    self.attributes = attributes
    self.toOne = toOne
  }

  /// A snapshot whose values a store built as `[Value]` (kept in a layout made from them).
  public init(objectID: ObjectID, version: Int64, attributes: [Value], toOne: [ObjectID?]) {
    self.init(objectID: objectID, version: version, attributes: AttributeValues(attributes), toOne: toOne)
  }
}

/// The new state of one inserted or updated object in a ``ChangeSet``.
public struct ObjectChange: Sendable, Hashable {
  /// The object's ID: temporary for an insert, permanent for an update.
  public var objectID: ObjectID
  /// Every attribute value, aligned with `EntityDescription.attributes` (the object's own storage, shared).
  public var attributes: AttributeValues
  /// Every to-one target, aligned with `EntityDescription.toOneRelationships`. May name temporary
  /// IDs of objects inserted in the same change set.
  public var toOne: [ObjectID?]
  /// For an update: the row version the context read. The store refuses the update (optimistic-lock
  /// conflict) when the stored version differs. `nil` skips the check.
  public var expectedVersion: Int64?
  /// For an update: the names of the attributes and relationships the context changed.
  public var changedKeys: [String]

  /// The new state of `objectID`.
  public init(
    objectID: ObjectID, attributes: AttributeValues, toOne: [ObjectID?], expectedVersion: Int64? = nil,
    changedKeys: [String] = []
  ) {
    self.objectID = objectID
    self.attributes = attributes
    self.toOne = toOne
    self.expectedVersion = expectedVersion
    self.changedKeys = changedKeys
  }

  /// A change whose values were built as `[Value]` (kept in a layout made from them).
  public init(
    objectID: ObjectID, attributes: [Value], toOne: [ObjectID?], expectedVersion: Int64? = nil,
    changedKeys: [String] = []
  ) {
    self.init(
      objectID: objectID, attributes: AttributeValues(attributes), toOne: toOne, expectedVersion: expectedVersion,
      changedKeys: changedKeys)
  }

  /// Throws `.misuse` unless the change holds one value per attribute and one target per to-one
  /// relationship of `entity` — what every store checks before writing a change.
  ///
  /// ```swift
  /// try change.requireShape(of: entity)
  /// ```
  public func requireShape(of entity: EntityDescription) throws {
    try requireShape(attributeCount: entity.attributes.count, toOneCount: entity.toOneRelationships.count) { entity }
  }

  /// ``requireShape(of:)`` against counts a store keeps at hand, the entity made only for the error.
  public func requireShape(attributeCount: Int, toOneCount: Int, entity: () -> EntityDescription) throws {
    guard attributes.count != attributeCount || toOne.count != toOneCount else { return }
    let entity = entity()
    throw StoreError(
      .misuse,
      "the change of \(objectID) holds \(attributes.count) attribute values and \(toOne.count) to-one targets; "
        + "\(entity.name) has \(entity.attributes.count) attributes and \(entity.toOneRelationships.count) to-one relationships",
      entity: entity.name)
  }
}

/// One object deleted by a ``ChangeSet``.
public struct ObjectDeletion: Sendable, Hashable {
  /// The object to delete (a permanent ID).
  public var objectID: ObjectID
  /// The row version the context read; `nil` skips the optimistic-lock check.
  public var expectedVersion: Int64?

  /// A deletion of `objectID`, checked against `expectedVersion` when given.
  public init(objectID: ObjectID, expectedVersion: Int64? = nil) {
    self.objectID = objectID
    self.expectedVersion = expectedVersion
  }
}

/// A link added to or removed from a many-to-many relationship.
public struct LinkChange: Sendable, Hashable {
  /// The entity and relationship as seen from `source`.
  public var entityName: String
  /// The relationship's name on `entityName`.
  public var relationship: String
  /// The object that holds the relationship.
  public var source: ObjectID
  /// The object linked to or unlinked from.
  public var target: ObjectID
  /// `true` when the link is added, `false` when it is removed.
  public var isInsertion: Bool

  /// A link between `source` and `target` added or removed.
  public init(entityName: String, relationship: String, source: ObjectID, target: ObjectID, isInsertion: Bool) {
    self.entityName = entityName
    self.relationship = relationship
    self.source = source
    self.target = target
    self.isInsertion = isInsertion
  }
}

/// The new order of one ordered to-many relationship of one object (`RelationshipDescription.isOrdered`).
///
/// A ``ChangeSet`` carries one for every object whose ordered relationship changed in membership or
/// order, listing the complete new list. The membership itself still travels the usual way (the
/// inverse's to-one in ``ObjectChange/toOne``, or ``LinkChange``s for a join table); a store records the
/// positions: after the save, ``PersistentStore/relatedObjectIDs(of:relationship:generation:)`` returns the
/// targets in `targets` order. Targets the same save deletes, or that no longer belong to the list, are
/// skipped; targets the list lacks but the store holds (added by another writer since) come after it.
///
/// ```swift
/// OrderedListChange(entityName: "Playlist", relationship: "tracks", source: playlistID,
///                   targets: [track2, track1])
/// ```
public struct OrderedListChange: Sendable, Hashable {
  /// The entity of `source`.
  public var entityName: String
  /// The ordered to-many relationship's name on `entityName`.
  public var relationship: String
  /// The object that holds the relationship (temporary when inserted by the same change set).
  public var source: ObjectID
  /// Every target, in order (temporary IDs for objects inserted by the same change set).
  public var targets: [ObjectID]

  /// The list `targets` of `source`'s `relationship`.
  public init(entityName: String, relationship: String, source: ObjectID, targets: [ObjectID]) {
    self.entityName = entityName
    self.relationship = relationship
    self.source = source
    self.targets = targets
  }

  /// `members` (a relationship's targets in primary-key order) arranged by `positions` (primary keys in
  /// list order, as a store recorded them): those the list names first, in its order, then the others in
  /// their given order. For stores that keep the list apart from the membership (memory, LMDB).
  ///
  /// ```swift
  /// OrderedListChange.arrange([a, b, c], by: [c.primaryKey!, a.primaryKey!])   // [c, a, b]
  /// ```
  public static func arrange(_ members: [ObjectID], by positions: [Int64]) -> [ObjectID] {
    guard !positions.isEmpty, members.count > 1 else { return members }
    var rank: [Int64: Int] = [:]
    rank.reserveCapacity(positions.count)
    for (i, key) in positions.enumerated() where rank[key] == nil { rank[key] = i }
    return members.enumerated().sorted { a, b in
      let ra = a.element.primaryKey.flatMap { rank[$0] } ?? (positions.count + a.offset)
      let rb = b.element.primaryKey.flatMap { rank[$0] } ?? (positions.count + b.offset)
      return ra < rb
    }.map(\.element)
  }
}

/// Everything one context save writes, applied by a store in one transaction: all of it or none of it.
///
/// The context has already applied delete rules (nullify, cascade) and checked deny rules, so the
/// change set is complete: a store writes what it says and enforces uniqueness constraints and
/// optimistic locking. The values it carries for derived attributes are ignored: the store computes
/// them (``DerivedRecomputation``).
public struct ChangeSet: Sendable, Hashable {
  /// The objects to insert, under temporary IDs.
  public var inserted: [ObjectChange]
  /// The objects to update, with their changed keys.
  public var updated: [ObjectChange]
  /// The objects to delete.
  public var deleted: [ObjectDeletion]
  /// Link changes of many-to-many relationships (to-one sides are carried in `toOne`).
  public var linkChanges: [LinkChange]
  /// The complete new list of every ordered to-many relationship that changed (membership or order).
  public var orderedLists: [OrderedListChange] = []
  /// The `transactionAuthor` of the saving context, recorded in persistent history.
  public var author: String?
  /// The name of the saving context, recorded in persistent history.
  public var contextName: String?
  /// Entities that must hold no objects (of their own or of a sub-entity) when the change set commits:
  /// "import when the store is empty", decided inside the store's write transaction so that two processes
  /// importing at once cannot both see an empty store. When one holds an object the store writes nothing
  /// and throws `StoreError.storeNotEmpty(_:)`.
  public var requiredEmptyEntities: [String] = []

  /// A change set; contexts build it.
  public init(
    inserted: [ObjectChange] = [], updated: [ObjectChange] = [], deleted: [ObjectDeletion] = [],
    linkChanges: [LinkChange] = [], author: String? = nil, contextName: String? = nil
  ) {
    self.inserted = inserted
    self.updated = updated
    self.deleted = deleted
    self.linkChanges = linkChanges
    self.author = author
    self.contextName = contextName
  }

  /// Whether there is nothing to write.
  public var isEmpty: Bool {
    inserted.isEmpty && updated.isEmpty && deleted.isEmpty && linkChanges.isEmpty && orderedLists.isEmpty
  }
}

/// What a store reports after applying a ``ChangeSet``.
public struct SaveResult: Sendable, Hashable {
  /// The permanent ID assigned to each inserted object, keyed by its temporary ID.
  ///
  /// When the store listed its IDs with ``listInsertedIDs(_:of:)``, the dictionary is built the first
  /// time it is read (and kept): a context that matches its objects up through ``insertedIDs`` never
  /// builds it.
  public var permanentIDs: [ObjectID: ObjectID] {
    get { listedIDs?.map ?? assignedIDs }
    set {
      assignedIDs = newValue
      listedIDs = nil
    }
    // In place: `result.permanentIDs[id] = permanent` in a loop adds one entry, not a copy of them all.
    _modify {
      if let listed = listedIDs {
        assignedIDs = listed.map
        listedIDs = nil
      }
      yield &assignedIDs
    }
  }
  private var assignedIDs: [ObjectID: ObjectID]
  private var listedIDs: ListedIDs?
  /// The same permanent IDs in the order of the change set's `inserted` list, when the store lists them
  /// (empty otherwise): a context with many inserts matches them up without a lookup each.
  public var insertedIDs: [ObjectID] = []
  /// The new row version of every updated object, keyed by permanent ID. Inserted objects are at
  /// version 1; a store may list them too.
  public var versions: [ObjectID: Int64]
  /// The snapshots as stored, for inserted and updated objects whose stored values differ from what the
  /// context sent (values converted, derived attributes computed by the store), and for every other
  /// object whose derived attributes the save recomputed (the list of an inserted item). Keyed by
  /// permanent ID.
  public var storedSnapshots: [ObjectID: Snapshot]
  /// The history token of the transaction, when history tracking is on.
  public var historyToken: HistoryToken?

  /// A result; stores build it.
  public init(
    permanentIDs: [ObjectID: ObjectID] = [:], versions: [ObjectID: Int64] = [:],
    storedSnapshots: [ObjectID: Snapshot] = [:], historyToken: HistoryToken? = nil
  ) {
    self.assignedIDs = permanentIDs
    self.versions = versions
    self.storedSnapshots = storedSnapshots
    self.historyToken = historyToken
  }

  /// Records `permanent`, the permanent IDs of `inserted` in order, as ``insertedIDs`` and as
  /// ``permanentIDs`` (keyed by each change's `objectID`, built only when read): a store that handed out
  /// its keys in the order of the change set's inserts then keeps no dictionary of them. Each change's
  /// `objectID` must be a temporary ID, none twice (the store has refused the change set otherwise). The
  /// result shares `inserted` (no copy) for as long as it lives.
  ///
  /// ```swift
  /// result.listInsertedIDs(assigned, of: changes.inserted)
  /// result.permanentIDs[changes.inserted[0].objectID] == assigned[0]   // true
  /// ```
  public mutating func listInsertedIDs(_ permanent: [ObjectID], of inserted: [ObjectChange]) {
    insertedIDs = permanent
    assignedIDs = [:]
    listedIDs = inserted.isEmpty ? nil : ListedIDs(inserted: inserted, permanent: permanent)
  }

  /// Whether ``permanentIDs`` is empty, without building it.
  public var hasPermanentIDs: Bool {
    listedIDs != nil || !assignedIDs.isEmpty
  }

  public static func == (a: SaveResult, b: SaveResult) -> Bool {
    a.insertedIDs == b.insertedIDs && a.versions == b.versions && a.storedSnapshots == b.storedSnapshots
      && a.historyToken == b.historyToken && a.permanentIDs == b.permanentIDs
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(insertedIDs)
    hasher.combine(versions)
    hasher.combine(storedSnapshots)
    hasher.combine(historyToken)
    hasher.combine(permanentIDs)
  }
}

/// The inserts of a change set and their permanent IDs in the same order; the dictionary of one by the
/// other is built on first use (``SaveResult/listInsertedIDs(_:of:)``).
private final class ListedIDs: Sendable {
  private let inserted: [ObjectChange]
  private let permanent: [ObjectID]
  private let built = Locked<[ObjectID: ObjectID]?>(nil)

  init(inserted: [ObjectChange], permanent: [ObjectID]) {
    self.inserted = inserted
    self.permanent = permanent
  }

  var map: [ObjectID: ObjectID] {
    built.withLock { built in
      if let built { return built }
      var map: [ObjectID: ObjectID] = [:]
      map.reserveCapacity(permanent.count)
      for (change, id) in zip(inserted, permanent) { map[change.objectID] = id }
      built = map
      return map
    }
  }
}

extension StoreError {
  /// What a store throws when an entity of ``ChangeSet/requiredEmptyEntities`` holds objects: a
  /// `.constraintConflict` naming the entity, the save not written.
  public static func storeNotEmpty(_ entity: String) -> StoreError {
    StoreError(.constraintConflict, "the store already holds \(entity) objects: nothing was saved", entity: entity)
  }
}
