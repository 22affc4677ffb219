import Foundation

/// How far a running migration has come, reported by the store that migrates (and a container's
/// `migrationProgressHandler`) so that a tool can draw a progress bar: `completed` of `total` units
/// (objects rewritten, tables altered), in step `step` (0-based) of `stepCount`, with a short phrase
/// naming what is being done.
///
/// ```swift
/// container.migrationProgressHandler = { progress in
///   print("\(progress.phase): \(Int(progress.fractionCompleted * 100))%")
/// }
/// ```
public struct MigrationProgress: Sendable, Hashable {
  /// The step running, from 0.
  public var step: Int
  /// How many steps the migration has.
  public var stepCount: Int
  /// The units of the current step done so far.
  public var completed: Int
  /// The units the current step has in all.
  public var total: Int
  /// What is being done, in a few words.
  public var phase: String

  /// A report of `completed` of `total` units in step `step` of `stepCount`.
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
