import CSQLite
import Foundation
import StrataSQL
import StrataStoreKit

/// `"name"`: an SQL identifier, quoted.
func quote(_ identifier: String) -> String { SQLLayout.quote(identifier) }

/// How the store lays the model out in tables: names, columns, DDL, and the value encoding of each
/// attribute type. Built once per store from the model.
struct SQLiteSchema: Sendable {
  static let metadataTable = "_strata_metadata"
  static let format = "strata-sqlite-1"

  /// One entity's table and the statements the store runs on it, built once.
  final class Table: SQLTableDescription {
    let entity: EntityDescription
    /// The positions (in `entity.attributes`, ascending) of the attributes that have a column.
    let storedAttributes: [Int]
    /// The types of `storedAttributes`, in the same order: what reading and writing a row needs of each
    /// attribute (looked up in the entity, every attribute's whole description would be copied per row).
    let storedTypes: [AttributeType]
    /// The stored attribute and to-one column names, in `SELECT` order after `_pk` and `_version`.
    let dataColumns: [String]
    /// Inserts the data columns.
    let insertSQL: String
    /// Inserts `_pk`, `_version`, then the data columns.
    let insertWithKeySQL: String
    /// Inserts ``rowsPerInsert`` rows of the data columns in one statement; `nil` when a row has no
    /// data columns or too many for two rows to fit SQLite's 999 parameters.
    let insertRowsSQL: String?
    /// How many rows ``insertRowsSQL`` inserts.
    let rowsPerInsert: Int
    /// Writes every data column, bumps `_version` and returns the new version (`WHERE "_pk" = ?`).
    let updateSQL: String
    /// `updateSQL` that only writes when `_version` still matches (`… AND "_version" = ?`).
    let checkedUpdateSQL: String
    /// Deletes the row `WHERE "_pk" = ?` when it is of the entity or one of its sub-entities.
    let deleteSQL: String
    /// The snapshot columns of one row, `WHERE "_pk" = ?`.
    let selectByKeySQL: String
    /// The `_version` of one row, `WHERE "_pk" = ?`: read from the entity's view in a hierarchy, so that
    /// only a row of the entity or one of its sub-entities answers (as PostgreSQL's table of the entity
    /// does).
    let selectVersionByKeySQL: String
    /// `SELECT` the snapshot columns `FROM` the table `AS t0`, for a `WHERE` to follow.
    let selectSQL: String

    var sqlName: String { quote(entity.name) }
    /// The table the rows are written to: the entity's own, or its hierarchy's (named after the root
    /// entity; the entity's name is then a view of its rows).
    let storageName: String
    /// `storageName` quoted.
    let writtenSQLName: String
    /// Whether the entity belongs to a hierarchy: its rows carry an `_entity` column.
    let isInHierarchy: Bool

    init(entity: EntityDescription, storageName: String? = nil) {
      self.entity = entity
      self.storageName = storageName ?? entity.name
      self.isInHierarchy = storageName != nil
      writtenSQLName = quote(self.storageName)
      let (stored, columns) = SQLLayout.columns(of: entity)
      storedAttributes = stored
      storedTypes = stored.map { entity.attributes[$0].type }
      dataColumns = columns
      let table = quote(self.storageName)
      let tag = storageName == nil ? nil : "'" + entity.name.replacingOccurrences(of: "'", with: "''") + "'"
      func insert(_ names: [String], rows: Int = 1) -> String {
        let placeholders = Array(repeating: "?", count: names.count)
        if let tag {
          let values = "(\((placeholders + [tag]).joined(separator: ", ")))"
          return "INSERT INTO \(table) (\((names.map(quote) + [quote(SQLiteSchema.entityColumn)]).joined(separator: ", "))) "
            + "VALUES \(Array(repeating: values, count: rows).joined(separator: ", "))"
        }
        if names.isEmpty { return "INSERT INTO \(table) DEFAULT VALUES" }
        let values = "(\(placeholders.joined(separator: ", ")))"
        return
          "INSERT INTO \(table) (\(names.map(quote).joined(separator: ", "))) VALUES \(Array(repeating: values, count: rows).joined(separator: ", "))"
      }
      insertSQL = insert(columns)
      rowsPerInsert = columns.isEmpty ? 0 : min(32, 999 / columns.count)
      insertRowsSQL = rowsPerInsert < 2 ? nil : insert(columns, rows: rowsPerInsert)
      insertWithKeySQL = insert(["_pk", "_version"] + columns)
      let sets = (columns.map { "\(quote($0)) = ?" } + ["\"_version\" = \"_version\" + 1"]).joined(separator: ", ")
      updateSQL = "UPDATE \(table) SET \(sets) WHERE \"_pk\" = ? RETURNING \"_version\""
      checkedUpdateSQL = "UPDATE \(table) SET \(sets) WHERE \"_pk\" = ? AND \"_version\" = ? RETURNING \"_version\""
      // A sub-entity's row only: SQLite cannot delete through the view, so the view picks the key.
      deleteSQL =
        self.storageName == entity.name
        ? "DELETE FROM \(table) WHERE \"_pk\" = ?"
        : "DELETE FROM \(table) WHERE \"_pk\" IN (SELECT \"_pk\" FROM \(quote(entity.name)) WHERE \"_pk\" = ?)"
      let select = (["_pk", "_version"] + columns).map { "t0.\(quote($0))" }.joined(separator: ", ")
      selectSQL = "SELECT \(select) FROM \(table) AS t0"
      selectByKeySQL = selectSQL + " WHERE t0.\"_pk\" = ?"
      selectVersionByKeySQL = "SELECT \"_version\" FROM \(quote(entity.name)) WHERE \"_pk\" = ?"
    }
  }

  typealias ToManyStorage = SQLToManyStorage
  typealias JoinTable = SQLJoinTable
  typealias Index = SQLIndex

  let model: ObjectModel
  let tables: [String: Table]
  let joinTables: [JoinTable]

  /// The column naming each row's entity in the table of a hierarchy.
  static let entityColumn = "_entity"

  init(model: ObjectModel) throws {
    self.model = model
    let inheritance = model.inheritance
    self.tables = Dictionary(
      model.entities.map { entity in
        let storage = inheritance.isInHierarchy(entity.name) ? inheritance.root(of: entity.name) : nil
        return (entity.name, Table(entity: entity, storageName: storage))
      }, uniquingKeysWith: { _, last in last })
    self.joinTables = SQLLayout.joinTables(of: model)
    try checkNames()
  }

  /// The query for the primary keys of the targets of `relationship` of one object of `entity` (bound
  /// to its `_pk`), in primary-key order (an ordered relationship: by its position column, then key): a
  /// to-one column, the inverse's foreign key, or a join table.
  func relatedKeysSQL(_ entity: String, _ relationship: RelationshipDescription) -> String {
    guard relationship.isToMany else {
      return
        "SELECT \(quote(relationship.name)) FROM \(quote(entity)) WHERE \"_pk\" = ? AND \(quote(relationship.name)) IS NOT NULL"
    }
    let order = SQLLayout.orderColumn(model, entity, relationship)
    switch toManyStorage(entity, relationship) {
    case .foreignKey(let destination, let column):
      let position = order.map { "\(quote($0.column)) NULLS LAST, " } ?? ""
      return "SELECT \"_pk\" FROM \(quote(destination)) WHERE \(quote(column)) = ? ORDER BY \(position)\"_pk\""
    case .joinTable(let joinTable, let ownerColumn, let targetColumn, let destination):
      let position = order.map { "j.\(quote($0.column)) NULLS LAST, " } ?? ""
      return "SELECT j.\(quote(targetColumn)) FROM \(quote(joinTable)) AS j JOIN \(quote(destination)) AS d "
        + "ON d.\"_pk\" = j.\(quote(targetColumn)) WHERE j.\(quote(ownerColumn)) = ? "
        + "ORDER BY \(position)j.\(quote(targetColumn))"
    }
  }

  /// SQLite names are case-insensitive: refuse models whose tables, columns or indexes would collide.
  private func checkNames() throws {
    var seen: [String: String] = [:]
    func claim(_ name: String, _ what: String) throws {
      if let other = seen[name.lowercased()] {
        throw StoreError(
          .unsupported,
          "the SQLite store cannot lay out this model: \(what) and \(other) would share the name '\(name)' "
            + "(SQLite names are case-insensitive)")
      }
      seen[name.lowercased()] = what
    }
    try claim(Self.metadataTable, "the metadata table")
    try claim(SQLiteHistoryTables.transactionName, "the history table")
    try claim(SQLiteHistoryTables.changeName, "the history table")
    for entity in model.entities {
      try claim(entity.name, "the table of entity \(entity.name)")
      var columns: Set<String> = ["_pk", "_version"]
      for column in tables[entity.name]?.dataColumns ?? [] {
        guard columns.insert(column.lowercased()).inserted else {
          throw StoreError(
            .unsupported,
            "the SQLite store cannot hold \(entity.name).\(column): another property has the same "
              + "name up to case", entity: entity.name, key: column)
        }
      }
    }
    for join in joinTables { try claim(join.name, "the join table \(join.name)") }
    for index in indexes() { try claim(index.name, "the index \(index.name)") }
    for order in SQLLayout.orderColumns(of: model) {
      try claim(order.indexName, "the position index of \(order.table).\(order.keyColumn)")
    }
  }

  /// The statements that create `entity`'s table: its own; for the root of a hierarchy, the table of the
  /// whole hierarchy (every column of every entity in it, those of sub-entities nullable, and
  /// `_entity`); for a sub-entity, a view of its rows and its sub-entities' under its name.
  func createTableStatements(_ entity: EntityDescription) -> [String] {
    let inheritance = model.inheritance
    guard inheritance.isInHierarchy(entity.name) else { return [Self.createTableSQL(entity, named: entity.name)] }
    let root = inheritance.root(of: entity.name)
    guard root == entity.name else {
      let names = inheritance.entityAndDescendants(entity.name).map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }
      return [
        "CREATE VIEW \(quote(entity.name)) AS SELECT * FROM \(quote(root)) WHERE \(quote(Self.entityColumn)) IN (\(names.joined(separator: ", ")))"
      ]
    }
    return [hierarchyTableSQL(root, named: root)]
  }

  /// The `CREATE TABLE` statement of the table of the hierarchy under `root`, called `name`: every column
  /// of every entity in it (those of sub-entities nullable) and `_entity`.
  func hierarchyTableSQL(_ root: String, named tableName: String) -> String {
    let create = Self.createTableSQL(SQLLayout.hierarchyStorage(root, in: model), named: tableName)
    return String(create.dropLast()) + ", \(quote(Self.entityColumn)) TEXT NOT NULL)"
  }

  /// The `CREATE TABLE` statement of `entity`'s table, called `name`.
  static func createTableSQL(_ entity: EntityDescription, named name: String) -> String {
    var columns = ["\"_pk\" INTEGER PRIMARY KEY AUTOINCREMENT", "\"_version\" INTEGER NOT NULL DEFAULT 1"]
    for attribute in entity.attributes where attribute.isPersistent {
      columns.append(columnDefinition(attribute))
    }
    for rel in entity.toOneRelationships {
      columns.append("\(quote(rel.name)) INTEGER")
    }
    return "CREATE TABLE \(quote(name)) (\(columns.joined(separator: ", ")))"
  }

  /// The column definition of a stored attribute: name, declared type, `NOT NULL` when it is required.
  static func columnDefinition(_ attribute: AttributeDescription) -> String {
    "\(quote(attribute.name)) \(columnType(attribute.type))\(attribute.isOptional ? "" : " NOT NULL")"
  }

  /// The `CREATE TABLE` statement of a join table called `name`.
  static func createJoinTableSQL(named name: String) -> String {
    "CREATE TABLE \(quote(name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, "
      + "PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID"
  }

  /// Every statement that creates the store's tables and indexes (metadata table included).
  func createStatements() -> [String] {
    var statements = [
      "CREATE TABLE \(quote(Self.metadataTable)) (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)"
    ]
    // Tables before the views of sub-entities that read them.
    let creates = model.entities.map(createTableStatements).joined()
    statements += creates.filter { !$0.hasPrefix("CREATE VIEW") } + creates.filter { $0.hasPrefix("CREATE VIEW") }
    for join in joinTables {
      statements.append(Self.createJoinTableSQL(named: join.name))
    }
    statements += indexes().map(\.createSQL)
    statements += orderColumnStatements()
    return statements
  }

  /// The statements that add the position columns of ordered relationships and their indexes (after the
  /// tables; a sub-entity's view selects `*` of its table, so it shows them too once recreated).
  func orderColumnStatements(_ columns: [SQLOrderColumn]? = nil) -> [String] {
    (columns ?? SQLLayout.orderColumns(of: model)).flatMap { order in
      [
        "ALTER TABLE \(quote(order.table)) ADD COLUMN \(quote(order.column)) INTEGER",
        "CREATE INDEX \(quote(order.indexName)) ON \(quote(order.table)) (\(quote(order.keyColumn)), \(quote(order.column)))",
      ]
    }
  }

  /// The declared SQL type of a column holding `type`.
  static func columnType(_ type: AttributeType) -> String {
    switch type {
    case .int16, .int32, .int64, .bool: "INTEGER"
    case .double, .float, .date: "REAL"
    case .decimal, .string, .url, .uuid, .json: "TEXT"
    case .data: "BLOB"
    }
  }
}

// MARK: - Value encoding

extension SQLiteSchema {
  /// `value` as stored in a column of `type`: booleans 0/1, dates as seconds since 2001-01-01 UTC
  /// (Core Data's reference date: `Date`'s own representation, so every date round-trips exactly; in the
  /// shell, `datetime(col + 978307200, 'unixepoch')`), UUIDs as uppercase strings, decimals as their
  /// exact string form.
  ///
  /// - Throws: `.validation` when the value cannot be converted to `type`.
  static func encode(
    _ value: Value, as type: AttributeType, entity: @autoclosure () -> String, key: @autoclosure () -> String
  ) throws -> SQLValue {
    switch (type, value) {
    case (_, .null): return .null
    case (.string, .string(let s)): return .text(s)
    case (.int64, .int(let i)): return .integer(i)
    case (.double, .double(let d)): return .real(d)
    case (.float, .double(let d)) where AttributeType.isFloat(d): return .real(d)
    case (.bool, .bool(let b)): return .integer(b ? 1 : 0)
    case (.date, .date(let d)): return .real(d.timeIntervalSinceReferenceDate)
    default: return try encodeConverting(value, as: type, entity: entity(), key: key())
    }
  }

  /// A value already of its attribute's type, as stored.
  static func encode(_ value: Value) -> SQLValue {
    switch value {
    case .null: .null
    case .int(let i): .integer(i)
    case .double(let d): .real(d)
    case .decimal(let d): .text("\(d)")
    case .string(let s): .text(s)
    case .bool(let b): .integer(b ? 1 : 0)
    case .date(let d): .real(d.timeIntervalSinceReferenceDate)
    case .data(let d): .blob(d)
    case .uuid(let u): .text(u.uuidString)
    case .url(let u): .text(u.absoluteString)
    case .objectID(let id): id.primaryKey.map(SQLValue.integer) ?? .null
    case .array: .null
    }
  }
}

extension SQLiteSchema {
  /// A stored value read back as an attribute value of `type`.
  ///
  /// - Throws: `.corrupted` when the stored value cannot be a `type` (the file was edited by hand).
  static func decode(
    _ stored: SQLValue, as type: AttributeType, entity: @autoclosure () -> String, key: @autoclosure () -> String
  ) throws -> Value {
    let decoded: Value?
    switch (type, stored) {
    case (_, .null): decoded = .null
    case (.int16, .integer(let i)), (.int32, .integer(let i)), (.int64, .integer(let i)): decoded = .int(i)
    case (.int16, .real(let d)), (.int32, .real(let d)), (.int64, .real(let d)): decoded = Int64(exactly: d).map(Value.int)
    case (.bool, .integer(let i)): decoded = .bool(i != 0)
    case (.bool, .real(let d)): decoded = .bool(d != 0)
    case (.double, .real(let d)), (.float, .real(let d)): decoded = .double(d)
    case (.double, .integer(let i)), (.float, .integer(let i)): decoded = .double(Double(i))
    case (.date, .real(let d)): decoded = .date(Date(timeIntervalSinceReferenceDate: d))
    case (.date, .integer(let i)): decoded = .date(Date(timeIntervalSinceReferenceDate: Double(i)))
    case (.string, .text(let s)), (.json, .text(let s)): decoded = .string(s)
    case (.string, .integer(let i)): decoded = .string(String(i))
    case (.string, .real(let d)): decoded = .string(String(d))
    case (.data, .blob(let d)): decoded = .data(d)
    case (.data, .text(let s)): decoded = .data(Data(s.utf8))
    case (.decimal, .text(let s)): decoded = Decimal(string: s).map(Value.decimal)
    case (.decimal, .integer(let i)): decoded = .decimal(Decimal(i))
    case (.decimal, .real(let d)): decoded = Decimal.converting(d).map(Value.decimal)
    case (.uuid, .text(let s)): decoded = UUID(uuidString: s).map(Value.uuid)
    case (.url, .text(let s)): decoded = URL(string: s).map(Value.url)
    default: decoded = nil
    }
    guard let decoded else {
      let (entity, key) = (entity(), key())
      throw StoreError(
        .corrupted, "\(entity).\(key) holds \(stored), which is not a \(type.rawValue)", entity: entity, key: key)
    }
    return decoded
  }

  /// The value as the store will hand it back after writing it (numbers in the attribute's
  /// representation, …).
  static func storedForm(_ value: Value, as type: AttributeType, entity: String, key: String) throws -> Value {
    try decode(try encode(value, as: type, entity: entity, key: key), as: type, entity: entity, key: key)
  }
}

extension SQLIndex {
  var createSQL: String {
    let partial =
      entities.map { names in
        " WHERE \(quote(SQLiteSchema.entityColumn)) IN (\(names.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(separator: ", ")))"
      } ?? ""
    return "CREATE \(isUnique ? "UNIQUE " : "")INDEX \(quote(name)) ON \(quote(table)) "
      + "(\(columns.map(quote).joined(separator: ", ")))\(partial)"
  }
}

extension Statement {
  /// Gives the column's value to `sink` as slot `index`, typed, for the pairs of stored and attribute type a
  /// store writes (what ``SQLiteSchema/decode(_:as:entity:key:)`` makes of them), read without an `SQLValue`
  /// in between; false for any other pair, which `decode` then handles (or refuses).
  @inline(__always)
  func readCommonValue(at column: Int32, as type: AttributeType, into sink: inout AttributeValues.Sink, at index: Int) -> Bool {
    switch (sqlite3_column_type(pointer, column), type) {
    case (SQLITE_NULL, _): sink.initializeNull(at: index)
    case (SQLITE_TEXT, .string): sink.initialize(string: text(column), at: index)
    case (SQLITE_INTEGER, .int64), (SQLITE_INTEGER, .int32), (SQLITE_INTEGER, .int16):
      sink.initialize(int: int64(column), at: index)
    case (SQLITE_INTEGER, .bool): sink.initialize(bool: int64(column) != 0, at: index)
    case (SQLITE_FLOAT, .double), (SQLITE_FLOAT, .float): sink.initialize(double: double(column), at: index)
    case (SQLITE_FLOAT, .date): sink.initialize(date: Date(timeIntervalSinceReferenceDate: double(column)), at: index)
    default: return false
    }
    return true
  }
}

/// The IDs a table's rows are read into: one of the table's entity and one per to-one destination, each
/// a template whose primary key is replaced per row (``ObjectID/withPrimaryKey(_:)``), so that reading a
/// row looks no entity or store up. Made once per query.
struct RowIDs {
  let object: ObjectID
  let targets: [ObjectID]

  init(_ table: SQLiteSchema.Table, storeIdentifier: String) {
    object = ObjectID(entityName: table.entity.name, storeIdentifier: storeIdentifier, primaryKey: 0)
    targets = table.entity.toOneRelationships.map {
      ObjectID(entityName: $0.destination, storeIdentifier: storeIdentifier, primaryKey: 0)
    }
  }
}

/// A table with the IDs its rows are named by, found by an ID's interned entity and store (one comparison
/// per table) where `schema.table(id.entityName)` hashes the name and copies the table: what reading one
/// object by its ID (a fault) looks up.
final class KeyedTable: Sendable {
  let table: SQLiteSchema.Table
  let ids: RowIDs

  init(_ table: SQLiteSchema.Table, storeIdentifier: String) {
    self.table = table
    ids = RowIDs(table, storeIdentifier: storeIdentifier)
  }

  /// One per entity of `schema`; none when the model has sub-entities (whose rows and references need
  /// the general path).
  static func all(_ schema: SQLiteSchema, storeIdentifier: String) -> [KeyedTable] {
    guard schema.model.inheritance.isEmpty else { return [] }
    return schema.tables.values.map { KeyedTable($0, storeIdentifier: storeIdentifier) }
  }
}

extension Statement {
  /// A snapshot read from the columns written by ``SQLiteSchema/Table/selectList(alias:)``, starting at `start`.
  func snapshot(_ table: SQLiteSchema.Table, storeIdentifier: String, start: Int32 = 0) throws -> Snapshot {
    try snapshot(table, ids: RowIDs(table, storeIdentifier: storeIdentifier), start: start)
  }

  /// ``snapshot(_:storeIdentifier:start:)`` with the IDs worked out beforehand: what a query reading many
  /// rows of one table calls per row.
  func snapshot(_ table: SQLiteSchema.Table, ids: RowIDs, start: Int32 = 0) throws -> Snapshot {
    let pk = int64(start)
    // Set in the entity's layout (transient attributes stay null), the common types read typed.
    var column = start + 2
    let attributes = try AttributeValues(layout: table.entity.valueLayout) { sink in
      for (index, type) in zip(table.storedAttributes, table.storedTypes) {
        if !readCommonValue(at: column, as: type, into: &sink, at: index) {
          sink.initialize(
            try SQLiteSchema.decode(
              value(at: column), as: type, entity: table.entity.name, key: table.entity.attributes[index].name),
            at: index)
        }
        column += 1
      }
    }
    var toOne: [ObjectID?] = []
    if !ids.targets.isEmpty {
      toOne.reserveCapacity(ids.targets.count)
      for target in ids.targets {
        toOne.append(isNull(column) ? nil : target.withPrimaryKey(int64(column)))
        column += 1
      }
    }
    return Snapshot(objectID: ids.object.withPrimaryKey(pk), version: int64(start + 1), attributes: attributes, toOne: toOne)
  }
}
