import Foundation

/// One step of a store's migration: the structural change from one model to the next, and the data work
/// an app's custom stage does around it, inside the migration's transaction.
///
/// `willMigrate` runs before the structural change with a store on ``ModelMigration/source``;
/// `didMigrate` after it with a store on ``ModelMigration/destination``. Each is handed a
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
  public var migration: ModelMigration
  public var willMigrate: (@Sendable (any PersistentStore) throws -> Void)?
  public var didMigrate: (@Sendable (any PersistentStore) throws -> Void)?

  public init(
    _ migration: ModelMigration, willMigrate: (@Sendable (any PersistentStore) throws -> Void)? = nil,
    didMigrate: (@Sendable (any PersistentStore) throws -> Void)? = nil
  ) {
    self.migration = migration
    self.willMigrate = willMigrate
    self.didMigrate = didMigrate
  }

  /// Whether the step runs app code (a custom stage) besides its structural change.
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
/// transaction lists: each object once, under the final model's entity name, inserted (also when a later
/// stage updated it), updated (the union of its changed keys, renamed as the attributes were) or deleted
/// (nothing, when a stage deleted what a stage inserted).
///
/// ```swift
/// var log = MigrationChangeLog()
/// log.record(stageChanges)               // after each stage, in the stage's model
/// log.carry(through: step.migration)     // after each structural change
/// let changes = log.changes              // for the "migration" transaction
/// ```
public struct MigrationChangeLog: Sendable {
  private struct Entry: Sendable {
    var id: ObjectID
    var type: HistoryChangeType
    var keys: Set<String>
    var tombstone: [String: Value]
    /// Inserted and deleted again within the migration: nothing to record.
    var isDropped = false
  }

  private var entries: [Entry] = []
  private var positions: [ObjectID: Int] = [:]

  public init() {}

  /// Adds what one stage's saves changed (in the model the stage ran on).
  public mutating func record(_ changes: [HistoryChange]) {
    for change in changes {
      guard let position = positions[change.objectID] else {
        positions[change.objectID] = entries.count
        entries.append(
          Entry(
            id: change.objectID, type: change.changeType, keys: Set(change.updatedProperties), tombstone: change.tombstone))
        continue
      }
      var entry = entries[position]
      switch (entry.type, change.changeType) {
      case (.insert, .delete):
        entry.isDropped = true
      case (_, .delete):
        entry.type = .delete
        entry.keys = []
        entry.tombstone = change.tombstone
      case (.insert, _):
        break
      default:
        entry.keys.formUnion(change.updatedProperties)
      }
      entries[position] = entry
    }
  }

  /// Renames the recorded objects' entities and keys as `migration` does; objects of removed entities
  /// and keys of removed properties are dropped.
  public mutating func carry(through migration: ModelMigration) {
    var entityNames: [String: EntityMapping] = [:]
    for mapping in migration.entities {
      if let source = mapping.source { entityNames[source] = mapping }
    }
    var carried: [Entry] = []
    for entry in entries {
      guard let mapping = entityNames[entry.id.entityName] else { continue }
      var keyNames: [String: String] = [:]
      for attribute in mapping.attributes {
        if let source = attribute.source { keyNames[source] = attribute.attribute.name }
      }
      for (name, source) in mapping.relationshipSources { keyNames[source] = name }
      var moved = entry
      moved.id = ObjectID(
        entityName: mapping.entity.name, storeIdentifier: entry.id.storeIdentifier, primaryKey: entry.id.primaryKey ?? 0)
      moved.keys = Set(entry.keys.compactMap { keyNames[$0] })
      carried.append(moved)
    }
    entries = carried
    positions = Dictionary(carried.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
  }

  /// The changes to record, in the order the objects were first changed.
  public var changes: [HistoryChange] {
    entries.compactMap { entry in
      if entry.isDropped { return nil }
      return HistoryChange(
        objectID: entry.id, changeType: entry.type, updatedProperties: entry.type == .update ? entry.keys.sorted() : [],
        tombstone: entry.tombstone)
    }
  }
}
