import CSQLite
import Foundation
import StrataStoreKit

extension SQLiteStore {
  /// Migrates the file to `migration.destination` (see ``PersistentStore/migrated(by:)``) in one
  /// `BEGIN IMMEDIATE` transaction on the writer, then closes this store and returns the store reopened
  /// with the new model.
  ///
  /// Tables change in place where SQLite allows it — `ADD COLUMN` (with the fill as `DEFAULT` when it
  /// can be one), `RENAME COLUMN`, `DROP COLUMN`, `RENAME TO`, `CREATE`/`DROP INDEX`, `DROP TABLE` — and
  /// are rebuilt (copied into a new table, keys and versions kept) only when a column's declared type or
  /// `NOT NULL` changes. Values are converted by `strata_migrate`, which calls
  /// ``AttributeMapping/convert(_:)``. History and the store identifier are kept. When anything fails — a
  /// uniqueness constraint added over clashing rows reports `.constraintConflict` with every clash — the
  /// transaction rolls back and this store stays open and unchanged.
  ///
  /// - Throws: `.misuse` when `migration.source` is not this store's model or the store is closed,
  ///   `.readOnly` when it was opened read-only.
  public func migrated(by migration: ModelMigration) throws -> any PersistentStore {
    guard migration.source == model else {
      throw StoreError(.misuse, "the migration starts from another model than the SQLite store \(path) holds")
    }
    try checkOpen()
    guard writer != nil else { throw StoreError(.readOnly, "the store \(path) was opened read-only") }
    let target = try SQLiteSchema(model: migration.destination)
    let json = String(decoding: try migration.destination.jsonData(), as: UTF8.self)
    let storeIdentifier = identifier
    let oldSchema = schema
    try write { connection in
      let run = SQLiteMigration(
        migration: migration, old: oldSchema, new: target, storeIdentifier: storeIdentifier, connection: connection)
      try run.plan()
      try connection.withHandle { try SQLiteFunctions.registerConversions(run.conversions, on: $0) }
      defer { _ = try? connection.withHandle { SQLiteFunctions.removeConversions(on: $0) } }
      try connection.transaction {
        try run.execute()
        try connection.run(
          "UPDATE \(quote(SQLiteSchema.metadataTable)) SET \"value\" = ? WHERE \"key\" = 'model'", [.text(json)])
        try connection.run(
          "INSERT OR REPLACE INTO \(quote(SQLiteSchema.metadataTable)) (\"key\", \"value\") VALUES ('model_fingerprint', ?)",
          [.text(migration.destination.fingerprint)])
      }
      // No call may use the old layout once the new one is committed.
      closed.store(true, ordering: .releasing)
    }
    closeConnections()
    return try SQLiteStore(
      url: URL(fileURLWithPath: path), model: migration.destination, options: options, configuration: configuration)
  }
}

/// One migration of an SQLite file: planned from the two schemas (``plan()``), then run inside the
/// caller's transaction (``execute()``).
///
/// The order avoids every name clash and reads each old storage before it changes: indexes that do not
/// carry over are dropped; join tables are renamed or filled (from old join tables, foreign keys or to-one
/// columns) under temporary names and the old ones dropped; removed entities' tables dropped; each
/// carried entity's table altered in place or rebuilt, renamed ones moved to temporary names; then every
/// temporary name becomes its final one, added tables are created, and the new indexes built, unique
/// ones checked for clashes.
final class SQLiteMigration {
  let migration: ModelMigration
  let old: SQLiteSchema
  let new: SQLiteSchema
  let storeIdentifier: String
  let connection: SQLiteConnection
  /// The mappings `strata_migrate(i, …)` converts with, by position `i`.
  private(set) var conversions: [AttributeMapping] = []

  /// How a carried entity's table changes.
  private struct EntityPlan {
    let mapping: EntityMapping
    let source: EntityDescription
    let rebuilds: Bool
  }

  /// Where a join table of the new model comes from.
  private enum JoinSource {
    /// Created empty.
    case empty
    /// The old join table of that name, already oriented the same way.
    case renamed(String)
    /// Copied with `SELECT owner, target …` from the old storage.
    case copied(String)
  }

  private var entities: [EntityPlan] = []
  private var joins: [(name: String, source: JoinSource)] = []
  private var keptIndexes: Set<SQLiteSchema.Index> = []
  private var temporaryCount = 0

  init(
    migration: ModelMigration, old: SQLiteSchema, new: SQLiteSchema, storeIdentifier: String, connection: SQLiteConnection
  ) {
    self.migration = migration
    self.old = old
    self.new = new
    self.storeIdentifier = storeIdentifier
    self.connection = connection
  }

  // MARK: Planning

  func plan() throws {
    for mapping in migration.entities {
      guard let sourceName = mapping.source, let source = migration.source.entity(named: sourceName) else { continue }
      entities.append(EntityPlan(mapping: mapping, source: source, rebuilds: try rebuilds(mapping, source)))
      // Every conversion a statement may call, known before `strata_migrate` is registered.
      for attribute in mapping.attributes {
        guard let sourceName = attribute.source, let oldAttribute = source.attribute(named: sourceName) else { continue }
        if oldAttribute.type != attribute.attribute.type || oldAttribute.isOptional != attribute.attribute.isOptional {
          _ = conversion(attribute)
        }
      }
    }
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
        joins.append((name, .copied("SELECT \"_pk\", \(column) FROM \(quote(oldEntity)) WHERE \(column) IS NOT NULL")))
        continue
      }
      switch old.toManyStorage(oldEntity, source) {
      case .joinTable(let table, let ownerColumn, let targetColumn, _):
        if ownerColumn == "source" && claimed.insert(table).inserted {
          joins.append((name, .renamed(table)))
        } else {
          joins.append((name, .copied("SELECT \(quote(ownerColumn)), \(quote(targetColumn)) FROM \(quote(table))")))
        }
      case .foreignKey(let destination, let column):
        let column = quote(column)
        joins.append(
          (name, .copied("SELECT \(column), \"_pk\" FROM \(quote(destination)) WHERE \(column) IS NOT NULL")))
      }
    }
    planIndexes()
  }

  /// Whether `mapping`'s table must be rebuilt: a column's declared type or `NOT NULL` changes, an old
  /// column feeds two new ones, or a required added attribute's fill cannot be a `DEFAULT`.
  private func rebuilds(_ mapping: EntityMapping, _ source: EntityDescription) throws -> Bool {
    var sources = Set<String>()
    for attribute in mapping.attributes {
      guard let sourceName = attribute.source, let sourceType = attribute.sourceType,
        let oldAttribute = source.attribute(named: sourceName)
      else {
        if !attribute.attribute.isOptional, try defaultLiteral(attribute.fill) == nil { return true }
        continue
      }
      if SQLiteSchema.columnType(sourceType) != SQLiteSchema.columnType(attribute.attribute.type)
        || oldAttribute.isOptional != attribute.attribute.isOptional || !sources.insert(sourceName).inserted
      {
        return true
      }
    }
    return false
  }

  /// Old index → the index it is in the new schema when its table changes in place; kept when the new
  /// schema has exactly that index (same name, table, columns, uniqueness).
  private func planIndexes() {
    let wanted = Set(new.indexes())
    var tables: [String: (name: String, columns: [String: String])] = [:]
    for plan in entities where !plan.rebuilds {
      var columns: [String: String] = [:]
      for attribute in plan.mapping.attributes {
        if let source = attribute.source { columns[source] = attribute.attribute.name }
      }
      for relationship in plan.mapping.entity.toOneRelationships {
        guard let source = plan.mapping.relationshipSources[relationship.name],
          plan.source.relationship(named: source)?.isToMany == false
        else { continue }
        columns[source] = relationship.name
      }
      tables[plan.source.name] = (plan.mapping.entity.name, columns)
    }
    for (name, source) in joins {
      if case .renamed(let oldName) = source { tables[oldName] = (name, ["target": "target"]) }
    }
    for index in old.indexes() {
      guard let table = tables[index.table] else { continue }
      let columns = index.columns.compactMap { table.columns[$0] }
      guard columns.count == index.columns.count else { continue }
      let carried = SQLiteSchema.Index(name: index.name, table: table.name, columns: columns, isUnique: index.isUnique)
      if wanted.contains(carried) { keptIndexes.insert(index) }
    }
  }

  // MARK: Running

  func execute() throws {
    for index in old.indexes() where !keptIndexes.contains(index) {
      try connection.execute("DROP INDEX IF EXISTS \(quote(index.name))")
    }
    var finalNames: [(temporary: String, name: String, sequence: SQLValue?)] = []
    var renamedJoins = Set<String>()
    for (name, source) in joins {
      switch source {
      case .empty: break
      case .renamed(let oldName):
        let temporary = temporaryName()
        try connection.execute("ALTER TABLE \(quote(oldName)) RENAME TO \(quote(temporary))")
        renamedJoins.insert(oldName)
        finalNames.append((temporary, name, nil))
      case .copied(let select):
        let temporary = temporaryName()
        try connection.execute(SQLiteSchema.createJoinTableSQL(named: temporary))
        try connection.execute("INSERT OR IGNORE INTO \(quote(temporary)) (\"source\", \"target\") \(select)")
        finalNames.append((temporary, name, nil))
      }
    }
    for join in old.joinTables where !renamedJoins.contains(join.name) {
      try connection.execute("DROP TABLE IF EXISTS \(quote(join.name))")
    }
    for entity in migration.removedEntities {
      try connection.execute("DROP TABLE IF EXISTS \(quote(entity))")
    }
    for plan in entities {
      if let renamed = try plan.rebuilds ? rebuild(plan) : alter(plan) { finalNames.append(renamed) }
    }
    for (temporary, name, sequence) in finalNames {
      try connection.execute("ALTER TABLE \(quote(temporary)) RENAME TO \(quote(name))")
      if let sequence {
        try connection.run("DELETE FROM sqlite_sequence WHERE name = ?", [.text(name)])
        try connection.run("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", [.text(name), sequence])
      }
    }
    for mapping in migration.entities where mapping.source == nil {
      try connection.execute(SQLiteSchema.createTableSQL(mapping.entity, named: mapping.entity.name))
    }
    for (name, source) in joins {
      if case .empty = source { try connection.execute(SQLiteSchema.createJoinTableSQL(named: name)) }
    }
    try createIndexes()
  }

  private func temporaryName() -> String {
    temporaryCount += 1
    return "_strata_migrating_\(temporaryCount)"
  }

  /// Copies `plan`'s table into a new one with the new layout (keys, versions and the autoincrement
  /// sequence kept) and drops the old; returns the temporary name to rename.
  private func rebuild(_ plan: EntityPlan) throws -> (String, String, SQLValue?) {
    let entity = plan.mapping.entity
    let oldTable = quote(plan.source.name)
    let sequence = try connection.scalar("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(plan.source.name)])
    let temporary = temporaryName()
    try connection.execute(SQLiteSchema.createTableSQL(entity, named: temporary))
    var columns = ["\"_pk\"", "\"_version\""]
    var values = ["\"_pk\"", "\"_version\""]
    var bindings: [SQLValue] = []
    for attribute in plan.mapping.attributes {
      columns.append(quote(attribute.attribute.name))
      guard let source = attribute.source, let oldAttribute = plan.source.attribute(named: source) else {
        values.append("?")
        bindings.append(SQLiteSchema.encode(attribute.fill))
        continue
      }
      if oldAttribute.type == attribute.attribute.type && oldAttribute.isOptional == attribute.attribute.isOptional {
        values.append(quote(source))
      } else {
        values.append("\(SQLiteFunctions.migrateFunction)(\(conversion(attribute)), \(quote(source)))")
      }
    }
    for relationship in entity.toOneRelationships {
      columns.append(quote(relationship.name))
      if let source = plan.mapping.relationshipSources[relationship.name],
        plan.source.relationship(named: source)?.isToMany == false
      {
        values.append(quote(source))
      } else {
        values.append("NULL")
      }
    }
    _ = try connection.run(
      "INSERT INTO \(quote(temporary)) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) "
        + "FROM \(oldTable)", bindings)
    try connection.execute("DROP TABLE \(oldTable)")
    return (temporary, entity.name, sequence)
  }

  /// Alters `plan`'s table in place: dropped, renamed, converted and added columns. Returns the
  /// temporary name to rename when the entity is renamed.
  private func alter(_ plan: EntityPlan) throws -> (String, String, SQLValue?)? {
    let entity = plan.mapping.entity
    let table = quote(plan.source.name)
    var renames: [(from: String, to: String)] = []
    var used = Set<String>()
    for attribute in plan.mapping.attributes {
      guard let source = attribute.source else { continue }
      used.insert(source)
      if source != attribute.attribute.name { renames.append((source, attribute.attribute.name)) }
    }
    for relationship in entity.toOneRelationships {
      guard let source = plan.mapping.relationshipSources[relationship.name],
        plan.source.relationship(named: source)?.isToMany == false
      else { continue }
      used.insert(source)
      if source != relationship.name { renames.append((source, relationship.name)) }
    }
    let oldColumns = plan.source.attributes.filter(\.isPersistent).map(\.name) + plan.source.toOneRelationships.map(\.name)
    var columns = Set<String>()
    for column in oldColumns {
      if used.contains(column) {
        columns.insert(column.lowercased())
      } else {
        try connection.execute("ALTER TABLE \(table) DROP COLUMN \(quote(column))")
      }
    }
    if renames.contains(where: { columns.contains($0.to.lowercased()) }) {
      // A target name is still taken (names swapped, or changed in case only): go through temporary names.
      var staged: [(from: String, to: String)] = []
      for (n, rename) in renames.enumerated() {
        let temporary = "_strata_migrating_column_\(n + 1)"
        try connection.execute("ALTER TABLE \(table) RENAME COLUMN \(quote(rename.from)) TO \(quote(temporary))")
        staged.append((temporary, rename.to))
      }
      renames = staged
    }
    for rename in renames {
      try connection.execute("ALTER TABLE \(table) RENAME COLUMN \(quote(rename.from)) TO \(quote(rename.to))")
    }
    for attribute in plan.mapping.attributes {
      let column = quote(attribute.attribute.name)
      guard let sourceType = attribute.sourceType, attribute.source != nil else {
        let literal = try defaultLiteral(attribute.fill)
        let definition = SQLiteSchema.columnDefinition(attribute.attribute)
        try connection.execute("ALTER TABLE \(table) ADD COLUMN \(definition)\(literal.map { " DEFAULT \($0)" } ?? "")")
        if literal == nil && attribute.fill != .null {
          _ = try connection.run("UPDATE \(table) SET \(column) = ?", [SQLiteSchema.encode(attribute.fill)])
        }
        continue
      }
      if Self.changesValues(from: sourceType, to: attribute.attribute.type) {
        _ = try connection.run(
          "UPDATE \(table) SET \(column) = \(SQLiteFunctions.migrateFunction)(\(conversion(attribute)), \(column))")
      }
    }
    for relationship in entity.toOneRelationships {
      if let source = plan.mapping.relationshipSources[relationship.name],
        plan.source.relationship(named: source)?.isToMany == false
      {
        continue
      }
      try connection.execute("ALTER TABLE \(table) ADD COLUMN \(quote(relationship.name)) INTEGER")
    }
    guard plan.source.name != entity.name else { return nil }
    let temporary = temporaryName()
    try connection.execute("ALTER TABLE \(table) RENAME TO \(quote(temporary))")
    return (temporary, entity.name, nil)
  }

  /// Whether a value of `old` stored in a column of the same declared type differs once converted to
  /// `new` (integer widenings and float → double store the same value).
  private static func changesValues(from old: AttributeType, to new: AttributeType) -> Bool {
    switch (old, new) {
    case _ where old == new: false
    case (.int16, .int32), (.int16, .int64), (.int32, .int64), (.float, .double): false
    default: true
    }
  }

  /// The position of `mapping` in ``conversions``, added on first use (while planning: `strata_migrate`
  /// holds the list it was registered with).
  private func conversion(_ mapping: AttributeMapping) -> Int {
    if let index = conversions.firstIndex(of: mapping) { return index }
    conversions.append(mapping)
    return conversions.count - 1
  }

  /// `value` as an SQL literal that SQLite reads back as exactly its stored form, or `nil` (NaN, text
  /// holding NUL, a double whose shortest text SQLite would round otherwise).
  private func defaultLiteral(_ value: Value) throws -> String? {
    let stored = SQLiteSchema.encode(value)
    let literal: String
    switch stored {
    case .null: return nil
    case .integer(let i): literal = String(i)
    case .real(let d):
      guard !d.isNaN else { return nil }
      literal = d.isInfinite ? (d < 0 ? "-9e999" : "9e999") : "\(d)"
    case .text(let s):
      guard !s.utf8.contains(0) else { return nil }
      literal = "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
    case .blob(let data): literal = "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
    }
    return try connection.scalar("SELECT \(literal)") == stored ? literal : nil
  }

  /// Creates every index of the new schema that did not carry over. A unique index that the rows
  /// violate is not an SQLite error here: the clashes of every such constraint are collected and
  /// thrown together as `.constraintConflict`.
  private func createIndexes() throws {
    let kept = Set(keptIndexes.map(\.name))
    var conflicts: [StoreError.Conflict] = []
    for index in new.indexes() where !kept.contains(index.name) {
      do {
        try connection.execute(index.createSQL)
      } catch let error as SQLiteError where index.isUnique && error.primaryCode == SQLITE_CONSTRAINT {
        conflicts += try clashes(of: index)
      }
    }
    if let error = StoreError.uniquenessViolation(conflicts) { throw error }
  }

  /// The objects that share values of the unique index `index`'s columns, as the memory store names them.
  private func clashes(of index: SQLiteSchema.Index) throws -> [StoreError.Conflict] {
    let table = try new.table(index.table)
    let keys = index.columns.map(quote)
    let list = keys.joined(separator: ", ")
    let notNull = keys.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
    let sql =
      "SELECT \(table.selectList(alias: "t0")) FROM \(quote(table.name)) AS t0 WHERE (\(keys.map { "t0.\($0)" }.joined(separator: ", "))) "
      + "IN (SELECT \(list) FROM \(quote(table.name)) WHERE \(notNull) GROUP BY \(list) HAVING count(*) > 1) "
      + "ORDER BY t0.\"_pk\""
    let rows = try connection.query(sql) { try $0.snapshot(table, storeIdentifier: storeIdentifier) }
    let conflicts = SnapshotMigrator.uniquenessClashes(of: index.columns, in: table.entity, rows: rows)
    return conflicts.isEmpty
      ? [StoreError.Conflict(objectID: nil, entity: table.name, keys: index.columns)] : conflicts
  }
}
