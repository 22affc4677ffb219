import Foundation
import StrataStoreKit

// The table layout the SQL backends (SQLite, PostgreSQL) share: one table per entity (`_pk`, `_version`,
// then the stored attributes and the to-one columns), a join table per many-to-many relationship, and
// the indexes of uniqueness constraints, indexed attributes and foreign keys. Names only: column types,
// DDL, placeholders and namespaces are each dialect's own.

/// Where the targets of a to-many relationship live in an SQL backend's tables.
package enum SQLToManyStorage: Sendable, Hashable {
  /// The destination rows whose `column` holds the owner's `_pk` (the inverse is to-one).
  case foreignKey(destination: String, column: String)
  /// Rows of a join table: `ownerColumn` holds the object's `_pk`, `targetColumn` the target's.
  case joinTable(table: String, ownerColumn: String, targetColumn: String, destination: String)
}

/// A join table and the entities on its two sides.
package struct SQLJoinTable: Sendable, Hashable {
  package let name: String
  package let sourceEntity: String
  package let targetEntity: String

  package init(name: String, sourceEntity: String, targetEntity: String) {
    self.name = name
    self.sourceEntity = sourceEntity
    self.targetEntity = targetEntity
  }
}

/// The position column of an ordered to-many relationship: `_order_<inverse>` on the destination's table
/// beside the inverse's foreign key (Core Data's `Z_FOK_`), or `source_order` / `target_order` in a join
/// table (the target's position in the source's list, or the reverse). Indexed with `keyColumn` first, so
/// one object's list reads in order from the index.
package struct SQLOrderColumn: Sendable, Hashable {
  /// The table holding the column (a hierarchy's root table, or a join table).
  package let table: String
  package let column: String
  /// The column naming the list's owner: the foreign key, or the join table's owner column.
  package let keyColumn: String
  /// The column naming a target: `_pk`, or the join table's other column.
  package let targetColumn: String

  package var indexName: String { "\(table)_\(column)" }

  package init(table: String, column: String, keyColumn: String, targetColumn: String) {
    self.table = table
    self.column = column
    self.keyColumn = keyColumn
    self.targetColumn = targetColumn
  }
}

/// One index an SQL backend keeps: on an entity table (uniqueness constraints, indexed attributes,
/// compound indexes, to-one foreign keys) or a join table (its `target` column).
package struct SQLIndex: Sendable, Hashable {
  package let name: String
  package let table: String
  package let columns: [String]
  package let isUnique: Bool
  /// For an index of a sub-entity in its hierarchy's table: the entities whose rows it covers (a partial
  /// index on `_entity`); `nil` for every row.
  package let entities: [String]?

  package init(name: String, table: String, columns: [String], isUnique: Bool, entities: [String]? = nil) {
    self.name = name
    self.table = table
    self.columns = columns
    self.isUnique = isUnique
    self.entities = entities
  }
}

/// One entity's table as an SQL backend describes it; what the shared save and query helpers read.
package protocol SQLTableDescription: AnyObject, Sendable {
  var entity: EntityDescription { get }
  /// The positions (in `entity.attributes`) of the attributes that have a column.
  var storedAttributes: [Int] { get }
  /// The stored attribute and to-one column names, in `SELECT` order after `_pk` and `_version`.
  var dataColumns: [String] { get }
  /// The table as statements name it: quoted, and qualified where the dialect has namespaces.
  var sqlName: String { get }
  /// The snapshot columns (`selectList(alias: "t0")`) of one row, bound to its `_pk`.
  var selectByKeySQL: String { get }
  /// Deletes one row of the entity, bound to its `_pk`.
  var deleteSQL: String { get }
  /// The table the save writes the entity's rows to, as statements name it (in a hierarchy: its table,
  /// or the entity's view where the database writes through views).
  var writtenSQLName: String { get }
}

extension SQLTableDescription {
  package var name: String { entity.name }

  /// `"_pk", "_version", …` prefixed with `alias`.
  package func selectList(alias: String) -> String {
    (["_pk", "_version"] + dataColumns).map { "\(alias).\(SQLLayout.quote($0))" }.joined(separator: ", ")
  }
}

/// An SQL backend's layout of a model in tables, and its dialect's value encoding: what the shared save
/// and migration helpers read.
package protocol SQLSchemaDescription: Sendable {
  associatedtype Table: SQLTableDescription
  /// A value bound to a statement parameter.
  associatedtype Binding: Sendable

  var model: ObjectModel { get }
  /// Every entity's table, by entity name.
  var tables: [String: Table] { get }
  /// Every join table of the model.
  var joinTables: [SQLJoinTable] { get }
  /// The keys of the targets of `relationship` of one object of `entity` (bound to its `_pk`), in
  /// primary-key order (an ordered relationship: by its position column, then key).
  func relatedKeysSQL(_ entity: String, _ relationship: RelationshipDescription) -> String
  /// `table` (an entity's, a join table's or a hierarchy's) as statements name it: quoted, and qualified
  /// where the database has namespaces.
  func qualify(_ table: String) -> String
  /// A value already of its attribute's type, as bound.
  static func encode(_ value: Value) -> Binding
  /// `value` converted to an attribute of `type` and bound.
  ///
  /// - Throws: `.validation` when the value cannot be converted to `type`.
  static func encode(
    _ value: Value, as type: AttributeType, entity: @autoclosure () -> String, key: @autoclosure () -> String
  ) throws -> Binding
  /// The value the store hands back after writing `value` to an attribute of `type`.
  ///
  /// - Throws: `.validation` when the value cannot be converted to `type`.
  static func storedForm(_ value: Value, as type: AttributeType, entity: String, key: String) throws -> Value
  /// The parameter placeholder at (1-based) `position`: `?` or `$n`.
  static func placeholder(_ position: Int) -> String
}

extension SQLSchemaDescription {
  package static func encode(
    _ value: Value, as type: AttributeType, entity: @autoclosure () -> String, key: @autoclosure () -> String
  ) throws -> Binding {
    if value.isNull || type.isCanonical(value) { return encode(value) }
    return try encodeConverting(value, as: type, entity: entity(), key: key())
  }

  /// `value`, not of `type`, converted to it and bound.
  ///
  /// - Throws: `.validation` when the value cannot be converted to `type`.
  package static func encodeConverting(
    _ value: Value, as type: AttributeType, entity: @autoclosure () -> String, key: @autoclosure () -> String
  ) throws -> Binding {
    guard let converted = type.coerce(value) else {
      let (entity, key) = (entity(), key())
      throw StoreError(
        .validation, "\(entity).\(key) is a \(type.rawValue) attribute and cannot hold the \(value.kindName) \(value)",
        entity: entity, key: key, value: value)
    }
    return encode(converted)
  }

  /// The table of `entityName`.
  ///
  /// - Throws: `.invalidQuery` when the model has no such entity.
  package func table(_ entityName: String) throws -> Table {
    guard let table = tables[entityName] else {
      throw StoreError(.invalidQuery, "unknown entity '\(entityName)'", entity: entityName)
    }
    return table
  }

  /// The storage of the to-many relationship `relationship` of `entity`.
  package func toManyStorage(_ entity: String, _ relationship: RelationshipDescription) -> SQLToManyStorage {
    SQLLayout.toManyStorage(model, entity, relationship)
  }

  /// The table of `id`'s entity and its relationship named `relationship`, for `relatedObjectIDs`.
  ///
  /// - Throws: `.notFound` for an unknown entity or relationship.
  package func relationship(
    _ relationship: String, of id: ObjectID
  ) throws -> (table: Table, relationship: RelationshipDescription) {
    guard let table = tables[id.entityName] else {
      throw StoreError(.notFound, "\(id) names unknown entity '\(id.entityName)'", entity: id.entityName)
    }
    guard let rel = table.entity.relationship(named: relationship) else {
      throw StoreError(
        .notFound, "\(id.entityName) has no relationship '\(relationship)'", entity: id.entityName, key: relationship)
    }
    return (table, rel)
  }

  /// Every index of every table (and, where the dialect keeps them as constraints, unique constraint).
  package func indexes() -> [SQLIndex] { SQLLayout.indexes(model, joinTables: joinTables) }
}

/// The names and shapes of the SQL backends' tables, computed from the model.
package enum SQLLayout {
  /// The table of `key`/`value` rows holding a store's identifier, format and model.
  package static let metadataTable = "_strata_metadata"
  /// The column of a hierarchy's table naming the entity each row was inserted as.
  package static let entityColumn = "_entity"

  /// `"name"`: an SQL identifier, quoted (inner quotes doubled).
  package static func quote(_ identifier: String) -> String {
    // Most names hold no quote: Foundation's search and copy cost ~100,000 instructions per fired fault.
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// The positions (in `entity.attributes`) of the attributes that have a column, and every data column
  /// name: those attributes', then the to-one relationships'.
  package static func columns(of entity: EntityDescription) -> (storedAttributes: [Int], dataColumns: [String]) {
    let stored = entity.attributes.indices.filter { entity.attributes[$0].isPersistent }
    return (stored, stored.map { entity.attributes[$0].name } + entity.toOneRelationships.map(\.name))
  }

  /// Every join table of `model`, by name.
  package static func joinTables(of model: ObjectModel) -> [SQLJoinTable] {
    var joinTables: [String: SQLJoinTable] = [:]
    for entity in model.entities {
      for rel in entity.toManyRelationships where model.usesJoinTable(rel) {
        let owner = model.joinTableOwner(of: entity.name, rel)
        let ownerEntity = model.entity(named: owner.entity)
        let target = ownerEntity?.relationship(named: owner.relationship)?.destination ?? rel.destination
        let name = "\(owner.entity)_\(owner.relationship)"
        joinTables[name] = SQLJoinTable(name: name, sourceEntity: owner.entity, targetEntity: target)
      }
    }
    return joinTables.values.sorted { $0.name < $1.name }
  }

  /// The storage of the to-many relationship `relationship` of `entity`.
  package static func toManyStorage(
    _ model: ObjectModel, _ entity: String, _ relationship: RelationshipDescription
  ) -> SQLToManyStorage {
    if model.usesJoinTable(relationship) {
      let owner = model.joinTableOwner(of: entity, relationship)
      return .joinTable(
        table: "\(owner.entity)_\(owner.relationship)", ownerColumn: owner.isFlipped ? "target" : "source",
        targetColumn: owner.isFlipped ? "source" : "target", destination: relationship.destination)
    }
    return .foreignKey(destination: relationship.destination, column: relationship.inverse ?? "")
  }

  /// The position column of the ordered to-many `relationship` of `entity` (`nil` when it is unordered).
  package static func orderColumn(
    _ model: ObjectModel, _ entity: String, _ relationship: RelationshipDescription
  ) -> SQLOrderColumn? {
    guard relationship.isOrdered else { return nil }
    switch toManyStorage(model, entity, relationship) {
    case .foreignKey(let destination, let column):
      return SQLOrderColumn(
        table: model.inheritance.root(of: destination), column: "_order_" + column, keyColumn: column,
        targetColumn: "_pk")
    case .joinTable(let table, let ownerColumn, let targetColumn, _):
      return SQLOrderColumn(
        table: table, column: ownerColumn + "_order", keyColumn: ownerColumn, targetColumn: targetColumn)
    }
  }

  /// Every position column of `model`'s ordered relationships, once each, sorted by table and name.
  package static func orderColumns(of model: ObjectModel) -> [SQLOrderColumn] {
    var result = Set<SQLOrderColumn>()
    for entity in model.entities {
      for rel in entity.toManyRelationships {
        if let column = orderColumn(model, entity.name, rel) { result.insert(column) }
      }
    }
    return result.sorted { ($0.table, $0.column) < ($1.table, $1.column) }
  }

  /// Every index of every table of `model` (`joinTables` its join tables).
  package static func indexes(_ model: ObjectModel, joinTables: [SQLJoinTable]) -> [SQLIndex] {
    var result: [SQLIndex] = []
    let inheritance = model.inheritance
    for entity in model.entities {
      // In a hierarchy, every entity's rows live in the root's table: each entity indexes what it declares
      // (not what it inherits), over its own rows and its sub-entities' (all rows for the root).
      let parent = inheritance.parent(of: entity.name).flatMap { model.entity(named: $0) }
      let table = inheritance.isInHierarchy(entity.name) ? inheritance.root(of: entity.name) : entity.name
      let covered = parent == nil ? nil : inheritance.entityAndDescendants(entity.name)
      for (n, keys) in entity.uniquenessConstraints.enumerated() where parent?.uniquenessConstraints.contains(keys) != true {
        result.append(
          SQLIndex(name: "\(entity.name)_unique_\(n + 1)", table: table, columns: keys, isUnique: true, entities: covered))
      }
      for attribute in entity.attributes
      where attribute.isIndexed && attribute.isPersistent && parent?.attribute(named: attribute.name) == nil {
        result.append(
          SQLIndex(
            name: "\(entity.name)_idx_\(attribute.name)", table: table, columns: [attribute.name], isUnique: false,
            entities: covered))
      }
      for (n, keys) in entity.indexes.enumerated() where parent?.indexes.contains(keys) != true {
        result.append(
          SQLIndex(name: "\(entity.name)_index_\(n + 1)", table: table, columns: keys, isUnique: false, entities: covered))
      }
      for rel in entity.toOneRelationships where parent?.relationship(named: rel.name) == nil {
        result.append(
          SQLIndex(name: "\(entity.name)_fk_\(rel.name)", table: table, columns: [rel.name], isUnique: false, entities: covered))
      }
    }
    for join in joinTables {
      result.append(SQLIndex(name: "\(join.name)_target", table: join.name, columns: ["target"], isUnique: false))
    }
    return result
  }
}

extension ObjectID {
  /// The primary keys among `ids` of objects saved in the store `storeIdentifier`, by entity, entities
  /// in order of first appearance (temporary IDs and other stores' IDs skipped).
  package static func keysByEntity(_ ids: [ObjectID], storeIdentifier: String) -> [(entity: String, keys: [Int64])] {
    var keysByEntity: [String: [Int64]] = [:]
    var order: [String] = []
    for id in ids where id.storeIdentifier == storeIdentifier {
      guard let pk = id.primaryKey else { continue }
      if keysByEntity[id.entityName] == nil { order.append(id.entityName) }
      keysByEntity[id.entityName, default: []].append(pk)
    }
    return order.map { ($0, keysByEntity[$0] ?? []) }
  }
}
