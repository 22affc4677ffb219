import Foundation

extension StoreError {
  /// The `.schemaMismatch` error for a store at `location` created with `stored` (fingerprint
  /// `storedFingerprint`) but opened with `given`: names the entities that differ.
  package static func modelMismatch(
    _ location: String, stored: ObjectModel, storedFingerprint: String, given: ObjectModel
  ) -> StoreError {
    var differences: [String] = []
    for entity in given.entities {
      if let old = stored.entity(named: entity.name) {
        if old != entity { differences.append("\(entity.name) (changed)") }
      } else {
        differences.append("\(entity.name) (only in the new model)")
      }
    }
    for entity in stored.entities where given.entity(named: entity.name) == nil {
      differences.append("\(entity.name) (only in the stored model)")
    }
    let detail =
      differences.isEmpty ? "fetch request templates differ" : "entities that differ: \(differences.joined(separator: ", "))"
    return StoreError(
      .schemaMismatch,
      "the store \(location) was created with model \(storedFingerprint) but is opened with model \(given.fingerprint); \(detail)",
      entity: differences.first.flatMap { $0.split(separator: " ").first.map(String.init) })
  }
}
