import Foundation
internal import StrataStoreKit

/// What opening a container's store would migrate: the migration inferred from the stored model to the
/// container's, and how many objects each change rewrites.
///
/// ```swift
/// if let preview = try container.previewMigration() {
///   preview.lines.forEach { print($0) }   // "Movie.rating: added, filled with 0 (3 objects)"
/// }
/// ```
public struct MigrationPreview: Sendable {
  public let migration: ModelMigration
  /// The number of objects of each entity of the stored model.
  public let objectCounts: [String: Int]

  /// One line per change; a change that rewrites stored data says how many objects it touches.
  public var lines: [String] {
    let sources = Dictionary(
      migration.entities.compactMap { mapping in mapping.source.map { (mapping.entity.name, $0) } },
      uniquingKeysWith: { first, _ in first })
    return migration.changes.map { change in
      guard change.rewritesData else { return change.description }
      let count = objectCounts[sources[change.entity] ?? change.entity] ?? 0
      return "\(change.description) (\(count) object\(count == 1 ? "" : "s"))"
    }
  }
}

extension PersistentContainer {
  /// What ``loadPersistentStores()`` would migrate, found without opening the store for writing: `nil`
  /// when no store exists yet at the description's location, when it has the container's model, or when
  /// its backend keeps nothing between opens.
  ///
  /// - Throws: `.schemaMismatch` naming every difference a migration cannot infer; the errors of opening
  ///   the store read-only (`.corrupted`, `.io`, `.unknownStoreType`).
  public func previewMigration() throws -> MigrationPreview? {
    guard let description = storeDescriptions.first else {
      throw StoreError(.misuse, "the container \(name) has no store description")
    }
    let factory = try registry.storeFactory(for: description.type)
    guard factory.requiresLocation, let url = description.url, FileManager.default.fileExists(atPath: url.path) else {
      return nil
    }
    let store = try factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true))
    defer { store.close() }
    guard store.model != model else { return nil }
    let migration = try migration(from: store.model)
    var counts: [String: Int] = [:]
    for entity in store.model.entities {
      counts[entity.name] = try store.count(FetchDescription(entityName: entity.name))
    }
    return MigrationPreview(migration: migration, objectCounts: counts)
  }
}
