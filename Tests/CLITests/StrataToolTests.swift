import Foundation
import Testing

private func strata(_ arguments: String...) throws -> CommandResult {
  try Executables.run("strata", arguments)
}

/// A store made by fave-flicks with four movies (accented titles, several genres and dates).
private func movieStore() throws -> String {
  let store = temporaryStore()
  let movies = [
    ("Amélie", "Comédie, Romance", "2001-04-25"),
    ("Heat", "Crime, Drama", "1995-12-15"),
    ("Élite Squad", "Action, Drama", "2007-10-05"),
    ("Zodiac", "Mystery, Thriller", "2007-03-02"),
  ]
  for (title, genre, date) in movies {
    let add = try faveFlicks("add", "--title", title, "--genre", genre, "--release-date", date, "--path", store)
    #expect(add.status == 0, "\(add.stderr)")
  }
  return store
}

private func jsonArray(_ text: String) throws -> [[String: Any]] {
  try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
}

/// The objects without their object IDs (which hold the store's random identifier) and save stamps, as
/// strings.
private func withoutIDs(_ objects: [[String: Any]]) -> [[String: String]] {
  objects.map { object in
    var out: [String: String] = [:]
    for (key, value) in object where key != "objectID" && key != "updatedAt" { out[key] = "\(value)" }
    return out
  }
}

private let amelie = [
  "title": "Amélie", "genre": "Comédie, Romance", "releaseDate": "2001-04-25T00:00:00Z", "titleSearch": "amelie",
  "rating": "0", "poster": "<null>",
]
private let heat = [
  "title": "Heat", "genre": "Crime, Drama", "releaseDate": "1995-12-15T00:00:00Z", "titleSearch": "heat", "rating": "0",
  "poster": "<null>",
]
private let elite = [
  "title": "Élite Squad", "genre": "Action, Drama", "releaseDate": "2007-10-05T00:00:00Z", "titleSearch": "elite squad",
  "rating": "0", "poster": "<null>",
]
private let zodiac = [
  "title": "Zodiac", "genre": "Mystery, Thriller", "releaseDate": "2007-03-02T00:00:00Z", "titleSearch": "zodiac",
  "rating": "0", "poster": "<null>",
]

@Suite("strata tool")
struct StrataToolTests {
  @Test func infoDescribesTheStoredModel() throws {
    let store = try movieStore()
    let text = try strata("info", store)
    #expect(text.status == 0, "\(text.stderr)")
    #expect(text.stdout.contains("Store type:         sqlite"))
    #expect(text.stdout.contains("Model version:      '4' (checksum "), "\(text.stdout)")
    #expect(text.stdout.contains("Movie — 4 rows"))
    for line in [
      "title        string  no", "genre        string  no", "releaseDate  date    no", "updatedAt    date    yes",
      "rating       int16   no\n", "titleSearch  string  no        derived: canonical:(title)",
    ] {
      #expect(text.stdout.contains(line), "\(line)\n\(text.stdout)")
    }

    let json = try strata("info", store, "--json")
    #expect(json.status == 0, "\(json.stderr)")
    let info = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
    #expect(info["storeType"] as? String == "sqlite")
    let identifier = try #require(info["identifier"] as? String)
    #expect(UUID(uuidString: identifier) != nil)
    #expect((info["modelFingerprint"] as? String)?.count == 16)
    #expect(info["modelVersion"] as? String == "4")
    let entities = try #require(info["entities"] as? [[String: Any]])
    #expect(entities.map { $0["name"] as? String } == ["Movie", "Series", "Watch"])
    let movie = try #require(entities.first)
    #expect(movie["name"] as? String == "Movie")
    #expect(movie["count"] as? Int == 4)
    let attributes = try #require(movie["attributes"] as? [[String: Any]])
    #expect(
      attributes.map { "\($0["name"] ?? "") \($0["type"] ?? "")" } == [
        "title string", "genre string", "releaseDate date", "updatedAt date", "rating int16", "titleSearch string",
        "poster data",
      ])
    #expect(attributes.map { $0["isOptional"] as? Bool } == [false, false, false, true, false, false, true])
    #expect(attributes.allSatisfy { $0["isTransient"] as? Bool == false })
    #expect((movie["relationships"] as? [[String: Any]])?.map { $0["name"] as? String } == ["watches"])

    let fetched = try jsonArray(try strata("fetch", store, "--entity", "Movie", "--json").stdout)
    #expect((fetched.first?["objectID"] as? String)?.hasPrefix("strata://\(identifier)/Movie/p") == true)
  }

  @Test func fetchPrintsEveryObjectAsJSON() throws {
    let store = try movieStore()
    let result = try strata("fetch", store, "--entity", "Movie", "--json")
    #expect(result.status == 0, "\(result.stderr)")
    let objects = try jsonArray(result.stdout)
    #expect(withoutIDs(objects) == [amelie, heat, elite, zodiac])
    let ids = objects.map { $0["objectID"] as? String ?? "" }
    #expect(ids.map { $0.hasPrefix("strata://") && $0.contains("/Movie/p") } == [true, true, true, true])
    #expect(Set(ids).count == 4)
    #expect(
      objects.allSatisfy {
        $0.keys.sorted() == ["genre", "objectID", "poster", "rating", "releaseDate", "title", "titleSearch", "updatedAt"]
      })

    let table = try strata("fetch", store, "--entity", "Movie")
    #expect(table.status == 0)
    let lines = table.stdout.split(separator: "\n")
    #expect(lines.count == 6)
    #expect(lines.first?.hasPrefix("objectID") == true)
    #expect(lines.first?.contains("title") == true && lines.first?.contains("releaseDate") == true)
    #expect(table.stdout.contains("Élite Squad"))
    #expect(table.stdout.contains("1995-12-15T00:00:00Z"))
  }

  @Test func fetchFiltersSortsAndPages() throws {
    let store = try movieStore()
    let dramas = try strata("fetch", store, "--entity", "Movie", "--where", "genre CONTAINS[c] 'drama'", "--json")
    #expect(dramas.status == 0, "\(dramas.stderr)")
    #expect(withoutIDs(try jsonArray(dramas.stdout)) == [heat, elite])

    // Code-point order: "É" (U+00C9) sorts after "Z".
    let descending = try strata("fetch", store, "--entity", "Movie", "--sort", "title:desc", "--json")
    #expect(withoutIDs(try jsonArray(descending.stdout)) == [elite, zodiac, heat, amelie])

    let ascending = try strata("fetch", store, "--entity", "Movie", "--sort", "releaseDate", "--json")
    #expect(withoutIDs(try jsonArray(ascending.stdout)) == [heat, amelie, zodiac, elite])

    let twoKeys = try strata(
      "fetch", store, "--entity", "Movie", "--sort", "releaseDate:desc", "--sort", "title", "--limit", "2", "--json")
    #expect(withoutIDs(try jsonArray(twoKeys.stdout)) == [elite, zodiac])

    let page = try strata(
      "fetch", store, "--entity", "Movie", "--sort", "title:desc", "--limit", "2", "--offset", "1", "--json")
    #expect(withoutIDs(try jsonArray(page.stdout)) == [zodiac, heat])

    let count = try strata("fetch", store, "--entity", "Movie", "--count")
    #expect(count.status == 0)
    #expect(count.stdout == "4\n")
    let dramaCount = try strata("fetch", store, "--entity", "Movie", "--where", "genre CONTAINS[c] 'drama'", "--count")
    #expect(dramaCount.stdout == "2\n")

    let none = try strata("fetch", store, "--entity", "Movie", "--where", "title == 'Nope'", "--json")
    #expect(none.status == 0)
    #expect(try jsonArray(none.stdout).isEmpty)
  }

  @Test func badInputGetsOneLineErrorAndLeavesTheStoreAlone() throws {
    let store = try movieStore()
    let before = try faveFlicks("list", "--json", "--path", store)
    #expect(before.status == 0)
    let directory = (store as NSString).deletingLastPathComponent
    let text = directory + "/notes.txt"
    try Data("hello, not a database\n".utf8).write(to: URL(fileURLWithPath: text))
    let missing = directory + "/missing.sqlite"

    let cases: [([String], String)] = [
      (["info", missing], "there is no store at \(missing)"),
      (["fetch", missing, "--entity", "Movie"], "there is no store at \(missing)"),
      (["info", text], "\(text) is not a Strata store: neither an SQLite file nor an LMDB environment"),
      (["info", text, "--store", "sqlite"], "is not a Strata SQLite store"),
      (["fetch", store, "--entity", "Film"], "unknown entity 'Film' (the model has: Movie, Series, Watch)"),
      (["fetch", store, "--entity", "Movie", "--where", "title =="], "expected an expression at position 8"),
      (["fetch", store, "--entity", "Movie", "--where", "year > 3"], "Movie has no attribute or relationship 'year'"),
      (["fetch", store, "--entity", "Movie", "--where", "title > 3"], "Movie.title is a string"),
      (["fetch", store, "--entity", "Movie", "--sort", "year"], "bad --sort 'year'"),
      (["fetch", store, "--entity", "Movie", "--sort", "title:down"], "KEY or KEY:desc"),
      (["fetch", store, "--entity", "Movie", "--limit", "-1"], "--limit must be 0 or more"),
      (["fetch", store, "--entity", "Movie", "--offset", "-2"], "--offset must be 0 or more"),
      (["info", store, "--store", "nope"], "unknown store type 'nope'"),
      (["fetch", store], "Missing expected argument '--entity <entity>'"),
      (["fetch", store, "--entity", "Movie", "--limit", "many"], "The value 'many' is invalid for '--limit <limit>'"),
      (["fetch", store, "--entity", "Movie", "--colour"], "Unknown option '--colour'"),
      (["fetch", store, "--entity", "Movie", "--where", "title MATCHES '('"], "is not a valid regular expression"),
      (["fetch", store, "--entity", "Movie", "--where", "sqrt:(title) > 1"], "sqrt: needs a number"),
    ]
    for (arguments, needle) in cases {
      let result = try Executables.run("strata", arguments)
      #expect(result.status != 0, "\(arguments)")
      #expect(result.stdout.isEmpty, "\(arguments): \(result.stdout)")
      let lines = result.stderr.split(separator: "\n")
      #expect(lines.count == 1, "one line: \(result.stderr)")
      #expect(result.stderr.hasPrefix("strata: error: "), "\(result.stderr)")
      #expect(result.stderr.contains(needle), "\(arguments): \(result.stderr)")
    }
    let usageMistakes: [[String]] = [
      ["fetch", store, "--entity", "Movie", "--limit", "-1"], ["fetch", store, "--entity", "Movie", "--offset", "-2"],
      ["fetch", store, "--entity", "Movie", "--sort", "bogus:desc"],
      ["fetch", store, "--entity", "Movie", "--where", "title =="],
      ["fetch", store, "--entity", "Movie", "--limit", "many"],
    ]
    for arguments in usageMistakes {
      let result = try Executables.run("strata", arguments)
      #expect(result.status == 64, "a bad flag value is a usage error, as in every app: \(arguments): \(result.stderr)")
      #expect(result.stderr.hasSuffix("(see 'strata --help')\n"), "\(result.stderr)")
    }
    #expect(!FileManager.default.fileExists(atPath: missing))
    #expect(try Data(contentsOf: URL(fileURLWithPath: text)) == Data("hello, not a database\n".utf8))
    let after = try faveFlicks("list", "--json", "--path", store)
    #expect(after.stdout == before.stdout)
    #expect(try strata("fetch", store, "--entity", "Movie", "--count").stdout == "4\n")
  }

  @Test(arguments: ["sqlite", "lmdb"])
  func historyListsTransactionsOfAStoreThatKeepsThem(_ backend: String) throws {
    let store = fireballStore(backend == "lmdb" ? "FireballWatch.lmdb" : "FireballWatch.sqlite")
    for name in ["North", "South"] {
      #expect(try fireballWatch("group", "create", name, "--store", backend, "--path", store).status == 0)
    }
    let before = try Data(contentsOf: URL(fileURLWithPath: backend == "lmdb" ? store + "/data.mdb" : store))
    let listed = try strata("history", store, "--store", backend, "--json")
    #expect(listed.status == 0, "\(listed.stderr)")
    let rows = try jsonArray(listed.stdout)
    #expect(rows.map { $0["author"] as? String } == ["FireballWatch", "FireballWatch"])
    #expect(rows.map { $0["inserted"] as? Int } == [1, 1])
    let tokens = rows.compactMap { $0["token"] as? String }
    let after = try strata("history", store, "--store", backend, "--after-token", tokens[0], "--json")
    #expect(try jsonArray(after.stdout).compactMap { $0["token"] as? String } == [tokens[1]])
    let excluded = try strata("history", store, "--store", backend, "--exclude-author", "FireballWatch")
    #expect(excluded.stdout == "No history.\n")
    let after2 = try Data(contentsOf: URL(fileURLWithPath: backend == "lmdb" ? store + "/data.mdb" : store))
    #expect(before == after2, "reading history changes nothing")

    let none = try strata("history", try movieStore())
    #expect(none.status == 1)
    #expect(none.stderr.contains("has no history"), "\(none.stderr)")
    #expect(try strata("history", store, "--store", backend, "--after-token", "nonsense").status == 64)
  }

  @Test func helpExplainsEveryFlag() throws {
    let fetch = try strata("fetch", "--help")
    #expect(fetch.status == 0)
    for flag in ["<path>", "--store", "--entity", "--where", "--sort", "--limit", "--offset", "--count", "--json"] {
      #expect(fetch.stdout.contains(flag), "\(flag)")
    }
    #expect(fetch.stdout.contains("KEY:desc"))
    let info = try strata("info", "--help")
    #expect(info.status == 0)
    for flag in ["<path>", "--store", "--json"] { #expect(info.stdout.contains(flag), "\(flag)") }
    let top = try strata("--help")
    #expect(top.stdout.contains("info") && top.stdout.contains("fetch"))
  }

  @Test func copyMovesEveryObjectToANewStoreOfAnotherBackend() throws {
    let store = try movieStore()
    let watched = try faveFlicks("watched", "--title", "Heat", "--on", "2024-05-01", "--path", store)
    #expect(watched.status == 0, "\(watched.stderr)")
    let lmdb = store + ".lmdb"
    let copy = try strata("copy", store, lmdb, "--to", "lmdb", "--json")
    #expect(copy.status == 0, "\(copy.stderr)")
    let report = try #require(try JSONSerialization.jsonObject(with: Data(copy.stdout.utf8)) as? [String: Any])
    #expect(report["objects"] as? Int == 5 && report["destinationType"] as? String == "lmdb", "\(copy.stdout)")

    let original = try strata("fetch", store, "--entity", "Movie", "--sort", "title", "--json")
    let copied = try strata("fetch", lmdb, "--entity", "Movie", "--sort", "title", "--json")
    #expect(withoutIDs(try jsonArray(copied.stdout)) == withoutIDs(try jsonArray(original.stdout)))
    let list = try faveFlicks("list", "--store", "lmdb", "--path", lmdb)
    #expect(list.stdout.contains("Heat") && list.stdout.contains("  1\n"), "the watch kept its movie: \(list.stdout)")

    let again = try strata("copy", store, lmdb, "--to", "lmdb")
    #expect(again.status == 1 && again.stderr == "strata: error: \(lmdb) already exists: strata copies only into a new store\n")
    let missing = try strata("copy", store + ".none", store + ".x", "--to", "lmdb")
    #expect(missing.status == 1 && missing.stderr.contains("there is no store at"), "\(missing.stderr)")
    #expect(!FileManager.default.fileExists(atPath: store + ".x"), "nothing is created for a failed copy")
    let memory = try strata("copy", store, store + ".m", "--to", "memory")
    #expect(memory.status == 1 && memory.stderr.contains("keeps nothing in a file"), "\(memory.stderr)")
    let unknown = try strata("copy", store, store + ".y", "--to", "paper")
    #expect(unknown.status == 64, "\(unknown.stderr)")
  }

  @Test func explainShowsTheQueryAndThePlanWithoutRunningIt() throws {
    let store = try movieStore()
    let plan = try strata("fetch", store, "--entity", "Movie", "--where", "title BEGINSWITH 'He'", "--sort", "title", "--explain")
    #expect(plan.status == 0, "\(plan.stderr)")
    let lines = plan.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first == "Query:" && lines.contains("Plan:"), "\(plan.stdout)")
    #expect(lines.contains { $0.hasPrefix("  SELECT ") && $0.contains("FROM \"Movie\"") }, "\(plan.stdout)")
    #expect(lines.contains("  bound: 'He', 'Hf'"), "a case-sensitive BEGINSWITH is a range of the column: \(plan.stdout)")
    #expect(lines.contains { $0.contains("SCAN t0") }, "SQLite's own EXPLAIN QUERY PLAN: \(plan.stdout)")
    #expect(!plan.stdout.contains("Heat"), "nothing is fetched")

    let lmdb = store + ".lmdb"
    #expect(try strata("copy", store, lmdb, "--to", "lmdb").status == 0)
    let counted = try strata("fetch", lmdb, "--entity", "Movie", "--count", "--explain", "--json")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(counted.stdout.utf8)) as? [String: Any])
    #expect(object["steps"] as? [String] == ["entry count of Movie's records (mdb_stat)"], "\(counted.stdout)")
  }

  @Test func sqlDebugLogsStatementsOnStandardErrorOnly() throws {
    let store = try movieStore()
    let quiet = try faveFlicks("list", "--path", store, "--json")
    let logged = try faveFlicks("list", "--path", store, "--json", environment: ["STRATA_SQL_DEBUG": "2"])
    #expect(logged.status == 0 && logged.stdout == quiet.stdout, "the output is the same with logging on")
    #expect(quiet.stderr.isEmpty)
    let lines = logged.stderr.split(separator: "\n")
    #expect(
      lines.contains { $0.contains("strata.sqlite") && $0.contains("FROM \"Movie\"") && $0.contains(" ms") }, "\(logged.stderr)")
    #expect(lines.contains { $0.contains("strata.context") && $0.contains("fetched 4 Movie objects") }, "\(logged.stderr)")
    let levelOne = try faveFlicks("list", "--path", store, "--json", environment: ["STRATA_SQL_DEBUG": "1"])
    #expect(!levelOne.stderr.contains(" ms"), "durations and bound values start at level 2: \(levelOne.stderr)")
  }

  /// Every entity's objects as `strata fetch --json` prints them, with the store identifier inside object
  /// IDs replaced (a copy is a new store).
  private func contents(_ store: String) throws -> [String: String] {
    let info = try strata("info", store, "--json")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])
    let entities = try #require(object["entities"] as? [[String: Any]]).compactMap { $0["name"] as? String }
    var contents: [String: String] = [:]
    for entity in entities {
      let fetched = try strata("fetch", store, "--entity", entity, "--json")
      #expect(fetched.status == 0, "\(fetched.stderr)")
      contents[entity] = fetched.stdout.replacingOccurrences(
        of: "strata://[^/]+/", with: "strata://store/", options: .regularExpression)
    }
    return contents
  }

  @Test func everyAppsStoreCopiedToLMDBAndBackReadsTheSame() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "strata-copy-\(UUID().uuidString)").path
    let movies = try movieStore()
    #expect(try faveFlicks("watched", "--title", "Heat", "--on", "2024-05-01", "--path", movies).status == 0)
    let venues = directory + "/venues.sqlite"
    #expect(try Executables.run("bubble-tea-finder", ["seed", "--path", venues]).status == 0)
    #expect(try Executables.run("bubble-tea-finder", ["favorite-all", "--path", venues]).status == 0)
    let potatoes = directory + "/potatoes.sqlite"
    #expect(try Executables.run("tater-rater", ["import", "--seed", "3", "--path", potatoes]).status == 0)
    #expect(try Executables.run("tater-rater", ["note", "--path", potatoes, "Agria", "Floury"]).status == 0)
    let fireballs = directory + "/fireballs.sqlite"
    #expect(try Executables.run("fireball-watch", ["import", "--path", fireballs]).status == 0)
    #expect(try Executables.run("fireball-watch", ["group", "create", "Night", "--path", fireballs]).status == 0)

    for store in [movies, venues, potatoes, fireballs] {
      let original = try contents(store)
      #expect(original.values.contains { $0.count > 2 }, "\(store) holds objects")
      let lmdb = store + ".lmdb"
      let back = store + ".back.sqlite"
      let there = try strata("copy", store, lmdb, "--to", "lmdb")
      let again = try strata("copy", lmdb, back, "--to", "sqlite")
      #expect(there.status == 0 && again.status == 0, "\(there.stderr) \(again.stderr)")
      #expect(try contents(lmdb) == original, "\(store) on LMDB")
      #expect(try contents(back) == original, "\(store) back on SQLite")
      let siblings = try FileManager.default.contentsOfDirectory(atPath: (store as NSString).deletingLastPathComponent)
      #expect(!siblings.contains { $0.contains(".partial-") }, "no staging copy is left: \(siblings)")
    }
  }
}
