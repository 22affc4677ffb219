import Foundation

/// The derived-attribute work of one store transaction: which objects to recompute, and their values.
///
/// Every store runs it inside the transaction that applies a ``ChangeSet`` (a context's save, or a batch
/// request saved as one), in two steps:
/// 1. ``noteRelatedObjects(before:)`` before anything is written, with a source reading the store as it
///    was: it remembers the objects whose derivations read the updated and deleted objects as they were
///    related then (the old list of a moved item, the list of a deleted item);
/// 2. ``recompute(permanentIDs:source:)`` after every write, delete and link change, with a source
///    reading the new state: it computes the derived attributes of each written object, and of each
///    object whose derivations read a written, deleted or re-linked one (the list of an inserted item,
///    every item of a renamed list), and returns the snapshots whose values changed.
///
/// The store writes those snapshots' attributes without changing their versions, then adds the objects
/// the change set did not write with ``report(_:into:change:)``, so the saving context shows their new
/// values and other contexts refresh them. `now()` is computed once per transaction, for written
/// objects only.
///
/// ```swift
/// var derived = DerivedRecomputation(model: model, changes: changes)
/// try derived.noteRelatedObjects(before: sourceBefore)
/// // … write the change set …
/// let recomputed = try derived.recompute(permanentIDs: permanentIDs, source: sourceAfter)
/// for snapshot in recomputed { write(snapshot) }
/// derived.report(recomputed, into: &result, change: &change)
/// ```
public struct DerivedRecomputation {
  private let model: ObjectModel
  private let derived: DerivedAttributes
  private let changes: ChangeSet
  private let now = Date()
  /// Objects related to updated or deleted objects before the writes, to recompute afterwards.
  private var relatedBefore: [ObjectID] = []
  /// The objects the change set writes (permanent IDs), known once ``recompute(permanentIDs:source:)`` ran.
  private var written = Set<ObjectID>()

  /// Whether the change set can change a derived attribute; when it cannot, every step does nothing.
  public let isNeeded: Bool

  /// The recomputation of one save of `changes` to a store of `model`.
  public init(model: ObjectModel, changes: ChangeSet) {
    self.model = model
    self.derived = model.derivedAttributes
    self.changes = changes
    let derived = model.derivedAttributes
    isNeeded =
      !derived.isEmpty
      && (changes.inserted.contains { derived.isInvolved($0.objectID.entityName) }
        || changes.updated.contains { derived.isInvolved($0.objectID.entityName) }
        || changes.deleted.contains { derived.isInvolved($0.objectID.entityName) }
        || changes.linkChanges.contains { derived.isInvolved($0.entityName) })
  }

  /// Step 1, before the store writes: remembers what the updated and deleted objects are read by now.
  public mutating func noteRelatedObjects(before source: some EvaluationSource) throws {
    guard isNeeded else { return }
    for update in changes.updated {
      relatedBefore += try readers(of: update.objectID, changedKeys: update.changedKeys, source)
    }
    for deletion in changes.deleted {
      relatedBefore += try readers(of: deletion.objectID, changedKeys: [], source)
    }
  }

  /// Step 2, after every write: the snapshots (as `source` reads them, versions unchanged) whose derived
  /// attributes now hold different values, with the new values.
  ///
  /// - Parameters:
  ///   - permanentIDs: the permanent ID of each inserted object, by the ID the change set gave it.
  ///   - source: the store's state inside the write transaction, after every write.
  /// - Throws: `.validation` naming the entity and key when a value does not fit its attribute (a count
  ///   beyond an `Int16`, say); what `source` throws.
  public mutating func recompute(permanentIDs: [ObjectID: ObjectID], source: some EvaluationSource) throws -> [Snapshot] {
    guard isNeeded else { return [] }
    var order: [ObjectID] = []
    var isWritten: [ObjectID: Bool] = [:]
    func add(_ id: ObjectID, written: Bool) {
      if let known = isWritten[id] {
        if written && !known { isWritten[id] = true }
        return
      }
      isWritten[id] = written
      order.append(id)
    }
    for insert in changes.inserted {
      let id = permanentIDs[insert.objectID] ?? insert.objectID
      written.insert(id)
      add(id, written: true)
      for reader in try readers(of: id, changedKeys: [], source) { add(reader, written: false) }
    }
    for update in changes.updated {
      written.insert(update.objectID)
      add(update.objectID, written: true)
      for reader in try readers(of: update.objectID, changedKeys: update.changedKeys, source) {
        add(reader, written: false)
      }
    }
    for id in relatedBefore { add(id, written: false) }
    for link in changes.linkChanges {
      let (sourceID, targetID) = (permanentIDs[link.source] ?? link.source, permanentIDs[link.target] ?? link.target)
      if derived.derivations(of: link.entityName).contains(where: { $0.reads(link.relationship) }) {
        add(sourceID, written: false)
      }
      if derived.watches[link.entityName]?.contains(where: { $0.inverse.name == link.relationship }) == true {
        add(targetID, written: false)
      }
    }

    var expressions: [String: [ComputedExpression?]] = [:]
    var result: [Snapshot] = []
    for id in order {
      let derivations = derived.derivations(of: id.entityName)
      guard let first = derivations.first, let snapshot = try source.snapshot(for: id) else { continue }
      if expressions[id.entityName] == nil {
        expressions[id.entityName] = try derivations.map { derivation -> ComputedExpression? in
          if case .clock = derivation.reach { return nil }
          let (checked, _) = try QueryValidator.checkExpression(derivation.expression, entity: first.entity, model: model)
          return try ComputedExpression(checked, entity: first.entity, model: model)
        }
      }
      let computed = expressions[id.entityName] ?? []
      var updated = snapshot
      for (derivation, expression) in zip(derivations, computed) where derivation.index < updated.attributes.count {
        let raw: Value
        if let expression {
          raw = try expression.value(snapshot, source)
        } else if isWritten[id] == true {
          raw = .date(now)
        } else {
          continue
        }
        updated.attributes[derivation.index] = try derivation.stored(raw)
      }
      if updated != snapshot { result.append(updated) }
    }
    return result
  }

  /// Adds the recomputed objects the change set did not write to a save's result (their stored
  /// snapshots) and announcement (as updated). Written objects are reported by the store as usual.
  public func report(_ recomputed: [Snapshot], into result: inout SaveResult, change: inout StoreChange) {
    guard !recomputed.isEmpty else { return }
    var announced = Set(change.inserted + change.updated)
    for snapshot in recomputed where !written.contains(snapshot.objectID) {
      result.storedSnapshots[snapshot.objectID] = snapshot
      if announced.insert(snapshot.objectID).inserted { change.updated.append(snapshot.objectID) }
    }
  }

  /// The objects whose derivations read the object `id` through a relationship, as `source` relates
  /// them. With `changedKeys` (an update), only derivations reading one of those keys count.
  private func readers(of id: ObjectID, changedKeys: [String], _ source: some EvaluationSource) throws -> [ObjectID] {
    guard let watches = derived.watches[id.entityName] else { return [] }
    var result: [ObjectID] = []
    var followed = Set<String>()
    for watch in watches where changedKeys.isEmpty || changedKeys.contains(where: watch.keys.contains) {
      guard followed.insert(watch.inverse.name).inserted else { continue }
      if watch.inverse.isToMany {
        result += try source.relatedObjectIDs(of: id, relationship: watch.inverse)
      } else if let index = model.entity(named: id.entityName)?.toOneIndex(named: watch.inverse.name),
        let snapshot = try source.snapshot(for: id), index < snapshot.toOne.count, let target = snapshot.toOne[index]
      {
        result.append(target)
      }
    }
    return result
  }
}

extension DerivedAttributes.Derivation {
  /// Whether the derivation reads through the relationship called `relationship` of its entity.
  func reads(_ relationship: String) -> Bool {
    if case .related(let rel, _, _) = reach { return rel.name == relationship }
    return false
  }

  /// `value` as the attribute stores it: nil becomes the type's zero value in a non-optional attribute,
  /// numbers convert between numeric types (whole-number types truncating).
  /// - Throws: `.validation` naming the entity and key when the value does not fit.
  func stored(_ value: Value) throws -> Value {
    let type = attribute.type
    if value.isNull { return attribute.isOptional ? .null : type.zeroValue }
    guard let converted = type.coerce(value) ?? type.coerce(DictionaryFetch.converted(value, to: type)) else {
      throw StoreError(
        .validation,
        "\(entity.name).\(attribute.name) is a \(attribute.type.rawValue) and cannot hold \(value), the value of its derivation '\(attribute.derivation ?? "")'",
        entity: entity.name, key: attribute.name, value: value)
    }
    return converted
  }
}
