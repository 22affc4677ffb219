import Foundation
import StrataStoreKit

extension MemoryStore {
  /// Migrates the store's objects along `steps` (see ``PersistentStore/migrated(along:reporting:)``): the
  /// next state is built from the current one, each custom stage working on a store of its own over the
  /// state so far, and handed with the history to a new store of the same identifier; this one is
  /// closed. Nothing changes when a stage throws or a constraint clashes.
  ///
  /// ```swift
  /// let migration = try ModelMigration(from: store.model, to: appModel)
  /// let migrated = try store.migrated(along: [MigrationStep(migration, didMigrate: { stage in /* fill the new names */ })], reporting: nil)
  /// ```
  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    let last = try MigrationStep.checkChain(steps, from: model, store: "the memory store \(identifier)")
    for step in steps { _ = try HierarchyMigration(step.migration, store: "the memory store \(identifier)") }
    let identifier = self.identifier
    let options = self.options
    return try storage.withLock { storage throws -> MemoryStore in
      guard !storage.isClosed else { throw StoreError(.misuse, "the memory store \(identifier) is closed") }
      var state = storage.state
      var log = MigrationChangeLog()
      for (index, step) in steps.enumerated() {
        let objects = state.rows.values.reduce(0) { $0 + $1.count }
        progress?(MigrationProgress(step: index, stepCount: steps.count, completed: 0, total: objects, phase: "migrating"))
        if let work = step.willMigrate {
          state = try Self.runStage(work, on: state, model: step.migration.source, identifier: identifier, log: &log)
        }
        state = try Self.migrate(state, by: step.migration, storeIdentifier: identifier)
        log.carry(through: step.migration)
        if let work = step.didMigrate {
          state = try Self.runStage(work, on: state, model: step.migration.destination, identifier: identifier, log: &log)
        }
        progress?(
          MigrationProgress(step: index, stepCount: steps.count, completed: objects, total: objects, phase: "migrated"))
      }
      let destination = last.migration.destination
      let migrated = MemoryStore(model: destination, options: options, identifier: identifier)
      var history = storage.history
      if options.tracksHistory {
        _ = history.append(log.changes, author: MigrationStep.historyAuthor, contextName: nil, storeIdentifier: identifier)
      }
      state.makeDerived()
      migrated.storage.withLock { [state, history] in
        $0.state = state
        $0.history = history
      }
      storage.isClosed = true
      storage.pinned = [:]
      return migrated
    }
  }

  /// Runs one closure of a custom stage on a store of its own holding `state` (with `model`), and returns
  /// the state the closure left; what its saves changed goes into `log`.
  private static func runStage(
    _ work: @Sendable (any PersistentStore) throws -> Void, on state: MemoryState, model: ObjectModel,
    identifier: String, log: inout MigrationChangeLog
  ) throws -> MemoryState {
    let working = MemoryStore(model: model, options: StoreOptions(tracksHistory: true), identifier: identifier)
    var state = state
    state.makeDerived()
    working.storage.withLock { [state] in $0.state = state }
    defer { working.close() }
    try work(working)
    return working.storage.withLock { storage in
      for transaction in storage.history.transactions { log.record(transaction.changes, model: model) }
      return storage.state
    }
  }

  /// What each entity's storage goes through: rewritten when the entity carries objects over, created
  /// when it is new.
  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    Dictionary(
      migration.entities.map { ($0.entity.name, $0.source == nil ? StorageChange.created : .rewritten) },
      uniquingKeysWith: { first, _ in first })
  }

  private static func migrate(
    _ old: MemoryState, by migration: ModelMigration, storeIdentifier: String
  ) throws
    -> MemoryState
  {
    let migrator = SnapshotMigrator(migration, storeIdentifier: storeIdentifier)
    let hierarchy = try HierarchyMigration(migration, store: "the memory store \(storeIdentifier)")
    let destination = migration.destination
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
      // Keys come from the counter of the hierarchy's root (the entity itself outside a hierarchy).
      let counter = destination.inheritance.root(of: entity.name)
      if let last = old.lastPrimaryKey[migration.source.inheritance.root(of: source)] {
        state.lastPrimaryKey[counter] = max(state.lastPrimaryKey[counter] ?? last, last)
      }
    }
    if hierarchy.dropsObjects { state.clearReferencesToMissingObjects(model: destination) }
    for entity in destination.entities {
      // A constraint holds among the objects of the entity that declares it and of its sub-entities.
      for keys in entity.uniquenessConstraints where destination.constraintScope(of: keys, in: entity.name) == entity.name {
        let rows = destination.inheritance.entityAndDescendants(entity.name).flatMap { (state.rows[$0] ?? [:]).values }
        conflicts += SnapshotMigrator.uniquenessClashes(of: keys, in: entity, rows: rows)
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
    if hierarchy.dropsObjects { state.clearReferencesToMissingObjects(model: destination) }
    // Lists of relationships ordered before and after move over; a relationship made ordered starts in
    // primary-key order (no list), one made unordered drops its lists.
    for mapping in migration.entities {
      guard let sourceName = mapping.source, let oldEntity = migration.source.entity(named: sourceName) else { continue }
      for rel in mapping.entity.toManyRelationships where rel.isOrdered {
        guard let oldName = mapping.relationshipSources[rel.name], let oldRel = oldEntity.relationship(named: oldName),
          oldRel.isOrdered, let lists = old.orders[MemoryState.orderKey(oldRel)]
        else { continue }
        state.orders[MemoryState.orderKey(rel), default: [:]].merge(lists) { current, _ in current }
      }
    }
    return state
  }
}

extension MemoryState {
  /// Clears every to-one reference and link to an object that is not stored (a migration dropped the
  /// objects of a removed sub-entity).
  mutating func clearReferencesToMissingObjects(model: ObjectModel) {
    func exists(_ key: Int64, kindOf entity: String) -> Bool {
      model.inheritance.entityAndDescendants(entity).contains { rows[$0]?[key] != nil }
    }
    for (name, table) in rows {
      for (key, row) in table {
        let toOne = row.toOne.map { target -> ObjectID? in
          guard let target, let targetKey = target.primaryKey, rows[target.entityName]?[targetKey] != nil else { return nil }
          return target
        }
        if toOne != row.toOne {
          rows[name]?[key] = Snapshot(objectID: row.objectID, version: row.version, attributes: row.attributes, toOne: toOne)
        }
      }
    }
    for entity in model.entities {
      for relationship in entity.relationships where model.usesJoinTable(relationship) {
        let owner = model.joinTableOwner(of: entity.name, relationship)
        guard owner.entity == entity.name, owner.relationship == relationship.name,
          var table = links[Self.linkKey(owner)]
        else { continue }
        for pair in table.pairs
        where !exists(pair.source, kindOf: entity.name) || !exists(pair.target, kindOf: relationship.destination) {
          table.remove(source: pair.source, target: pair.target)
        }
        links[Self.linkKey(owner)] = table
      }
    }
  }
}
