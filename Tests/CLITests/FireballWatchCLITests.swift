import Foundation
import Synchronization
import Testing

func fireballStore(_ name: String = "FireballWatch.sqlite") -> String {
  FileManager.default.temporaryDirectory.appending(path: "fireball-watch-cli-\(UUID().uuidString)/\(name)").path
}

func fireballWatch(_ arguments: String..., environment: [String: String] = [:]) throws -> CommandResult {
  try Executables.run("fireball-watch", arguments, environment: environment)
}

enum FireballSnapshot {
  static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "Modules/FireballWatch/Resources/fireball-api-default-2024-03-21.json")

  static func object() throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
  }

  /// The rows as field name → value, newest first.
  static func rows() throws -> [[String: Any]] {
    let object = try object()
    let fields = try #require(object["fields"] as? [String])
    let data = try #require(object["data"] as? [[Any]])
    return data.map { Dictionary(uniqueKeysWithValues: zip(fields, $0)) }
      .sorted { ($0["date"] as? String ?? "") > ($1["date"] as? String ?? "") }
  }

  static func iso(_ jplDate: String) -> String { jplDate.replacingOccurrences(of: " ", with: "T") + "Z" }
}

@Suite("fireball-watch CLI")
struct FireballWatchCLITests {
  @Test func importReimportAndListAcrossProcesses() throws {
    let store = fireballStore()
    let rows = try FireballSnapshot.rows()
    #expect(try fireballWatch("list", "--path", store).stdout == "No fireballs.\n")
    let imported = try fireballWatch("import", "--path", store)
    #expect(imported.status == 0, "\(imported.stderr)")
    #expect(imported.stdout == "Imported \(rows.count) fireballs: \(rows.count) inserted, 0 updated, 0 unchanged\n")
    #expect(imported.stderr.isEmpty, "no progress bar off a terminal")
    let again = try fireballWatch("import", "--json", "--path", store)
    let summary = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Int])
    #expect(summary == ["inserted": 0, "updated": 0, "unchanged": rows.count])

    let list = try fireballWatch("list", "--json", "--path", store)
    #expect(list.status == 0, "\(list.stderr)")
    let listed = try jsonRows(list)
    #expect(listed.count == rows.count)
    let keys: Set = ["dateTimeStamp", "radiatedEnergy", "impactEnergy", "latitude", "longitude", "altitude", "velocity"]
    #expect(listed.allSatisfy { Set($0.keys) == keys })
    #expect(
      listed.compactMap { $0["dateTimeStamp"] as? String } == rows.map { FireballSnapshot.iso($0["date"] as? String ?? "") })
    for (object, row) in zip(listed, rows) {
      #expect((object["velocity"] is NSNull) == (row["vel"] is NSNull), "\(row)")
      #expect((object["altitude"] is NSNull) == (row["alt"] is NSNull), "\(row)")
      if let lat = row["lat"] as? String, let value = Double(lat) {
        #expect(object["latitude"] as? Double == (row["lat-dir"] as? String == "S" ? -value : value))
      } else {
        #expect(object["latitude"] is NSNull)
      }
      if let lon = row["lon"] as? String, let value = Double(lon) {
        #expect(object["longitude"] as? Double == (row["lon-dir"] as? String == "W" ? -value : value))
      }
      #expect(object["impactEnergy"] as? Double == (row["impact-e"] as? String).flatMap(Double.init))
    }
    #expect(list.stdout.contains("\"velocity\" : null"))

    let strongest = try fireballWatch("list", "--sort", "impact", "--limit", "3", "--min-impact", "2", "--json", "--path", store)
    let impacts = rows.compactMap { ($0["impact-e"] as? String).flatMap(Double.init) }.filter { $0 >= 2 }.sorted(by: >)
    #expect(try jsonRows(strongest).compactMap { $0["impactEnergy"] as? Double } == Array(impacts.prefix(3)))

    let table = try fireballWatch("list", "--limit", "2", "--path", store)
    let lines = table.stdout.split(separator: "\n")
    #expect(lines.count == 4 && lines.first?.hasPrefix("Date (UTC)") == true)
    #expect(lines[2].hasPrefix(rows[0]["date"] as? String ?? "?"))
  }

  @Test func deleteAndGroupsCountTheirFireballs() throws {
    let store = fireballStore()
    let dates = try FireballSnapshot.rows().prefix(3).compactMap { $0["date"] as? String }
    _ = try fireballWatch("import", "--path", store)
    #expect(try fireballWatch("groups", "--path", store).stdout == "No groups.\n")
    let create = try fireballWatch("group", "create", "Recent", "--path", store)
    #expect(create.status == 0 && create.stdout == "Created group 'Recent'\n", "\(create.stderr)")
    let add = try fireballWatch("group", "add", "Recent", dates[0], dates[1], dates[2], "--path", store)
    #expect(add.stdout == "Group 'Recent' holds 3 fireballs\n", "\(add.stderr)")
    #expect(
      try fireballWatch("group", "remove", "Recent", dates[2], "--path", store).stdout == "Group 'Recent' holds 2 fireballs\n")
    let delete = try fireballWatch("delete", dates[0], "--path", store)
    #expect(delete.status == 0 && delete.stdout == "Deleted the fireball of \(dates[0])\n", "\(delete.stderr)")
    let groups = try jsonRows(try fireballWatch("groups", "--json", "--path", store))
    #expect(groups.count == 1 && groups[0]["name"] as? String == "Recent" && groups[0]["fireballCount"] as? Int == 1)
    let list = try jsonRows(try fireballWatch("list", "--json", "--path", store))
    #expect(!list.contains { $0["dateTimeStamp"] as? String == FireballSnapshot.iso(dates[0]) })
    #expect(try fireballWatch("groups", "--path", store).stdout.contains("Recent"))
  }

  @Test func errorsAreOneLineAndChangeNothing() throws {
    let store = fireballStore()
    _ = try fireballWatch("import", "--path", store)
    _ = try fireballWatch("group", "create", "Recent", "--path", store)
    let date = try #require(try FireballSnapshot.rows().first?["date"] as? String)
    let before = try fireballWatch("list", "--json", "--path", store).stdout
    let groupsBefore = try fireballWatch("groups", "--json", "--path", store).stdout
    let cases: [([String], Int32, String)] = [
      (["delete", "2001-01-01 00:00:00"], 1, "no fireball was seen at 2001-01-01 00:00:00"),
      (["delete", "2001-02-30 00:00:00"], 64, "'2001-02-30 00:00:00'"),
      (["group", "create", "Recent"], 1, "a group named 'Recent' exists already"),
      (["group", "add", "Nope", date], 1, "no group is named 'Nope'"),
      (["group", "add", "Recent", date, "2001-01-01 00:00:00"], 1, "2001-01-01 00:00:00"),
      (["group", "remove", "Recent", "yesterday"], 64, "'yesterday'"),
      (["group", "add", "Recent"], 64, "<date>"),
      (["import", "--file", "/nonexistent/f.json"], 1, "/nonexistent/f.json: cannot be read"),
      (["import", "--file", "x.json", "--url", "https://example.com"], 64, "not both"),
      (["import", "--url", "ftp://example.com/f.json"], 64, "--url"),
      (["import", "--url", "http://ssd-api.jpl.nasa.gov/fireball.api"], 64, "is not an https address"),
      (["import", "--url", "https://127.0.0.1:1/fireball.api"], 1, "https://127.0.0.1:1/fireball.api: cannot be read"),
      (["list", "--sort", "size"], 64, "'size'"),
      (["list", "--store", "nope"], 64, "unknown store type 'nope'"),
    ]
    for (arguments, status, needle) in cases {
      let result = try Executables.run("fireball-watch", arguments + ["--path", store])
      #expect(result.status == status, "\(arguments): \(result.stderr)")
      #expect(result.stdout.isEmpty, "\(arguments)")
      #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
      #expect(result.stderr.hasPrefix("fireball-watch: error: "), "\(result.stderr)")
      #expect(result.stderr.contains(needle), "\(arguments): \(result.stderr)")
    }
    #expect(try fireballWatch("list", "--json", "--path", store).stdout == before)
    #expect(try fireballWatch("groups", "--json", "--path", store).stdout == groupsBefore)
  }

  @Test func aBadFileImportsNothingAndNamesTheRow() throws {
    let store = fireballStore()
    var object = try FireballSnapshot.object()
    var data = try #require(object["data"] as? [[Any]])
    data[41][4] = "Q"
    object["data"] = data
    let file = FileManager.default.temporaryDirectory.appending(path: "bad-\(UUID().uuidString).json")
    try JSONSerialization.data(withJSONObject: object).write(to: file)
    let result = try fireballWatch("import", "--file", file.path, "--path", store)
    #expect(result.status == 1)
    #expect(
      result.stderr
        == "fireball-watch: error: \(file.path): row 42 (\(data[41][0] as? String ?? "?")): lat-dir 'Q' is not N or S\n")
    #expect(try fireballWatch("list", "--path", store).stdout == "No fireballs.\n")

    let truncated = FileManager.default.temporaryDirectory.appending(path: "truncated-\(UUID().uuidString).json")
    try Data(contentsOf: FireballSnapshot.url).prefix(5000).write(to: truncated)
    let cut = try fireballWatch("import", "--file", truncated.path, "--path", store)
    #expect(cut.status == 1 && cut.stderr.contains("not valid JSON"), "\(cut.stderr)")
    #expect(try fireballWatch("list", "--path", store).stdout == "No fireballs.\n")
  }

  @Test func lmdbAndMemoryStoresWork() throws {
    let store = fireballStore("FireballWatch.lmdb")
    let count = try FireballSnapshot.rows().count
    let imported = try fireballWatch("import", "--store", "lmdb", "--path", store)
    #expect(imported.status == 0, "\(imported.stderr)")
    #expect(imported.stdout.hasPrefix("Imported \(count) fireballs: \(count) inserted"))
    #expect(
      try fireballWatch("import", "--store", "lmdb", "--path", store).stdout.contains(
        ": 0 inserted, 0 updated, \(count) unchanged"))
    #expect(try jsonRows(try fireballWatch("list", "--json", "--store", "lmdb", "--path", store)).count == count)
    _ = try fireballWatch("group", "create", "G", "--store", "lmdb", "--path", store)
    let date = try #require(try FireballSnapshot.rows().first?["date"] as? String)
    #expect(
      try fireballWatch("group", "add", "G", date, "--store", "lmdb", "--path", store).stdout == "Group 'G' holds 1 fireball\n")
    #expect(try fireballWatch("delete", date, "--store", "lmdb", "--path", store).status == 0)
    let groups = try jsonRows(try fireballWatch("groups", "--json", "--store", "lmdb", "--path", store))
    #expect(groups.count == 1 && groups.first?["fireballCount"] as? Int == 0)
    #expect(try jsonRows(try fireballWatch("list", "--json", "--store", "lmdb", "--path", store)).count == count - 1)

    let memory = try fireballWatch("groups", "--store", "memory", "--json")
    #expect(memory.status == 0, "\(memory.stderr)")
    #expect(try jsonRows(memory).count == 2, "the preview's two groups")
  }

  @Test func defaultPathFollowsXDGDataHomeAndHelpExplainsTheFlags() throws {
    let home = FileManager.default.temporaryDirectory.appending(path: "xdg-\(UUID().uuidString)").path
    let created = try fireballWatch("group", "create", "G", environment: ["XDG_DATA_HOME": home])
    #expect(created.status == 0, "\(created.stderr)")
    #expect(FileManager.default.fileExists(atPath: home + "/fireball-watch/FireballWatch.sqlite"))

    let top = try fireballWatch("--help")
    for command in ["import", "list", "delete", "group", "groups"] { #expect(top.stdout.contains(command), "\(command)") }
    let expectations: [([String], [String])] = [
      (["import"], ["--store", "--path", "--file", "--url", "--json"]),
      (["list"], ["--limit", "--min-impact", "--sort", "--json", "--store"]), (["delete"], ["<date>", "--path"]),
      (["group"], ["create", "add", "remove"]), (["group", "add"], ["<name>", "<date>", "--store"]),
      (["group", "create"], ["<name>"]), (["group", "remove"], ["<date>"]), (["groups"], ["--json", "--store"]),
    ]
    for (command, flags) in expectations {
      let help = try Executables.run("fireball-watch", command + ["--help"])
      #expect(help.status == 0)
      for flag in flags { #expect(help.stdout.contains(flag), "\(command) \(flag)") }
    }
  }
}

@Suite("fireball-watch history and watch")
struct FireballWatchHistoryCLITests {
  /// The first `count` rows of the shipped snapshot, as a JPL file of their own.
  func snapshotFile(rows count: Int) throws -> (url: URL, dates: [String]) {
    var object = try FireballSnapshot.object()
    let data = try #require(object["data"] as? [[Any]])
    object["data"] = Array(data.prefix(count))
    object["count"] = String(count)
    let url = FileManager.default.temporaryDirectory.appending(path: "fireballs-\(UUID().uuidString).json")
    try JSONSerialization.data(withJSONObject: object).write(to: url)
    return (url, data.prefix(count).compactMap { $0.first as? String })
  }

  @Test(arguments: ["sqlite", "lmdb"])
  func aWatchInOneProcessPrintsWhatAnotherImports(_ backend: String) throws {
    let store = fireballStore(backend == "lmdb" ? "FireballWatch.lmdb" : "FireballWatch.sqlite")
    #expect(try fireballWatch("group", "create", "Later", "--store", backend, "--path", store).status == 0)
    let watcher = try RunningWatcher(["--for", "120", "--store", backend, "--path", store], tool: "fireball-watch")
    watcher.waitUntilWatching()
    let (file, dates) = try snapshotFile(rows: 3)
    let imported = try fireballWatch("import", "--file", file.path, "--store", backend, "--path", store)
    #expect(imported.status == 0, "\(imported.stderr)")
    let grouped = try fireballWatch("group", "add", "Later", dates[0], "--store", backend, "--path", store)
    #expect(grouped.status == 0, "\(grouped.stderr)")
    // One more row imported after the group edit: once the watcher prints it, it has passed the edit.
    let (longer, allDates) = try snapshotFile(rows: 4)
    #expect(try fireballWatch("import", "--file", longer.path, "--store", backend, "--path", store).status == 0)
    let (status, output) = watcher.stop { $0.hasPrefix("insert fireball \(allDates[3]) ") }
    #expect(status == 0)
    let lines = output.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("Watching") }
    #expect(lines.count == allDates.count, "the group edit is FireballWatch's own and skipped: \(output)")
    for date in allDates { #expect(lines.contains { $0.hasPrefix("insert fireball \(date) impact ") }, "\(output)") }

    // A second watch goes on from the saved token: nothing old again.
    let again = try fireballWatch("watch", "--for", "0.5", "--store", backend, "--path", store)
    #expect(again.status == 0)
    #expect(again.stdout == "Watching for changes… (Ctrl-C stops)\n")
    #expect(again.stderr.isEmpty, "\(again.stderr)")
  }

  @Test func watchJSONHasTheValueTypesOfListJSON() throws {
    let store = fireballStore()
    #expect(try fireballWatch("group", "create", "Later", "--path", store).status == 0)
    let watcher = try RunningWatcher(["--for", "120", "--json", "--path", store], tool: "fireball-watch")
    // --json prints no "Watching" line: import one more row at a time until the watcher reports one.
    var last = ""
    for rows in 1...8 {
      let (file, dates) = try snapshotFile(rows: rows)
      #expect(try fireballWatch("import", "--file", file.path, "--path", store).status == 0)
      last = dates[rows - 1].replacingOccurrences(of: " ", with: "T")
      if watcher.waitFor(timeout: 3, { $0.contains(last) }) { break }
    }
    let (status, output) = watcher.stop { $0.contains(last) }
    #expect(status == 0)
    let changes = output.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
    let listed = try jsonRows(try fireballWatch("list", "--json", "--path", store))
    #expect(!changes.isEmpty, "\(output)")
    for change in changes {
      let date = try #require(change["dateTimeStamp"] as? String)
      let row = try #require(listed.first { $0["dateTimeStamp"] as? String == date })
      #expect(change["impactEnergy"] is NSNumber, "a number, as in list --json: \(change)")
      #expect((change["impactEnergy"] as? Double) == (row["impactEnergy"] as? Double), "\(change) vs \(row)")
    }
  }

  @Test func historyListsAndPrunes() throws {
    let store = fireballStore()
    let (file, _) = try snapshotFile(rows: 2)
    #expect(try fireballWatch("import", "--file", file.path, "--path", store).status == 0)
    #expect(try fireballWatch("group", "create", "Mine", "--path", store).status == 0)
    let shown = try fireballWatch("history", "--json", "--path", store)
    #expect(shown.status == 0, "\(shown.stderr)")
    let entries = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [[String: Any]])
    #expect(entries.map { $0["author"] as? String } == ["Fireball Data Import", "FireballWatch"])
    #expect(entries.map { $0["inserted"] as? Int } == [2, 1])
    let keys: Set = ["token", "timestamp", "author", "contextName", "processID", "inserted", "updated", "deleted"]
    #expect(entries.allSatisfy { Set($0.keys) == keys })
    let tokens = entries.compactMap { $0["token"] as? String }
    let excluded = try fireballWatch("history", "--exclude-author", "FireballWatch", "--json", "--path", store)
    #expect(try jsonRows(excluded).compactMap { $0["token"] as? String } == [tokens[0]])
    let after = try fireballWatch("history", "--after-token", tokens[0], "--json", "--path", store)
    #expect(try jsonRows(after).compactMap { $0["token"] as? String } == [tokens[1]])

    let table = try fireballWatch("history", "--path", store)
    let stamps = entries.compactMap { $0["timestamp"] as? String }
    let rows = table.stdout.split(separator: "\n").dropFirst(2).map { $0.split(separator: " ").map(String.init) }
    #expect(rows.map { Array($0.prefix(2)) } == zip(tokens, stamps).map { [$0, $1] }, "the table's times are the JSON's")
    #expect(table.stdout.split(separator: "\n").first?.contains("PID") == true, "\(table.stdout)")
    let jplForm = String(stamps[0].replacingOccurrences(of: "T", with: " ").dropLast())
    let nothingBefore = try fireballWatch("history", "prune", "--before", jplForm, "--path", store)
    #expect(nothingBefore.stdout == "Pruned 0 transactions\n", "a date in JPL's form: \(nothingBefore.stderr)")
    let pruned = try fireballWatch("history", "prune", "--before", tokens[1], "--path", store)
    #expect(pruned.stdout == "Pruned 1 transaction\n")
    let copied = try fireballWatch("history", "prune", "--before", stamps[0], "--path", store)
    #expect(copied.status == 0, "a time copied from the table is accepted: \(copied.stderr)")
    let expired = try fireballWatch("history", "--after-token", String(tokens[0].prefix { $0 != ":" }) + ":0", "--path", store)
    #expect(expired.status == 1)
    #expect(expired.stderr.contains("expired"), "\(expired.stderr)")
    let bad = try fireballWatch("history", "prune", "--before", "yesterday", "--path", store)
    #expect(bad.status == 64)

    // A corrupt token file: a warning and a full refetch, then a clean start.
    let tokenFile = store + ".watch-token"
    try Data("garbage".utf8).write(to: URL(fileURLWithPath: tokenFile))
    let watched = try fireballWatch("watch", "--for", "0.3", "--path", store)
    #expect(watched.status == 0)
    #expect(watched.stderr.contains("warning: the token file"), "\(watched.stderr)")
    #expect(try fireballWatch("watch", "--for", "0.3", "--path", store).stderr.isEmpty)
  }
}

@Suite("fireball-watch across processes")
struct FireballWatchConcurrencyTests {
  @Test(arguments: ["sqlite", "lmdb"])
  func fourProcessesAddingToOneGroupAllSucceedAndTheCountIsExact(_ backend: String) throws {
    let store = fireballStore("Fireballs.\(backend)")
    #expect(try fireballWatch("import", "--store", backend, "--path", store).status == 0)
    #expect(try fireballWatch("group", "create", "Shared", "--store", backend, "--path", store).status == 0)
    let dates = try FireballSnapshot.rows().prefix(24).compactMap { $0["date"] as? String }
    // An NSLock (a pthread mutex) rather than Synchronization.Mutex, whose futex ThreadSanitizer does not
    // see (docs/SANITIZERS.md).
    let results = CollectedResults()
    DispatchQueue.concurrentPerform(iterations: 4) { worker in
      for date in dates[(worker * 6)..<(worker * 6 + 6)] {
        let result = try? Executables.run(
          "fireball-watch", ["group", "add", "Shared", date, "--store", backend, "--path", store])
        if let result { results.append(result) }
      }
    }
    let all = results.all
    #expect(all.count == 24 && all.allSatisfy { $0.status == 0 }, "\(all.map(\.stderr).filter { !$0.isEmpty })")
    let groups = try fireballWatch("groups", "--json", "--store", backend, "--path", store)
    #expect(groups.stdout.contains("\"fireballCount\" : 24"), "the derived count is exact: \(groups.stdout)")
  }
}

/// Command results gathered from several threads.
final class CollectedResults: @unchecked Sendable {
  private let lock = NSLock()
  private var results: [CommandResult] = []

  func append(_ result: CommandResult) { lock.withLock { results.append(result) } }

  var all: [CommandResult] { lock.withLock { results } }
}
