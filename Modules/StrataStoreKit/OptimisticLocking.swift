import Foundation

/// Optimistic locking, the same in every backend: an update or delete carrying an expected row version
/// succeeds only when the stored row is still at that version.
///
/// ```swift
/// try OptimisticLocking.check(changes, model: model) { id in try storedSnapshot(of: id) }
/// ```
public enum OptimisticLocking {
  /// Checks every update (with or without an expected version: the object must still exist) and every
  /// delete that carries an expected version.
  ///
  /// - Parameters:
  ///   - changes: the change set about to be written.
  ///   - model: the store's model.
  ///   - stored: the stored snapshot of an object, `nil` when it no longer exists.
  /// - Throws: one `.optimisticLockConflict` listing every object that changed or vanished, with the
  ///   changed keys and both sides' values.
  public static func check(
    _ changes: ChangeSet, model: ObjectModel, stored: (ObjectID) throws -> Snapshot?
  ) throws {
    try check(changes, model: model, storedVersion: { try stored($0)?.version }, stored: stored)
  }

  /// ``check(_:model:stored:)`` for a store that can read an object's version without the rest of its
  /// row: `storedVersion` is asked for every update and versioned delete, `stored` only to describe a
  /// conflict.
  ///
  /// ```swift
  /// try OptimisticLocking.check(changes, model: model, storedVersion: { try version(of: $0) }) { try snapshot(of: $0) }
  /// ```
  ///
  /// - Parameters:
  ///   - changes: the change set about to be written.
  ///   - model: the store's model.
  ///   - storedVersion: the stored version of an object, `nil` when it no longer exists.
  ///   - stored: the stored snapshot of an object, `nil` when it no longer exists.
  /// - Throws: one `.optimisticLockConflict` listing every object that changed or vanished, with the
  ///   changed keys and both sides' values.
  public static func check(
    _ changes: ChangeSet, model: ObjectModel, storedVersion: (ObjectID) throws -> Int64?,
    stored: (ObjectID) throws -> Snapshot?
  ) throws {
    var conflicts: [StoreError.Conflict] = []
    var details: [String] = []
    for update in changes.updated {
      let version = try storedVersion(update.objectID)
      if let version, update.expectedVersion == nil || update.expectedVersion == version { continue }
      let current = version == nil ? nil : try stored(update.objectID)
      // Looked up for a conflict only: finding it copies the entity's description.
      let entity = try model.requireEntity(update.objectID.entityName)
      let keys = update.changedKeys
      conflicts.append(
        StoreError.Conflict(
          objectID: update.objectID, entity: entity.name, keys: keys,
          values: values(of: keys, entity, update.attributes, update.toOne),
          storedValues: current.map { values(of: keys, entity, $0.attributes, $0.toOne) } ?? []))
      details.append(describe(update.objectID, expected: update.expectedVersion, stored: current?.version))
    }
    for deletion in changes.deleted {
      guard let expected = deletion.expectedVersion, !deletion.objectID.isTemporary else { continue }
      let current = try storedVersion(deletion.objectID)
      if current == expected { continue }
      conflicts.append(StoreError.Conflict(objectID: deletion.objectID, entity: deletion.objectID.entityName, keys: []))
      details.append(describe(deletion.objectID, expected: expected, stored: current))
    }
    guard !conflicts.isEmpty else { return }
    throw StoreError(
      .optimisticLockConflict,
      "optimistic locking failure: \(conflicts.count) object(s) changed in the store since they were read: "
        + details.joined(separator: "; "),
      entity: Set(conflicts.map(\.entity)).count == 1 ? conflicts.first?.entity : nil, conflicts: conflicts)
  }

  private static func describe(_ id: ObjectID, expected: Int64?, stored: Int64?) -> String {
    guard let stored else { return "\(id) no longer exists" }
    return "\(id) is at version \(stored), expected \(expected.map(String.init) ?? "any")"
  }

  private static func values(
    of keys: [String], _ entity: EntityDescription, _ attributes: AttributeValues, _ toOne: [ObjectID?]
  )
    -> [Value]
  {
    keys.map { key in
      switch entity.property(named: key) {
      case .attribute(_, let index) where index < attributes.count: attributes[index]
      case .toOne(_, let index) where index < toOne.count: toOne[index].map(Value.objectID) ?? .null
      default: .null
      }
    }
  }
}
