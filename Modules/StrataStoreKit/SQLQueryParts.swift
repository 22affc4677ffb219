import Foundation

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
      return SQLToManySource(from: from, correlation: correlation, alias: alias, joinForm: "JOIN \(from) ON \(correlation)")
    case .joinTable(let table, let ownerColumn, let targetColumn, let destination):
      let link = newAlias()
      let alias = newAlias()
      let targetJoin = "JOIN \(tableName(destination)) AS \(alias) ON \(alias).\"_pk\" = \(link).\(quote(targetColumn))"
      let correlation = "\(link).\(quote(ownerColumn)) = \(ownerAlias).\"_pk\""
      return SQLToManySource(
        from: "\(tableName(table)) AS \(link) \(targetJoin)", correlation: correlation, alias: alias,
        joinForm: "JOIN \(tableName(table)) AS \(link) ON \(correlation) \(targetJoin)")
    }
  }
}
