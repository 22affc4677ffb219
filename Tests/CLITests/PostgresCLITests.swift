import Foundation
import Testing

/// The test server's URI, from `STRATA_POSTGRES_URI` (`scripts/test` starts a server and sets it).
enum PostgresServer {
  static let variable = "STRATA_POSTGRES_URI"

  struct Missing: Error, CustomStringConvertible {
    var description: String {
      "no PostgreSQL test server: set \(PostgresServer.variable), e.g. `dir=$(mktemp -d); export "
        + "\(PostgresServer.variable)=$(scripts/postgres-server start $dir)`, or run scripts/test, which does both"
    }
  }

  /// A URI naming a fresh schema of the test database; records a failure (never a silent pass) when the
  /// variable is not set.
  static func freshLocation() throws -> String {
    try freshLocation(from: variable)
  }

  /// A fresh schema on the test server reached over TCP (`STRATA_POSTGRES_TCP_URI`, set by scripts/test).
  static func freshTCPLocation() throws -> String {
    try freshLocation(from: "STRATA_POSTGRES_TCP_URI")
  }

  private static func freshLocation(from variable: String) throws -> String {
    guard let base = ProcessInfo.processInfo.environment[variable], !base.isEmpty,
      var components = URLComponents(string: base)
    else {
      Issue.record(Comment(rawValue: Missing().description))
      throw Missing()
    }
    components.path += "/cli_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(24)
    return components.string ?? base
  }
}

@Suite("CLIs on the postgres store")
struct PostgresCLITests {
  @Test func appsWriteAndTheInspectorReadsAStoreOnTheServer() throws {
    let store = try PostgresServer.freshLocation()
    for (title, date) in [("Heat", "1995-12-15"), ("Amélie", "2001-04-25")] {
      let add = try faveFlicks(
        "add", "--title", title, "--genre", "Drama", "--release-date", date, "--store", "postgres", "--path", store)
      #expect(add.status == 0, "\(add.stderr)")
    }
    let list = try faveFlicks("--store", "postgres", "--path", store, "list", "--json")
    #expect(list.status == 0, "\(list.stderr)")
    let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
    #expect(rows.compactMap { $0["title"] as? String } == ["Amélie", "Heat"])

    let info = try Executables.run("strata", ["info", store])
    #expect(info.status == 0, "\(info.stderr)")
    #expect(info.stdout.contains("Store type:         postgres"), "\(info.stdout)")
    #expect(info.stdout.contains("Path:               \(store)"), "\(info.stdout)")
    #expect(info.stdout.contains("Movie — 2 rows"), "\(info.stdout)")
    let explicit = try Executables.run("strata", ["info", "--store", "postgres", store])
    #expect(explicit.stdout == info.stdout)
    let fetched = try Executables.run(
      "strata", ["fetch", store, "--entity", "Movie", "--where", "title BEGINSWITH 'A'", "--json"])
    #expect(fetched.status == 0, "\(fetched.stderr)")
    #expect(fetched.stdout.contains("\"title\" : \"Amélie\"") && !fetched.stdout.contains("Heat"), "\(fetched.stdout)")
    let noHistory = try Executables.run("strata", ["history", store])
    #expect(noHistory.status == 1)
    #expect(noHistory.stderr.contains("never opened with history tracking on"), "\(noHistory.stderr)")

    let fireballs = try PostgresServer.freshLocation()
    let imported = try fireballWatch("import", "--store", "postgres", "--path", fireballs)
    #expect(imported.status == 0, "\(imported.stderr)")
    let history = try Executables.run("strata", ["history", fireballs, "--json"])
    #expect(history.status == 0, "\(history.stderr)")
    let transactions = try #require(try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]])
    #expect(transactions.count == 1)
    #expect(transactions.first?["author"] as? String == "Fireball Data Import", "\(history.stdout)")
  }

  @Test func everyAppRunsOnThePostgresStore() throws {
    let tea = try PostgresServer.freshLocation()
    #expect(try bubbleTeaFinder("seed", "--store", "postgres", "--path", tea).status == 0)
    let favorites = try bubbleTeaFinder("favorite-all", "--store", "postgres", "--path", tea)
    #expect(favorites.status == 0, "\(favorites.stderr)")
    #expect(favorites.stdout.contains("30"), "\(favorites.stdout)")
    let potatoes = try PostgresServer.freshLocation()
    #expect(try taterRater("import", "--seed", "4", "--store", "postgres", "--path", potatoes).status == 0)
    let rated = try taterRater("rate", "Bintje", "3", "--store", "postgres", "--path", potatoes)
    #expect(rated.status == 0, "\(rated.stderr)")
    let shown = try taterRater("show", "Bintje", "--json", "--store", "postgres", "--path", potatoes)
    #expect(shown.stdout.contains("\"userRating\" : 3"), "\(shown.stdout)")
    let fireballs = try PostgresServer.freshLocation()
    #expect(try fireballWatch("import", "--store", "postgres", "--path", fireballs).status == 0)
    let listed = try fireballWatch("list", "--limit", "1", "--store", "postgres", "--path", fireballs)
    #expect(listed.status == 0, "\(listed.stderr)")
    #expect(listed.stdout.contains("2024-02-26 11:21:01"), "\(listed.stdout)")
  }

  @Test func aWatcherSeesWhatAnotherProcessChangesOnTheServer() throws {
    let store = try PostgresServer.freshLocation()
    #expect(try taterRater("import", "--seed", "4", "--store", "postgres", "--path", store).status == 0)
    let watcher = try RunningWatcher(["--for", "120", "--store", "postgres", "--path", store])
    watcher.waitUntilWatching()
    let path = try PotatoesFile.indexPath(of: "Bintje")
    #expect(try taterRater("rate", "Bintje", "3", "--store", "postgres", "--path", store).status == 0)
    let (status, stdout) = watcher.stop { $0.hasPrefix("update \(path) Bintje ★★★") }
    #expect(status == 0)
    #expect(stdout.contains("update \(path) Bintje ★★★\n"), "\(stdout)")
  }

  /// Two "machines": a watcher and a writer that reach the server over TCP on 127.0.0.1, under different
  /// application names, as processes on two hosts would; the watcher prints the writer's change.
  @Test func twoProcessesOverTCPSeeEachOthersChanges() throws {
    let store = try PostgresServer.freshTCPLocation()
    func named(_ application: String) -> String { store + (store.contains("?") ? "&" : "?") + "application_name=" + application }
    #expect(try taterRater("import", "--seed", "5", "--store", "postgres", "--path", named("importer")).status == 0)
    let watcher = try RunningWatcher(["--for", "120", "--store", "postgres", "--path", named("host-a-watch")])
    watcher.waitUntilWatching()
    let path = try PotatoesFile.indexPath(of: "Agria")
    let rate = try taterRater("rate", "Agria", "2", "--store", "postgres", "--path", named("host-b-rate"))
    #expect(rate.status == 0, "\(rate.stderr)")
    let (status, stdout) = watcher.stop { $0.hasPrefix("update \(path) Agria ★★") }
    #expect(status == 0)
    #expect(stdout.contains("update \(path) Agria ★★\n"), "\(stdout)")
  }

  @Test func aMissingServerOrStoreIsOneLine() throws {
    let store = try PostgresServer.freshLocation()
    let down = "postgresql:///strata?host=/nonexistent-\(UUID().uuidString)"
    let app = try faveFlicks("list", "--store", "postgres", "--path", down)
    #expect(app.status == 1)
    #expect(app.stderr.split(separator: "\n").count == 1, "\(app.stderr)")
    #expect(app.stderr.contains("is the server running?") && app.stderr.contains("postgres-server start"), "\(app.stderr)")
    let tool = try Executables.run("strata", ["info", down])
    #expect(tool.status == 1)
    #expect(tool.stderr.contains("is the server running?"), "\(tool.stderr)")
    let missing = try Executables.run("strata", ["fetch", store, "--entity", "Movie"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("there is no store at"), "\(missing.stderr)")
    #expect(missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
    let malformed = try faveFlicks("list", "--store", "postgres", "--path", "not a uri")
    #expect(malformed.status == 1)
    #expect(malformed.stderr.contains("malformed PostgreSQL URI"), "\(malformed.stderr)")
    // strata never creates a store: the schema is still empty.
    let again = try Executables.run("strata", ["info", store])
    #expect(again.stderr.contains("there is no store at"), "\(again.stderr)")
  }

  @Test func strataCopiesAFileStoreIntoANewSchemaOnTheServer() throws {
    let file = temporaryStore()
    for (title, date) in [("Heat", "1995-12-15"), ("Amélie", "2001-04-25"), ("Zodiac", "2007-03-02")] {
      let add = try faveFlicks("add", "--title", title, "--genre", "Drama", "--release-date", date, "--path", file)
      #expect(add.status == 0, "\(add.stderr)")
    }
    let server = try PostgresServer.freshLocation()
    let copy = try Executables.run("strata", ["copy", file, server, "--to", "postgres", "--json"])
    #expect(copy.status == 0, "\(copy.stderr)")
    let report = try #require(try JSONSerialization.jsonObject(with: Data(copy.stdout.utf8)) as? [String: Any])
    #expect(report["objects"] as? Int == 3 && report["destinationType"] as? String == "postgres", "\(copy.stdout)")
    func titles(_ location: String) throws -> [String] {
      let fetched = try Executables.run("strata", ["fetch", location, "--entity", "Movie", "--sort", "title", "--json"])
      #expect(fetched.status == 0, "\(fetched.stderr)")
      let rows = try #require(try JSONSerialization.jsonObject(with: Data(fetched.stdout.utf8)) as? [[String: Any]])
      return rows.map { row in
        row.filter { $0.key != "objectID" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
      }
    }
    #expect(try titles(server) == titles(file))
    let list = try faveFlicks("--store", "postgres", "--path", server, "list", "--json")
    #expect(list.status == 0 && list.stdout.contains("Zodiac"), "\(list.stderr)")

    let again = try Executables.run("strata", ["copy", file, server, "--to", "postgres"])
    #expect(again.status == 1 && again.stderr.contains("already holds a store"), "\(again.stderr)")
    let fresh = try PostgresServer.freshLocation()
    let missing = try Executables.run("strata", ["copy", file + ".none", fresh, "--to", "postgres"])
    #expect(missing.status == 1 && missing.stderr.contains("there is no store at"), "\(missing.stderr)")
    let nothing = try Executables.run("strata", ["info", fresh])
    #expect(nothing.status != 0, "nothing was created at \(fresh): \(nothing.stdout)")
  }
}
