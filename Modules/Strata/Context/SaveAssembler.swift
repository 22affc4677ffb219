import Foundation
internal import StrataStoreKit

/// Builds the ``ChangeSet`` a context's save sends to its store: what each inserted and changed object
/// stores (transient attributes as null), the version each update and delete expects (none under
/// ``MergePolicy/overwrite``), and the link changes of join-table relationships.
struct SaveAssembler {
  let model: ObjectModel
  let mergePolicy: MergePolicy
  let author: String?
  let contextName: String?

  /// The change set of one save round.
  ///
  /// Each object is read once (its entity's info, values and to-ones) and only those with to-many
  /// relationships again: a second pass over all of them cost a cache miss per object of a large save.
  ///
  /// `validate` sees each inserted and updated object (with its entity's info, and whether it is an
  /// insert) just before its change is read, so that a save validates in the same pass; a validation
  /// that changes the object's own values is what its change holds.
  @inline(__always)
  func changeSet(
    inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject],
    validate: (ManagedObject, EntityInfo?, _ isInsert: Bool) -> Void = { _, _, _ in }
  ) -> ChangeSet {
    var changeSet = ChangeSet(author: author, contextName: contextName)
    changeSet.deleted = deleted.map { ObjectDeletion(objectID: $0.objectID, expectedVersion: expectedVersion(of: $0)) }
    // Objects with to-many relationships, whose link changes and lists follow.
    var withToMany: [(object: ManagedObject, info: EntityInfo)] = []
    changeSet.inserted = Self.lending(inserted) { object, info in
      validate(object, info, true)
      if let info, info.hasToMany { withToMany.append((object, info)) }
      return ObjectChange(objectID: object.objectID, attributes: Self.storedAttributes(of: object, info), toOne: object.toOne)
    }
    changeSet.updated = Self.lending(updated) { object, info in
      validate(object, info, false)
      if let info, info.hasToMany { withToMany.append((object, info)) }
      return ObjectChange(
        objectID: object.objectID, attributes: Self.storedAttributes(of: object, info), toOne: object.toOne,
        expectedVersion: expectedVersion(of: object), changedKeys: object.changedKeys.sorted())
    }
    // The targets deleted in this save, whose links go with their rows: collected when first needed.
    var deletedIDs: Set<ObjectID>?
    for (object, info) in withToMany {
      appendLinkChanges(of: object, info, to: &changeSet) { target in
        if deletedIDs == nil { deletedIDs = Set(deleted.map(\.objectID)) }
        return deletedIDs?.contains(target) == true
      }
      if info.hasOrderedToMany { appendOrderedLists(of: object, info, to: &changeSet) }
    }
    return changeSet
  }

  /// `make` of each of `objects`, given the object and its entity's info lent (``Array/forEachLent(_:)``,
  /// ``ManagedObject/withLentInfo(_:)``): a save calls it for every object it writes.
  @inline(__always)
  static func lending<T>(_ objects: [ManagedObject], _ make: (ManagedObject, EntityInfo?) -> T) -> [T] {
    var made: [T] = []
    made.reserveCapacity(objects.count)
    objects.forEachLent { object in object.withLentInfo { info in made.append(make(object, info)) } }
    return made
  }

  /// The values `object` writes (``storedAttributes(of:_:)`` with its entity's info).
  @inline(__always)
  static func storedAttributes(of object: ManagedObject) -> AttributeValues {
    storedAttributes(of: object, object.info)
  }

  /// The values `object` of entity `info` writes: its current ones, with transient attributes null.
  /// Inlined: the save's bookkeeping calls it for every saved object.
  @inline(__always)
  static func storedAttributes(of object: ManagedObject, _ info: EntityInfo?) -> AttributeValues {
    guard let info, info.hasTransientAttributes else { return object.values }
    var values = object.values
    for (i, attribute) in info.entity.attributes.enumerated() where attribute.isTransient { values[i] = .null }
    return values
  }

  private func expectedVersion(of object: ManagedObject) -> Int64? {
    mergePolicy == .overwrite ? nil : object.snapshotVersion
  }

  /// The complete list of each ordered relationship of `object` that changed in membership or order.
  private func appendOrderedLists(of object: ManagedObject, _ info: EntityInfo, to changeSet: inout ChangeSet) {
    for (i, rel) in info.entity.toManyRelationships.enumerated() where rel.isOrdered {
      guard object.toMany[i] != nil, let order = object.orderedTargets(toManyIndex: i) else { continue }
      // An inserted object's empty list has nothing to write.
      let changed =
        object.isInsertedStorage
        ? !order.isEmpty
        : object.toMany[i] != object.committedToMany[i] || order != (object.committedToManyOrder[i] ?? [])
      guard changed else { continue }
      changeSet.orderedLists.append(
        OrderedListChange(entityName: info.entity.name, relationship: rel.name, source: object.objectID, targets: order))
    }
  }

  /// The links `object`'s join-table relationships gained and lost since they were loaded or saved.
  private func appendLinkChanges(
    of object: ManagedObject, _ info: EntityInfo, to changeSet: inout ChangeSet, isDeleted: (ObjectID) -> Bool
  ) {
    for (i, rel) in info.entity.toManyRelationships.enumerated() where model.usesJoinTable(rel) {
      guard let current = object.toMany[i] else { continue }
      let committed = object.committedToMany[i] ?? []
      for target in current.subtracting(committed) {
        changeSet.linkChanges.append(
          LinkChange(
            entityName: info.entity.name, relationship: rel.name, source: object.objectID, target: target, isInsertion: true))
      }
      for target in committed.subtracting(current) where !isDeleted(target) {
        changeSet.linkChanges.append(
          LinkChange(
            entityName: info.entity.name, relationship: rel.name, source: object.objectID, target: target, isInsertion: false))
      }
    }
  }
}
