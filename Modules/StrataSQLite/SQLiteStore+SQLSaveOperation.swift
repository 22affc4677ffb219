import Foundation
import StrataSQL
import StrataStoreKit

extension SQLiteSchema: SQLSchemaDescription {
  static func placeholder(_ position: Int) -> String { "?" }
}

/// The statements the shared save steps (``SQLSaveOperation``: checks, results, conflict reports) run.
extension SaveOperation: SQLSaveOperation {
  var recordsHistory: Bool { history != nil }
  static var reportsUnmatchedRefusals: Bool { true }

  func deleteRow(_ table: SQLiteSchema.Table, _ pk: Int64) throws -> Bool {
    try connection.run(table.deleteSQL, [.integer(pk)]) > 0
  }

  func firstSnapshot(_ sql: String, _ bindings: [SQLValue], _ table: SQLiteSchema.Table) throws -> Snapshot? {
    try connection.query(sql, bindings) { try $0.snapshot(table, storeIdentifier: storeIdentifier) }.first
  }

  func keys(_ sql: String, _ bindings: [SQLValue]) throws -> [Int64] {
    try connection.query(sql, bindings) { $0.int64(0) }
  }
}
