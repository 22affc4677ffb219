import Foundation
import Testing

/// History tokens of another store, given on the command line or left in a watch's token file, are
/// recognised and refused (or reset, with a warning) — never used against the wrong store.
@Suite("history tokens of another store")
struct HistoryTokenTests {
  @Test(arguments: ["sqlite", "lmdb"])
  func aTokenOfAnotherStoreIsRefusedOrResetAndNothingChanges(_ store: String) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let (mine, theirs) = (directory + "/mine." + store, directory + "/theirs." + store)
    for path in [mine, theirs] {
      #expect(try runBounded("fireball-watch", ["import", "--store", store, "--path", path]).status == 0)
    }
    let history = try runBounded("fireball-watch", ["history", "--json", "--store", store, "--path", theirs])
    let rows = try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]]
    let foreign = try #require(rows?.first?["token"] as? String)
    try settle(mine, store)
    let before = try snapshot(directory)

    for (tool, arguments) in [
      ("strata", ["history", mine, "--store", store, "--after-token", foreign]),
      ("fireball-watch", ["history", "--after-token", foreign, "--store", store, "--path", mine]),
      ("fireball-watch", ["history", "prune", "--before", foreign, "--store", store, "--path", mine]),
    ] {
      let result = try runBounded(tool, arguments)
      #expect(result.status == 1, "\(tool) \(arguments): \(result.stderr)")
      #expect(isOneLineError(result.stderr, tool: tool), "\(result.stderr)")
      #expect(result.stderr.contains("another store"), "\(tool) \(arguments): \(result.stderr)")
      #expect(try snapshot(directory) == before, "\(tool) \(arguments) changed nothing")
    }

    // A watch's token file (where earlier versions kept it, next to the store) holding the other store's
    // token: a warning, and the watch starts afresh, keeping this store's token at the new place.
    let tokenFile = URL(fileURLWithPath: mine + ".watch-token")
    let token = #"{"storeIdentifier":"\#(foreign.prefix { $0 != ":" })","sequence":1}"#
    try Data(token.utf8).write(to: tokenFile)
    let home = try makeDirectory()
    let watched = try Executables.run(
      "fireball-watch", ["watch", "--for", "0.3", "--store", store, "--path", mine], environment: ["XDG_DATA_HOME": home])
    #expect(watched.status == 0, "\(watched.stderr)")
    #expect(watched.stderr.contains("belongs to another store"), "\(watched.stderr)")
    #expect(!FileManager.default.fileExists(atPath: tokenFile.path), "the old token file is replaced")
    let saved = try #require(WatchTokenTests.tokenFiles(home).first)
    let rewritten = String(
      decoding: try Data(contentsOf: URL(fileURLWithPath: home + "/fireball-watch/watch-tokens/" + saved)), as: UTF8.self)
    #expect(!rewritten.contains(String(foreign.prefix { $0 != ":" })), "the file holds this store's token: \(rewritten)")
  }
}

/// Brings the fireball store at `path` to rest: a command that reads it and closes it as its last user,
/// which leaves an SQLite store checkpointed (no write-ahead log), so its file alone holds it.
func settle(_ path: String, _ store: String) throws {
  let read = try runBounded("fireball-watch", ["history", "--store", store, "--path", path])
  #expect(read.status == 0, "\(read.stderr)")
}
