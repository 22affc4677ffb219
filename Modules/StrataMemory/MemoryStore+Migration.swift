import Foundation
import StrataStoreKit

extension MemoryStore {
  /// Migrates the store's objects to `migration.destination` (see ``PersistentStore/migrated(by:)``):
  /// the next state is built from the current one and handed, with the history, to a new store of the
  /// same identifier; this one is closed. Nothing changes when a constraint clashes.
  public func migrated(by migration: ModelMigration) throws -> any PersistentStore {
    guard migration.source == model else {
      throw StoreError(.misuse, "the migration starts from another model than the memory store \(identifier) holds")
    }
    let identifier = self.identifier
    return try storage.withLock { storage throws -> MemoryStore in
      guard !storage.isClosed else { throw StoreError(.misuse, "the memory store \(identifier) is closed") }
      let state = try Self.migrate(storage.state, by: migration, storeIdentifier: identifier)
      let migrated = MemoryStore(model: migration.destination, options: options, identifier: identifier)
      migrated.storage.withLock {
        $0.state = state
        $0.history = storage.history
      }
      storage.isClosed = true
      storage.pinned = [:]
      return migrated
    }
  }

  private static func migrate(
    _ old: MemoryState, by migration: ModelMigration, storeIdentifier: String
  ) throws
    -> MemoryState
  {
    let migrator = SnapshotMigrator(migration, storeIdentifier: storeIdentifier)
    var state = MemoryState()
    var conflicts: [StoreError.Conflict] = []
    for mapping in migration.entities {
      let entity = mapping.entity
      guard let source = mapping.source else { continue }
      var table: [Int64: Snapshot] = [:]
      for row in old.orderedRows(of: source) {
        guard let key = row.objectID.primaryKey else { continue }
        table[key] = migrator.migrate(row, to: mapping)
      }
      state.rows[entity.name] = table
      state.lastPrimaryKey[entity.name] = old.lastPrimaryKey[source]
      for keys in entity.uniquenessConstraints {
        conflicts += SnapshotMigrator.uniquenessClashes(of: keys, in: entity, rows: Array(table.values))
      }
    }
    if let error = StoreError.uniquenessViolation(conflicts) { throw error }
    for (mapping, relationship, source) in migrator.joinTableRelationships {
      guard let source, let oldEntity = mapping.source else { continue }
      let owner = migration.destination.joinTableOwner(of: mapping.entity.name, relationship)
      var links = LinkTable()
      for row in old.orderedRows(of: oldEntity) {
        guard let key = row.objectID.primaryKey else { continue }
        let targets = old.relatedObjectIDs(
          of: row.objectID, relationship: source, model: migration.source, storeIdentifier: storeIdentifier)
        for target in targets {
          guard let targetKey = target.primaryKey else { continue }
          links.insert(source: key, target: targetKey)
        }
      }
      state.links[MemoryState.linkKey(owner)] = links
    }
    return state
  }
}
