import CSQLite
import Foundation
import StrataConformance
import StrataSQLite
import StrataStoreKit
import Testing

let sqliteBackend = ConformanceBackend(
  factory: SQLiteStoreFactory(), capabilities: [.sharedLocation, .multiProcess, .migration, .inheritance, .hierarchyMigration],
  worker: "strata-worker",
  location: { $0.appending(path: "conformance.sqlite") }, integrityCheck: checkSQLiteIntegrity)

@Test("SQLite conformance", arguments: Conformance.cases)
func sqliteConformance(_ check: Conformance.Case) async throws { try await Conformance.run(check, on: sqliteBackend) }

/// `PRAGMA integrity_check` on a read-only connection (the file's WAL included, nothing written).
@Sendable func checkSQLiteIntegrity(_ url: URL) throws {
  var db: OpaquePointer?
  var statement: OpaquePointer?
  defer {
    sqlite3_finalize(statement)
    sqlite3_close(db)
  }
  guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK,
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &statement, nil) == SQLITE_OK
  else { throw StoreError(.corrupted, "\(url.path) does not open: \(String(cString: sqlite3_errmsg(db)))") }
  var lines: [String] = []
  while sqlite3_step(statement) == SQLITE_ROW {
    lines.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "")
  }
  guard lines == ["ok"] else { throw StoreError(.corrupted, "integrity_check: \(lines.joined(separator: "; "))") }
}
