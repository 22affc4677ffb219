import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresSchema {
  /// Every table (or view) the store reads and writes, with the columns it needs: the metadata table;
  /// each entity's table (a sub-entity's view, a hierarchy's root table with `_entity`) with `_pk`,
  /// `_version` and a column per stored attribute and to-one relationship; each join table; the position
  /// columns of ordered relationships. History tables are left out: the store creates them when it is
  /// opened with history tracking on.
  func expectedColumns() -> [String: [String]] {
    var expected: [String: [String]] = [Self.metadataTable: ["key", "value"]]
    let inheritance = model.inheritance
    for entity in model.entities {
      var columns = ["_pk", "_version"] + (tables[entity.name]?.dataColumns ?? [])
      if inheritance.isInHierarchy(entity.name) { columns.append(Self.entityColumn) }
      expected[entity.name, default: []] += columns
    }
    for join in joinTables { expected[join.name, default: []] += ["source", "target"] }
    for order in SQLLayout.orderColumns(of: model) { expected[order.table, default: []].append(order.column) }
    return expected
  }

  /// Refuses a schema whose tables or columns are not all there (dropped or renamed by hand), naming what
  /// is missing, from one catalog query and before anything is written.
  ///
  /// - Throws: `.corrupted` naming each missing table and column (the first few), and the store.
  func checkTables(_ connection: PostgresConnection, store: String) throws {
    let rows = try connection.query(
      "SELECT c.relname, a.attname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        + "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
        + "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')", [.string(name)])
    var present: [String: Set<String>] = [:]
    for row in 0..<rows.count { present[rows.text(row, 0), default: []].insert(rows.text(row, 1)) }
    var missing: [String] = []
    var entity: String?
    var key: String?
    for (table, columns) in expectedColumns().sorted(by: { $0.key < $1.key }) {
      guard let found = present[table] else {
        missing.append("the table \(quoteIdentifier(table))")
        entity = entity ?? table
        continue
      }
      for column in columns where !found.contains(column) {
        missing.append("the column \(quoteIdentifier(table)).\(quoteIdentifier(column))")
        entity = entity ?? table
        key = key ?? column
      }
    }
    guard !missing.isEmpty else { return }
    let shown = missing.prefix(5).joined(separator: ", ") + (missing.count > 5 ? " and \(missing.count - 5) more" : "")
    throw StoreError(
      .corrupted,
      "\(store) is a damaged Strata store: \(shown) \(missing.count == 1 ? "is" : "are") missing "
        + "(dropped or renamed by hand?); restore the schema from a backup, or migrate with the app's model",
      entity: entity, key: key)
  }
}
