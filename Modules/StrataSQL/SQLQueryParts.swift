import Foundation
import StrataStoreKit

/// Where the targets of a to-many relationship are, as a query reads them (see
/// ``SQLLayout/toManySource(_:ownerAlias:newAlias:tableName:)``).
package struct SQLToManySource {
  /// The text after `FROM`: the target rows, with the join table's rows joined in when there is one.
  package let from: String
  /// The condition tying the target rows to the owner row.
  package let correlation: String
  /// The alias of the target rows.
  package let alias: String
  /// The whole as a `JOIN … ON <correlation>`, to chain after another source.
  package let joinForm: String
  /// The alias of the rows holding an ordered relationship's positions: the targets' (foreign key) or
  /// the join table's.
  package var positionAlias: String? = nil
}

extension SQLLayout {
  /// The rows holding the targets of a to-many relationship (stored as `storage`) of the row aliased
  /// `ownerAlias`: the destination rows whose foreign key holds its `_pk`, or the join table's rows
  /// joined to their destination rows. `newAlias` makes each alias; `tableName` names a table in
  /// statements (quoted, and qualified where the dialect has namespaces).
  package static func toManySource(
    _ storage: SQLToManyStorage, ownerAlias: String, newAlias: () -> String, tableName: (String) -> String
  ) -> SQLToManySource {
    switch storage {
    case .foreignKey(let destination, let column):
      let alias = newAlias()
      let correlation = "\(alias).\(quote(column)) = \(ownerAlias).\"_pk\""
      let from = "\(tableName(destination)) AS \(alias)"
      return SQLToManySource(
        from: from, correlation: correlation, alias: alias, joinForm: "JOIN \(from) ON \(correlation)",
        positionAlias: alias)
    case .joinTable(let table, let ownerColumn, let targetColumn, let destination):
      let link = newAlias()
      let alias = newAlias()
      let targetJoin = "JOIN \(tableName(destination)) AS \(alias) ON \(alias).\"_pk\" = \(link).\(quote(targetColumn))"
      let correlation = "\(link).\(quote(ownerColumn)) = \(ownerAlias).\"_pk\""
      return SQLToManySource(
        from: "\(tableName(table)) AS \(link) \(targetJoin)", correlation: correlation, alias: alias,
        joinForm: "JOIN \(tableName(table)) AS \(link) ON \(correlation) \(targetJoin)", positionAlias: link)
    }
  }

  /// The `ORDER BY … LIMIT 1 [OFFSET n]` that picks one element of the ordered relationship `rel` of
  /// `owner` from `source`'s rows: `[n]` in list order (positions never written last, then by key),
  /// `[LAST]` the reverse.
  ///
  /// - Throws: `.invalidQuery` when `rel` is not ordered.
  package static func elementOrder(
    _ model: ObjectModel, _ owner: String, _ rel: RelationshipDescription, _ source: SQLToManySource,
    _ position: ResolvedKeyPath.Member
  ) throws -> String {
    guard let order = orderColumn(model, owner, rel), let alias = source.positionAlias else {
      throw StoreError(
        .invalidQuery, "\(owner).\(rel.name) is not ordered, so it has no element \(position)", entity: owner,
        key: rel.name)
    }
    let column = "\(alias).\(quote(order.column))"
    let key = "\(alias).\(quote(order.targetColumn))"
    switch position {
    case .last: return "ORDER BY \(column) DESC NULLS FIRST, \(key) DESC LIMIT 1"
    case .index(let n): return "ORDER BY \(column) NULLS LAST, \(key) LIMIT 1 OFFSET \(max(n, 0))"
    case .key: return "LIMIT 0"
    }
  }

  /// `(SELECT <column> FROM <targets> LEFT JOIN <to-one hops> WHERE <correlation> ORDER BY … LIMIT 1
  /// OFFSET n)`: `column` of the element at `position` of the ordered `rel` of `owner`, read from
  /// `source`'s rows, or of the object the to-one `hops` reach from it. `newAlias` and `tableName` are
  /// the dialect's, as for ``toManySource(_:ownerAlias:newAlias:tableName:)``.
  ///
  /// - Throws: `.invalidQuery` when `rel` is not ordered.
  package static func elementSubquery(
    _ model: ObjectModel, _ owner: String, _ rel: RelationshipDescription, _ source: SQLToManySource,
    _ position: ResolvedKeyPath.Member, hops: [ResolvedKeyPath.Hop], column: String, newAlias: () -> String,
    tableName: (String) -> String
  ) throws -> String {
    let order = try elementOrder(model, owner, rel, source, position)
    var from = source.from
    var current = source.alias
    for hop in hops {
      let next = newAlias()
      from +=
        " LEFT JOIN \(tableName(hop.destination.name)) AS \(next) ON \(next).\"_pk\" = \(current).\(quote(hop.relationship.name))"
      current = next
    }
    return "(SELECT \(current).\(column) FROM \(from) WHERE \(source.correlation) \(order))"
  }
}
