import Foundation
import StrataCore

/// `"name"`: an SQL identifier, quoted.
func quote(_ identifier: String) -> String {
  "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// How the store lays the model out in tables: names, columns, DDL, and the value encoding of each
/// attribute type. Built once per store from the model.
struct SQLiteSchema: Sendable {
  static let metadataTable = "_strata_metadata"
  static let format = "strata-sqlite-1"

  /// One entity's table.
  struct Table: Sendable {
    let entity: EntityDescription
    /// The positions (in `entity.attributes`) of the attributes that have a column.
    let storedAttributes: [Int]
    /// The stored attribute and to-one column names, in `SELECT` order after `_pk` and `_version`.
    let dataColumns: [String]

    var name: String { entity.name }

    /// `"_pk", "_version", …` prefixed with `alias`.
    func selectList(alias: String) -> String {
      (["_pk", "_version"] + dataColumns).map { "\(alias).\(quote($0))" }.joined(separator: ", ")
    }

    var insertSQL: String {
      let columns = dataColumns.map(quote).joined(separator: ", ")
      let placeholders = Array(repeating: "?", count: dataColumns.count).joined(separator: ", ")
      if dataColumns.isEmpty { return "INSERT INTO \(quote(name)) DEFAULT VALUES" }
      return "INSERT INTO \(quote(name)) (\(columns)) VALUES (\(placeholders))"
    }

    /// Updates every data column and bumps `_version`; with `checked`, only when `_version` matches.
    func updateSQL(checked: Bool) -> String {
      let sets = (dataColumns.map { "\(quote($0)) = ?" } + ["\"_version\" = \"_version\" + 1"]).joined(separator: ", ")
      let check = checked ? " AND \"_version\" = ?" : ""
      return "UPDATE \(quote(name)) SET \(sets) WHERE \"_pk\" = ?\(check) RETURNING \"_version\""
    }

    func deleteSQL(checked: Bool) -> String {
      "DELETE FROM \(quote(name)) WHERE \"_pk\" = ?" + (checked ? " AND \"_version\" = ?" : "")
    }
  }

  /// Where the targets of a to-many relationship live.
  enum ToManyStorage: Sendable, Hashable {
    /// The destination rows whose `column` holds the owner's `_pk` (the inverse is to-one).
    case foreignKey(destination: String, column: String)
    /// Rows of a join table: `ownerColumn` holds the object's `_pk`, `targetColumn` the target's.
    case joinTable(table: String, ownerColumn: String, targetColumn: String, destination: String)
  }

  /// A join table and the entities on its two sides.
  struct JoinTable: Sendable, Hashable {
    let name: String
    let sourceEntity: String
    let targetEntity: String
  }

  let model: ObjectModel
  let tables: [String: Table]
  let joinTables: [JoinTable]

  init(model: ObjectModel) throws {
    self.model = model
    var tables: [String: Table] = [:]
    var joinTables: [String: JoinTable] = [:]
    for entity in model.entities {
      let stored = entity.attributes.indices.filter { entity.attributes[$0].isPersistent }
      let columns = stored.map { entity.attributes[$0].name } + entity.toOneRelationships.map(\.name)
      tables[entity.name] = Table(entity: entity, storedAttributes: stored, dataColumns: columns)
      for rel in entity.toManyRelationships where model.usesJoinTable(rel) {
        let owner = model.joinTableOwner(of: entity.name, rel)
        let ownerEntity = model.entity(named: owner.entity)
        let target = ownerEntity?.relationship(named: owner.relationship)?.destination ?? rel.destination
        let name = "\(owner.entity)_\(owner.relationship)"
        joinTables[name] = JoinTable(name: name, sourceEntity: owner.entity, targetEntity: target)
      }
    }
    self.tables = tables
    self.joinTables = joinTables.values.sorted { $0.name < $1.name }
    try checkNames()
  }

  func table(_ entityName: String) throws -> Table {
    guard let table = tables[entityName] else {
      throw StoreError(.invalidQuery, "unknown entity '\(entityName)'", entity: entityName)
    }
    return table
  }

  /// The storage of the to-many relationship `relationship` of `entity`.
  func toManyStorage(_ entity: String, _ relationship: RelationshipDescription) -> ToManyStorage {
    if model.usesJoinTable(relationship) {
      let owner = model.joinTableOwner(of: entity, relationship)
      return .joinTable(
        table: "\(owner.entity)_\(owner.relationship)", ownerColumn: owner.isFlipped ? "target" : "source",
        targetColumn: owner.isFlipped ? "source" : "target", destination: relationship.destination)
    }
    return .foreignKey(destination: relationship.destination, column: relationship.inverse ?? "")
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
    for entity in model.entities {
      try claim(entity.name, "the table of entity \(entity.name)")
      var columns: Set<String> = ["_pk", "_version"]
      for column in tables[entity.name]?.dataColumns ?? [] {
        guard columns.insert(column.lowercased()).inserted else {
          throw StoreError(
            .unsupported, "the SQLite store cannot hold \(entity.name).\(column): another property has the same "
              + "name up to case", entity: entity.name, key: column)
        }
      }
    }
    for join in joinTables { try claim(join.name, "the join table \(join.name)") }
    for (name, _) in indexes() { try claim(name, "the index \(name)") }
  }

  /// `(name, CREATE INDEX statement)` for every index of every table.
  private func indexes() -> [(String, String)] {
    var result: [(String, String)] = []
    for entity in model.entities {
      let table = quote(entity.name)
      func columns(_ keys: [String]) -> String { keys.map(quote).joined(separator: ", ") }
      for (n, keys) in entity.uniquenessConstraints.enumerated() {
        let name = "\(entity.name)_unique_\(n + 1)"
        result.append((name, "CREATE UNIQUE INDEX \(quote(name)) ON \(table) (\(columns(keys)))"))
      }
      for attribute in entity.attributes where attribute.isIndexed && attribute.isPersistent {
        let name = "\(entity.name)_idx_\(attribute.name)"
        result.append((name, "CREATE INDEX \(quote(name)) ON \(table) (\(quote(attribute.name)))"))
      }
      for (n, keys) in entity.indexes.enumerated() {
        let name = "\(entity.name)_index_\(n + 1)"
        result.append((name, "CREATE INDEX \(quote(name)) ON \(table) (\(columns(keys)))"))
      }
      for rel in entity.toOneRelationships {
        let name = "\(entity.name)_fk_\(rel.name)"
        result.append((name, "CREATE INDEX \(quote(name)) ON \(table) (\(quote(rel.name)))"))
      }
    }
    for join in joinTables {
      let name = "\(join.name)_target"
      result.append((name, "CREATE INDEX \(quote(name)) ON \(quote(join.name)) (\"target\")"))
    }
    return result
  }

  /// Every statement that creates the store's tables and indexes (metadata table included).
  func createStatements() -> [String] {
    var statements = [
      "CREATE TABLE \(quote(Self.metadataTable)) (\"key\" TEXT PRIMARY KEY, \"value\" TEXT NOT NULL)"
    ]
    for entity in model.entities {
      var columns = ["\"_pk\" INTEGER PRIMARY KEY AUTOINCREMENT", "\"_version\" INTEGER NOT NULL DEFAULT 1"]
      for attribute in entity.attributes where attribute.isPersistent {
        columns.append(
          "\(quote(attribute.name)) \(Self.columnType(attribute.type))\(attribute.isOptional ? "" : " NOT NULL")")
      }
      for rel in entity.toOneRelationships {
        columns.append("\(quote(rel.name)) INTEGER")
      }
      statements.append("CREATE TABLE \(quote(entity.name)) (\(columns.joined(separator: ", ")))")
    }
    for join in joinTables {
      statements.append(
        "CREATE TABLE \(quote(join.name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, "
          + "PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID")
    }
    statements += indexes().map(\.1)
    return statements
  }

  /// The declared SQL type of a column holding `type`.
  static func columnType(_ type: AttributeType) -> String {
    switch type {
    case .int16, .int32, .int64, .bool: "INTEGER"
    case .double, .float, .date: "REAL"
    case .decimal, .string, .url, .uuid: "TEXT"
    case .data: "BLOB"
    }
  }
}

// MARK: - Value encoding

extension SQLiteSchema {
  /// `value` as stored in a column of `type`: booleans 0/1, dates as seconds since 1970, UUIDs as
  /// uppercase strings, decimals as their exact string form.
  ///
  /// - Throws: `.validation` when the value cannot be converted to `type`.
  static func encode(_ value: Value, as type: AttributeType, entity: String, key: String) throws -> SQLValue {
    guard let converted = type.coerce(value) else {
      throw StoreError(
        .validation, "\(entity).\(key) is a \(type.rawValue) attribute and cannot hold the \(value.kindName) \(value)",
        entity: entity, key: key, value: value)
    }
    return encode(converted)
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
    case .date(let d): .real(d.timeIntervalSince1970)
    case .data(let d): .blob(d)
    case .uuid(let u): .text(u.uuidString)
    case .url(let u): .text(u.absoluteString)
    case .objectID(let id): id.primaryKey.map(SQLValue.integer) ?? .null
    case .array: .null
    }
  }
}

extension Statement {
  /// The column read back as an attribute value of `type`.
  ///
  /// - Throws: `.corrupted` when the stored value cannot be a `type` (the file was edited by hand).
  func attributeValue(_ column: Int32, _ type: AttributeType, entity: String, key: String) throws -> Value {
    if isNull(column) { return .null }
    switch type {
    case .int16, .int32, .int64: return .int(int64(column))
    case .bool: return .bool(int64(column) != 0)
    case .double, .float: return .double(double(column))
    case .string: return .string(text(column))
    case .date: return .date(Date(timeIntervalSince1970: double(column)))
    case .data: return .data(blob(column))
    case .decimal:
      if let decimal = Decimal(string: text(column)) { return .decimal(decimal) }
    case .uuid:
      if let uuid = UUID(uuidString: text(column)) { return .uuid(uuid) }
    case .url:
      if let url = URL(string: text(column)) { return .url(url) }
    }
    throw StoreError(
      .corrupted, "\(entity).\(key) holds '\(text(column))', which is not a \(type.rawValue)", entity: entity, key: key)
  }

  /// A snapshot read from the columns written by ``SQLiteSchema/Table/selectList(alias:)``, starting at `start`.
  func snapshot(_ table: SQLiteSchema.Table, storeIdentifier: String, start: Int32 = 0) throws -> Snapshot {
    let entity = table.entity
    let pk = int64(start)
    var attributes = [Value](repeating: .null, count: entity.attributes.count)
    var column = start + 2
    for index in table.storedAttributes {
      let attribute = entity.attributes[index]
      attributes[index] = try attributeValue(column, attribute.type, entity: entity.name, key: attribute.name)
      column += 1
    }
    var toOne: [ObjectID?] = []
    toOne.reserveCapacity(entity.toOneRelationships.count)
    for rel in entity.toOneRelationships {
      toOne.append(
        isNull(column)
          ? nil : ObjectID(entityName: rel.destination, storeIdentifier: storeIdentifier, primaryKey: int64(column)))
      column += 1
    }
    return Snapshot(
      objectID: ObjectID(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: pk),
      version: int64(start + 1), attributes: attributes, toOne: toOne)
  }
}
