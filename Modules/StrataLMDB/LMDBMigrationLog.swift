import Foundation
import StrataStoreKit

/// What the custom stages of one migration wrote, merged per object, for the one history transaction
/// the migration records at its end (author ``MigrationStep/historyAuthor``).
///
/// Writes merge as what they add up to: inserted then updated is an insert, updated twice an update of
/// both sets of keys, updated then deleted a delete, inserted then deleted nothing, deleted then inserted
/// again under the same key an update of every property. After each structural step, ``follow(_:)`` puts
/// what was recorded under the names of the step's destination model (entities and keys renamed; objects
/// of removed entities and removed keys dropped), so the transaction names the final model's.
///
/// The stores of the stages record into it from whichever thread calls them, one at a time.
final class LMDBMigrationLog: Sendable {
  private enum Kind: Sendable {
    case insert
    case update([String])
    case delete(tombstone: [String: Value])
  }

  private struct Entries: Sendable {
    /// Objects in the order they were first written; those whose kind is gone are skipped.
    var order: [ObjectID] = []
    var listed = Set<ObjectID>()
    var kinds: [ObjectID: Kind] = [:]
  }

  private let entries = Locked(Entries())

  /// Merges the history changes of one write made with `model` (the model of its stage's store).
  func record(_ changes: [HistoryChange], model: ObjectModel) {
    entries.withLock { entries in
      for change in changes {
        let id = change.objectID
        let earlier = entries.kinds[id]
        if entries.listed.insert(id).inserted { entries.order.append(id) }
        entries.kinds[id] = Self.merge(earlier, change, model: model)
      }
    }
  }

  private static func merge(_ earlier: Kind?, _ change: HistoryChange, model: ObjectModel) -> Kind? {
    switch (earlier, change.changeType) {
    case (nil, .insert): return .insert
    case (nil, .update): return .update(change.updatedProperties)
    case (nil, .delete), (.update?, .delete), (.delete?, .delete): return .delete(tombstone: change.tombstone)
    case (.insert?, .insert), (.insert?, .update): return .insert
    case (.insert?, .delete): return nil
    case (.update(let keys)?, .update), (.update(let keys)?, .insert):
      return .update(keys + change.updatedProperties.filter { !keys.contains($0) })
    case (.delete?, .insert), (.delete?, .update):
      let entity = model.entity(named: change.objectID.entityName)
      return .update((entity?.attributes.filter(\.isPersistent).map(\.name) ?? []) + (entity?.relationships.map(\.name) ?? []))
    }
  }

  /// Renames what was recorded after `migration` ran: each object under its entity's new name, each key
  /// under its new name, tombstone values converted; objects of removed entities and removed keys go.
  func follow(_ migration: ModelMigration) {
    var renamed: [String: (mapping: EntityMapping, attributes: [String: AttributeMapping], relationships: [String: String])] =
      [:]
    for mapping in migration.entities {
      guard let source = mapping.source else { continue }
      var attributes: [String: AttributeMapping] = [:]
      for attribute in mapping.attributes { if let old = attribute.source { attributes[old] = attribute } }
      var relationships: [String: String] = [:]
      for (new, old) in mapping.relationshipSources { relationships[old] = new }
      renamed[source] = (mapping, attributes, relationships)
    }
    entries.withLock { entries in
      var followed = Entries()
      for id in entries.order {
        guard let kind = entries.kinds[id], let target = renamed[id.entityName], let pk = id.primaryKey else { continue }
        let newID = ObjectID(entityName: target.mapping.entity.name, storeIdentifier: id.storeIdentifier, primaryKey: pk)
        switch kind {
        case .insert:
          followed.kinds[newID] = .insert
        case .update(let keys):
          followed.kinds[newID] = .update(
            keys.compactMap { key in target.attributes[key]?.attribute.name ?? target.relationships[key] })
        case .delete(let tombstone):
          var converted: [String: Value] = [:]
          for (key, value) in tombstone {
            guard let attribute = target.attributes[key] else { continue }
            converted[attribute.attribute.name] = attribute.convert(value)
          }
          followed.kinds[newID] = .delete(tombstone: converted)
        }
        if followed.listed.insert(newID).inserted { followed.order.append(newID) }
      }
      entries = followed
    }
  }

  /// The merged changes, in the order their objects were first written.
  var changes: [HistoryChange] {
    entries.withLock { entries in
      entries.order.compactMap { id -> HistoryChange? in
        switch entries.kinds[id] {
        case .insert?: HistoryChange(objectID: id, changeType: .insert)
        case .update(let keys)?: HistoryChange(objectID: id, changeType: .update, updatedProperties: keys)
        case .delete(let tombstone)?: HistoryChange(objectID: id, changeType: .delete, tombstone: tombstone)
        case nil: nil
        }
      }
    }
  }
}
