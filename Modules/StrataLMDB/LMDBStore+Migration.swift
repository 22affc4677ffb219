import CLMDB
import Foundation
import StrataStoreKit

extension LMDBStore {
  /// Migrates the environment to `migration.destination` in one write transaction (see
  /// ``PersistentStore/migrated(by:)``) and returns the store opened on it with the new model; this one
  /// is closed.
  ///
  /// ```swift
  /// let migration = try ModelMigration(from: store.model, to: appModel)
  /// store = try store.migrated(by: migration)
  /// ```
  ///
  /// The transaction reads every object with the old model's layout and rewrites it
  /// (``SnapshotMigrator``) into the databases a new store of the new model holds (``LMDBSchema``): each
  /// entity's records under its new name with the same primary keys, every uniqueness, attribute and
  /// reference index rebuilt, join tables refilled from the old links, the key counters under the new
  /// names, the model and its fingerprint in `strata.meta`. Databases the new model no longer has are
  /// deleted. `store_id` and the history stay as they were, so history tokens stay valid. A map that fills
  /// up grows and the transaction runs again.
  ///
  /// - Throws: `.misuse` when `migration.source` is not this store's model, the store is closed, or
  ///   another store of this process uses the same environment; `.readOnly`; `.constraintConflict` listing
  ///   the clashes of an added uniqueness constraint; `.io`. After any error the environment holds the old
  ///   model and data, and this store stays open.
  public func migrated(by migration: ModelMigration) throws -> any PersistentStore {
    guard migration.source == model else {
      throw StoreError(.misuse, "the migration starts from another model than the LMDB store \(path) holds")
    }
    try checkOpen()
    if options.isReadOnly { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    guard environment.users <= 1 else {
      // Their database handles would name databases the migration deletes or fills differently.
      throw StoreError(
        .misuse, "cannot migrate the LMDB store \(path) while other stores of this process have it open; close them first")
    }
    let work = LMDBMigration(migration: migration, storeIdentifier: identifier, maxKeySize: environment.maxKeySize)
    saveLock.lock()
    do {
      try environment.write { txn in try work.run(txn) }
    } catch {
      restoreHandles()
      saveLock.unlock()
      if let error = error as? LMDBError { throw error.storeError(path: path) }
      throw error
    }
    let mapSize = environment.mapSize
    saveLock.unlock()
    close()
    return try LMDBStore(url: URL(fileURLWithPath: path), model: migration.destination, options: options, mapSize: mapSize)
  }

  /// After a failed migration: deleting a database closes its handle even when the transaction then
  /// aborts, so the old model's databases are opened again. They take back their handles (liblmdb gives
  /// the lowest free one, and they are opened in their handles' order); if one cannot, the store closes
  /// rather than read a database under another's handle.
  private func restoreHandles() {
    let names = LMDBSchema.databases(for: model).sorted { (schema.handles[$0.name] ?? 0) < (schema.handles[$1.name] ?? 0) }
    let reopened = try? environment.openDatabases(names, create: false)
    if reopened.map({ reopened in names.allSatisfy { reopened[$0.name] == schema.handles[$0.name] } }) != true { close() }
  }
}

/// The work of one migration, inside its write transaction; run again from the start when the map grows.
struct LMDBMigration {
  let migration: ModelMigration
  let storeIdentifier: String
  let maxKeySize: Int

  /// What is read from the old databases before anything is written.
  private struct Contents {
    /// Migrated snapshots per new entity, in primary-key order.
    var rows: [(table: LMDBSchema.Table, snapshots: [Snapshot])] = []
    /// The last primary key handed out, per new entity.
    var counters: [(String, Int64)] = []
    /// The source → target primary keys of each join table of the new model, by its owner's key.
    var links: [(LMDBSchema.Links, [(Int64, Int64)])] = []
  }

  func run(_ txn: LMDBTransaction) throws {
    let oldNames = LMDBSchema.databases(for: migration.source)
    let newNames = LMDBSchema.databases(for: migration.destination)
    var oldHandles: [String: MDB_dbi] = [:]
    for (name, isDuplicateSorted) in oldNames {
      oldHandles[name] = try txn.openDatabase(name, isDuplicateSorted: isDuplicateSorted, create: false)
    }
    var newHandles: [String: MDB_dbi] = [:]
    for (name, isDuplicateSorted) in newNames {
      newHandles[name] = try txn.openDatabase(name, isDuplicateSorted: isDuplicateSorted, create: true)
    }
    let old = try LMDBSchema(model: migration.source, handles: oldHandles)
    let new = try LMDBSchema(model: migration.destination, handles: newHandles)
    let contents = try read(txn, old: old, new: new)

    // Every database of the new model is filled from scratch (one may share its name with an old one).
    for (name, _) in newNames where name != LMDBSchema.metaName {
      guard let dbi = newHandles[name] else { continue }
      try txn.drop(dbi, name: name, delete: false)
    }
    var writer = LMDBSaveOperation(
      txn: txn, schema: new, storeIdentifier: storeIdentifier, maxKeySize: maxKeySize, changes: ChangeSet())
    for (table, snapshots) in contents.rows {
      for snapshot in snapshots {
        guard let pk = snapshot.objectID.primaryKey else { continue }
        // Keys come in ascending order into an empty database: each record appends.
        try writer.write(
          table, pk, version: snapshot.version, attributes: snapshot.attributes, toOne: snapshot.toOne, replacing: nil,
          flags: MDB_APPEND)
      }
    }
    for (entityName, last) in contents.counters { writer.noteLastPrimaryKey(last, of: entityName) }
    try writer.storeCounters()
    for (tables, pairs) in contents.links {
      for (source, target) in pairs {
        try txn.putIndex(tables.forward, KeyCoding.primaryKeyBytes(source), primaryKey: target)
        try txn.putIndex(tables.reverse, KeyCoding.primaryKeyBytes(target), primaryKey: source)
      }
    }
    let json = String(decoding: try migration.destination.jsonData(), as: UTF8.self)
    try txn.put(new.meta, Array("model".utf8), Array(json.utf8))
    try txn.put(new.meta, Array("model_fingerprint".utf8), Array(migration.destination.fingerprint.utf8))

    // Last, so that nothing fails after a handle is closed but the commit itself.
    let kept = Set(newNames.map(\.name))
    for (name, _) in oldNames where !kept.contains(name) {
      guard let dbi = oldHandles[name] else { continue }
      try txn.drop(dbi, name: name, delete: true)
    }
  }

  /// Reads and migrates every object, the join tables' links and the key counters, and checks the
  /// uniqueness constraints of the new model on the migrated objects.
  private func read(_ txn: LMDBTransaction, old: LMDBSchema, new: LMDBSchema) throws -> Contents {
    let reader = LMDBReader(txn: txn, schema: old, storeIdentifier: storeIdentifier)
    let migrator = SnapshotMigrator(migration, storeIdentifier: storeIdentifier)
    var contents = Contents()
    var conflicts: [StoreError.Conflict] = []
    for mapping in migration.entities {
      guard let source = mapping.source, let oldTable = old.tables[source] else { continue }
      let table = try new.table(mapping.entity.name)
      var snapshots: [Snapshot] = []
      snapshots.reserveCapacity(try txn.entries(oldTable.records))
      try reader.forEachRecord(oldTable) { row, _ in
        snapshots.append(migrator.migrate(row, to: mapping))
        return true
      }
      for keys in mapping.entity.uniquenessConstraints {
        conflicts += SnapshotMigrator.uniquenessClashes(of: keys, in: mapping.entity, rows: snapshots)
      }
      let last = try txn.get(old.counters, Array(source.utf8)) { bytes -> Int64? in
        guard let bytes else { return nil }
        guard bytes.count == 8 else {
          throw StoreError(.corrupted, "the key counter of \(source) is damaged", entity: source)
        }
        return Int64(littleEndian: bytes.loadUnaligned(as: Int64.self))
      }
      if let last { contents.counters.append((table.name, last)) }
      contents.rows.append((table, snapshots))
    }
    if let error = StoreError.uniquenessViolation(conflicts) { throw error }
    for (mapping, relationship, source) in migrator.joinTableRelationships {
      guard let source, let oldEntity = mapping.source, let oldTable = old.tables[oldEntity],
        let tables = new.links["\(mapping.entity.name).\(relationship.name)"]
      else { continue }
      var pairs: [(Int64, Int64)] = []
      let scope = ObjectID(entityName: oldEntity, storeIdentifier: storeIdentifier, primaryKey: 0)
      try txn.withCursor(oldTable.records) { cursor in
        var entry = try cursor.next(.first)
        while let (key, _) = entry {
          let pk = try KeyCoding.primaryKey(key)
          for target in try reader.relatedObjectIDs(of: scope.withPrimaryKey(pk), relationship: source) {
            if let targetKey = target.primaryKey { pairs.append((pk, targetKey)) }
          }
          entry = try cursor.next(.next)
        }
      }
      contents.links.append((tables, pairs))
    }
    return contents
  }
}
