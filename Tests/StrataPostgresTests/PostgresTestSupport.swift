import Foundation
import StrataConformance
import StrataPostgres
import Testing

/// The test server's URI, from `STRATA_POSTGRES_URI` (`scripts/test` starts a server and sets it).
enum PostgresTestServer {
  static let variable = "STRATA_POSTGRES_URI"
  static let howToStart =
    "no PostgreSQL test server: set \(variable), e.g. `dir=$(mktemp -d); export \(variable)=$(scripts/postgres-server start $dir)` "
    + "(stop it with `scripts/postgres-server stop $dir`), or run scripts/test, which does both"

  /// The URI; records a failure (never a silent pass) when the variable is not set.
  static func uri() throws -> String {
    guard let uri = ProcessInfo.processInfo.environment[variable], !uri.isEmpty else {
      Issue.record(Comment(rawValue: howToStart))
      throw StoreErrorForMissingServer()
    }
    return uri
  }

  /// The server's answer to `sql` through `psql` (what a DBA sees); fails the test when `psql` does.
  static func psql(_ sql: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
    process.arguments = [try uri(), "-At", "-v", "ON_ERROR_STOP=1", "-c", sql]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "psql failed: \(sql.prefix(200))")
    return text
  }

  /// A location in a fresh schema of the test database: `postgresql:///strata_test/<schema>?host=…`
  /// (the schema in the path, so the suite's worker, which is handed only the path, finds it).
  static func freshLocation(_ hint: String = UUID().uuidString) -> URL {
    let base = ProcessInfo.processInfo.environment[variable] ?? "postgresql:///strata_test"
    let schema = "t_" + hint.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(40)
    guard var components = URLComponents(string: base) else { return URL(fileURLWithPath: "/") }
    components.path += "/" + schema
    return components.url ?? URL(fileURLWithPath: "/")
  }
}

struct StoreErrorForMissingServer: Error, CustomStringConvertible {
  var description: String { PostgresTestServer.howToStart }
}
