import Foundation

/// Turns a migration's advance into ``MigrationProgress`` reports: each step is `total` units (stages,
/// tables, records), reported at its start, as units are done and at its end. Reported fractions never go
/// back, also when a backend runs the migration again (LMDB after its map grew): the reporter is a class,
/// so one instance follows every attempt. Used on the migrating thread only.
package final class MigrationReporter {
  private let report: (@Sendable (MigrationProgress) -> Void)?
  private let stepCount: Int
  private var step = 0
  private var completed = 0
  private var total = 1
  /// The largest fraction reported so far.
  private var reached = -1.0

  package init(report: (@Sendable (MigrationProgress) -> Void)?, stepCount: Int) {
    self.report = report
    self.stepCount = stepCount
  }

  package func start(step: Int, total: Int, phase: String) {
    self.step = step
    self.total = max(total, 1)
    completed = 0
    send(phase)
  }

  /// `units` more of the step are done (never more than its total).
  package func advance(by units: Int = 1, _ phase: String) {
    completed = min(completed + units, total)
    send(phase)
  }

  package func finish(_ phase: String) {
    completed = total
    send(phase)
  }

  /// The whole migration done (another process had migrated the store).
  package func finishAll() {
    step = max(stepCount - 1, 0)
    finish("the store was migrated by another process")
  }

  private func send(_ phase: String) {
    guard let report else { return }
    let progress = MigrationProgress(step: step, stepCount: stepCount, completed: completed, total: total, phase: phase)
    // Never back, and completion once: a phase that ends at 1.0 after another did is not reported.
    guard progress.fractionCompleted > reached || (progress.fractionCompleted == reached && reached < 1) else { return }
    reached = progress.fractionCompleted
    report(progress)
  }
}

extension MigrationStep {
  /// Checks that `steps` is a migration of a store holding `model`: not empty, starting from `model`,
  /// each step starting from the model the one before ends with. Returns the last step.
  ///
  /// - Throws: `.misuse` naming `store` ("the SQLite store /path") otherwise.
  package static func checkChain(_ steps: [MigrationStep], from model: ObjectModel, store: String) throws -> MigrationStep {
    guard let last = steps.last else { throw StoreError(.misuse, "a migration needs at least one step") }
    guard steps[0].migration.source == model else {
      throw StoreError(.misuse, "the migration starts from another model than \(store) holds")
    }
    for (index, step) in steps.enumerated().dropFirst() where step.migration.source != steps[index - 1].migration.destination {
      throw StoreError(
        .misuse, "migration step \(index + 1) does not start from the model step \(index) ends with")
    }
    return last
  }
}
