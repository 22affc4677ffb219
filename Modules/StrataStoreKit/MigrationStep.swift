import Foundation

/// One step of a store's migration: the structural change from one model to the next, and the data work
/// an app's custom stage does around it, inside the migration's transaction.
///
/// `willMigrate` runs before the structural change with a store on `ModelMigration.source`;
/// `didMigrate` after it with a store on `ModelMigration.destination`. Each is handed a
/// ``PersistentStore`` bound to the migration's transaction: its fetches see everything written so far in
/// the migration, its saves and batch requests write inside the transaction (nothing is visible to other
/// connections or processes until the whole migration commits), and an error thrown by the closure rolls
/// the whole migration back. The bound store answers persistent history, query generations and change
/// streams with `.unsupported` or nothing, and is not to be kept after the closure returns.
///
/// ```swift
/// let step = MigrationStep(migration, didMigrate: { store in
///   let people = try store.fetch(FetchDescription(entityName: "Person"), generation: nil)
///   // … split each full name, then store.save(changes)
/// })
/// store = try store.migrated(along: [step], reporting: nil)
/// ```
public struct MigrationStep: Sendable {
  /// The structural change of this step.
  public var migration: ModelMigration
  /// Data work before the structural change, with a store on the source model.
  public var willMigrate: (@Sendable (any PersistentStore) throws -> Void)?
  /// Data work after the structural change, with a store on the destination model.
  public var didMigrate: (@Sendable (any PersistentStore) throws -> Void)?

  /// A step of `migration` with the given stages. When the migration adds derived attributes or changes
  /// a derivation (`ModelMigration.entitiesRecomputingDerivedAttributes`), `didMigrate` first saves
  /// every object of those entities again, so that the store computes their derived values (a `now()`
  /// derivation takes the migration's time), then runs the given stage.
  public init(
    _ migration: ModelMigration, willMigrate: (@Sendable (any PersistentStore) throws -> Void)? = nil,
    didMigrate: (@Sendable (any PersistentStore) throws -> Void)? = nil
  ) {
    self.migration = migration
    self.willMigrate = willMigrate
    let recomputed = migration.entitiesRecomputingDerivedAttributes
    if recomputed.isEmpty {
      self.didMigrate = didMigrate
    } else {
      self.didMigrate = { store in
        try Self.recomputeDerivedAttributes(of: recomputed, in: store)
        try didMigrate?(store)
      }
    }
  }

  /// Saves every object of `entities` again, unchanged, in batches, so that `store` computes their
  /// derived attributes.
  static func recomputeDerivedAttributes(of entities: [String], in store: any PersistentStore) throws {
    for name in entities {
      var own = FetchDescription(entityName: name)
      own.includesSubentities = false
      guard let entity = store.model.entity(named: name), case .snapshots(let rows) = try store.fetch(own, generation: nil)
      else { continue }
      let derived = entity.attributes.filter { $0.derivation != nil }.map(\.name)
      var start = 0
      while start < rows.count {
        let batch = rows[start..<min(start + 10_000, rows.count)].map { row in
          ObjectChange(objectID: row.objectID, attributes: row.attributes, toOne: row.toOne, changedKeys: derived)
        }
        _ = try store.save(ChangeSet(updated: batch, author: historyAuthor))
        start += batch.count
      }
    }
  }

  /// Whether the step runs work besides its structural change (a custom stage, or computing derived
  /// attributes).
  public var isCustom: Bool { willMigrate != nil || didMigrate != nil }

  /// The author of the history transaction that records a migration (see
  /// ``PersistentStore/migrated(along:reporting:)``).
  public static let historyAuthor = "migration"
}

extension PersistentStore {
  /// Migrates the store along one structural change without custom stages (see
  /// ``migrated(along:reporting:)``).
  ///
  /// ```swift
  /// store = try store.migrated(by: try ModelMigration(from: store.model, to: appModel))
  /// ```
  public func migrated(by migration: ModelMigration) throws -> any PersistentStore {
    try migrated(along: [MigrationStep(migration)], reporting: nil)
  }
}

/// The changes the custom stages of a migration made, folded into what the migration's one history
/// transaction lists: each object once, under the final model's entity and key names, in the order the
/// objects were first written. Writes fold as what they add up to: inserted then updated is an insert;
/// updated twice an update of both sets of keys; updated then deleted a delete; inserted then deleted
/// nothing; deleted then inserted again under the same key an update of every property.
///
/// ```swift
/// var log = MigrationChangeLog()
/// log.record(stageChanges, model: stageStore.model)   // after each save of a stage
/// log.carry(through: step.migration)                   // after each structural change
/// let changes = log.changes                            // for the "migration" transaction
/// ```
public struct MigrationChangeLog: Sendable {
  private enum Kind: Sendable {
    case insert
    case update([String])
    case delete(tombstone: [String: Value])
  }

  /// Objects in the order they were first written; those whose writes cancel out have no kind.
  private var order: [ObjectID] = []
  private var listed: Set<ObjectID> = []
  private var kinds: [ObjectID: Kind] = [:]

  /// An empty log.
  public init() {}

  /// Folds in the history changes of one write made with `model` (the model of the stage's store).
  public mutating func record(_ changes: [HistoryChange], model: ObjectModel) {
    for change in changes {
      let id = change.objectID
      let earlier = kinds[id]
      if listed.insert(id).inserted { order.append(id) }
      kinds[id] = Self.fold(earlier, change, model: model)
    }
  }

  private static func fold(_ earlier: Kind?, _ change: HistoryChange, model: ObjectModel) -> Kind? {
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

  /// Renames what was recorded as `migration` does: each object under its entity's new name, each key
  /// under its new name, tombstone values converted; objects of removed entities and removed keys go.
  public mutating func carry(through migration: ModelMigration) {
    var renamed: [String: (entity: String, attributes: [String: AttributeMapping], relationships: [String: String])] = [:]
    for mapping in migration.entities {
      guard let source = mapping.source else { continue }
      var attributes: [String: AttributeMapping] = [:]
      for attribute in mapping.attributes { if let old = attribute.source { attributes[old] = attribute } }
      var relationships: [String: String] = [:]
      for (new, old) in mapping.relationshipSources { relationships[old] = new }
      renamed[source] = (mapping.entity.name, attributes, relationships)
    }
    var carriedOrder: [ObjectID] = []
    var carriedKinds: [ObjectID: Kind] = [:]
    for id in order {
      guard let kind = kinds[id], let target = renamed[id.entityName], let key = id.primaryKey else { continue }
      let newID = ObjectID(entityName: target.entity, storeIdentifier: id.storeIdentifier, primaryKey: key)
      switch kind {
      case .insert:
        carriedKinds[newID] = .insert
      case .update(let keys):
        carriedKinds[newID] = .update(keys.compactMap { target.attributes[$0]?.attribute.name ?? target.relationships[$0] })
      case .delete(let tombstone):
        var converted: [String: Value] = [:]
        for (name, value) in tombstone {
          guard let attribute = target.attributes[name] else { continue }
          converted[attribute.attribute.name] = attribute.convert(value)
        }
        carriedKinds[newID] = .delete(tombstone: converted)
      }
      carriedOrder.append(newID)
    }
    order = carriedOrder
    listed = Set(carriedOrder)
    kinds = carriedKinds
  }

  /// The folded changes, in the order their objects were first written.
  public var changes: [HistoryChange] {
    order.compactMap { id -> HistoryChange? in
      switch kinds[id] {
      case .insert?: HistoryChange(objectID: id, changeType: .insert)
      case .update(let keys)?: HistoryChange(objectID: id, changeType: .update, updatedProperties: keys)
      case .delete(let tombstone)?: HistoryChange(objectID: id, changeType: .delete, tombstone: tombstone)
      case nil: nil
      }
    }
  }
}
