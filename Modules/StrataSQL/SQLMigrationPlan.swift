import Foundation
import StrataStoreKit

/// Where a join table of a migration's destination model comes from, in an SQL backend.
package enum SQLJoinSource: Sendable {
  /// Created empty.
  case empty
  /// The old join table of that name, already oriented the same way.
  case renamed(String)
  /// Copied with this `SELECT owner, target …` from the old storage.
  case copied(String)
}

extension SQLLayout {
  /// Where each join table of `migration`'s destination comes from: an old join table taken over (the
  /// first one oriented the same way), or a copy of the old join table, foreign keys or to-one column
  /// that held the relationship. `oldModel` is the model the old tables hold; `tableName` names an old
  /// table in statements (quoted, and qualified where the dialect has namespaces).
  package static func joinSources(
    of migration: ModelMigration, storeIdentifier: String, oldModel: ObjectModel, tableName: (String) -> String
  ) -> [(name: String, source: SQLJoinSource)] {
    var joins: [(name: String, source: SQLJoinSource)] = []
    var claimed = Set<String>()
    let migrator = SnapshotMigrator(migration, storeIdentifier: storeIdentifier)
    for (mapping, relationship, source) in migrator.joinTableRelationships {
      let name = "\(mapping.entity.name)_\(relationship.name)"
      guard let source, let oldEntity = mapping.source else {
        joins.append((name, .empty))
        continue
      }
      guard source.isToMany else {
        let column = quote(source.name)
        joins.append((name, .copied("SELECT \"_pk\", \(column) FROM \(tableName(oldEntity)) WHERE \(column) IS NOT NULL")))
        continue
      }
      switch toManyStorage(oldModel, oldEntity, source) {
      case .joinTable(let table, let ownerColumn, let targetColumn, _):
        if ownerColumn == "source" && claimed.insert(table).inserted {
          joins.append((name, .renamed(table)))
        } else {
          joins.append((name, .copied("SELECT \(quote(ownerColumn)), \(quote(targetColumn)) FROM \(tableName(table))")))
        }
      case .foreignKey(let destination, let column):
        let column = quote(column)
        joins.append((name, .copied("SELECT \(column), \"_pk\" FROM \(tableName(destination)) WHERE \(column) IS NOT NULL")))
      }
    }
    return joins
  }

  /// For each to-one relationship of `mapping`'s entity (in order), its column and the column of the old
  /// entity `source` its keys come from: `nil` for a new relationship, or one that was to-many, which
  /// starts empty.
  ///
  /// ```swift
  /// SQLLayout.toOneColumnSources(mapping, source: oldMovie)   // [("director", "director"), ("studio", nil)]
  /// ```
  package static func toOneColumnSources(
    _ mapping: EntityMapping, source: EntityDescription
  ) -> [(column: String, source: String?)] {
    mapping.entity.toOneRelationships.map { relationship in
      let old = mapping.relationshipSources[relationship.name].flatMap { source.relationship(named: $0) }
      return (relationship.name, old?.isToMany == false ? old?.name : nil)
    }
  }

  /// For each position column a rebuilt table of `mapping`'s entity keeps (the list of a to-one's ordered
  /// inverse, beside its foreign key), the column and the old column its positions come from: `nil` for a
  /// new to-one or one whose inverse was unordered in `oldModel` (its lists start in primary-key order).
  ///
  /// ```swift
  /// SQLLayout.orderColumnSources(mapping, source: oldTrack, oldModel: old, newModel: new)   // [("_order_playlist", "_order_playlist")]
  /// ```
  package static func orderColumnSources(
    _ mapping: EntityMapping, source: EntityDescription, oldModel: ObjectModel, newModel: ObjectModel
  ) -> [(column: String, source: String?)] {
    func hasOrderedInverse(_ relationship: RelationshipDescription, in model: ObjectModel) -> Bool {
      guard let inverse = relationship.inverse,
        let list = model.entity(named: relationship.destination)?.relationship(named: inverse)
      else { return false }
      return list.isToMany && list.isOrdered && !model.usesJoinTable(list)
    }
    return toOneColumnSources(mapping, source: source).compactMap { column, sourceColumn in
      guard let relationship = mapping.entity.relationship(named: column), hasOrderedInverse(relationship, in: newModel)
      else { return nil }
      let old = sourceColumn.flatMap { source.relationship(named: $0) }
      return ("_order_" + column, old.flatMap { hasOrderedInverse($0, in: oldModel) ? "_order_" + $0.name : nil })
    }
  }

  /// The position columns whose to-one `migration` renames: for each entity kept from `oldModel`, each
  /// list position column (beside the foreign key of a to-one whose inverse is ordered) named after a
  /// renamed to-one, as the column it was (`previous`) and the column it becomes (`renamed`), on the
  /// hierarchy root's table. A table altered in place (not rebuilt) renames these columns.
  ///
  /// ```swift
  /// for (previous, renamed) in SQLLayout.orderColumnRenames(migration, oldModel: old, newModel: new) { … }
  /// ```
  package static func orderColumnRenames(
    _ migration: ModelMigration, oldModel: ObjectModel, newModel: ObjectModel
  ) -> [(previous: SQLOrderColumn, renamed: SQLOrderColumn)] {
    var renames: [(previous: SQLOrderColumn, renamed: SQLOrderColumn)] = []
    for mapping in migration.entities {
      guard let sourceName = mapping.source, let source = oldModel.entity(named: sourceName) else { continue }
      let table = newModel.inheritance.root(of: mapping.entity.name)
      for (column, from) in orderColumnSources(mapping, source: source, oldModel: oldModel, newModel: newModel) {
        guard let from, from != column else { continue }
        renames.append(
          (
            SQLOrderColumn(table: table, column: from, keyColumn: "", targetColumn: ""),
            SQLOrderColumn(table: table, column: column, keyColumn: "", targetColumn: "")
          ))
      }
    }
    return renames
  }

  /// The statements that clear every to-one reference and join-table link to an object that is not
  /// stored (after a migration dropped the objects of a removed sub-entity): each to-one column set to
  /// `NULL` where its key has no row in the destination's table or view, each of `joinTables` emptied of
  /// links whose source or target has none. `tableName` quotes (and qualifies) a table or view name.
  ///
  /// ```swift
  /// for sql in SQLLayout.danglingReferenceCleanup(model, joinTables: schema.joinTables, tableName: quote) { … }
  /// ```
  package static func danglingReferenceCleanup(
    _ model: ObjectModel, joinTables: [SQLJoinTable], tableName: (String) -> String
  ) -> [String] {
    let inheritance = model.inheritance
    var statements: [String] = []
    for entity in model.entities {
      let storage = inheritance.isInHierarchy(entity.name) ? inheritance.root(of: entity.name) : entity.name
      for relationship in entity.toOneRelationships
      where model.declaringEntity(of: relationship.name, in: entity.name) == entity.name {
        let column = quote(relationship.name)
        statements.append(
          "UPDATE \(tableName(storage)) SET \(column) = NULL WHERE \(column) IS NOT NULL "
            + "AND \(column) NOT IN (SELECT \"_pk\" FROM \(tableName(relationship.destination)))")
      }
    }
    for join in joinTables {
      statements.append(
        "DELETE FROM \(tableName(join.name)) WHERE \"source\" NOT IN (SELECT \"_pk\" FROM \(tableName(join.sourceEntity))) "
          + "OR \"target\" NOT IN (SELECT \"_pk\" FROM \(tableName(join.targetEntity)))")
    }
    return statements
  }

  /// The rows of `table` (``SQLTableDescription/selectList(alias:)``) that share the values of the
  /// unique `columns`, none nil, with another row, in `_pk` order.
  package static func clashingRowsSQL(_ table: some SQLTableDescription, columns: [String]) -> String {
    let keys = columns.map(quote)
    let list = keys.joined(separator: ", ")
    let notNull = keys.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
    return
      "SELECT \(table.selectList(alias: "t0")) FROM \(table.sqlName) AS t0 WHERE (\(keys.map { "t0.\($0)" }.joined(separator: ", "))) "
      + "IN (SELECT \(list) FROM \(table.sqlName) WHERE \(notNull) GROUP BY \(list) HAVING count(*) > 1) "
      + "ORDER BY t0.\"_pk\""
  }

  /// The objects among `rows` (read with ``clashingRowsSQL(_:columns:)``) that share values of the unique
  /// `columns`, as the memory store names them; one conflict naming the constraint when none shows.
  package static func uniquenessClashes(
    of columns: [String], in table: some SQLTableDescription, rows: [Snapshot]
  ) -> [StoreError.Conflict] {
    let conflicts = SnapshotMigrator.uniquenessClashes(of: columns, in: table.entity, rows: rows)
    return conflicts.isEmpty ? [StoreError.Conflict(objectID: nil, entity: table.name, keys: columns)] : conflicts
  }
}

extension SQLLayout {
  /// What a migration plan does to each entity's storage, for ``PersistentStore/storageChanges(for:)``:
  /// `.created` for a new entity; a rebuilt hierarchy's entities `rebuiltHierarchy` (unless created), its
  /// kept ones `.unchanged`; each other kept entity what `change` decides (a rebuild, rows rewritten, columns
  /// altered), else `.alteredInPlace` when one of its indexes or join tables is not carried over as it was,
  /// else `.unchanged`.
  ///
  /// - Parameters:
  ///   - entities: every kept entity's name and its source's name.
  ///   - change: the backend's verdict on one entity's table (from its alteration plan); `nil` when its
  ///     columns stay as they are.
  package static func storageChanges(
    _ migration: ModelMigration, hierarchy: HierarchyMigration?, rebuiltHierarchy: StorageChange,
    old: some SQLSchemaDescription, new: some SQLSchemaDescription, keptIndexes: Set<SQLIndex>,
    joins: [(name: String, source: SQLJoinSource)], entities: [(name: String, source: String)],
    change: (Int) throws -> StorageChange?
  ) rethrows -> [String: StorageChange] {
    var changes: [String: StorageChange] = [:]
    for mapping in migration.entities where mapping.source == nil { changes[mapping.entity.name] = .created }
    for name in hierarchy?.rebuiltEntities ?? [] where changes[name] == nil { changes[name] = rebuiltHierarchy }
    for name in hierarchy?.keptEntities ?? [] { changes[name] = .unchanged }
    let keptNames = Set(keptIndexes.map(\.name))
    let renamedJoins = Set(
      joins.compactMap { join -> String? in
        if case .renamed(let oldName) = join.source { oldName } else { nil }
      })
    for (position, entity) in entities.enumerated() {
      if let decided = try change(position) {
        changes[entity.name] = decided
        continue
      }
      let indexesChange =
        old.indexes().contains { $0.table == entity.source && !keptIndexes.contains($0) }
        || new.indexes().contains { $0.table == entity.name && !keptNames.contains($0.name) }
      let ownJoins = Set(new.joinTables.filter { $0.sourceEntity == entity.name }.map(\.name))
      let joinsChange =
        joins.contains { join in
          guard ownJoins.contains(join.name) else { return false }
          if case .renamed(let oldName) = join.source { return oldName != join.name }
          return true
        }
        || old.joinTables.contains { $0.sourceEntity == entity.source && !renamedJoins.contains($0.name) }
      changes[entity.name] = indexesChange || joinsChange ? .alteredInPlace : .unchanged
    }
    return changes
  }
}

/// How an SQL backend names things in the statements that migrate position columns.
package struct SQLOrderColumnNaming {
  /// A table, quoted (and qualified where the dialect has namespaces).
  let table: (String) -> String
  /// An index, as `DROP INDEX` names it.
  let droppedIndex: (String) -> String
  /// A position column's type.
  let columnType: String
  /// Whether a position column no longer wanted is set to NULL instead of dropped on a hierarchy's table
  /// (where views of its sub-entities select it).
  let clearsInHierarchies: Bool

  package init(
    table: @escaping (String) -> String, droppedIndex: @escaping (String) -> String, columnType: String,
    clearsInHierarchies: Bool
  ) {
    self.table = table
    self.droppedIndex = droppedIndex
    self.columnType = columnType
    self.clearsInHierarchies = clearsInHierarchies
  }
}

extension SQLLayout {
  /// Migrates the position columns of ordered relationships: kept with their positions where the
  /// relationship stays ordered and its table is kept or altered; renamed with a renamed to-one; added
  /// (positions NULL: the list reads in primary-key order) for a relationship made ordered or a table
  /// rebuilt; for one made unordered, dropped with their index (or cleared, see
  /// ``SQLOrderColumnNaming/clearsInHierarchies``). `hasColumn` asks the database; `execute` runs a statement.
  package static func migrateOrderColumns(
    _ migration: ModelMigration, oldModel: ObjectModel, newModel: ObjectModel, naming: SQLOrderColumnNaming,
    hasColumn: (SQLOrderColumn) throws -> Bool, execute: (String) throws -> Void
  ) throws {
    // A renamed to-one takes its position column along (the table itself was altered in place).
    for (previous, renamed) in orderColumnRenames(migration, oldModel: oldModel, newModel: newModel) {
      guard try hasColumn(previous), try !hasColumn(renamed) else { continue }
      try execute("DROP INDEX IF EXISTS \(naming.droppedIndex(previous.indexName))")
      try execute(
        "ALTER TABLE \(naming.table(previous.table)) RENAME COLUMN \(quote(previous.column)) TO \(quote(renamed.column))")
    }
    let wanted = orderColumns(of: newModel)
    let wantedNames = Set(wanted.map { [$0.table, $0.column] })
    for order in orderColumns(of: oldModel) where !wantedNames.contains([order.table, order.column]) {
      try execute("DROP INDEX IF EXISTS \(naming.droppedIndex(order.indexName))")
      guard try hasColumn(order) else { continue }
      if naming.clearsInHierarchies && newModel.inheritance.isInHierarchy(order.table) {
        try execute("UPDATE \(naming.table(order.table)) SET \(quote(order.column)) = NULL")
      } else {
        try execute("ALTER TABLE \(naming.table(order.table)) DROP COLUMN \(quote(order.column))")
      }
    }
    for order in wanted {
      if try !hasColumn(order) {
        try execute("ALTER TABLE \(naming.table(order.table)) ADD COLUMN \(quote(order.column)) \(naming.columnType)")
      }
      try execute(
        "CREATE INDEX IF NOT EXISTS \(quote(order.indexName)) ON \(naming.table(order.table)) "
          + "(\(quote(order.keyColumn)), \(quote(order.column)))")
    }
  }
}

/// One step's structural change in an SQL backend: planned from the two layouts, then run inside the
/// migration's transaction.
package protocol SQLMigrationRun {
  /// The units of work ``execute(progress:)`` reports.
  var unitCount: Int { get }
  /// Works out every statement's inputs; changes nothing.
  func plan() throws
  /// Runs the plan, calling `progress` after each unit of work with a phrase naming it.
  func execute(progress: (String) -> Void) throws
}

extension SQLLayout {
  /// Makes each root that gains sub-entities the table of its hierarchy: `_entity` of `textType` (its rows
  /// keep the root's name), a nullable column per property a new sub-entity adds (`column` defines an
  /// attribute's, a to-one's is of `keyType`), then the statements `views` gives for each new sub-entity.
  package static func addSubentities<Schema: SQLSchemaDescription>(
    _ hierarchy: HierarchyMigration, new: Schema, textType: String, keyType: String,
    column: (AttributeDescription) -> String, views: (EntityDescription) -> [String],
    execute: (String) throws -> Void, progress: (String) -> Void
  ) throws {
    for (root, added) in hierarchy.addedSubentities.sorted(by: { $0.key < $1.key }) {
      let alter = "ALTER TABLE \(new.qualify(root)) ADD COLUMN "
      let tag = "'" + root.replacingOccurrences(of: "'", with: "''") + "'"
      try execute(alter + "\(quote(entityColumn)) \(textType) NOT NULL DEFAULT \(tag)")
      var columns = Set(new.tables[root]?.dataColumns ?? [])
      let entities = added.compactMap { new.model.entity(named: $0) }
      for entity in entities {
        for var attribute in entity.attributes where attribute.isPersistent && columns.insert(attribute.name).inserted {
          attribute.isOptional = true
          try execute(alter + column(attribute))
        }
        for rel in entity.toOneRelationships where columns.insert(rel.name).inserted {
          try execute(alter + "\(quote(rel.name)) \(keyType)")
        }
      }
      for entity in entities {
        for statement in views(entity) { try execute(statement) }
        progress("created the view of \(entity.name) in the table of \(root)")
      }
    }
  }

  /// What a migration step drops before it changes tables: the old join tables not renamed, the views of
  /// the hierarchies it rebuilds (their tables are read, then dropped, later) and the tables of removed
  /// entities. `table` names a table as statements do; `cascade` ends the drops of views and tables.
  package static func dropStatements(
    _ migration: ModelMigration, oldJoins: [SQLJoinTable], keeping renamedJoins: Set<String>,
    hierarchy: HierarchyMigration, table: (String) -> String, cascade: String = ""
  ) -> [String] {
    var statements = oldJoins.filter { !renamedJoins.contains($0.name) }.map { "DROP TABLE IF EXISTS \(table($0.name))" }
    statements += hierarchy.consumedViews.map { "DROP VIEW IF EXISTS \(table($0))\(cascade)" }
    let consumed = Set(hierarchy.consumedStorages + hierarchy.consumedViews)
    for entity in migration.removedEntities where !consumed.contains(entity) {
      statements.append("DROP TABLE IF EXISTS \(table(entity))\(cascade)")
    }
    return statements
  }

  /// Runs `steps` one after another inside the caller's transaction, from the layout `schema` through
  /// `schemas` (one per step): each step's plan (`run` makes it from the step and the layouts before and
  /// after), its `willMigrate` stage on its source model, its structural change, its `didMigrate` stage on
  /// its destination model, each reported to `reporter`, and the stages' writes carried in `log` through
  /// the step's renames. `stage` runs a custom stage on a store bound to the transaction. Returns the last
  /// layout.
  package static func runMigrationSteps<Schema, Run: SQLMigrationRun>(
    _ steps: [MigrationStep], from schema: Schema, through schemas: [Schema], reporter: MigrationReporter,
    log: Locked<MigrationChangeLog>?, run makeRun: (MigrationStep, Schema, Schema) -> Run,
    stage: (@Sendable (any PersistentStore) throws -> Void, ObjectModel, Schema) throws -> Void
  ) throws -> Schema {
    var current = schema
    for (index, step) in steps.enumerated() {
      let run = makeRun(step, current, schemas[index])
      try run.plan()
      let stages = (step.willMigrate == nil ? 0 : 1) + (step.didMigrate == nil ? 0 : 1)
      reporter.start(step: index, total: stages + run.unitCount, phase: "migrating step \(index + 1) of \(steps.count)")
      if let willMigrate = step.willMigrate {
        try stage(willMigrate, step.migration.source, current)
        reporter.advance("ran the custom stage before step \(index + 1)")
      }
      try run.execute { reporter.advance($0) }
      log?.withLock { $0.carry(through: step.migration) }
      current = schemas[index]
      if let didMigrate = step.didMigrate {
        try stage(didMigrate, step.migration.destination, current)
        reporter.advance("ran the custom stage after step \(index + 1)")
      }
      reporter.finish("finished step \(index + 1) of \(steps.count)")
    }
    return current
  }
}
