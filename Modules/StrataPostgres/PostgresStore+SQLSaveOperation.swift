import Foundation
import StrataSQL
import StrataStoreKit

extension PostgresSchema: SQLSchemaDescription {
  static func placeholder(_ position: Int) -> String { "$\(position)" }
}

/// The statements the shared save steps (``SQLSaveOperation``: checks, results, conflict reports) run.
extension SaveOperation: SQLSaveOperation {
  var recordsHistory: Bool { history != nil }
  /// The deferred constraints are checked on the save's final state: a written object that no stored
  /// row clashes with clashed with nothing.
  static var reportsUnmatchedRefusals: Bool { false }

  func deleteRow(_ table: PostgresSchema.Table, _ pk: Int64) throws -> Bool {
    try connection.run(table.deleteSQL, [.int(pk)]) > 0
  }

  func firstSnapshot(_ sql: String, _ bindings: [PGParameter], _ table: PostgresSchema.Table) throws -> Snapshot? {
    let found = try connection.query(sql, bindings)
    return found.count > 0 ? try found.snapshot(0, table, storeIdentifier: storeIdentifier) : nil
  }

  func keys(_ sql: String, _ bindings: [PGParameter]) throws -> [Int64] {
    let rows = try connection.query(sql, bindings)
    return (0..<rows.count).map { rows.int64($0, 0) }
  }
}
