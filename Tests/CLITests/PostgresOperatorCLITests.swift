import Foundation
import Testing

/// The CLIs on a shared PostgreSQL server as an operator runs them (issue 44): the server's notices and
/// session-ending messages never reach standard error raw.
@Suite("CLIs on PostgreSQL, as an operator runs them")
struct PostgresOperatorCLITests {
  /// `uri` with `name=value` added to its query.
  static func adding(_ name: String, _ value: String, to uri: String) -> String {
    uri + (uri.contains("?") ? "&" : "?") + name + "=" + value
  }

  /// The server's answer to `sql`, through `psql` on the test database.
  static func psql(_ sql: String) throws -> CommandResult {
    let base = try #require(ProcessInfo.processInfo.environment["STRATA_POSTGRES_URI"])
    return try Executables.runTool("psql", [base, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
  }

  @Test func creatingAStoreInAnExistingEmptySchemaPrintsNoServerNotice() throws {
    let store = try PostgresServer.freshLocation()
    let schema = try #require(URLComponents(string: store)?.path.split(separator: "/").last.map(String.init))
    #expect(try Self.psql("CREATE SCHEMA \"\(schema)\"").status == 0)
    let added = try faveFlicks(
      "add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--store", "postgres", "--path", store)
    #expect(added.status == 0, "\(added.stderr)")
    #expect(added.stderr.isEmpty, "no NOTICE from the server: \(added.stderr)")
  }

  @Test func aWatchWhoseSessionTheServerEndsPrintsNoRawFatal() throws {
    let name = "watch-" + UUID().uuidString.prefix(8).lowercased()
    let store = Self.adding("application_name", name, to: try PostgresServer.freshLocation())
    #expect(try fireballWatch("import", "--store", "postgres", "--path", store).status == 0)
    let process = Process()
    process.executableURL = Executables.url("fireball-watch")
    process.arguments = ["watch", "--for", "3", "--store", "postgres", "--path", store]
    let (out, err) = (Pipe(), Pipe())
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Once it watches (a query the server cuts mid-way is an error, rightly), end its sessions as an
    // operator's `pg_terminate_backend` would.
    var output = ""
    while !output.contains("Watching for changes") {
      let data = out.fileHandleForReading.availableData
      if data.isEmpty { break }
      output += String(decoding: data, as: UTF8.self)
    }
    var terminated = 0
    for _ in 0..<200 where terminated == 0 {
      let answer = try Self.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '\(name)'")
      terminated = Int(answer.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
      if terminated == 0 { usleep(20_000) }
    }
    #expect(terminated > 0, "the watcher's sessions were found by their application_name")
    output += String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(output)\(errors)")
    #expect(!errors.contains("FATAL") && !errors.contains("NOTICE") && !errors.contains("\t"), "\(errors)")
  }

  @Test func explainShowsTheSQLSentAndPostgresPlanAndDebugLogsStatements() throws {
    let store = try PostgresServer.freshLocation()
    #expect(try fireballWatch("import", "--store", "postgres", "--path", store).status == 0)
    let explained = try Executables.run(
      "strata",
      [
        "fetch", store, "--entity", "Fireball", "--where", "impactEnergy > 1", "--sort", "dateTimeStamp:desc", "--limit", "2",
        "--explain",
      ])
    #expect(explained.status == 0, "\(explained.stderr)")
    let text = explained.stdout
    #expect(text.contains("ORDER BY t0.\"dateTimeStamp\" DESC") && text.contains("LIMIT $2"), "the SQL sent: \(text)")
    #expect(text.contains("$2 = 2"), "its bound values: \(text)")
    #expect(text.contains("Limit  (cost=") && text.contains("Sort Key:"), "PostgreSQL's own EXPLAIN: \(text)")
    #expect(!text.contains("read every") && !text.contains("shared evaluator"), "\(text)")

    let logged = try Executables.run(
      "strata", ["fetch", store, "--entity", "Fireball", "--count"], environment: ["STRATA_SQL_DEBUG": "1"])
    #expect(logged.status == 0, "\(logged.stderr)")
    #expect(logged.stderr.contains("strata.postgres") && logged.stderr.contains("SELECT COUNT(*) FROM"), "\(logged.stderr)")
    let quiet = try Executables.run("strata", ["fetch", store, "--entity", "Fireball", "--count"])
    #expect(quiet.stderr.isEmpty, "nothing logged without STRATA_SQL_DEBUG: \(quiet.stderr)")
  }
}
