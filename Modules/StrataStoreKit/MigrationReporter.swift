import Foundation

/// Turns a migration's advance into ``MigrationProgress`` reports: each step is `total` units (stages and
/// tables), reported at its start, after each unit and at its end.
package struct MigrationReporter {
  let report: (@Sendable (MigrationProgress) -> Void)?
  let stepCount: Int
  var step = 0
  var completed = 0
  var total = 1

  package init(report: (@Sendable (MigrationProgress) -> Void)?, stepCount: Int) {
    self.report = report
    self.stepCount = stepCount
  }

  package mutating func start(step: Int, total: Int, phase: String) {
    self.step = step
    self.total = max(total, 1)
    completed = 0
    send(phase)
  }

  package mutating func advance(_ phase: String) {
    completed = min(completed + 1, total)
    send(phase)
  }

  package mutating func finish(_ phase: String) {
    completed = total
    send(phase)
  }

  /// The whole migration done (another process had migrated the store).
  package mutating func finishAll() {
    step = max(stepCount - 1, 0)
    finish("the store was migrated by another process")
  }

  private func send(_ phase: String) {
    report?(MigrationProgress(step: step, stepCount: stepCount, completed: completed, total: total, phase: phase))
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
