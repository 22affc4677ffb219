import Foundation
import Testing

/// `tater-rater sync`: two replicas (SQLite and LMDB) work offline and sync through a real PostgreSQL
/// server (`STRATA_POSTGRES_URI`; without it these tests fail, never skip).
@Suite("tater-rater sync")
struct TaterRaterSyncCLITests {
  let directory = FileManager.default.temporaryDirectory.appending(path: "tater-rater-sync-\(UUID().uuidString)")
  var a: [String] { ["--store", "sqlite", "--path", directory.appending(path: "a.sqlite").path] }
  var b: [String] { ["--store", "lmdb", "--path", directory.appending(path: "b.lmdb").path] }

  func run(_ replica: [String], _ arguments: String...) throws -> CommandResult {
    try Executables.run("tater-rater", arguments + replica)
  }

  /// Runs a command that must succeed and returns its standard output.
  func ok(_ replica: [String], _ arguments: String...) throws -> String {
    let result = try Executables.run("tater-rater", arguments + replica)
    #expect(result.status == 0, "tater-rater \(arguments.joined(separator: " ")): \(result.stderr)")
    return result.stdout
  }

  func json(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
  }

  /// "pushed N, pulled M, conflicts K, rejected R" as numbers.
  func counts(_ line: String) throws -> [String: Int] {
    var counts: [String: Int] = [:]
    for part in line.trimmingCharacters(in: .newlines).components(separatedBy: ", ") {
      let words = part.split(separator: " ")
      guard words.count == 2, let count = Int(words[1]) else { continue }
      counts[String(words[0])] = count
    }
    #expect(counts.keys.sorted() == ["conflicts", "pulled", "pushed", "rejected"], "\(line)")
    return counts
  }

  @Test func twoReplicasWorkingOfflineConvergeThroughTheServer() throws {
    defer { try? FileManager.default.removeItem(at: directory) }
    let server = try PostgresServer.freshLocation()
    // Two people import, rate and note offline, before any server is known.
    _ = try ok(a, "import", "--seed", "7")
    _ = try ok(a, "rate", "Agria", "4")
    _ = try ok(a, "note", "Bintje", "Waxy")
    _ = try ok(b, "import", "--seed", "8")
    _ = try ok(b, "note", "Bintje", "Good mash")
    let first = try json(try ok(a, "sync", "--server", server, "--json"))
    #expect(first["pushed"] as? Int == 3 && first["pulled"] as? Int == 0, "\(first)")
    #expect(first["conflicts"] as? Int == 0 && first["rejected"] as? Int == 0, "\(first)")

    // B's import meets A's on the server: one potato per variety, B's later push winning the fields both set
    // (a field B's import left at its default is no change).
    let joined = try counts(try ok(b, "sync", "--server", server))
    #expect(joined["pushed"] == 2 && joined["pulled"] == 3 && joined["rejected"] == 0, "\(joined)")
    #expect((joined["conflicts"] ?? 0) > 0, "\(joined)")
    #expect(try counts(try ok(a, "sync")) == ["pushed": 0, "pulled": 2, "conflicts": 0, "rejected": 0])
    let merged = try ok(a, "list", "--json")
    #expect(try ok(b, "list", "--json") == merged)
    let once = try #require(try JSONSerialization.jsonObject(with: Data(merged.utf8)) as? [[String: Any]])
    #expect(once.count == (try PotatoesFile.varieties().count), "one potato per variety")
    #expect(once.first { $0["variety"] as? String == "Bintje" }?["notes"] as? String == "Waxy\nGood mash")
    #expect(
      once.first { $0["variety"] as? String == "Agria" }?["userRating"] as? Int == 4,
      "B's import left Agria's rating at its default: A's rating stands")

    // Both work offline; both rate Cara (the same attribute), each notes Bintje.
    _ = try ok(a, "rate", "Cara", "5")
    _ = try ok(a, "note", "Agria", "Buttery")
    _ = try ok(b, "rate", "Cara", "1")
    _ = try ok(b, "note", "Bintje", "Crumbly")
    _ = try ok(b, "rate", "Désirée", "3")
    let pending = try json(try ok(b, "sync", "status", "--json"))
    #expect(pending["pending"] as? Int == 3, "\(pending)")

    // The remembered server: no --server from now on. B pushes first; A's later push wins Cara.
    #expect(try ok(b, "sync") == "pushed 3, pulled 0, conflicts 0, rejected 0\n")
    #expect(try ok(a, "sync") == "pushed 2, pulled 3, conflicts 1, rejected 0\n")
    #expect(try ok(b, "sync") == "pushed 0, pulled 2, conflicts 0, rejected 0\n")

    let listed = try ok(a, "list", "--json")
    #expect(try ok(b, "list", "--json") == listed)
    let potatoes = try #require(try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]])
    func potato(_ variety: String) -> [String: Any]? { potatoes.first { $0["variety"] as? String == variety } }
    #expect(potato("Cara")?["userRating"] as? Int == 5)
    #expect(potato("Désirée")?["userRating"] as? Int == 3)
    #expect(potato("Bintje")?["notes"] as? String == "Waxy\nGood mash\nCrumbly")
    #expect(potato("Agria")?["notes"] as? String == "Buttery")
    #expect(potatoes.count == (try PotatoesFile.varieties().count))

    let conflicts = try #require(
      try JSONSerialization.jsonObject(with: Data(try ok(b, "sync", "conflicts", "--json").utf8)) as? [[String: Any]])
    let last = try #require(conflicts.last)
    #expect(conflicts.count == 1 + (joined["conflicts"] ?? 0))
    #expect(last["kind"] as? String == "updateVersusUpdate" && last["field"] as? String == "userRating", "\(last)")
    #expect((last["losingValues"] as? [String: Any])?["userRating"] as? String == "1", "\(last)")
    #expect(last["rule"] as? String == "laterPushWins", "\(last)")
    #expect((last["keptValues"] as? [String: Any])?["userRating"] as? String == "5", "\(last)")

    try expectServerStoreConverged(server, listed: listed)

    for replica in [a, b] {
      let status = try json(try ok(replica, "sync", "status", "--json"))
      #expect(status["connected"] as? Bool == true, "\(status)")
      #expect(status["pending"] as? Int == 0 && status["lag"] as? Int == 0 && status["rejected"] as? Int == 0, "\(status)")
      #expect((status["server"] as? String)?.contains("/cli_") == true, "\(status)")
      #expect(try ok(replica, "sync", "rejected") == "No rejected changes.\n")
    }
  }

  /// The server is an ordinary Strata store: pointed straight at it, the app lists what both replicas
  /// list, `strata info` reads it, and a rating saved on it travels to the replicas like any replica's.
  func expectServerStoreConverged(_ server: String, listed: String) throws {
    let direct = ["--store", "postgres", "--path", server]
    #expect(try ok(direct, "list", "--json") == listed)
    let info = try Executables.run("strata", ["info", server, "--store", "postgres"])
    #expect(info.status == 0 && info.stdout.contains("Potato"), "\(info.stderr)")
    _ = try ok(direct, "rate", "Agria", "2")
    _ = try ok(a, "sync")
    _ = try ok(b, "sync")
    let rerated = try ok(b, "list", "--json")
    let potatoes = try #require(try JSONSerialization.jsonObject(with: Data(rerated.utf8)) as? [[String: Any]])
    #expect(potatoes.first { $0["variety"] as? String == "Agria" }?["userRating"] as? Int == 2, "the server store's rating")
    _ = try ok(a, "sync")
    #expect(try ok(a, "list", "--json") == rerated)
    #expect(try ok(direct, "list", "--json") == rerated)
  }

  /// Bad input: a server URI that is not one, and a schema holding another app's store (FaveFlicks'): each
  /// one line and exit 1, nothing changed on either side (the FaveFlicks store lists the same, and the
  /// schema gets no hub tables); the password never shows.
  @Test func aMalformedURIOrAnotherAppsSchemaIsOneLineAndChangesNothing() throws {
    defer { try? FileManager.default.removeItem(at: directory) }
    _ = try ok(a, "import", "--seed", "3")
    _ = try ok(a, "rate", "Agria", "3")
    let before = try json(try ok(a, "sync", "status", "--json"))

    let malformed = try run(a, "sync", "--server", "potatoes at the server")
    #expect(malformed.status == 1 && malformed.stdout.isEmpty, "\(malformed.stdout) \(malformed.stderr)")
    #expect(malformed.stderr.split(separator: "\n").count == 1 && malformed.stderr.contains("URI"), "\(malformed.stderr)")

    let flicks = try PostgresServer.freshLocation()
    let store = ["--store", "postgres", "--path", flicks]
    let added = try Executables.run(
      "fave-flicks", ["add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15"] + store)
    #expect(added.status == 0, "\(added.stderr)")
    let movies = try Executables.run("fave-flicks", ["list", "--json"] + store)
    let secret = "s3cret-word"
    let withPassword = try #require(
      flicks.hasPrefix("postgresql://") ? "postgresql://postgres:\(secret)@" + flicks.dropFirst("postgresql://".count) : nil)
    for server in [flicks, withPassword] {
      let refused = try run(a, "sync", "--server", server)
      #expect(refused.status == 1 && refused.stdout.isEmpty, "\(refused.stdout) \(refused.stderr)")
      #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
      #expect(refused.stderr.contains("Movie") && refused.stderr.contains("Potato"), "\(refused.stderr)")
      #expect(!refused.stderr.contains(secret), "\(refused.stderr)")
    }
    #expect(try Executables.run("fave-flicks", ["list", "--json"] + store).stdout == movies.stdout)
    let schema = try #require(URLComponents(string: flicks)?.path.split(separator: "/").last.map(String.init))
    let hubTables = try PostgresOperatorCLITests.psql(
      "SELECT count(*) FROM pg_tables WHERE schemaname = '\(schema)' AND tablename LIKE 'strata_mirror%'")
    #expect(hubTables.stdout == "0\n", "\(hubTables.stdout) \(hubTables.stderr)")
    let after = try json(try ok(a, "sync", "status", "--json"))
    #expect(after["server"] is NSNull && after["replica"] is NSNull, "nothing of the mirror was written: \(after)")
    #expect(after["pending"] as? Int == before["pending"] as? Int, "\(after)")
  }

  @Test func anUnreachableServerIsOneLineAndTheStoreIsUnchanged() throws {
    defer { try? FileManager.default.removeItem(at: directory) }
    _ = try ok(a, "import", "--seed", "3")
    _ = try ok(a, "rate", "Agria", "3")
    let before = try ok(a, "list", "--json")
    let statusBefore = try json(try ok(a, "sync", "status", "--json"))
    #expect(statusBefore["server"] is NSNull && statusBefore["connected"] as? Bool == false, "\(statusBefore)")

    let noServer = try run(a, "sync")
    #expect(noServer.status == 64 && noServer.stderr.contains("--server"), "\(noServer.stderr)")

    let down = "postgresql://potato:s3cret-word@127.0.0.1:1/strata/tater"
    let offline = try run(a, "sync", "--server", down)
    #expect(offline.status == 1)
    #expect(offline.stdout.isEmpty)
    #expect(offline.stderr.split(separator: "\n").count == 1, "\(offline.stderr)")
    #expect(offline.stderr.hasPrefix("tater-rater: error: offline: "), "\(offline.stderr)")
    #expect(!offline.stderr.contains("s3cret-word"), "\(offline.stderr)")

    let malformed = try run(a, "sync", "--server", "mysql://potato:s3cret-word@host/db")
    #expect(malformed.status == 1 && malformed.stderr.split(separator: "\n").count == 1, "\(malformed.stderr)")
    #expect(!malformed.stderr.contains("s3cret-word"), "\(malformed.stderr)")

    #expect(try ok(a, "list", "--json") == before)
    let statusAfter = try json(try ok(a, "sync", "status", "--json"))
    #expect(statusAfter["server"] is NSNull, "the unreachable server is not remembered: \(statusAfter)")
    #expect(statusAfter["pending"] as? Int == statusBefore["pending"] as? Int)
    #expect(statusAfter["replica"] is NSNull, "nothing of the mirror was written: \(statusAfter)")
  }

  @Test func aPasswordInTheServerURINeverShows() throws {
    defer { try? FileManager.default.removeItem(at: directory) }
    let location = try PostgresServer.freshLocation()
    // The test server trusts its socket: a password in the URI is accepted and ignored.
    let server = try #require(
      location.hasPrefix("postgresql://")
        ? "postgresql://postgres:s3cret-word@" + location.dropFirst("postgresql://".count) : nil,
      "\(location)")
    _ = try ok(a, "import", "--seed", "5")
    let synced = try run(a, "sync", "--server", server)
    #expect(synced.status == 0, "\(synced.stderr)")
    let outputs = [
      synced, try run(a, "sync", "status"), try run(a, "sync", "status", "--json"), try run(a, "sync", "--json"),
      try run(a, "sync", "conflicts", "--json"), try run(a, "sync", "rejected", "--json"),
    ]
    for output in outputs {
      #expect(output.status == 0, "\(output.stderr)")
      #expect(!(output.stdout + output.stderr).contains("s3cret-word"), "\(output.stdout)\(output.stderr)")
    }
    #expect(outputs[1].stdout.contains("postgres:***@"), "\(outputs[1].stdout)")
  }

  @Test func badRejectedListRequestsAreOneLine() throws {
    defer { try? FileManager.default.removeItem(at: directory) }
    _ = try ok(a, "import", "--seed", "5")
    #expect(try ok(a, "sync", "rejected", "--json") == "[]\n")
    for arguments in [["sync", "rejected", "--discard", "12"], ["sync", "rejected", "--retry", "--discard", "1"]] {
      let refused = try Executables.run("tater-rater", arguments + a)
      #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
      #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
    }
    let retry = try run(a, "sync", "rejected", "--retry")
    #expect(retry.status == 64 && retry.stderr.contains("--server"), "\(retry.stderr)")
  }

  @Test func everySyncCommandHasHelp() throws {
    for command in [["sync"], ["sync", "round"], ["sync", "status"], ["sync", "conflicts"], ["sync", "rejected"]] {
      let help = try Executables.run("tater-rater", command + ["--help"])
      #expect(help.status == 0 && help.stdout.contains("USAGE"), "\(command): \(help.stderr)")
    }
  }
}
