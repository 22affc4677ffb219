import Foundation
import Testing

struct CommandResult {
  var status: Int32
  var stdout: String
  var stderr: String
}

enum Executables {
  /// Programs of the test targets (not the apps'), always taken from the build that made this test bundle.
  static let testPrograms: Set<String> = ["library-hour"]

  /// The built program `name`. `STRATA_APP_BIN_PATH` names another build's folder to take the apps' CLIs
  /// from: `scripts/sanitize` runs these tests against the plain debug CLIs (docs/SANITIZERS.md).
  static func url(_ name: String) -> URL {
    if !testPrograms.contains(name), let folder = ProcessInfo.processInfo.environment["STRATA_APP_BIN_PATH"] {
      return URL(fileURLWithPath: folder).appending(path: name)
    }
    let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    var directory = here
    for _ in 0..<4 {
      let candidate = directory.appending(path: name)
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
      directory = directory.deletingLastPathComponent()
    }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appending(path: ".build/debug/\(name)")
  }

  static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    try run(url(name), arguments, environment: environment)
  }

  /// Runs a program found on `PATH` (psql, runuser, say).
  static func runTool(_ name: String, _ arguments: [String]) throws -> CommandResult {
    try run(URL(fileURLWithPath: "/usr/bin/env"), [name] + arguments)
  }

  static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(
      status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
      stderr: String(decoding: errData, as: UTF8.self))
  }
}

func temporaryStore() -> String {
  FileManager.default.temporaryDirectory.appending(path: "fave-flicks-cli-\(UUID().uuidString)/FaveFlicks.sqlite").path
}

func faveFlicks(_ arguments: String..., environment: [String: String] = [:]) throws -> CommandResult {
  try Executables.run("fave-flicks", arguments, environment: environment)
}

@Suite("fave-flicks CLI")
struct FaveFlicksCLITests {
  @Test func whatOneProcessAddsTheNextLists() throws {
    let store = temporaryStore()
    let add = try faveFlicks("add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--path", store)
    #expect(add.status == 0, "\(add.stderr)")
    let add2 = try faveFlicks("add", "--title", "Amélie", "--genre", "Comédie", "--release-date", "2001-04-25", "--path", store)
    #expect(add2.status == 0)
    let list = try faveFlicks("list", "--json", "--path", store)
    #expect(list.status == 0)
    let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
    #expect(
      rows.map { $0.filter { $0.key != "updatedAt" }.mapValues { "\($0)" } } == [
        ["title": "Amélie", "genre": "Comédie", "releaseDate": "2001-04-25", "rating": "0", "watches": "0"],
        ["title": "Heat", "genre": "Crime", "releaseDate": "1995-12-15", "rating": "0", "watches": "0"],
      ])
    let stamps = try rows.map { try Date($0["updatedAt"] as? String ?? "", strategy: .iso8601) }
    #expect(stamps.allSatisfy { abs($0.timeIntervalSinceNow) < 600 }, "\(stamps)")
    #expect(stamps[0] >= stamps[1], "Amélie was added after Heat")
    let searched = try faveFlicks("list", "--search", "AMELIE", "--json", "--path", store)
    #expect(searched.status == 0, "\(searched.stderr)")
    #expect(searched.stdout.contains("Amélie") && !searched.stdout.contains("Heat"))
    let filtered = try faveFlicks("list", "--genre-contains", "comedie", "--path", store)
    #expect(filtered.stdout.contains("Amélie"))
    #expect(!filtered.stdout.contains("Heat"))

    let delete = try faveFlicks("delete", "--title", "Heat", "--path", store)
    #expect(delete.status == 0)
    let after = try faveFlicks("list", "--json", "--path", store)
    #expect(!after.stdout.contains("Heat"))
  }

  @Test func anEmptyTitleIsOneLineNamingTheKey() throws {
    let store = temporaryStore()
    let add = try faveFlicks("add", "--title", "  ", "--genre", "Crime", "--release-date", "1995-12-15", "--path", store)
    #expect(add.status != 0)
    #expect(add.stderr.split(separator: "\n").count == 1)
    #expect(add.stderr.contains("Movie.title"), "\(add.stderr)")
    #expect(try faveFlicks("list", "--path", store).stdout == "No movies.\n")
  }

  @Test func memoryStoreStartsFromThePreview() throws {
    let list = try faveFlicks("list", "--store", "memory", "--json")
    #expect(list.status == 0)
    let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
    #expect(rows.map { $0["title"] as? String ?? "" } == ["Kung Pow: Enter the Fist", "Sharknado", "The Room"])
  }

  @Test func defaultPathFollowsXDGDataHome() throws {
    let home = FileManager.default.temporaryDirectory.appending(path: "xdg-\(UUID().uuidString)").path
    let add = try faveFlicks(
      "add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", environment: ["XDG_DATA_HOME": home])
    #expect(add.status == 0, "\(add.stderr)")
    #expect(FileManager.default.fileExists(atPath: home + "/fave-flicks/FaveFlicks.sqlite"))
  }

  @Test func badInputGetsOneLineErrorAndLeavesTheStoreAlone() throws {
    let store = temporaryStore()
    _ = try faveFlicks("add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--path", store)

    let cases: [([String], String)] = [
      (["list", "--store", "nope", "--path", store], "unknown store type 'nope'"),
      (["add", "--title", "X", "--genre", "Y", "--release-date", "2023-02-30", "--path", store], "2023-02-30"),
      (["add", "--title", " ", "--genre", "Y", "--release-date", "2023-02-03", "--path", store], "title"),
      (["delete", "--title", "Missing", "--path", store], "Missing"),
    ]
    for (arguments, needle) in cases {
      let result = try Executables.run("fave-flicks", arguments)
      #expect(result.status != 0, "\(arguments)")
      let lines = result.stderr.split(separator: "\n")
      #expect(lines.count == 1, "one line: \(result.stderr)")
      #expect(result.stderr.contains(needle), "\(result.stderr)")
    }
    let list = try faveFlicks("list", "--json", "--path", store)
    #expect(list.stdout.contains("Heat"))
    #expect(!list.stdout.contains("\"X\""))
  }

  @Test func aFileThatIsNotAStrataStoreIsRefusedAndUntouched() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "not-a-store-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let text = directory.appending(path: "notes.txt")
    try Data("hello, not a database\n".utf8).write(to: text)
    let result = try faveFlicks("list", "--path", text.path)
    #expect(result.status != 0)
    #expect(result.stderr.contains("not a Strata"), "\(result.stderr)")
    #expect(try Data(contentsOf: text) == Data("hello, not a database\n".utf8))

    let result2 = try faveFlicks("list", "--path", directory.path)
    #expect(result2.status != 0)
    #expect(result2.stderr.split(separator: "\n").count == 1, "\(result2.stderr)")
  }

  @Test func helpExplainsTheFlags() throws {
    let help = try faveFlicks("add", "--help")
    #expect(help.status == 0)
    for flag in ["--store", "--path", "--title", "--genre", "--release-date"] {
      #expect(help.stdout.contains(flag), "\(flag)")
    }
  }

  @Test func rateWatchAndMigrateFromTheCommandLine() throws {
    let store = temporaryStore()
    _ = try faveFlicks("add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--path", store)
    let rate = try faveFlicks("rate", "--title", "Heat", "--stars", "4", "--path", store)
    #expect(rate.status == 0 && rate.stdout == "Rated 1 movie titled Heat: 4 stars\n", "\(rate.stdout) \(rate.stderr)")
    let watched = try faveFlicks("watched", "--title", "Heat", "--on", "2024-05-01", "--path", store)
    #expect(watched.stdout == "Watched Heat on 2024-05-01 (1 time)\n", "\(watched.stderr)")
    let list = try faveFlicks("list", "--path", store)
    #expect(list.stdout.contains("Heat   Crime  1995-12-15  ****    1"), "\(list.stdout)")

    let tooMany = try faveFlicks("rate", "--title", "Heat", "--stars", "9", "--path", store)
    #expect(tooMany.status == 64 && tooMany.stderr.contains("--stars must be from 0 to 5, not 9"), "\(tooMany.stderr)")
    let unknown = try faveFlicks("watched", "--title", "Thief", "--path", store)
    #expect(unknown.status == 1 && unknown.stderr == "fave-flicks: error: no movie is titled 'Thief'\n", "\(unknown.stderr)")
    let current = try faveFlicks("migrate", "--dry-run", "--path", store)
    #expect(
      current.status == 0 && current.stdout == "\(store) has this version's model: nothing to migrate.\n", "\(current.stdout)")
  }
}

@Suite("fave-flicks series")
struct FaveFlicksSeriesCLITests {
  @Test func aSeriesIsAddedListedAndShownByStrata() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "faveflicks-series-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = directory.appending(path: "Movies.sqlite").path
    let film = try Executables.run(
      "fave-flicks", ["add", "--path", store, "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15"])
    #expect(film.status == 0, "\(film.stderr)")
    let series = try Executables.run(
      "fave-flicks",
      ["add", "--path", store, "--title", "The Wire", "--genre", "Crime", "--release-date", "2002-06-02", "--seasons", "5"])
    #expect(series.status == 0, "\(series.stderr)")
    #expect(series.stdout == "Added The Wire (Crime, 2002-06-02, a series of 5 seasons)\n")
    let listed = try Executables.run("fave-flicks", ["list", "--path", store, "--json"])
    let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
    #expect(rows.map { $0["title"] as? String } == ["Heat", "The Wire"])
    #expect(rows.map { $0["seasons"] as? Int } == [nil, 5])
    let fetched = try Executables.run("strata", ["fetch", store, "--entity", "Series", "--json"])
    #expect(fetched.status == 0, "\(fetched.stderr)")
    #expect(fetched.stdout.contains("The Wire") && !fetched.stdout.contains("Heat"), "\(fetched.stdout)")
    let bad = try Executables.run(
      "fave-flicks",
      ["add", "--path", store, "--title", "Nothing", "--genre", "None", "--release-date", "2000-01-01", "--seasons", "0"])
    #expect(bad.status != 0)
    #expect(bad.stderr.split(separator: "\n").count == 1, "\(bad.stderr)")
  }
}
