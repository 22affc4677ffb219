import Foundation
import Testing

@Suite("A new user's first hour with the CLIs")
struct NewUserCLITests {
  @Test func negativeNumbersGetTheRangeMessageNotAMissingValue() throws {
    let store = temporaryStore()
    _ = try faveFlicks("add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--path", store)
    let tooMany = try faveFlicks("rate", "--title", "Heat", "--stars", "6", "--path", store)
    let negative = try faveFlicks("rate", "--title", "Heat", "--stars", "-1", "--path", store)
    #expect(negative.status == tooMany.status && negative.status != 0, "\(negative.stderr)")
    #expect(!negative.stderr.contains("Missing value"), "\(negative.stderr)")
    #expect(negative.stderr.contains("must be from 0 to 5, not -1"), "\(negative.stderr) beside \(tooMany.stderr)")

    let potatoes = temporaryStore().replacingOccurrences(of: "FaveFlicks", with: "TaterRater")
    #expect(try Executables.run("tater-rater", ["import", "--seed", "1", "--path", potatoes]).status == 0)
    for arguments in [
      ["rate", "Agria", "-1", "--path", potatoes], ["rate", "--path", potatoes, "Agria", "-1"],
      ["rate", "Agria", "-1", "--path=\(potatoes)"],
    ] {
      let result = try Executables.run("tater-rater", arguments)
      #expect(result.status == 1, "\(arguments): \(result.stderr)")
      #expect(result.stderr.contains("must be at least 0 (got -1)"), "\(arguments): \(result.stderr)")
    }
    for (tool, arguments, needle) in [
      ("tater-rater", ["import", "--delay", "-1", "--store", "memory"], "--delay must be from 0"),
      ("tater-rater", ["import", "--seed", "-3", "--store", "memory"], "'-3'"),
      ("fireball-watch", ["list", "--limit", "-1", "--store", "memory"], "--limit must be at least 1"),
      ("strata", ["fetch", store, "--entity", "Movie", "--limit", "-1"], "--limit must be 0 or more"),
    ] {
      let result = try Executables.run(tool, arguments)
      #expect(result.status == 64, "\(tool) \(arguments): \(result.stderr)")
      #expect(result.stderr.contains(needle), "\(tool) \(arguments): \(result.stderr)")
    }
    let lowest = try Executables.run("fireball-watch", ["list", "--min-impact", "-5", "--store", "memory", "--json"])
    #expect(lowest.status == 0, "\(lowest.stderr)")
  }

  @Test func aBadDateNamesItsFlagAndIsAUsageError() throws {
    let store = temporaryStore()
    _ = try faveFlicks("add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--path", store)
    let watched = try faveFlicks("watched", "--title", "Heat", "--on", "2024-02-30", "--path", store)
    #expect(watched.status == 64)
    #expect(watched.stderr.contains("--on date '2024-02-30'") && !watched.stderr.contains("release"), "\(watched.stderr)")
    let added = try faveFlicks("add", "--title", "X", "--genre", "Y", "--release-date", "2023-02-30", "--path", store)
    #expect(added.status == 64 && added.stderr.contains("--release-date date '2023-02-30'"), "\(added.stderr)")
  }

  @Test func notesKeepTheOrderTheyWereTypedIn() throws {
    let potatoes = temporaryStore().replacingOccurrences(of: "FaveFlicks", with: "TaterRater")
    #expect(try Executables.run("tater-rater", ["import", "--seed", "1", "--path", potatoes]).status == 0)
    let noted = try Executables.run("tater-rater", ["note", "Bintje", "zeta first\nalpha second", "--path", potatoes])
    #expect(noted.status == 0, "\(noted.stderr)")
    let shown = try Executables.run("tater-rater", ["show", "Bintje", "--json", "--path", potatoes])
    #expect(shown.stdout.contains(#""notes" : "zeta first\nalpha second""#), "\(shown.stdout)")
  }

  @Test func historyTokensOfAnotherStoreOrAheadOfTheHistorySpeakToAShellUser() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "tokens-\(UUID().uuidString)").path
    let (first, second) = (directory + "/a.sqlite", directory + "/b.sqlite")
    for store in [first, second] {
      #expect(try Executables.run("fireball-watch", ["group", "create", "Night", "--path", store]).status == 0)
    }
    func newestToken(_ store: String) throws -> String {
      let listed = try Executables.run("fireball-watch", ["history", "--json", "--path", store])
      let rows = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]
      return try #require(rows?.last?["token"] as? String)
    }
    let foreign = try newestToken(second)
    let newest = try newestToken(first)
    let sequence = try #require(newest.split(separator: ":").last.flatMap { Int($0) })
    let ahead = newest.split(separator: ":").dropLast().joined(separator: ":") + ":\(sequence + 100)"
    for (tool, arguments) in [
      ("fireball-watch", ["history", "--after-token", foreign, "--path", first]),
      ("strata", ["history", first, "--after-token", foreign]),
    ] {
      let result = try Executables.run(tool, arguments)
      #expect(result.status == 1, "\(tool): \(result.stderr)")
      #expect(result.stderr.contains("belongs to another store"), "\(tool): \(result.stderr)")
      #expect(!result.stderr.contains("currentHistoryToken()"), "\(tool): \(result.stderr)")
    }
    for (tool, arguments) in [
      ("fireball-watch", ["history", "--after-token", ahead, "--path", first]),
      ("strata", ["history", first, "--after-token", ahead]),
    ] {
      let result = try Executables.run(tool, arguments)
      #expect(result.status == 0 && result.stdout == "No history.\n", "\(tool): \(result.stdout)\(result.stderr)")
      #expect(result.stderr.contains("warning: the token \(ahead) is ahead of the store's history"), "\(tool): \(result.stderr)")
    }
  }

  @Test func dateFiltersTakeISO8601() throws {
    let store = FileManager.default.temporaryDirectory.appending(path: "iso-\(UUID().uuidString)/f.sqlite").path
    #expect(try Executables.run("fireball-watch", ["import", "--path", store]).status == 0)
    let seconds = Date(timeIntervalSince1970: 1_704_067_200).timeIntervalSinceReferenceDate
    let numeric = try Executables.run(
      "strata", ["fetch", store, "--entity", "Fireball", "--where", "dateTimeStamp > CAST(\(seconds), 'NSDate')", "--count"])
    let iso = try Executables.run(
      "strata",
      ["fetch", store, "--entity", "Fireball", "--where", "dateTimeStamp > CAST('2024-01-01T00:00:00Z', 'NSDate')", "--count"])
    #expect(iso.status == 0, "\(iso.stderr)")
    #expect(iso.stdout == numeric.stdout && (Int(iso.stdout.dropLast()) ?? 0) > 0, "\(iso.stdout) vs \(numeric.stdout)")
  }

  @Test func tablesAlignWideCharactersAndEmptyListsPrintAsOneLine() throws {
    let store = temporaryStore()
    for (title, genre) in [("日出茶太", "Drama"), ("Heat", "Crime"), ("Südhimmel 🌠", "Doc")] {
      let added = try faveFlicks("add", "--title", title, "--genre", genre, "--release-date", "2001-01-01", "--path", store)
      #expect(added.status == 0, "\(added.stderr)")
    }
    func columns(_ text: Substring) -> Int {
      text.unicodeScalars.reduce(0) { width, scalar in
        width + ((0x4E00...0x9FFF).contains(scalar.value) || scalar.properties.isEmojiPresentation ? 2 : 1)
      }
    }
    let lines = try faveFlicks("list", "--path", store).stdout.split(separator: "\n").filter {
      $0.contains("Drama") || $0.contains("Crime") || $0.contains("Doc")
    }
    let genreColumns = lines.compactMap { line in
      ["Drama", "Crime", "Doc"].lazy.compactMap { line.range(of: $0) }.first.map { columns(line[..<$0.lowerBound]) }
    }
    #expect(genreColumns.count == 3 && Set(genreColumns).count == 1, "\(lines)")

    let empty = temporaryStore()
    let emptyList = try faveFlicks("list", "--json", "--path", empty)
    #expect(emptyList.stdout == "[]\n", "\(emptyList.stdout.debugDescription)")
  }

  @Test func aGroupCanBeRenamedAndDeletedAndItsNameIsOneShortLine() throws {
    let store = FileManager.default.temporaryDirectory.appending(path: "groups-\(UUID().uuidString)/f.sqlite").path
    func watch(_ arguments: String...) throws -> CommandResult {
      try Executables.run("fireball-watch", arguments + ["--path", store])
    }
    #expect(try watch("import").status == 0)
    #expect(try watch("group", "create", "Night").status == 0)
    #expect(try watch("group", "add", "Night", "2024-02-26 11:21:01").status == 0)
    let renamed = try watch("group", "rename", "Night", "Late night")
    #expect(renamed.status == 0 && renamed.stdout == "Renamed group 'Night' to 'Late night'\n", "\(renamed.stderr)")
    let groups = try watch("groups", "--json")
    #expect(groups.stdout.contains("\"Late night\"") && groups.stdout.contains("\"fireballCount\" : 1"), "\(groups.stdout)")
    let deleted = try watch("group", "delete", "Late night")
    #expect(deleted.status == 0, "\(deleted.stderr)")
    #expect(try watch("groups", "--json").stdout == "[]\n")
    #expect(try watch("list", "--limit", "1000", "--json").stdout.contains("2024-02-26T11:21:01"), "its fireballs stay")
    let missing = try watch("group", "delete", "Nothing")
    #expect(missing.status == 1 && missing.stderr.contains("no group is named 'Nothing'"), "\(missing.stderr)")
    for bad in ["two\nlines", String(repeating: "x", count: 100_000)] {
      let result = try watch("group", "create", bad)
      #expect(result.status == 1, "\(result.stderr.prefix(200))")
      #expect(result.stderr.count < 400 && result.stderr.contains("a group name must"), "\(result.stderr.prefix(400))")
    }
    #expect(try watch("groups", "--json").stdout == "[]\n", "nothing was created")
  }

  /// Read commands as a user who may read a store but not write its directory (a root-owned 755 directory
  /// read by `nobody`): they read, and say nothing of creating a store.
  @Test func storesInADirectoryTheUserCannotWriteAreRead() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "unwritable-\(UUID().uuidString)")
    let tools = directory.appending(path: "bin")
    let stores = directory.appending(path: "stores")
    try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(at: stores, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    // Copies of the tools (with the resources beside them) where any user may run them.
    for name in ["strata", "fireball-watch", "Strata_FireballWatch.resources"] {
      try FileManager.default.copyItem(at: Executables.url(name), to: tools.appending(path: name))
    }
    for backend in ["sqlite", "lmdb"] {
      let imported = try Executables.run(
        "fireball-watch", ["import", "--store", backend, "--path", stores.appending(path: "f.\(backend)").path])
      #expect(imported.status == 0, "\(imported.stderr)")
    }
    let asRoot = getuid() == 0
    let readable: [FileAttributeKey: Any] = [.posixPermissions: asRoot ? 0o755 : 0o555]
    for url in [directory, tools, stores] { try FileManager.default.setAttributes(readable, ofItemAtPath: url.path) }
    try FileManager.default.setAttributes(
      [.posixPermissions: asRoot ? 0o755 : 0o555], ofItemAtPath: stores.appending(path: "f.lmdb").path)
    defer {
      for url in [stores, stores.appending(path: "f.lmdb")] {
        try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
      }
    }
    func unprivileged(_ tool: String, _ arguments: [String]) throws -> CommandResult {
      let path = tools.appending(path: tool).path
      return asRoot
        ? try Executables.runTool("runuser", ["-u", "nobody", "--", path] + arguments) : try Executables.runTool(path, arguments)
    }
    for backend in ["sqlite", "lmdb"] {
      let store = stores.appending(path: "f.\(backend)").path
      let before = try FileManager.default.contentsOfDirectory(atPath: stores.path).sorted()
      let info = try unprivileged("strata", ["info", store])
      #expect(info.status == 0 && info.stdout.contains("Fireball"), "\(backend): \(info.stderr)")
      let count = try unprivileged("strata", ["fetch", store, "--entity", "Fireball", "--count"])
      #expect(count.status == 0 && count.stdout == "973\n", "\(backend): \(count.stdout)\(count.stderr)")
      let list = try unprivileged("fireball-watch", ["list", "--limit", "2", "--store", backend, "--path", store])
      #expect(list.status == 0, "\(backend): \(list.stderr)")
      #expect(!list.stderr.contains("cannot create"), "\(list.stderr)")
      let write = try unprivileged("fireball-watch", ["group", "create", "Night", "--store", backend, "--path", store])
      #expect(write.status == 1 && write.stderr.contains("cannot write"), "\(backend): \(write.stderr)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: stores.path).sorted() == before)
    }
  }
}
