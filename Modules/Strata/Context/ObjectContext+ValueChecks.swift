import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// Checks that every Codable and enum attribute of `snapshot` decodes as its property's Swift type.
  ///
  /// - Throws: `.corrupted` naming the entity, the object and the key: the stored JSON no longer decodes
  ///   (the type changed without a migration) or the stored raw value is no case of the enum.
  func checkStoredValues(_ snapshot: Snapshot) throws {
    // The entity's info as materializing finds it (the last entity's, recognised by the ID's scope): a
    // lookup by name hashed the entity's name for every object fetched.
    guard let found = entityBinding(of: snapshot.objectID), found.withObject({ !$0.info.valueChecks.isEmpty }) else { return }
    let info = found.object.info
    for check in info.valueChecks where snapshot.attributes.indices.contains(check.index) {
      let value = snapshot.attributes[check.index]
      guard check.type.init(storedValue: value) == nil else { continue }
      let property = info.layout.objectClass
      throw StoreError(
        .corrupted,
        "\(info.entity.name).\(check.name) of \(snapshot.objectID.uriRepresentation) holds \(value), which does not decode as the property's type in \(property) (a type changed without a migration?)",
        entity: info.entity.name, key: check.name, value: value)
    }
  }
}
