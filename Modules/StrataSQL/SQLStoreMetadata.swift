import Foundation
import StrataStoreKit

extension SQLLayout {
  /// The store identifier and the model to open a store with, from the rows of its metadata table
  /// (`store_id`, `model`, `model_fingerprint`): `model` when it is the stored one, the stored one when
  /// `model` is `nil`. `kind` names the store in messages (`Strata SQLite store`).
  ///
  /// - Throws: `.corrupted` when the metadata has no identifier or no readable model; `.schemaMismatch`
  ///   (naming the entities that differ) when `model` is not the stored model.
  package static func identity(
    _ metadata: [String: String], of location: String, kind: String, opening model: ObjectModel?
  ) throws -> (identifier: String, model: ObjectModel) {
    guard let identifier = metadata["store_id"], !identifier.isEmpty else {
      throw StoreError(.corrupted, "\(location) is not a \(kind) (its metadata has no store_id)")
    }
    guard let json = metadata["model"] else {
      throw StoreError(.corrupted, "\(location) is a damaged \(kind) (its metadata holds no model)")
    }
    let stored: ObjectModel
    do {
      stored = try ObjectModel.decode(jsonData: Data(json.utf8))
    } catch let error as StoreError {
      throw StoreError(.corrupted, "\(location): \(error.message)")
    }
    let storedFingerprint = metadata["model_fingerprint"] ?? stored.fingerprint
    if let model, model.fingerprint != storedFingerprint {
      throw StoreError.modelMismatch(location, stored: stored, storedFingerprint: storedFingerprint, given: model)
    }
    return (identifier, model ?? stored)
  }
}
