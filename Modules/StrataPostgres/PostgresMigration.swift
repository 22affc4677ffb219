import Foundation
import StrataSQL
import StrataStoreKit

/// One migration of a PostgreSQL schema: planned from the two layouts (``plan()``), then run inside the
/// caller's transaction (``execute(progress:)``) or described (``storageChanges()``).
///
/// The order reads each old storage before it changes and avoids every name clash: indexes, unique
/// constraints and foreign keys that do not carry over are dropped; join tables are renamed or filled
/// (from old join tables, foreign keys or to-one columns) under temporary names and the old ones
/// dropped; removed entities' tables dropped; each carried entity's table altered in place, renamed ones
/// moved to temporary names; then every temporary name becomes its final one, added tables are created,
/// and the new foreign keys, indexes and unique constraints made, clashes collected.
final class PostgresMigration: SQLMigrationRun {
  let migration: ModelMigration
  let old: PostgresSchema
  let new: PostgresSchema
  let storeIdentifier: String
  /// `nil` when the migration is only described.
  let connection: PostgresConnection?

  /// How one carried attribute's column changes.
  private enum Conversion {
    /// The stored values stay as they are (same type, or a widening that keeps every value).
    case none
    /// `ALTER COLUMN TYPE <type> USING "column"::<type>`: every value kept exactly.
    case retype(String)
    /// Every value read, converted by ``AttributeMapping/convert(_:)`` and written back.
    case computed
  }

  /// What altering a carried entity's table in place does, worked out before anything runs.
  private struct Alteration {
    /// Old columns no attribute or relationship of the new entity takes.
    var drops: [String] = []
    /// Columns renamed, old name to new.
    var renames: [(from: String, to: String)] = []
    /// Attributes whose column changes type, by their new names.
    var conversions: [(mapping: AttributeMapping, oldType: AttributeType, conversion: Conversion)] = []
    /// Attributes made required: their nils take `fill`, then the column is `NOT NULL`.
    var required: [(mapping: AttributeMapping, fill: Value)] = []
    /// Attributes made optional.
    var optional: [String] = []
    /// Attributes added, each filled with its mapping's fill.
    var additions: [AttributeMapping] = []
    /// To-one relationships added (columns starting nil).
    var addedToOne: [String] = []
    /// Whether the table takes another name.
    var isRenamed = false

    var isEmpty: Bool {
      drops.isEmpty && renames.isEmpty && conversions.isEmpty && required.isEmpty && optional.isEmpty
        && additions.isEmpty && addedToOne.isEmpty && !isRenamed
    }

    /// Whether every row is written again (a column changes type).
    var rewritesRows: Bool {
      conversions.contains { if case .none = $0.conversion { false } else { true } }
    }

    /// Columns whose values are computed into a new column (their indexes go with the old one).
    var recreatedColumns: Set<String> {
      Set(conversions.compactMap { if case .computed = $0.conversion { $0.mapping.attribute.name } else { nil } })
    }
  }

  private struct EntityPlan {
    let mapping: EntityMapping
    let source: EntityDescription
    let alteration: Alteration
    /// The table altered: the source's own, or for a second entity fed by the same source (a renamed
    /// entity whose old name a new entity takes), a copy of it made before any table changes.
    let table: String
    var isCopy: Bool { table != source.name }
  }

  /// A to-one relationship's foreign key, on the table holding the declaring entity's rows (its
  /// hierarchy's, in a hierarchy) and pointing at the destination's table.
  private struct ForeignKey: Hashable {
    let table: String
    let column: String
    let destination: String
    /// The entity that declares the relationship.
    let owner: String
    var name: String { "\(owner)_\(column)_fkey" }
  }

  private var entities: [EntityPlan] = []
  /// The hierarchy changes, planned first: the entities they store are left out of `entities`.
  private var hierarchy: HierarchyMigration?
  private var joins: [(name: String, source: SQLJoinSource)] = []
  private var keptIndexes: Set<PostgresSchema.Index> = []
  private var keptForeignKeys: Set<ForeignKey> = []
  private var temporaryCount = 0

  init(
    migration: ModelMigration, old: PostgresSchema, new: PostgresSchema, storeIdentifier: String,
    connection: PostgresConnection?
  ) {
    self.migration = migration
    self.old = old
    self.new = new
    self.storeIdentifier = storeIdentifier
    self.connection = connection
  }

  /// The units of work ``execute(progress:)`` reports: one per carried or created table, one for the
  /// constraints and indexes.
  var unitCount: Int {
    let rebuilt = hierarchy?.rebuiltEntities ?? []
    return entities.count + migration.entities.count { $0.source == nil && !rebuilt.contains($0.entity.name) }
      + (hierarchy?.rebuiltStorages.count ?? 0) + 1
  }

  // MARK: Planning

  func plan() throws {
    let hierarchy = try HierarchyMigration(migration, store: "the PostgreSQL store")
    self.hierarchy = hierarchy
    var fed = Set<String>()
    for mapping in migration.entities {
      guard let sourceName = mapping.source, let source = migration.source.entity(named: sourceName) else { continue }
      let name = mapping.entity.name
      if hierarchy.rebuiltEntities.contains(name) {
        // Rebuilt rows are copied by one `INSERT … SELECT`: a conversion computed in Swift has no place there.
        for attribute in mapping.attributes {
          guard let oldType = attribute.sourceType, case .computed = Self.conversion(from: oldType, to: attribute.attribute.type)
          else { continue }
          throw StoreError(
            .unsupported,
            "the PostgreSQL store cannot migrate \(name).\(attribute.attribute.name): converting an attribute of an entity "
              + "whose hierarchy changes is not supported yet", entity: name, key: attribute.attribute.name)
        }
        continue
      }
      if hierarchy.keptEntities.contains(name) { continue }
      var alteration = alteration(mapping, source)
      var table = source.name
      if !fed.insert(sourceName).inserted {
        table = temporaryName()
        // The copy ends under the entity's name like a renamed table, and keeps none of the source's
        // indexes or keys.
        alteration.isRenamed = true
      }
      entities.append(EntityPlan(mapping: mapping, source: source, alteration: alteration, table: table))
    }
    joins = SQLLayout.joinSources(
      of: migration, storeIdentifier: storeIdentifier, oldModel: old.model, tableName: old.qualify)
    planKeptStructures()
  }

  /// How `mapping`'s table changes in place.
  private func alteration(_ mapping: EntityMapping, _ source: EntityDescription) -> Alteration {
    var alteration = Alteration()
    var used = Set<String>()
    for attribute in mapping.attributes {
      guard let sourceName = attribute.source, let oldAttribute = source.attribute(named: sourceName),
        oldAttribute.isPersistent, used.insert(sourceName).inserted
      else {
        alteration.additions.append(attribute)
        continue
      }
      if sourceName != attribute.attribute.name { alteration.renames.append((sourceName, attribute.attribute.name)) }
      let conversion = Self.conversion(from: oldAttribute.type, to: attribute.attribute.type)
      switch conversion {
      case .none: break
      case .retype: alteration.conversions.append((attribute, oldAttribute.type, conversion))
      case .computed:
        // Nils are converted with every other value.
        alteration.conversions.append((attribute, oldAttribute.type, conversion))
        continue
      }
      if oldAttribute.isOptional && !attribute.attribute.isOptional {
        alteration.required.append((attribute, attribute.convert(.null)))
      } else if !oldAttribute.isOptional && attribute.attribute.isOptional {
        alteration.optional.append(attribute.attribute.name)
      }
    }
    for relationship in mapping.entity.toOneRelationships {
      guard let sourceName = mapping.relationshipSources[relationship.name],
        source.relationship(named: sourceName)?.isToMany == false, used.insert(sourceName).inserted
      else {
        alteration.addedToOne.append(relationship.name)
        continue
      }
      if sourceName != relationship.name { alteration.renames.append((sourceName, relationship.name)) }
    }
    let oldColumns = source.attributes.filter(\.isPersistent).map(\.name) + source.toOneRelationships.map(\.name)
    alteration.drops = oldColumns.filter { !used.contains($0) }
    alteration.isRenamed = source.name != mapping.entity.name
    return alteration
  }

  /// How a column of `old` becomes one of `new`: in place when every value stays what it was (integer
  /// widenings, integers to doubles or decimals, which PostgreSQL converts exactly as
  /// ``AttributeMapping/convert(_:)`` does), else computed in Swift.
  private static func conversion(from old: AttributeType, to new: AttributeType) -> Conversion {
    let oldColumn = PostgresSchema.columnType(old)
    let newColumn = PostgresSchema.columnType(new)
    switch (old, new) {
    case _ where old == new: return .none
    case (.int16, .int32), (.int16, .int64), (.int32, .int64), (.int16, .double), (.int32, .double), (.int64, .double),
      (.int16, .decimal), (.int32, .decimal), (.int64, .decimal):
      return .retype(newColumn)
    case (.float, .double): return oldColumn == newColumn ? .none : .retype(newColumn)
    default: return .computed
    }
  }

  /// Which indexes, unique constraints and foreign keys stay: those the new layout has exactly, on a
  /// table and columns that keep their names and values.
  private func planKeptStructures() {
    var unchangedColumns: [String: Set<String>] = [:]
    for plan in entities where !plan.alteration.isRenamed {
      var columns = Set<String>()
      let recreated = plan.alteration.recreatedColumns
      for attribute in plan.mapping.attributes where attribute.source == attribute.attribute.name {
        if !recreated.contains(attribute.attribute.name) { columns.insert(attribute.attribute.name) }
      }
      for relationship in plan.mapping.entity.toOneRelationships
      where plan.mapping.relationshipSources[relationship.name] == relationship.name
        && plan.source.relationship(named: relationship.name)?.isToMany == false
      {
        columns.insert(relationship.name)
      }
      unchangedColumns[plan.source.name] = columns
    }
    for (name, source) in joins {
      if case .renamed(let oldName) = source, oldName == name { unchangedColumns[name] = ["source", "target"] }
    }
    let wanted = Set(new.indexes())
    keptIndexes = Set(
      old.indexes().filter { index in
        wanted.contains(index) && index.columns.allSatisfy { unchangedColumns[index.table]?.contains($0) == true }
      })
    let newKeys = Set(Self.foreignKeys(new.model))
    keptForeignKeys = Set(
      Self.foreignKeys(old.model).filter { key in
        newKeys.contains(key) && unchangedColumns[key.table]?.contains(key.column) == true
          && unchangedColumns[key.destination] != nil
      })
  }

  private static func foreignKeys(_ model: ObjectModel) -> [ForeignKey] {
    model.entities.flatMap { entity in
      entity.toOneRelationships.filter { model.declaringEntity(of: $0.name, in: entity.name) == entity.name }.map {
        foreignKey(model, entity.name, $0)
      }
    }
  }

  private static func foreignKey(_ model: ObjectModel, _ entity: String, _ relationship: RelationshipDescription) -> ForeignKey {
    let inheritance = model.inheritance
    func storage(_ name: String) -> String { inheritance.isInHierarchy(name) ? inheritance.root(of: name) : name }
    return ForeignKey(
      table: storage(entity), column: relationship.name, destination: storage(relationship.destination), owner: entity)
  }

  // MARK: Describing

  /// What the plan does to each entity's storage (see ``PostgresStore/storageChanges(for:)``).
  func storageChanges() -> [String: StorageChange] {
    SQLLayout.storageChanges(
      migration, hierarchy: hierarchy, rebuiltHierarchy: .rewritten, old: old, new: new, keptIndexes: keptIndexes,
      joins: joins, entities: entities.map { ($0.mapping.entity.name, $0.source.name) }
    ) { position in
      let plan = entities[position]
      if plan.alteration.rewritesRows || plan.isCopy { return .rewritten }
      let keysChange =
        Self.foreignKeys(old.model).contains { $0.table == plan.source.name && !keptForeignKeys.contains($0) }
        || Self.foreignKeys(new.model).contains { $0.table == plan.mapping.entity.name && !keptForeignKeys.contains($0) }
      return plan.alteration.isEmpty && !keysChange ? nil : .alteredInPlace
    }
  }

  // MARK: Running

  private func requireConnection() throws -> PostgresConnection {
    guard let connection else { throw StoreError(.misuse, "a migration that is only described cannot run") }
    return connection
  }

  private func temporaryName() -> String {
    temporaryCount += 1
    return "_strata_migrating_\(temporaryCount)"
  }

  /// Runs the plan inside the caller's transaction; `progress` hears of each table and of the indexes.
  func execute(progress: (String) -> Void = { _ in }) throws {
    let connection = try requireConnection()
    for plan in entities where plan.isCopy {
      // Rows, keys and the identity sequence's position; no constraints but NOT NULL.
      let copy = old.qualify(plan.table)
      try connection.execute(
        "CREATE TABLE \(copy) (LIKE \(old.qualify(plan.source.name)) INCLUDING DEFAULTS INCLUDING IDENTITY)")
      try connection.execute("INSERT INTO \(copy) SELECT * FROM \(old.qualify(plan.source.name))")
      try connection.execute(
        "SELECT setval(pg_get_serial_sequence(\(quoteLiteral(copy)), '_pk'), coalesce(max(\"_pk\"), 1), max(\"_pk\") IS NOT NULL) "
          + "FROM \(copy)")
    }
    let removed = Set(migration.removedEntities)
    for index in old.indexes() where !keptIndexes.contains(index) && !removed.contains(index.table) {
      // A sub-entity's unique index is a partial index, not a constraint.
      if index.isUnique && index.entities == nil {
        try connection.execute(
          "ALTER TABLE \(old.qualify(index.table)) DROP CONSTRAINT IF EXISTS \(quoteIdentifier(index.name))")
      } else {
        try connection.execute("DROP INDEX IF EXISTS \(old.qualify(index.name))")
      }
    }
    for key in Self.foreignKeys(old.model) where !keptForeignKeys.contains(key) && !removed.contains(key.table) {
      try connection.execute(
        "ALTER TABLE \(old.qualify(key.table)) DROP CONSTRAINT IF EXISTS \(quoteIdentifier(key.name))")
    }
    var finalNames: [(temporary: String, name: String)] = []
    var renamedJoins = Set<String>()
    var joinsNeedingKeys: Set<String> = []
    var emptyJoins: Set<String> = []
    for (name, source) in joins {
      switch source {
      case .empty: emptyJoins.insert(name)
      case .renamed(let oldName):
        renamedJoins.insert(oldName)
        if oldName != name {
          let temporary = temporaryName()
          try connection.execute("ALTER TABLE \(old.qualify(oldName)) RENAME TO \(quoteIdentifier(temporary))")
          finalNames.append((temporary, name))
        }
      case .copied(let select):
        let temporary = temporaryName()
        try connection.execute(
          "CREATE TABLE \(old.qualify(temporary)) (\"source\" bigint NOT NULL, \"target\" bigint NOT NULL, "
            + "PRIMARY KEY (\"source\", \"target\"))")
        try connection.execute(
          "INSERT INTO \(old.qualify(temporary)) (\"source\", \"target\") \(select) ON CONFLICT DO NOTHING")
        finalNames.append((temporary, name))
        joinsNeedingKeys.insert(name)
      }
    }
    let hierarchy = try self.hierarchy ?? HierarchyMigration(migration, store: "the PostgreSQL store")
    let drops = SQLLayout.dropStatements(
      migration, oldJoins: old.joinTables, keeping: renamedJoins, hierarchy: hierarchy, table: old.qualify,
      cascade: " CASCADE")
    for sql in drops { try connection.execute(sql) }
    for plan in entities {
      if let renamed = try alter(plan, on: connection) { finalNames.append(renamed) }
      let name = plan.mapping.entity.name
      progress(plan.alteration.isEmpty ? "kept the table of \(name)" : "altered the table of \(name)")
    }
    finalNames += try rebuildHierarchies(hierarchy, on: connection, progress: progress)
    for (temporary, name) in finalNames {
      try connection.execute("ALTER TABLE \(old.qualify(temporary)) RENAME TO \(quoteIdentifier(name))")
    }
    for (root, members) in hierarchy.rebuiltStorages.sorted(by: { $0.key < $1.key }) {
      for name in members where name != root {
        guard let entity = new.model.entity(named: name) else { continue }
        for statement in new.createTableStatements(entity) { try connection.execute(statement) }
      }
    }
    if hierarchy.dropsObjects { try clearReferencesToDroppedObjects(skipping: emptyJoins, on: connection) }
    // Dropping an old hierarchy's table dropped the keys of the join tables that pointed at it.
    let rebuiltTables = Set(hierarchy.rebuiltStorages.keys)
    for join in new.joinTables
    where !emptyJoins.contains(join.name)
      && (rebuiltTables.contains(new.storageName(join.sourceEntity))
        || rebuiltTables.contains(new.storageName(join.targetEntity)))
    {
      joinsNeedingKeys.insert(join.name)
    }
    let addedSubentities = Set(hierarchy.addedSubentities.values.joined())
    for mapping in migration.entities where mapping.source == nil && !addedSubentities.contains(mapping.entity.name) {
      guard !hierarchy.rebuiltEntities.contains(mapping.entity.name) else { continue }
      try connection.execute(new.createTableSQL(mapping.entity))
      progress("created the table of \(mapping.entity.name)")
    }
    try SQLLayout.addSubentities(
      hierarchy, new: new, textType: "text", keyType: "bigint",
      column: { "\(quoteIdentifier($0.name)) \(PostgresSchema.columnType($0.type))" },
      views: new.createTableStatements, execute: { try connection.execute($0) }, progress: progress)
    for join in new.joinTables {
      if joinsNeedingKeys.contains(join.name) {
        try connection.execute(
          "ALTER TABLE \(new.qualify(join.name)) "
            + "ADD FOREIGN KEY (\"source\") REFERENCES \(new.qualify(join.sourceEntity)) (\"_pk\") ON DELETE CASCADE, "
            + "ADD FOREIGN KEY (\"target\") REFERENCES \(new.qualify(join.targetEntity)) (\"_pk\") ON DELETE CASCADE")
      } else if emptyJoins.contains(join.name) {
        try connection.execute(new.createJoinTableSQL(join))
      }
    }
    for entity in new.model.entities {
      for (relationship, sql) in new.foreignKeys(entity)
      where !keptForeignKeys.contains(Self.foreignKey(new.model, entity.name, relationship)) {
        try connection.execute(sql)
      }
    }
    try migrateOrderColumns(on: connection)
    try createIndexes(on: connection)
    progress("built the indexes and constraints")
  }

  /// Builds each table of `hierarchy.rebuiltStorages` under a temporary name from the old tables (every
  /// row keeping its key, version and entity, under the entity's new name; the rows of removed entities
  /// left behind), carries the identity sequence's position, then drops the old tables. Returns the
  /// temporary names to rename.
  private func rebuildHierarchies(
    _ hierarchy: HierarchyMigration, on connection: PostgresConnection, progress: (String) -> Void
  ) throws -> [(String, String)] {
    var renames: [(String, String)] = []
    func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
    for storage in hierarchy.rebuiltStorages.keys.sorted() {
      let temporary = temporaryName()
      let isShared = new.model.inheritance.isInHierarchy(storage)
      guard let storageEntity = new.model.entity(named: storage) else { continue }
      let create = isShared ? new.createTableStatements(storageEntity)[0] : new.createTableSQL(storageEntity)
      let prefix = "CREATE TABLE \(new.qualify(storage)) ("
      guard create.hasPrefix(prefix) else { continue }
      try connection.execute("CREATE TABLE \(new.qualify(temporary)) (" + create.dropFirst(prefix.count))
      for order in SQLLayout.orderColumns(of: new.model) where order.table == storage {
        try connection.execute(
          "ALTER TABLE \(new.qualify(temporary)) ADD COLUMN \(quoteIdentifier(order.column)) bigint")
      }
      var last: Int64 = 0
      var copied = 0
      for (mapping, source, oldTable, wasShared) in hierarchy.copies(into: storage, of: migration) {
        let (name, sourceName) = (mapping.entity.name, source.name)
        let sequence = try connection.query(
          "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence(\(quoteLiteral(old.qualify(oldTable))), '_pk')::regclass), 0)"
        )
        if sequence.count > 0 { last = max(last, sequence.int64(0, 0)) }
        var columns = ["\"_pk\"", "\"_version\""]
        var values = ["\"_pk\"", "\"_version\""]
        if isShared {
          columns.append(quoteIdentifier(PostgresSchema.entityColumn))
          values.append(literal(name))
        }
        for attribute in mapping.attributes where attribute.attribute.isPersistent {
          let type = attribute.attribute.type
          columns.append(quoteIdentifier(attribute.attribute.name))
          let fill = try PostgresSchema.storedForm(attribute.fill, as: type, entity: name, key: attribute.attribute.name)
          let fillSQL =
            try Self.textLiteral(fill).map { "\(quoteLiteral($0))::\(Self.castType(type))" }
            ?? {
              guard fill.isNull else {
                throw StoreError(
                  .unsupported, "the PostgreSQL store cannot fill \(name).\(attribute.attribute.name) in a rebuilt hierarchy",
                  entity: name, key: attribute.attribute.name)
              }
              return "NULL"
            }()
          guard let sourceAttribute = attribute.source, let oldAttribute = source.attribute(named: sourceAttribute) else {
            values.append(fillSQL)
            continue
          }
          var value = quoteIdentifier(sourceAttribute)
          if case .retype(let cast) = Self.conversion(from: oldAttribute.type, to: type) { value = "\(value)::\(cast)" }
          if oldAttribute.isOptional && !attribute.attribute.isOptional && !fill.isNull {
            value = "coalesce(\(value), \(fillSQL))"
          }
          values.append(value)
        }
        let sources =
          SQLLayout.toOneColumnSources(mapping, source: source)
          + SQLLayout.orderColumnSources(mapping, source: source, oldModel: old.model, newModel: new.model)
        for (column, sourceColumn) in sources {
          columns.append(quoteIdentifier(column))
          values.append(sourceColumn.map(quoteIdentifier) ?? "NULL")
        }
        var select = "SELECT \(values.joined(separator: ", ")) FROM \(old.qualify(oldTable))"
        if wasShared { select += " WHERE \(quoteIdentifier(PostgresSchema.entityColumn)) = \(literal(sourceName))" }
        copied += try connection.run(
          "INSERT INTO \(new.qualify(temporary)) (\(columns.joined(separator: ", "))) OVERRIDING SYSTEM VALUE \(select)")
      }
      let table = new.qualify(temporary)
      try connection.execute(
        "SELECT setval(pg_get_serial_sequence(\(quoteLiteral(table)), '_pk'), greatest(\(last), coalesce(max(\"_pk\"), 0), 1), "
          + "greatest(\(last), coalesce(max(\"_pk\"), 0)) > 0) FROM \(table)")
      renames.append((temporary, storage))
      progress("rebuilt the table of \(storage) (\(copied) rows copied)")
    }
    for table in hierarchy.consumedStorages {
      try connection.execute("DROP TABLE IF EXISTS \(old.qualify(table)) CASCADE")
    }
    return renames
  }

  /// Clears every to-one reference and join-table link to an object that no longer exists (the objects of
  /// a sub-entity the migration removes go with it), before the foreign keys are added again.
  private func clearReferencesToDroppedObjects(skipping emptyJoins: Set<String>, on connection: PostgresConnection) throws {
    let joins = new.joinTables.filter { !emptyJoins.contains($0.name) }
    for sql in SQLLayout.danglingReferenceCleanup(new.model, joinTables: joins, tableName: new.qualify) {
      _ = try connection.run(sql)
    }
  }

  /// The position columns of ordered relationships (``SQLLayout/migrateOrderColumns(_:oldModel:newModel:naming:hasColumn:execute:)``;
  /// a column views of a hierarchy's sub-entities select is set to NULL, not dropped).
  private func migrateOrderColumns(on connection: PostgresConnection) throws {
    let new = self.new
    try SQLLayout.migrateOrderColumns(
      migration, oldModel: old.model, newModel: new.model,
      naming: SQLOrderColumnNaming(
        table: { new.qualify($0) }, droppedIndex: { new.qualify($0) }, columnType: "bigint", clearsInHierarchies: true),
      hasColumn: { order in
        try connection.query(
          "SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = $3",
          [.string(new.name), .string(order.table), .string(order.column)]
        ).count > 0
      }, execute: { try connection.execute($0) })
  }

  /// Alters `plan`'s table in place. Returns the temporary name to rename when the entity is renamed.
  private func alter(_ plan: EntityPlan, on connection: PostgresConnection) throws -> (String, String)? {
    let alteration = plan.alteration
    let table = old.qualify(plan.table)
    for column in alteration.drops {
      try connection.execute("ALTER TABLE \(table) DROP COLUMN \(quoteIdentifier(column))")
    }
    let dropped = Set(alteration.drops)
    let remaining = Set(
      (plan.source.attributes.filter(\.isPersistent).map(\.name) + plan.source.toOneRelationships.map(\.name))
        .filter { !dropped.contains($0) })
    var renames = alteration.renames
    if renames.contains(where: { remaining.contains($0.to) }) {
      // A target name is still taken (names swapped): go through temporary names.
      var staged: [(from: String, to: String)] = []
      for (n, rename) in renames.enumerated() {
        let temporary = "_strata_migrating_column_\(n + 1)"
        try connection.execute(
          "ALTER TABLE \(table) RENAME COLUMN \(quoteIdentifier(rename.from)) TO \(quoteIdentifier(temporary))")
        staged.append((temporary, rename.to))
      }
      renames = staged
    }
    for rename in renames {
      try connection.execute(
        "ALTER TABLE \(table) RENAME COLUMN \(quoteIdentifier(rename.from)) TO \(quoteIdentifier(rename.to))")
    }
    for (mapping, oldType, conversion) in alteration.conversions {
      let column = quoteIdentifier(mapping.attribute.name)
      switch conversion {
      case .none: break
      case .retype(let type):
        try connection.execute("ALTER TABLE \(table) ALTER COLUMN \(column) TYPE \(type) USING \(column)::\(type)")
      case .computed:
        try convert(mapping, from: oldType, in: table, entity: plan.source.name, on: connection)
      }
    }
    for (mapping, fill) in alteration.required {
      let column = quoteIdentifier(mapping.attribute.name)
      if !fill.isNull {
        let value = try PostgresSchema.encode(
          fill, as: mapping.attribute.type, entity: plan.mapping.entity.name, key: mapping.attribute.name)
        try connection.run("UPDATE \(table) SET \(column) = $1 WHERE \(column) IS NULL", [value])
      }
      try connection.execute("ALTER TABLE \(table) ALTER COLUMN \(column) SET NOT NULL")
    }
    for name in alteration.optional {
      try connection.execute("ALTER TABLE \(table) ALTER COLUMN \(quoteIdentifier(name)) DROP NOT NULL")
    }
    for mapping in alteration.additions {
      let attribute = mapping.attribute
      let column = quoteIdentifier(attribute.name)
      let type = PostgresSchema.columnType(attribute.type)
      let fill = try PostgresSchema.storedForm(
        mapping.fill, as: attribute.type, entity: plan.mapping.entity.name, key: attribute.name)
      if let literal = Self.textLiteral(fill) {
        // A constant default fills every row without rewriting the table; the layout then matches a new store's.
        try connection.execute(
          "ALTER TABLE \(table) ADD COLUMN \(column) \(type)\(attribute.isOptional ? "" : " NOT NULL") "
            + "DEFAULT \(quoteLiteral(literal))::\(Self.castType(attribute.type))")
        try connection.execute("ALTER TABLE \(table) ALTER COLUMN \(column) DROP DEFAULT")
      } else {
        try connection.execute(
          "ALTER TABLE \(table) ADD COLUMN \(column) \(type)\(attribute.isOptional ? "" : " NOT NULL")")
      }
    }
    for relationship in alteration.addedToOne {
      try connection.execute("ALTER TABLE \(table) ADD COLUMN \(quoteIdentifier(relationship)) bigint")
    }
    guard alteration.isRenamed else { return nil }
    let temporary = temporaryName()
    try connection.execute("ALTER TABLE \(table) RENAME TO \(quoteIdentifier(temporary))")
    return (temporary, plan.mapping.entity.name)
  }

  /// Rewrites the column of `mapping` (already under its new name) with every value converted by
  /// ``AttributeMapping/convert(_:)``: into a new column of the new type, filled in batches of keys, that
  /// then takes the old one's place.
  private func convert(
    _ mapping: AttributeMapping, from oldType: AttributeType, in table: String, entity: String,
    on connection: PostgresConnection
  ) throws {
    let attribute = mapping.attribute
    let column = quoteIdentifier(attribute.name)
    let scratch = quoteIdentifier("_strata_converting")
    try connection.execute(
      "ALTER TABLE \(table) ADD COLUMN \(scratch) \(PostgresSchema.columnType(attribute.type))")
    let update =
      "UPDATE \(table) AS t SET \(scratch) = v.value::\(Self.castType(attribute.type)) "
      + "FROM unnest($1::bigint[], $2::text[]) AS v(pk, value) WHERE t.\"_pk\" = v.pk"
    var after: Int64 = Int64.min
    while true {
      let rows = try connection.query(
        "SELECT \"_pk\", \(column) FROM \(table) WHERE \"_pk\" > $1 ORDER BY \"_pk\" LIMIT 5000", [.int(after)])
      guard rows.count > 0 else { break }
      var keys: [String] = []
      var values: [String] = []
      keys.reserveCapacity(Int(rows.count))
      values.reserveCapacity(Int(rows.count))
      for row in 0..<rows.count {
        let key = rows.int64(row, 0)
        after = key
        let stored = try rows.value(row, 1, as: oldType, entity: entity, key: attribute.name)
        let converted = try PostgresSchema.storedForm(
          mapping.convert(stored), as: attribute.type, entity: entity, key: attribute.name)
        keys.append(String(key))
        values.append(Self.textLiteral(converted).map(Self.arrayElement) ?? "NULL")
      }
      try connection.run(
        update, [.text("{" + keys.joined(separator: ",") + "}"), .text("{" + values.joined(separator: ",") + "}")])
    }
    try connection.execute("ALTER TABLE \(table) DROP COLUMN \(column)")
    try connection.execute("ALTER TABLE \(table) RENAME COLUMN \(scratch) TO \(column)")
    if !attribute.isOptional { try connection.execute("ALTER TABLE \(table) ALTER COLUMN \(column) SET NOT NULL") }
  }

  /// The type a text value is cast to for a column of `type`.
  private static func castType(_ type: AttributeType) -> String {
    switch type {
    case .string, .url, .json: "text"
    default: PostgresSchema.columnType(type)
    }
  }

  /// A value (already of its attribute's type) in PostgreSQL's text input syntax for its column; `nil`
  /// for nil.
  static func textLiteral(_ value: Value) -> String? {
    switch value {
    case .null, .array, .objectID: return nil
    case .int(let i): return String(i)
    case .double(let d): return doubleText(d)
    case .date(let date): return doubleText(date.timeIntervalSinceReferenceDate)
    case .decimal(let d): return "\(d)"
    case .string(let s): return s
    case .bool(let b): return b ? "t" : "f"
    case .data(let data): return "\\x" + data.map { String(format: "%02x", $0) }.joined()
    case .uuid(let uuid): return uuid.uuidString
    case .url(let url): return url.absoluteString
    }
  }

  private static func doubleText(_ d: Double) -> String {
    if d.isNaN { return "NaN" }
    if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
    return "\(d)"
  }

  /// `text` as a quoted element of an array literal.
  private static func arrayElement(_ text: String) -> String {
    "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
  }

  /// Creates every index and unique constraint of the new layout that did not carry over. A unique
  /// constraint the rows violate is tried in a savepoint: the clashes of every such constraint are
  /// collected and thrown together as `.constraintConflict`.
  private func createIndexes(on connection: PostgresConnection) throws {
    let kept = Set(keptIndexes.map(\.name))
    var conflicts: [StoreError.Conflict] = []
    for index in new.indexes() where !kept.contains(index.name) {
      guard index.isUnique else {
        try connection.execute(new.createSQL(index))
        continue
      }
      do {
        try connection.savepoint(new.createSQL(index))
      } catch let error as PostgresError where error.isUniqueViolation {
        conflicts += try clashes(of: index, on: connection)
      }
    }
    if let error = StoreError.uniquenessViolation(conflicts) { throw error }
  }

  /// The objects that share values of the unique constraint `index`'s columns, as the memory store names them.
  private func clashes(of index: PostgresSchema.Index, on connection: PostgresConnection) throws -> [StoreError.Conflict] {
    let table = try new.table(index.table)
    let rows = try connection.query(SQLLayout.clashingRowsSQL(table, columns: index.columns))
      .snapshots(table, storeIdentifier: storeIdentifier)
    return SQLLayout.uniquenessClashes(of: index.columns, in: table, rows: rows)
  }
}
