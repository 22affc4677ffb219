import Foundation
import Testing

/// `fireball-watch watch` keeps its resume token under `$XDG_DATA_HOME/fireball-watch/watch-tokens/`,
/// named by the store's identifier, so a second `watch` goes on from where the first stopped on every
/// backend — a PostgreSQL store included, which has no directory to put a file next to (issue 44, item 1).
@Suite("fireball-watch resume tokens")
struct WatchTokenTests {
  /// A fresh data directory (`XDG_DATA_HOME`) for one test.
  static func dataHome() throws -> String {
    let directory = try makeDirectory()
    return directory
  }

  static func freshStore(_ backend: String) throws -> String {
    switch backend {
    case "postgres": try PostgresServer.freshLocation()
    case "lmdb": fireballStore("Resume.lmdb")
    default: fireballStore("Resume.sqlite")
    }
  }

  /// The token files under `home`'s `fireball-watch/watch-tokens`.
  static func tokenFiles(_ home: String) -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: home + "/fireball-watch/watch-tokens"))?.sorted() ?? []
  }

  /// The history lines (`insert fireball …`) a watch printed, without the "Watching" line.
  static func changes(_ result: CommandResult) -> [String] {
    result.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("Watching") }
  }

  @Test(arguments: ["sqlite", "lmdb", "postgres"])
  func aSecondWatchResumesWhereTheFirstStopped(_ backend: String) throws {
    let home = try Self.dataHome()
    let environment = ["XDG_DATA_HOME": home]
    let store = try Self.freshStore(backend)
    let files = FireballWatchHistoryCLITests()
    let (three, _) = try files.snapshotFile(rows: 3)
    let (four, dates) = try files.snapshotFile(rows: 4)
    let run = { (arguments: [String]) in
      try fireballWatchRun(arguments + ["--store", backend, "--path", store], environment: environment)
    }
    #expect(try run(["import", "--file", three.path]).status == 0)
    // The first watch starts from the newest transaction and saves it.
    let first = try run(["watch", "--for", "0.3"])
    #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
    #expect(Self.changes(first).isEmpty, "\(first.stdout)")
    #expect(Self.tokenFiles(home).count == 1, "\(Self.tokenFiles(home))")
    // While no one watches, a fourth fireball arrives; the next watch prints it, and only it.
    #expect(try run(["import", "--file", four.path]).status == 0)
    let second = try run(["watch", "--for", "0.3"])
    #expect(second.status == 0 && second.stderr.isEmpty, "\(second.stderr)")
    let printed = Self.changes(second)
    #expect(printed.count == 1 && printed.first?.hasPrefix("insert fireball \(dates[3]) ") == true, "\(second.stdout)")
    let third = try run(["watch", "--for", "0.3"])
    #expect(third.status == 0 && third.stderr.isEmpty && Self.changes(third).isEmpty, "\(third.stdout)\(third.stderr)")
    #expect(Self.tokenFiles(home).count == 1)
    if backend != "postgres" {
      #expect(!FileManager.default.fileExists(atPath: store + ".watch-token"), "nothing is written next to the store")
    }
  }

  @Test(arguments: ["sqlite", "lmdb"])
  func aTokenFileNextToTheStoreIsReadAndMoved(_ backend: String) throws {
    let home = try Self.dataHome()
    let environment = ["XDG_DATA_HOME": home]
    let store = try Self.freshStore(backend)
    let files = FireballWatchHistoryCLITests()
    let (three, _) = try files.snapshotFile(rows: 3)
    let (four, dates) = try files.snapshotFile(rows: 4)
    let run = { (arguments: [String]) in
      try fireballWatchRun(arguments + ["--store", backend, "--path", store], environment: environment)
    }
    #expect(try run(["import", "--file", three.path]).status == 0)
    #expect(try run(["watch", "--for", "0.3"]).status == 0)
    // The token where earlier versions kept it, next to the store, and none at the new place.
    let saved = try #require(Self.tokenFiles(home).first)
    let legacy = store + ".watch-token"
    try FileManager.default.moveItem(atPath: home + "/fireball-watch/watch-tokens/" + saved, toPath: legacy)
    #expect(try run(["import", "--file", four.path]).status == 0)
    let resumed = try run(["watch", "--for", "0.3"])
    #expect(resumed.status == 0 && resumed.stderr.isEmpty, "\(resumed.stderr)")
    let printed = Self.changes(resumed)
    #expect(printed.count == 1 && printed.first?.hasPrefix("insert fireball \(dates[3]) ") == true, "\(resumed.stdout)")
    #expect(!FileManager.default.fileExists(atPath: legacy), "the old token file is moved")
    #expect(Self.tokenFiles(home) == [saved])
    let again = try run(["watch", "--for", "0.3"])
    #expect(again.stderr.isEmpty && Self.changes(again).isEmpty, "\(again.stdout)\(again.stderr)")
  }

  @Test(arguments: ["sqlite", "postgres"])
  func aCorruptTokenIsAWarningAndAFullRefetch(_ backend: String) throws {
    let home = try Self.dataHome()
    let environment = ["XDG_DATA_HOME": home]
    let store = try Self.freshStore(backend)
    let run = { (arguments: [String]) in
      try fireballWatchRun(arguments + ["--store", backend, "--path", store], environment: environment)
    }
    #expect(try run(["import"]).status == 0)
    #expect(try run(["watch", "--for", "0.3"]).status == 0)
    let saved = try #require(Self.tokenFiles(home).first)
    let path = home + "/fireball-watch/watch-tokens/" + saved
    try Data("garbage".utf8).write(to: URL(fileURLWithPath: path))
    let warned = try run(["watch", "--for", "0.3"])
    #expect(warned.status == 0)
    #expect(warned.stderr.contains("warning: the token file \(path) cannot be read; refetching everything"), "\(warned.stderr)")
    #expect(try run(["watch", "--for", "0.3"]).stderr.isEmpty)
  }

  @Test func aMemoryStoreKeepsNoToken() throws {
    let home = try Self.dataHome()
    let watched = try fireballWatchRun(["watch", "--for", "0.3", "--store", "memory"], environment: ["XDG_DATA_HOME": home])
    #expect(watched.status == 0 && watched.stderr.isEmpty, "\(watched.stderr)")
    #expect(Self.tokenFiles(home).isEmpty, "a store that starts afresh in every process has nothing to resume")
  }
}

/// `fireball-watch` with `arguments` and extra `environment` variables.
func fireballWatchRun(_ arguments: [String], environment: [String: String]) throws -> CommandResult {
  try Executables.run("fireball-watch", arguments, environment: environment)
}
