import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteStore {
  /// Migrates the file along `steps` (see ``PersistentStore/migrated(along:reporting:)``) in one
  /// `BEGIN IMMEDIATE` transaction on the writer, then closes this store and returns the store reopened
  /// with the last step's destination model.
  ///
  /// Each step runs its `willMigrate` stage with a store on its source model, its structural change, then
  /// its `didMigrate` stage with a store on its destination model. The stores the stages are handed run
  /// this store's own fetch, save and batch code over the writer connection, inside the transaction
  /// (each save in a savepoint, so a refused save undoes only itself); they answer history, query
  /// generations and migration with `.unsupported` or `.misuse`, and stop working once the stage returns.
  ///
  /// Tables change in place where SQLite allows it — `ADD COLUMN` (with the fill as `DEFAULT` when it
  /// can be one), `RENAME COLUMN`, `DROP COLUMN`, `RENAME TO`, `CREATE`/`DROP INDEX`, `DROP TABLE` — and
  /// are rebuilt (copied into a new table, keys and versions kept) only when a column's declared type or
  /// `NOT NULL` changes. Values are converted by `strata_migrate`, which calls
  /// ``AttributeMapping/convert(_:)``. History and the store identifier are kept; with `tracksHistory` the
  /// migration appends one history transaction by ``MigrationStep/historyAuthor`` listing what the stages
  /// wrote, under the final model's names. `progress` hears of each step's start and end, each stage and
  /// each table. When anything fails — a stage that throws, a uniqueness constraint added over clashing
  /// rows (`.constraintConflict` with every clash) — the transaction rolls back and this store stays open
  /// and unchanged.
  ///
  /// ```swift
  /// let split = MigrationStep(try ModelMigration(from: store.model, to: v2), didMigrate: { stage in
  ///   let people = try stage.fetch(FetchDescription(entityName: "Person"), generation: nil)
  ///   // … _ = try stage.save(changes)
  /// })
  /// let migrated = try store.migrated(along: [split], reporting: { print($0.fractionCompleted) })
  /// ```
  ///
  /// - Throws: `.misuse` when `steps` is empty, does not start from this store's model or does not chain,
  ///   and when the store is closed or is itself a stage's store; `.readOnly` when it was opened read-only;
  ///   what a stage throws.
  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    let core = SQLiteStoreCore(store: self)
    let inputs = try core.migrationInputs(steps, kind: "the SQLite store")
    try write { connection in
      migratingThread.withLock { $0 = pthread_self() }
      defer { migratingThread.withLock { $0 = nil } }
      let reporter = MigrationReporter(report: progress, stepCount: steps.count)
      try connection.transaction { _ = try core.runMigration(steps, inputs, on: connection, reporter: reporter) }
      // No call may use the old layout once the new one is committed.
      closed.store(true, ordering: .releasing)
    }
    closeConnections()
    return try SQLiteStore(
      url: URL(fileURLWithPath: path), model: inputs.destination, options: options, configuration: configuration)
  }

  /// What migrating along `migration` does to each entity's table, from the plan alone (nothing is
  /// written): `.created` for a new entity, `.rebuilt` when its table is copied into a new one,
  /// `.rewritten` when every row's values are converted in place, `.alteredInPlace` when only columns,
  /// names, indexes or join tables change, `.unchanged` otherwise.
  ///
  /// ```swift
  /// let changes = try store.storageChanges(for: try ModelMigration(from: store.model, to: v2))   // ["Movie": .alteredInPlace]
  /// ```
  ///
  /// - Throws: `.misuse` when `migration.source` is not this store's model or the store is closed.
  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    guard migration.source == model else {
      throw StoreError(.misuse, "the migration starts from another model than the SQLite store \(path) holds")
    }
    let target = try SQLiteSchema(model: migration.destination)
    let (schema, identifier) = (self.schema, self.identifier)
    return try read(generation: nil) { connection in
      let run = SQLiteMigration(
        migration: migration, old: schema, new: target, storeIdentifier: identifier, connection: connection)
      try run.plan()
      return try run.storageChanges()
    }
  }
}

/// One migration of an SQLite file: planned from the two schemas (``plan()``), then run inside the
/// caller's transaction (``execute(progress:)``) or described (``storageChanges()``).
///
/// The order avoids every name clash and reads each old storage before it changes: indexes that do not
/// carry over are dropped; join tables are renamed or filled (from old join tables, foreign keys or to-one
/// columns) under temporary names and the old ones dropped; removed entities' tables dropped; each
/// carried entity's table altered in place or rebuilt, renamed ones moved to temporary names; then every
/// temporary name becomes its final one, added tables are created, and the new indexes built, unique
/// ones checked for clashes.
final class SQLiteMigration: SQLMigrationRun {
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
    /// Whether the source table feeds an entity before this one (a renamed entity whose old name a new
    /// entity takes): this one is rebuilt from it first, and the source table stays for the other.
    var isCopy = false
  }

  private var entities: [EntityPlan] = []
  /// The hierarchy changes, planned first: the entities they store are left out of `entities`.
  private var hierarchy: HierarchyMigration?
  private var joins: [(name: String, source: SQLJoinSource)] = []
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
    let hierarchy = try HierarchyMigration(migration, store: "the SQLite store")
    self.hierarchy = hierarchy
    var fed = Set<String>()
    for mapping in migration.entities {
      guard let sourceName = mapping.source, let source = migration.source.entity(named: sourceName) else { continue }
      let name = mapping.entity.name
      if !hierarchy.rebuiltEntities.contains(name) && !hierarchy.keptEntities.contains(name) {
        let isCopy = !fed.insert(sourceName).inserted
        entities.append(
          EntityPlan(mapping: mapping, source: source, rebuilds: try isCopy || rebuilds(mapping, source), isCopy: isCopy))
      }
      // Every conversion a statement may call, known before `strata_migrate` is registered.
      for attribute in mapping.attributes {
        guard let sourceName = attribute.source, let oldAttribute = source.attribute(named: sourceName) else { continue }
        if oldAttribute.type != attribute.attribute.type || oldAttribute.isOptional != attribute.attribute.isOptional {
          _ = conversion(attribute)
        }
      }
    }
    joins = SQLLayout.joinSources(of: migration, storeIdentifier: storeIdentifier, oldModel: old.model, tableName: quote)
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

  /// The units of work ``execute(progress:)`` reports: each carried entity's table, each created one, and
  /// the indexes at the end.
  var unitCount: Int {
    let rebuilt = hierarchy?.rebuiltEntities ?? []
    return entities.count + migration.entities.count { $0.source == nil && !rebuilt.contains($0.entity.name) }
      + (hierarchy?.rebuiltStorages.count ?? 0) + 1
  }

  /// Runs the plan inside the caller's transaction, calling `progress` after each unit of work (see
  /// ``unitCount``) with a phrase naming it.
  func execute(progress: (String) -> Void = { _ in }) throws {
    try connection.withHandle { try SQLiteFunctions.registerConversions(conversions, on: $0) }
    defer { _ = try? connection.withHandle { SQLiteFunctions.removeConversions(on: $0) } }
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
    let hierarchy = try self.hierarchy ?? HierarchyMigration(migration, store: "the SQLite store")
    let drops = SQLLayout.dropStatements(
      migration, oldJoins: old.joinTables, keeping: renamedJoins, hierarchy: hierarchy, table: quote)
    for sql in drops { try connection.execute(sql) }
    // Copies first, while their source table is as it was.
    for plan in entities.filter(\.isCopy) + entities.filter({ !$0.isCopy }) {
      let name = plan.mapping.entity.name
      if plan.rebuilds {
        let (renamed, rows) = try rebuild(plan)
        finalNames.append(renamed)
        progress("rebuilt the table of \(name) (\(rows) rows copied)")
      } else {
        let alteration = try alteration(plan)
        if let renamed = try alter(plan, alteration) { finalNames.append(renamed) }
        progress(alteration.isEmpty ? "kept the table of \(name)" : "altered the table of \(name)")
      }
    }
    finalNames += try rebuildHierarchies(hierarchy, progress: progress)
    for (temporary, name, sequence) in finalNames {
      try connection.execute("ALTER TABLE \(quote(temporary)) RENAME TO \(quote(name))")
      if let sequence {
        try connection.run("DELETE FROM sqlite_sequence WHERE name = ?", [.text(name)])
        try connection.run("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", [.text(name), sequence])
      }
    }
    let addedSubentities = Set(hierarchy.addedSubentities.values.joined())
    for mapping in migration.entities where mapping.source == nil && !addedSubentities.contains(mapping.entity.name) {
      guard !hierarchy.rebuiltEntities.contains(mapping.entity.name) else { continue }
      try connection.execute(SQLiteSchema.createTableSQL(mapping.entity, named: mapping.entity.name))
      progress("created the table of \(mapping.entity.name)")
    }
    for (root, members) in hierarchy.rebuiltStorages.sorted(by: { $0.key < $1.key }) {
      for name in members where name != root {
        guard let entity = new.model.entity(named: name) else { continue }
        for statement in new.createTableStatements(entity) { try connection.execute(statement) }
      }
    }
    try SQLLayout.addSubentities(
      hierarchy, new: new, textType: "TEXT", keyType: "INTEGER", column: SQLiteSchema.columnDefinition,
      views: new.createTableStatements, execute: { try connection.execute($0) }, progress: progress)
    for (name, source) in joins {
      if case .empty = source { try connection.execute(SQLiteSchema.createJoinTableSQL(named: name)) }
    }
    if hierarchy.dropsObjects { try clearReferencesToDroppedObjects() }
    try migrateOrderColumns()
    try createIndexes()
    progress("built the indexes")
  }

  /// The position columns of ordered relationships (``SQLLayout/migrateOrderColumns(_:oldModel:newModel:naming:hasColumn:execute:)``).
  private func migrateOrderColumns() throws {
    try SQLLayout.migrateOrderColumns(
      migration, oldModel: old.model, newModel: new.model,
      naming: SQLOrderColumnNaming(table: quote, droppedIndex: quote, columnType: "INTEGER", clearsInHierarchies: false),
      hasColumn: { order in
        let found = try connection.scalar(
          "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", [.text(order.table), .text(order.column)])
        if case .integer(let n)? = found { return n > 0 }
        return false
      }, execute: { try connection.execute($0) })
  }

  /// Builds each table of `hierarchy.rebuiltStorages` under a temporary name from the old tables (every
  /// row keeping its key, version and entity, under the entity's new name; the rows of removed entities
  /// left behind), then drops the old tables. Returns the temporary names to rename, each with the
  /// autoincrement sequence its old table had.
  private func rebuildHierarchies(
    _ hierarchy: HierarchyMigration, progress: (String) -> Void
  ) throws -> [(String, String, SQLValue?)] {
    var renames: [(String, String, SQLValue?)] = []
    for storage in hierarchy.rebuiltStorages.keys.sorted() {
      let temporary = temporaryName()
      let isShared = new.model.inheritance.isInHierarchy(storage)
      if isShared {
        try connection.execute(new.hierarchyTableSQL(storage, named: temporary))
      } else if let entity = new.model.entity(named: storage) {
        try connection.execute(SQLiteSchema.createTableSQL(entity, named: temporary))
      }
      try addOrderColumns(of: storage, to: temporary)
      var sequence: Int64?
      var copied = 0
      for (mapping, source, oldTable, wasShared) in hierarchy.copies(into: storage, of: migration) {
        let (name, sourceName) = (mapping.entity.name, source.name)
        if case .integer(let value)? = try connection.scalar(
          "SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(oldTable)])
        {
          sequence = max(sequence ?? value, value)
        }
        var (columns, values, bindings) = copiedColumns(mapping, from: source)
        if isShared {
          columns.append(quote(SQLiteSchema.entityColumn))
          values.append("?")
          bindings.append(.text(name))
        }
        var select = "SELECT \(values.joined(separator: ", ")) FROM \(quote(oldTable))"
        if wasShared {
          select += " WHERE \(quote(SQLiteSchema.entityColumn)) = ?"
          bindings.append(.text(sourceName))
        }
        copied += try connection.run(
          "INSERT INTO \(quote(temporary)) (\(columns.joined(separator: ", "))) \(select)", bindings)
      }
      renames.append((temporary, storage, sequence.map(SQLValue.integer)))
      progress("rebuilt the table of \(storage) (\(copied) rows copied)")
    }
    for table in hierarchy.consumedStorages {
      try connection.execute("DROP TABLE IF EXISTS \(quote(table))")
    }
    return renames
  }

  /// Clears every to-one reference and join-table link to an object that no longer exists (the objects of
  /// a sub-entity the migration removes go with it, as Core Data drops an entity that has no
  /// destination).
  private func clearReferencesToDroppedObjects() throws {
    for sql in SQLLayout.danglingReferenceCleanup(new.model, joinTables: new.joinTables, tableName: quote) {
      _ = try connection.run(sql)
    }
  }

  /// What the plan does to each entity's storage (see ``SQLiteStore/storageChanges(for:)``).
  func storageChanges() throws -> [String: StorageChange] {
    try SQLLayout.storageChanges(
      migration, hierarchy: hierarchy, rebuiltHierarchy: .rebuilt, old: old, new: new, keptIndexes: keptIndexes,
      joins: joins, entities: entities.map { ($0.mapping.entity.name, $0.source.name) }
    ) { position in
      let plan = entities[position]
      if plan.rebuilds { return .rebuilt }
      let alteration = try alteration(plan)
      return alteration.rewritesRows ? .rewritten : alteration.isEmpty ? nil : .alteredInPlace
    }
  }

  private func temporaryName() -> String {
    temporaryCount += 1
    return "_strata_migrating_\(temporaryCount)"
  }

  /// Adds to the table `temporary`, built to replace `table`, the position columns the new model keeps
  /// on `table` (filled by ``copiedColumns(_:from:)``; ``migrateOrderColumns()`` indexes them).
  private func addOrderColumns(of table: String, to temporary: String) throws {
    for order in SQLLayout.orderColumns(of: new.model) where order.table == table {
      try connection.execute("ALTER TABLE \(quote(temporary)) ADD COLUMN \(quote(order.column)) INTEGER")
    }
  }

  /// Copies `plan`'s table into a new one with the new layout (keys, versions and the autoincrement
  /// sequence kept) and drops the old; returns the temporary name to rename and how many rows were copied.
  private func rebuild(_ plan: EntityPlan) throws -> ((String, String, SQLValue?), Int) {
    let entity = plan.mapping.entity
    let oldTable = quote(plan.source.name)
    let sequence = try connection.scalar("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(plan.source.name)])
    let temporary = temporaryName()
    try connection.execute(SQLiteSchema.createTableSQL(entity, named: temporary))
    try addOrderColumns(of: entity.name, to: temporary)
    let (columns, values, bindings) = copiedColumns(plan.mapping, from: plan.source)
    let rows = try connection.run(
      "INSERT INTO \(quote(temporary)) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) "
        + "FROM \(oldTable)", bindings)
    if !plan.isCopy { try connection.execute("DROP TABLE \(oldTable)") }
    return ((temporary, entity.name, sequence), rows)
  }

  /// The columns of a row of `mapping`'s entity copied from a row of the old entity `source`, with the
  /// expressions that read them (`_pk` and `_version` kept, values converted by `strata_migrate`, added
  /// attributes filled from `bindings`).
  private func copiedColumns(
    _ mapping: EntityMapping, from source: EntityDescription
  ) -> (columns: [String], values: [String], bindings: [SQLValue]) {
    var columns = ["\"_pk\"", "\"_version\""]
    var values = ["\"_pk\"", "\"_version\""]
    var bindings: [SQLValue] = []
    for attribute in mapping.attributes where attribute.attribute.isPersistent {
      columns.append(quote(attribute.attribute.name))
      guard let sourceName = attribute.source, let oldAttribute = source.attribute(named: sourceName) else {
        values.append("?")
        bindings.append(SQLiteSchema.encode(attribute.fill))
        continue
      }
      if oldAttribute.type == attribute.attribute.type && oldAttribute.isOptional == attribute.attribute.isOptional {
        values.append(quote(sourceName))
      } else {
        values.append("\(SQLiteFunctions.migrateFunction)(\(conversion(attribute)), \(quote(sourceName)))")
      }
    }
    let sources =
      SQLLayout.toOneColumnSources(mapping, source: source)
      + SQLLayout.orderColumnSources(mapping, source: source, oldModel: old.model, newModel: new.model)
    for (column, sourceColumn) in sources {
      columns.append(quote(column))
      values.append(sourceColumn.map(quote) ?? "NULL")
    }
    return (columns, values, bindings)
  }

  /// What altering a carried entity's table in place does, worked out before anything runs.
  private struct Alteration {
    /// Old columns no attribute or relationship of the new entity takes.
    var drops: [String] = []
    /// Columns renamed, old name to new.
    var renames: [(from: String, to: String)] = []
    /// Attributes added, each with its fill as a `DEFAULT` literal when it can be one.
    var additions: [(mapping: AttributeMapping, literal: String?)] = []
    /// Attributes whose stored values `strata_migrate` converts.
    var conversions: [AttributeMapping] = []
    /// To-one relationships added (columns starting nil).
    var addedToOne: [String] = []
    /// Whether the table takes another name.
    var isRenamed = false

    /// Whether nothing changes.
    var isEmpty: Bool {
      drops.isEmpty && renames.isEmpty && additions.isEmpty && conversions.isEmpty && addedToOne.isEmpty && !isRenamed
    }

    /// Whether every row is written (values converted, or a fill that cannot be a `DEFAULT`).
    var rewritesRows: Bool {
      !conversions.isEmpty || additions.contains { $0.literal == nil && $0.mapping.fill != .null }
    }
  }

  /// How `plan`'s table changes in place: dropped, renamed, converted and added columns.
  private func alteration(_ plan: EntityPlan) throws -> Alteration {
    let entity = plan.mapping.entity
    var alteration = Alteration()
    var used = Set<String>()
    for attribute in plan.mapping.attributes {
      guard let source = attribute.source else { continue }
      used.insert(source)
      if source != attribute.attribute.name { alteration.renames.append((source, attribute.attribute.name)) }
    }
    for relationship in entity.toOneRelationships {
      guard let source = plan.mapping.relationshipSources[relationship.name],
        plan.source.relationship(named: source)?.isToMany == false
      else {
        alteration.addedToOne.append(relationship.name)
        continue
      }
      used.insert(source)
      if source != relationship.name { alteration.renames.append((source, relationship.name)) }
    }
    let oldColumns = plan.source.attributes.filter(\.isPersistent).map(\.name) + plan.source.toOneRelationships.map(\.name)
    alteration.drops = oldColumns.filter { !used.contains($0) }
    for attribute in plan.mapping.attributes {
      guard let sourceType = attribute.sourceType, attribute.source != nil else {
        alteration.additions.append((attribute, try defaultLiteral(attribute.fill)))
        continue
      }
      if Self.changesValues(from: sourceType, to: attribute.attribute.type) { alteration.conversions.append(attribute) }
    }
    alteration.isRenamed = plan.source.name != entity.name
    return alteration
  }

  /// Alters `plan`'s table in place as `alteration` says. Returns the temporary name to rename when the
  /// entity is renamed.
  private func alter(_ plan: EntityPlan, _ alteration: Alteration) throws -> (String, String, SQLValue?)? {
    let entity = plan.mapping.entity
    let table = quote(plan.source.name)
    for column in alteration.drops {
      try connection.execute("ALTER TABLE \(table) DROP COLUMN \(quote(column))")
    }
    let dropped = Set(alteration.drops)
    let columns = Set(
      (plan.source.attributes.filter(\.isPersistent).map(\.name) + plan.source.toOneRelationships.map(\.name))
        .filter { !dropped.contains($0) }.map { $0.lowercased() })
    var renames = alteration.renames
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
    for (attribute, literal) in alteration.additions {
      let definition = SQLiteSchema.columnDefinition(attribute.attribute)
      try connection.execute("ALTER TABLE \(table) ADD COLUMN \(definition)\(literal.map { " DEFAULT \($0)" } ?? "")")
      if literal == nil && attribute.fill != .null {
        _ = try connection.run(
          "UPDATE \(table) SET \(quote(attribute.attribute.name)) = ?", [SQLiteSchema.encode(attribute.fill)])
      }
    }
    for attribute in alteration.conversions {
      let column = quote(attribute.attribute.name)
      _ = try connection.run(
        "UPDATE \(table) SET \(column) = \(SQLiteFunctions.migrateFunction)(\(conversion(attribute)), \(column))")
    }
    for relationship in alteration.addedToOne {
      try connection.execute("ALTER TABLE \(table) ADD COLUMN \(quote(relationship)) INTEGER")
    }
    guard alteration.isRenamed else { return nil }
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
    let rows = try connection.query(SQLLayout.clashingRowsSQL(table, columns: index.columns)) {
      try $0.snapshot(table, storeIdentifier: storeIdentifier)
    }
    return SQLLayout.uniquenessClashes(of: index.columns, in: table, rows: rows)
  }
}
