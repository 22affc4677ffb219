import Foundation
import StrataSQL
import StrataStoreKit

/// How the store lays the model out in one PostgreSQL schema: tables with real column types, foreign
/// keys, join tables, unique constraints and the statements the store runs on them. Built once per store.
struct PostgresSchema: Sendable {
  static let metadataTable = "_strata_metadata"
  static let format = "strata-postgres-1"

  /// One entity's table and the statements the store runs on it.
  final class Table: SQLTableDescription {
    let entity: EntityDescription
    /// The positions (in `entity.attributes`) of the attributes that have a column.
    let storedAttributes: [Int]
    /// The stored attribute and to-one column names, in `SELECT` order after `_pk` and `_version`.
    let dataColumns: [String]
    /// Inserts the data columns, returning the new `_pk`.
    let insertSQL: String
    /// Inserts `_pk`, `_version`, then the data columns.
    let insertWithKeySQL: String
    /// Writes every data column and bumps `_version` (`WHERE "_pk" = $n`), returning the new version.
    let updateSQL: String
    /// `updateSQL` that only writes when `_version` still matches.
    let checkedUpdateSQL: String
    let deleteSQL: String
    let selectByKeySQL: String
    /// The `_version` of one row, `WHERE "_pk" = $1` (of the entity's view in a hierarchy: a row of the
    /// entity or one of its sub-entities).
    let selectVersionByKeySQL: String
    /// `_pk` and `_version` of the rows whose keys are in an array parameter.
    let selectVersionsByKeysSQL: String
    /// The table's qualified name, `"schema"."Entity"`.
    let qualified: String

    var sqlName: String { qualified }
    /// A hierarchy's rows are written through the entity's view.
    var writtenSQLName: String { qualified }

    init(entity: EntityDescription, schema: String) {
      self.entity = entity
      let (stored, columns) = SQLLayout.columns(of: entity)
      storedAttributes = stored
      dataColumns = columns
      let table = quoteIdentifier(schema) + "." + quoteIdentifier(entity.name)
      qualified = table
      func placeholders(_ count: Int, from start: Int = 1) -> String {
        (0..<count).map { "$\($0 + start)" }.joined(separator: ", ")
      }
      if columns.isEmpty {
        insertSQL = "INSERT INTO \(table) DEFAULT VALUES RETURNING \"_pk\""
      } else {
        insertSQL =
          "INSERT INTO \(table) (\(columns.map(quoteIdentifier).joined(separator: ", "))) "
          + "VALUES (\(placeholders(columns.count))) RETURNING \"_pk\""
      }
      let all = ["_pk", "_version"] + columns
      insertWithKeySQL =
        "INSERT INTO \(table) (\(all.map(quoteIdentifier).joined(separator: ", "))) VALUES (\(placeholders(all.count)))"
      let sets =
        (columns.enumerated().map { "\(quoteIdentifier($1)) = $\($0 + 1)" } + ["\"_version\" = \"_version\" + 1"])
        .joined(separator: ", ")
      let n = columns.count
      updateSQL = "UPDATE \(table) SET \(sets) WHERE \"_pk\" = $\(n + 1) RETURNING \"_version\""
      checkedUpdateSQL =
        "UPDATE \(table) SET \(sets) WHERE \"_pk\" = $\(n + 1) AND \"_version\" = $\(n + 2) RETURNING \"_version\""
      deleteSQL = "DELETE FROM \(table) WHERE \"_pk\" = $1"
      let select = all.map { "t0.\(quoteIdentifier($0))" }.joined(separator: ", ")
      selectByKeySQL = "SELECT \(select) FROM \(table) AS t0 WHERE t0.\"_pk\" = $1"
      selectVersionByKeySQL = "SELECT \"_version\" FROM \(table) WHERE \"_pk\" = $1"
      selectVersionsByKeysSQL = "SELECT \"_pk\", \"_version\" FROM \(table) WHERE \"_pk\" = ANY($1::bigint[])"
    }
  }

  typealias ToManyStorage = SQLToManyStorage
  typealias JoinTable = SQLJoinTable
  typealias Index = SQLIndex

  let model: ObjectModel
  /// The PostgreSQL schema (namespace) holding the store's tables.
  let name: String
  let tables: [String: Table]
  let joinTables: [JoinTable]

  /// The column naming each row's entity in the table of a hierarchy.
  static let entityColumn = "_entity"

  init(model: ObjectModel, schema: String) throws {
    self.model = model
    self.name = schema
    self.tables = Dictionary(
      model.entities.map { ($0.name, Table(entity: $0, schema: schema)) }, uniquingKeysWith: { _, last in last })
    self.joinTables = SQLLayout.joinTables(of: model)
    try checkNames()
  }

  /// `"schema"."name"`.
  func qualify(_ table: String) -> String { quoteIdentifier(name) + "." + quoteIdentifier(table) }

  /// The primary keys of the targets of `relationship` of one object (`$1`), in primary-key order (an
  /// ordered relationship: by its position column, then key).
  func relatedKeysSQL(_ entity: String, _ relationship: RelationshipDescription) -> String {
    let column = quoteIdentifier(relationship.name)
    guard relationship.isToMany else {
      return "SELECT \(column) FROM \(qualify(entity)) WHERE \"_pk\" = $1 AND \(column) IS NOT NULL"
    }
    let order = SQLLayout.orderColumn(model, entity, relationship)
    switch toManyStorage(entity, relationship) {
    case .foreignKey(let destination, let column):
      let position = order.map { "\(quoteIdentifier($0.column)) NULLS LAST, " } ?? ""
      // An ordered list reads its hierarchy's table: a sub-entity's view expanded `*` when it was made,
      // perhaps before a migration added the position column.
      let source = order.map { qualify($0.table) } ?? qualify(destination)
      return "SELECT \"_pk\" FROM \(source) WHERE \(quoteIdentifier(column)) = $1 ORDER BY \(position)\"_pk\""
    case .joinTable(let joinTable, let ownerColumn, let targetColumn, _):
      let position = order.map { "j.\(quoteIdentifier($0.column)) NULLS LAST, " } ?? ""
      return "SELECT j.\(quoteIdentifier(targetColumn)) FROM \(qualify(joinTable)) AS j "
        + "WHERE j.\(quoteIdentifier(ownerColumn)) = $1 ORDER BY \(position)j.\(quoteIdentifier(targetColumn))"
    }
  }

  /// PostgreSQL truncates names past 63 bytes and keeps tables and indexes in one namespace: refuse
  /// models whose names would be cut or collide.
  private func checkNames() throws {
    var seen: [String: String] = [:]
    func claim(_ name: String, _ what: String) throws {
      guard name.utf8.count <= 63 else {
        throw StoreError(
          .unsupported,
          "the PostgreSQL store cannot lay out this model: \(what) would be named '\(name)', "
            + "longer than PostgreSQL's 63 bytes")
      }
      if let other = seen[name] {
        throw StoreError(
          .unsupported, "the PostgreSQL store cannot lay out this model: \(what) and \(other) would share the name '\(name)'")
      }
      seen[name] = what
    }
    try claim(Self.metadataTable, "the metadata table")
    try claim(PostgresHistoryTables.transactionName, "the history table")
    try claim(PostgresHistoryTables.changeName, "the history table")
    for entity in model.entities {
      try claim(entity.name, "the table of entity \(entity.name)")
      for column in tables[entity.name]?.dataColumns ?? [] where column.utf8.count > 63 {
        throw StoreError(
          .unsupported, "the PostgreSQL store cannot hold \(entity.name).\(column): the name is longer than 63 bytes",
          entity: entity.name, key: column)
      }
    }
    for join in joinTables { try claim(join.name, "the join table \(join.name)") }
    for index in indexes() { try claim(index.name, "the index \(index.name)") }
    for order in SQLLayout.orderColumns(of: model) {
      try claim(order.indexName, "the position index of \(order.table).\(order.keyColumn)")
      if order.column.utf8.count > 63 {
        throw StoreError(
          .unsupported,
          "the PostgreSQL store cannot hold the position column \(order.table).\(order.column): "
            + "the name is longer than 63 bytes", entity: order.table, key: order.column)
      }
    }
  }

  func createSQL(_ index: Index) -> String {
    let columns = index.columns.map(quoteIdentifier).joined(separator: ", ")
    if let entities = index.entities {
      // A sub-entity's index covers its rows of the hierarchy's table: a partial index (which cannot be
      // deferred, so a save swapping such unique values between two objects is refused).
      let names = entities.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(separator: ", ")
      return "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(quoteIdentifier(index.name)) ON \(qualify(index.table)) "
        + "(\(columns)) WHERE \(quoteIdentifier(Self.entityColumn)) IN (\(names))"
    }
    if index.isUnique {
      // Deferrable, so a save is judged on the state it produces (objects may swap unique values).
      return "ALTER TABLE \(qualify(index.table)) ADD CONSTRAINT \(quoteIdentifier(index.name)) UNIQUE (\(columns)) "
        + "DEFERRABLE INITIALLY IMMEDIATE"
    }
    return "CREATE INDEX \(quoteIdentifier(index.name)) ON \(qualify(index.table)) (\(columns))"
  }

  func createTableSQL(_ entity: EntityDescription) -> String {
    var columns = [
      "\"_pk\" bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "\"_version\" bigint NOT NULL DEFAULT 1",
    ]
    for attribute in entity.attributes where attribute.isPersistent {
      columns.append(
        "\(quoteIdentifier(attribute.name)) \(Self.columnType(attribute.type))\(attribute.isOptional ? "" : " NOT NULL")")
    }
    for rel in entity.toOneRelationships {
      columns.append("\(quoteIdentifier(rel.name)) bigint")
    }
    return "CREATE TABLE \(qualify(entity.name)) (\(columns.joined(separator: ", ")))"
  }

  /// Foreign keys are added once every table exists; checked at commit, so a save may write a row
  /// before the row it points at and clear references to the objects it deletes.
  func foreignKeySQL(_ entity: EntityDescription) -> [String] { foreignKeys(entity).map(\.sql) }

  /// ``foreignKeySQL(_:)`` with the relationship of each key.
  func foreignKeys(_ entity: EntityDescription) -> [(relationship: RelationshipDescription, sql: String)] {
    // In a hierarchy, each entity adds the keys of the relationships it declares, to the hierarchy's table;
    // a key pointing into a hierarchy points at its table.
    entity.toOneRelationships.filter { model.declaringEntity(of: $0.name, in: entity.name) == entity.name }.map { rel in
      (
        rel,
        "ALTER TABLE \(qualify(storageName(entity.name))) ADD CONSTRAINT \(quoteIdentifier("\(entity.name)_\(rel.name)_fkey")) "
          + "FOREIGN KEY (\(quoteIdentifier(rel.name))) REFERENCES \(qualify(storageName(rel.destination))) (\"_pk\") "
          + "DEFERRABLE INITIALLY DEFERRED"
      )
    }
  }

  /// The table holding `entity`'s rows: its own, or its hierarchy's (named after the root entity).
  func storageName(_ entity: String) -> String {
    model.inheritance.isInHierarchy(entity) ? model.inheritance.root(of: entity) : entity
  }

  func createJoinTableSQL(_ join: JoinTable) -> String {
    "CREATE TABLE \(qualify(join.name)) ("
      + "\"source\" bigint NOT NULL REFERENCES \(qualify(storageName(join.sourceEntity))) (\"_pk\") ON DELETE CASCADE, "
      + "\"target\" bigint NOT NULL REFERENCES \(qualify(storageName(join.targetEntity))) (\"_pk\") ON DELETE CASCADE, "
      + "PRIMARY KEY (\"source\", \"target\"))"
  }

  /// The statements that create `entity`'s table: its own; for the root of a hierarchy, the table of the
  /// whole hierarchy (every entity's columns, sub-entities' nullable, and `_entity`); for a sub-entity, an
  /// (automatically updatable) view of its rows and its sub-entities' under its name, whose `_entity`
  /// defaults to the entity, so rows inserted through it are tagged.
  func createTableStatements(_ entity: EntityDescription) -> [String] {
    let inheritance = model.inheritance
    guard inheritance.isInHierarchy(entity.name) else { return [createTableSQL(entity)] }
    let root = inheritance.root(of: entity.name)
    let tag = "'" + entity.name.replacingOccurrences(of: "'", with: "''") + "'"
    let entityColumn = quoteIdentifier(Self.entityColumn)
    guard root == entity.name else {
      let names = inheritance.entityAndDescendants(entity.name).map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }
      return [
        "CREATE VIEW \(qualify(entity.name)) AS SELECT * FROM \(qualify(root)) WHERE \(entityColumn) IN (\(names.joined(separator: ", ")))",
        "ALTER VIEW \(qualify(entity.name)) ALTER COLUMN \(entityColumn) SET DEFAULT \(tag)",
      ]
    }
    let create = createTableSQL(SQLLayout.hierarchyStorage(root, in: model))
    return [String(create.dropLast()) + ", \(entityColumn) text NOT NULL DEFAULT \(tag))"]
  }

  /// Every statement that creates the store's tables, constraints and indexes (metadata included).
  func createStatements() -> [String] {
    var statements = [
      "CREATE TABLE \(qualify(Self.metadataTable)) (\"key\" text PRIMARY KEY, \"value\" text NOT NULL)"
    ]
    // Tables before the views of sub-entities that read them.
    let creates = model.entities.map(createTableStatements).joined()
    let isView = { (statement: String) in statement.hasPrefix("CREATE VIEW") || statement.hasPrefix("ALTER VIEW") }
    let orders = SQLLayout.orderColumns(of: model)
    let onTables = orders.filter { order in !joinTables.contains { $0.name == order.table } }
    // Position columns before the views: a view's `*` is expanded when it is created.
    statements += creates.filter { !isView($0) } + orderColumnStatements(onTables) + creates.filter(isView)
    for entity in model.entities { statements += foreignKeySQL(entity) }
    for join in joinTables { statements.append(createJoinTableSQL(join)) }
    statements += orderColumnStatements(orders.filter { !onTables.contains($0) })
    statements += indexes().map(createSQL)
    statements += orders.map { order in
      "CREATE INDEX \(quoteIdentifier(order.indexName)) ON \(qualify(order.table)) "
        + "(\(quoteIdentifier(order.keyColumn)), \(quoteIdentifier(order.column)))"
    }
    return statements
  }

  /// The statements that add the position columns `columns` of ordered relationships.
  func orderColumnStatements(_ columns: [SQLOrderColumn]) -> [String] {
    columns.map { "ALTER TABLE \(qualify($0.table)) ADD COLUMN \(quoteIdentifier($0.column)) bigint" }
  }

  /// The column type of an attribute type.
  static func columnType(_ type: AttributeType) -> String {
    switch type {
    case .int16: "smallint"
    case .int32: "integer"
    case .int64: "bigint"
    case .bool: "boolean"
    // Dates are seconds since 2001-01-01 UTC, `Date`'s own representation, so every date round-trips to
    // the bit (timestamptz keeps microseconds); psql shows one with
    // `timestamptz '2001-01-01Z' + "releaseDate" * interval '1 second'`.
    case .double, .float, .date: "double precision"
    case .decimal: "numeric"
    // A Codable attribute's canonical JSON as text, not jsonb: jsonb would hand back its own rewriting
    // (keys by length, spaces after separators), so the bytes would differ from every other backend's.
    case .string, .url, .json: "text COLLATE \"C\""
    case .uuid: "uuid"
    case .data: "bytea"
    }
  }
}

// MARK: - Value encoding

extension PostgresSchema {
  /// Seconds from 2001-01-01 (`Date`'s reference) back to 2000-01-01, PostgreSQL's epoch.
  static let epochOffset: Double = 31_622_400

  /// A date as PostgreSQL's binary `timestamptz`: microseconds since 2000-01-01 UTC (infinities kept).
  static func microseconds(_ date: Date) -> Int64 {
    let seconds = date.timeIntervalSinceReferenceDate + epochOffset
    if seconds.isNaN { return 0 }
    let micro = (seconds * 1_000_000).rounded()
    if micro >= 9.2e18 { return Int64.max }
    if micro <= -9.2e18 { return Int64.min }
    return Int64(micro)
  }

  static func date(microseconds: Int64) -> Date {
    if microseconds == Int64.max { return Date(timeIntervalSinceReferenceDate: .infinity) }
    if microseconds == Int64.min { return Date(timeIntervalSinceReferenceDate: -.infinity) }
    return Date(timeIntervalSinceReferenceDate: Double(microseconds) / 1_000_000 - epochOffset)
  }

  /// A value already of its attribute's type, as bound.
  static func encode(_ value: Value) -> PGParameter {
    switch value {
    case .null, .array: .null
    case .int(let i): .int(i)
    case .double(let d): .double(d)
    case .decimal(let d): .text("\(d)", oid: PGType.numeric)
    case .string(let s): .string(s)
    case .bool(let b): .bool(b)
    case .date(let d): .double(d.timeIntervalSinceReferenceDate)
    case .data(let d): .binary(Array(d), oid: PGType.bytea)
    case .uuid(let u): .text(u.uuidString, oid: PGType.uuid)
    case .url(let u): .string(u.absoluteString)
    case .objectID(let id): id.primaryKey.map(PGParameter.int) ?? .null
    }
  }

  /// The value the store hands back after writing `value` (dates at microsecond precision, …).
  static func storedForm(_ value: Value, as type: AttributeType, entity: String, key: String) throws -> Value {
    if value.isNull { return .null }
    let converted = type.isCanonical(value) ? value : type.coerce(value)
    guard let converted else {
      throw StoreError(
        .validation, "\(entity).\(key) is a \(type.rawValue) attribute and cannot hold the \(value.kindName) \(value)",
        entity: entity, key: key, value: value)
    }
    return converted
  }
}

extension PGRows {
  /// The value at (`row`, `column`) read as an attribute of `type`.
  /// - Throws: `.corrupted` when the column does not hold a `type` (a DBA changed its type).
  func value(_ row: Int32, _ column: Int32, as type: AttributeType, entity: String, key: String) throws -> Value {
    if isNull(row, column) { return .null }
    let oid = self.type(column)
    let decoded: Value?
    switch (type, oid) {
    case (.int16, PGType.int2), (.int16, PGType.int4), (.int16, PGType.int8), (.int32, PGType.int2),
      (.int32, PGType.int4), (.int32, PGType.int8), (.int64, PGType.int2), (.int64, PGType.int4),
      (.int64, PGType.int8):
      decoded = .int(int64(row, column))
    case (.bool, PGType.bool): decoded = .bool(bytes(row, column).first == 1)
    case (.double, PGType.float8), (.float, PGType.float8), (.double, PGType.float4), (.float, PGType.float4):
      decoded = .double(double(row, column))
    case (.date, PGType.float8): decoded = .date(Date(timeIntervalSinceReferenceDate: double(row, column)))
    case (.date, PGType.timestamptz): decoded = .date(PostgresSchema.date(microseconds: int64(row, column)))
    case (.decimal, PGType.numeric): decoded = numeric(row, column).flatMap { Decimal(string: $0) }.map(Value.decimal)
    case (.string, PGType.text), (.string, PGType.varchar), (.json, PGType.text), (.json, PGType.varchar):
      decoded = .string(text(row, column))
    case (.url, PGType.text), (.url, PGType.varchar): decoded = URL(string: text(row, column)).map(Value.url)
    case (.uuid, PGType.uuid): decoded = uuid(row, column).map(Value.uuid)
    case (.data, PGType.bytea): decoded = .data(data(row, column))
    default: decoded = nil
    }
    guard let decoded else {
      throw StoreError(
        .corrupted, "\(entity).\(key) holds a value of PostgreSQL type \(oid), which is not a \(type.rawValue)",
        entity: entity, key: key)
    }
    return decoded
  }

  /// A computed value of whatever type the server gave it.
  func anyValue(_ row: Int32, _ column: Int32) -> Value {
    if isNull(row, column) { return .null }
    switch type(column) {
    case PGType.int2, PGType.int4, PGType.int8: return .int(int64(row, column))
    case PGType.float4, PGType.float8: return .double(double(row, column))
    case PGType.bool: return .bool(bytes(row, column).first == 1)
    case PGType.numeric:
      guard let text = numeric(row, column) else { return .null }
      if let d = Double(text), !text.contains("."), let i = Int64(exactly: d) { return .int(i) }
      return Decimal(string: text).map(Value.decimal) ?? .null
    case PGType.timestamptz: return .date(PostgresSchema.date(microseconds: int64(row, column)))
    case PGType.uuid: return uuid(row, column).map(Value.uuid) ?? .null
    case PGType.bytea: return .data(data(row, column))
    default: return .string(text(row, column))
    }
  }

  func uuid(_ row: Int32, _ column: Int32) -> UUID? {
    let raw = Array(bytes(row, column))
    guard raw.count == 16 else { return nil }
    return UUID(
      uuid: (
        raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11], raw[12],
        raw[13], raw[14], raw[15]
      ))
  }

  /// A binary `numeric` as its decimal text (`nil` for NaN and infinities).
  func numeric(_ row: Int32, _ column: Int32) -> String? {
    let raw = Array(bytes(row, column))
    guard raw.count >= 8 else { return nil }
    func word(_ i: Int) -> Int { Int(UInt16(raw[i]) << 8 | UInt16(raw[i + 1])) }
    let count = word(0)
    let weight = Int(Int16(bitPattern: UInt16(word(2))))
    let sign = word(4)
    let scale = word(6)
    guard sign == 0 || sign == 0x4000, raw.count >= 8 + 2 * count else { return nil }
    let digits = (0..<count).map { word(8 + 2 * $0) }
    var integer = ""
    if weight < 0 {
      integer = "0"
    } else {
      for i in 0...weight {
        let d = i < digits.count ? digits[i] : 0
        integer += i == 0 ? String(d) : String(repeating: "0", count: 4 - String(d).count) + String(d)
      }
    }
    var fraction = ""
    var i = weight + 1
    while fraction.count < scale {
      let d = i >= 0 && i < digits.count ? digits[i] : 0
      fraction += String(repeating: "0", count: 4 - String(d).count) + String(d)
      i += 1
    }
    fraction = String(fraction.prefix(scale))
    let text = integer + (fraction.isEmpty ? "" : "." + fraction)
    return sign == 0x4000 ? "-" + text : text
  }

  /// A snapshot read from the columns written by ``PostgresSchema/Table/selectList(alias:)`` at `start`.
  func snapshot(_ row: Int32, _ table: PostgresSchema.Table, storeIdentifier: String, start: Int32 = 0) throws -> Snapshot {
    let entity = table.entity
    var attributes = AttributeValues(layout: entity.valueLayout)
    var column = start + 2
    for index in table.storedAttributes {
      let attribute = entity.attributes[index]
      attributes[index] = try value(row, column, as: attribute.type, entity: entity.name, key: attribute.name)
      column += 1
    }
    var toOne: [ObjectID?] = []
    toOne.reserveCapacity(entity.toOneRelationships.count)
    for rel in entity.toOneRelationships {
      toOne.append(
        isNull(row, column)
          ? nil : ObjectID(entityName: rel.destination, storeIdentifier: storeIdentifier, primaryKey: int64(row, column)))
      column += 1
    }
    return Snapshot(
      objectID: ObjectID(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: int64(row, start)),
      version: int64(row, start + 1), attributes: attributes, toOne: toOne)
  }

  /// Every row as a snapshot of `table`.
  func snapshots(_ table: PostgresSchema.Table, storeIdentifier: String) throws -> [Snapshot] {
    var result: [Snapshot] = []
    result.reserveCapacity(Int(count))
    for row in 0..<count { result.append(try snapshot(row, table, storeIdentifier: storeIdentifier)) }
    return result
  }
}
