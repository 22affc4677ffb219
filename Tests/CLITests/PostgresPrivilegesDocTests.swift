import Foundation
import Testing

/// docs/POSTGRES.md's role statements, run as written, give roles that can do what the page says and are
/// refused the rest (issue 44, item 5).
@Suite("docs/POSTGRES.md's roles")
struct PostgresPrivilegesDocTests {
  /// The first ```sql block of docs/POSTGRES.md: the role statements.
  static func documentedStatements() throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let page = try String(contentsOf: root.appending(path: "docs/POSTGRES.md"), encoding: .utf8)
    let start = try #require(page.range(of: "```sql\n"), "docs/POSTGRES.md has a ```sql block")
    let end = try #require(page.range(of: "\n```", range: start.upperBound..<page.endIndex))
    return String(page[start.upperBound..<end.lowerBound])
  }

  /// The test server's URI for `database`, as `user` (the server trusts its socket), with `schema`.
  static func uri(database: String, user: String? = nil, schema: String? = nil) throws -> String {
    let base = try #require(ProcessInfo.processInfo.environment["STRATA_POSTGRES_URI"], "set STRATA_POSTGRES_URI")
    var components = try #require(URLComponents(string: base))
    components.path = "/" + database
    var items = (components.queryItems ?? []).filter { $0.name != "user" }
    items.append(URLQueryItem(name: "user", value: user ?? components.user ?? "postgres"))
    if let schema { items.append(URLQueryItem(name: "schema", value: schema)) }
    components.user = nil
    components.queryItems = items
    return try #require(components.string)
  }

  static func psql(_ uri: String, _ arguments: [String]) throws -> CommandResult {
    try Executables.runTool("psql", [uri, "-X", "-q", "-v", "ON_ERROR_STOP=1"] + arguments)
  }

  @Test func theDocumentedRolesDoWhatThePageSays() throws {
    let statements = try Self.documentedStatements()
    #expect(statements.contains("USAGE, SELECT ON ALL SEQUENCES"), "\(statements)")
    // The page's names: database catalogue, schema fireballs, roles fireball_app and fireball_reader.
    let admin = try Self.uri(database: "postgres")
    let reset = try Self.psql(
      admin,
      [
        "-c", "DROP DATABASE IF EXISTS catalogue WITH (FORCE)", "-c", "DROP ROLE IF EXISTS fireball_app",
        "-c", "DROP ROLE IF EXISTS fireball_reader", "-c", "CREATE DATABASE catalogue",
      ])
    try #require(reset.status == 0, "\(reset.stderr)")
    let owner = try Self.uri(database: "catalogue", schema: "fireballs")
    let created = try fireballWatch("group", "create", "Owner's", "--store", "postgres", "--path", owner)
    try #require(created.status == 0, "the owner creates the store: \(created.stderr)")
    let file = FileManager.default.temporaryDirectory.appending(path: "roles-\(UUID().uuidString).sql")
    try Data(statements.utf8).write(to: file)
    let granted = try Self.psql(try Self.uri(database: "catalogue"), ["-f", file.path])
    try #require(granted.status == 0, "the page's statements run as written: \(granted.stderr)")

    let app = try Self.uri(database: "catalogue", user: "fireball_app", schema: "fireballs")
    for arguments in [
      ["import"], ["group", "create", "Mine"], ["group", "add", "Mine", "2024-02-26 11:21:01"], ["list", "--limit", "1"],
      ["history"], ["watch", "--for", "0.3"],
    ] {
      let result = try fireballWatch(arguments + ["--store", "postgres", "--path", app])
      #expect(result.status == 0, "fireball_app may \(arguments): \(result.stderr)")
      #expect(!result.stderr.contains("permission denied"), "\(arguments): \(result.stderr)")
    }
    let elsewhere = try Self.uri(database: "catalogue", user: "fireball_app", schema: "elsewhere")
    let refused = try fireballWatch("import", "--store", "postgres", "--path", elsewhere)
    #expect(refused.status != 0 && isOneLineError(refused.stderr, tool: "fireball-watch"), "\(refused.stderr)")
    #expect(refused.stderr.contains("permission denied"), "\(refused.stderr)")

    let reader = try Self.uri(database: "catalogue", user: "fireball_reader", schema: "fireballs")
    for arguments in [["list", "--limit", "1"], ["history"]] {
      let result = try fireballWatch(arguments + ["--store", "postgres", "--path", reader])
      #expect(result.status == 0, "fireball_reader may \(arguments): \(result.stderr)")
    }
    let fetched = try Executables.run("strata", ["fetch", reader, "--entity", "Fireball", "--count"])
    #expect(fetched.status == 0 && fetched.stdout.hasPrefix("973"), "\(fetched.stdout)\(fetched.stderr)")
    for arguments in [["group", "create", "Theirs"], ["group", "add", "Owner's", "2024-02-26 11:21:01"]] {
      let result = try fireballWatch(arguments + ["--store", "postgres", "--path", reader])
      #expect(result.status != 0 && isOneLineError(result.stderr, tool: "fireball-watch"), "\(arguments): \(result.stderr)")
      #expect(result.stderr.contains("permission denied"), "\(arguments): \(result.stderr)")
    }
  }
}

/// `fireball-watch` with `arguments` given as an array.
func fireballWatch(_ arguments: [String]) throws -> CommandResult {
  try Executables.run("fireball-watch", arguments)
}
