import Foundation
import Strata
import StrataMirroring
import Synchronization

extension PotatoRater {
  /// The first TaterRater model: potatoes with free-text `notes`.
  static func firstModel() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Potato",
        attributes: [
          AttributeDescription(name: "variety", type: .string), AttributeDescription(name: "crowdRating", type: .float),
          AttributeDescription(
            name: "userRating", type: .int16, validation: AttributeValidation(minimum: 0, maximum: 5)),
          AttributeDescription(name: "notes", type: .string, isOptional: true),
        ],
        uniquenessConstraints: [["variety"]])
    ])
  }

  /// Every version of the TaterRater model, oldest first: a store of any of them opens with the newest.
  ///
  /// - "1": potatoes with free-text notes.
  /// - "2": each line of notes is a ``Tasting`` of its own. A custom stage carries the notes across: it
  ///   reads them on version "1" and writes one tasting per line on version "2".
  /// - "3": mirrored (``MirrorModel/adding(to:)``): an optional global identity on potatoes and tastings,
  ///   and the mirror's state entity; a lightweight migration from "2".
  public static func migrationPlan() throws -> MigrationPlan {
    let v1 = ModelVersion("1", try firstModel())
    let v2 = ModelVersion("2", try ObjectModel(Potato.self, Tasting.self), types: [Potato.self, Tasting.self])
    let v3 = ModelVersion("3", try MirrorModel.adding(to: v2.model), types: [Potato.self, Tasting.self])
    let carried = CarriedNotes()
    let notesBecomeTastings = MigrationStage.custom(
      from: v1, to: v2,
      willMigrate: { context in
        var notes: [String: String] = [:]
        for potato in try context.fetch(
          FetchRequest<ManagedObject>(entityName: "Potato", predicate: try QueryPredicate(format: "notes != nil")))
        {
          if let variety = potato.value(forKey: "variety") as? String, let text = potato.value(forKey: "notes") as? String {
            notes[variety] = text
          }
        }
        carried.notes.withLock { $0 = notes }
      },
      didMigrate: { context in
        let notes = carried.notes.withLock { $0 }
        for potato in try context.fetch(FetchRequest<Potato>()) {
          for line in CarriedNotes.lines(of: notes[potato.variety] ?? "") {
            let tasting = Tasting(context: context)
            tasting.text = line
            tasting.potato = potato
          }
        }
        try context.save()
      })
    return try MigrationPlan([v1, v2, v3], stages: [notesBecomeTastings])
  }
}

/// The notes a migration reads before its structural change, for the stage to write after it.
final class CarriedNotes: Sendable {
  let notes = Mutex<[String: String]>([:])

  /// The lines of `text` worth keeping: trimmed, blank ones dropped.
  static func lines(of text: String) -> [String] {
    text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
  }
}
