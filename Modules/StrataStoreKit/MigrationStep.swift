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

/// How far a running migration has come, reported by ``PersistentStore/migrated(along:reporting:)`` so
/// that a tool can draw a progress bar: `completed` of `total` units (objects rewritten, tables altered),
/// in step `step` (0-based) of `stepCount`, with a short phrase naming what is being done.
public struct MigrationProgress: Sendable, Hashable {
  public var step: Int
  public var stepCount: Int
  public var completed: Int
  public var total: Int
  public var phase: String

  public init(step: Int, stepCount: Int, completed: Int, total: Int, phase: String) {
    self.step = step
    self.stepCount = stepCount
    self.completed = completed
    self.total = total
    self.phase = phase
  }

  /// The fraction done, from 0 to 1.
  public var fractionCompleted: Double {
    let steps = Double(max(stepCount, 1))
    let within = total > 0 ? Double(min(completed, total)) / Double(total) : 1
    return min(1, (Double(step) + within) / steps)
  }
}

/// What a migration does to the storage of one entity of the new model, for a dry run to show.
public enum StorageChange: String, Sendable, Hashable {
  /// Nothing stored changes (a change of the model alone, such as a delete rule).
  case unchanged
  /// The entity's storage is altered in place (SQLite `ALTER TABLE`), in time independent of its size.
  case alteredInPlace = "altered in place"
  /// The entity's table is copied into a new one (SQLite, when `ALTER TABLE` cannot express the change).
  case rebuilt
  /// Every record of the entity is read and written again (LMDB, memory).
  case rewritten
  /// The entity's storage is created.
  case created
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
