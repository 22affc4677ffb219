import Foundation
import Testing

func taterStore() -> String {
  FileManager.default.temporaryDirectory.appending(path: "tater-rater-cli-\(UUID().uuidString)/TaterRater.sqlite").path
}

func taterRater(_ arguments: String..., environment: [String: String] = [:]) throws -> CommandResult {
  try Executables.run("tater-rater", arguments, environment: environment)
}

enum PotatoesFile {
  static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "Modules/TaterRater/Resources/Potatoes.txt")

  static func varieties() throws -> [String] {
    var seen = Set<String>()
    return try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
      .filter { !$0.isEmpty && seen.insert($0).inserted }
  }

  static func folded(_ text: String) -> String { text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }

  static func sorted() throws -> [String] {
    try varieties().sorted { a, b in
      let (fa, fb) = (folded(a), folded(b))
      if fa != fb { return fa.unicodeScalars.lexicographicallyPrecedes(fb.unicodeScalars) }
      return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
    }
  }

  static func sections() throws -> [(name: String, varieties: [String])] {
    var sections: [(name: String, varieties: [String])] = []
    for variety in try sorted() {
      let name = String(folded(variety).prefix(1)).uppercased()
      if sections.last?.name == name {
        sections[sections.count - 1].varieties.append(variety)
      } else {
        sections.append((name, [variety]))
      }
    }
    return sections
  }

  static func indexPath(of variety: String) throws -> String {
    let sections = try sections()
    let section = try #require(sections.firstIndex { $0.varieties.contains(variety) })
    return "\(section).\(try #require(sections[section].varieties.firstIndex(of: variety)))"
  }
}

/// A `watch` command (tater-rater's by default) running in the background, its standard output read as it comes.
final class RunningWatcher: Sendable {
  private let process: Process
  private let output = Locked(Data())
  private let finished = DispatchSemaphore(value: 0)

  init(_ arguments: [String], tool: String = "tater-rater") throws {
    let process = Process()
    process.executableURL = Executables.url(tool)
    process.arguments = ["watch"] + arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    self.process = process
    let reader = out.fileHandleForReading
    Thread { [output, finished] in
      while case let data = reader.availableData, !data.isEmpty {
        output.withLock { $0.append(data) }
      }
      finished.signal()
    }.start()
  }

  var stdout: String { String(decoding: output.withLock { $0 }, as: UTF8.self) }

  func waitUntilWatching() {
    #expect(waitFor { $0.contains("Watching for changes") }, "\(stdout)")
  }

  /// Waits until the output so far satisfies `condition`, for at most `timeout` seconds (a loaded machine
  /// can take long to start processes); whether it did.
  @discardableResult
  func waitFor(timeout: Double = 60, _ condition: (String) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition(stdout) {
      if Date() > deadline || !process.isRunning && readerFinished() { return condition(stdout) }
      Thread.sleep(forTimeInterval: 0.02)
    }
    return true
  }

  /// Waits until the output has as many lines as `condition` accepts as `count`, then stops the watcher
  /// as Ctrl-C does; its whole output and exit status.
  func stop(afterLines count: Int = 1, where condition: (Substring) -> Bool) -> (status: Int32, stdout: String) {
    let seen = waitFor { $0.split(separator: "\n").count(where: condition) >= count }
    #expect(seen, "\(stdout)")
    if process.isRunning { process.interrupt() }
    return finish()
  }

  /// Whether all of the output has been read (the process closed its end), without waiting.
  private func readerFinished() -> Bool {
    guard finished.wait(timeout: .now()) == .success else { return false }
    finished.signal()
    return true
  }

  /// Waits for the process to stop; its whole output and exit status.
  func finish() -> (status: Int32, stdout: String) {
    process.waitUntilExit()
    finished.wait()
    return (process.terminationStatus, stdout)
  }
}

final class Locked<Value: Sendable>: @unchecked Sendable {
  private var value: Value
  private let lock = NSLock()
  init(_ value: Value) { self.value = value }
  func withLock<R>(_ body: (inout Value) -> R) -> R {
    lock.lock()
    defer { lock.unlock() }
    return body(&value)
  }
}

@Suite("tater-rater CLI")
struct TaterRaterCLITests {
  @Test func whatOneProcessImportsTheNextLists() throws {
    let store = taterStore()
    let varieties = try PotatoesFile.varieties()
    #expect(try taterRater("list", "--path", store).stdout == "No potatoes.\n")
    let imported = try taterRater("import", "--seed", "1", "--delay", "0.1", "--path", store)
    #expect(imported.status == 0, "\(imported.stderr)")
    #expect(imported.stdout == "Imported \(varieties.count) potatoes\n")
    #expect(imported.stderr.isEmpty, "no progress bar off a terminal")
    let again = try taterRater("import", "--path", store)
    #expect(again.stdout == "The store already has \(varieties.count) potatoes; nothing imported\n")

    let list = try taterRater("list", "--json", "--path", store)
    #expect(list.status == 0, "\(list.stderr)")
    let rows = try jsonRows(list)
    #expect(rows.compactMap { $0["variety"] as? String } == (try PotatoesFile.sorted()))
    #expect(rows.allSatisfy { Set($0.keys) == ["variety", "crowdRating", "userRating", "notes"] })
    #expect(rows.allSatisfy { $0["notes"] is NSNull && $0["userRating"] as? Int == 0 })
    let ratings = Set((0...49).map { Double($0) / 10 })
    #expect(rows.allSatisfy { ($0["crowdRating"] as? Double).map(ratings.contains) == true })
    #expect(list.stdout.contains("\"crowdRating\" : ") && !list.stdout.contains("00000"))

    let table = try taterRater("list", "--path", store)
    let lines = table.stdout.split(separator: "\n")
    #expect(lines.count == varieties.count + 2)
    #expect(lines.first?.hasPrefix("Variety") == true)
  }

  @Test func aSeedMakesTheCrowdRatingsRepeat() throws {
    let (first, second, third) = (taterStore(), taterStore(), taterStore())
    _ = try taterRater("import", "--seed", "99", "--path", first)
    _ = try taterRater("import", "--seed", "99", "--path", second)
    _ = try taterRater("import", "--seed", "100", "--path", third)
    let lists = try [first, second, third].map { try taterRater("list", "--json", "--path", $0).stdout }
    #expect(lists[0] == lists[1])
    #expect(lists[0] != lists[2])
  }

  @Test func sectionsByFoldedFirstLetter() throws {
    let store = taterStore()
    _ = try taterRater("import", "--path", store)
    let result = try taterRater("list", "--sections", "--json", "--path", store)
    #expect(result.status == 0, "\(result.stderr)")
    let sections = try jsonRows(result)
    let expected = try PotatoesFile.sections()
    #expect(sections.compactMap { $0["name"] as? String } == expected.map(\.name))
    #expect(
      sections.map { ($0["potatoes"] as? [[String: Any]] ?? []).compactMap { $0["variety"] as? String } }
        == expected.map(\.varieties))

    let text = try taterRater("list", "--sections", "--path", store)
    let lines = text.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    for section in expected {
      let header = try #require(lines.firstIndex(of: section.name), "\(section.name)")
      #expect(lines[header + 1].hasPrefix(section.varieties[0]))
    }
  }

  @Test func rateNoteAndShowAcrossProcesses() throws {
    let store = taterStore()
    _ = try taterRater("import", "--seed", "2", "--path", store)
    let rate = try taterRater("rate", "Désirée", "4", "--path", store)
    #expect(rate.status == 0, "\(rate.stderr)")
    #expect(rate.stdout == "Rated Désirée 4/5 ★★★★\n")
    let note = try taterRater("note", "desiree", "Red skin, yellow flesh", "--path", store)
    #expect(note.stdout == "Notes on Désirée: Red skin, yellow flesh\n", "\(note.stderr)")
    let show = try taterRater("show", "Désirée", "--json", "--path", store)
    let potato = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
    #expect(potato["variety"] as? String == "Désirée")
    #expect(potato["userRating"] as? Int == 4)
    #expect(potato["notes"] as? String == "Red skin, yellow flesh")
    let text = try taterRater("show", "Désirée", "--path", store)
    #expect(text.stdout.contains("4/5 ★★★★") && text.stdout.contains("Red skin, yellow flesh"))
    #expect(try taterRater("note", "Désirée", "", "--path", store).stdout == "Cleared the notes on Désirée\n")
    let cleared = try taterRater("show", "Désirée", "--json", "--path", store)
    #expect(cleared.stdout.contains("\"notes\" : null"), "\(cleared.stdout)")
  }

  @Test func badStarsAndUnknownVarietiesAreOneLineErrors() throws {
    let store = taterStore()
    _ = try taterRater("import", "--seed", "2", "--path", store)
    _ = try taterRater("rate", "Bintje", "2", "--path", store)
    let before = try taterRater("list", "--json", "--path", store).stdout
    let cases: [([String], Int32, String)] = [
      (["rate", "Bintje", "9"], 1, "Potato.userRating must be at most 5 (got 9)"),
      (["rate", "Bintje", "--", "-1"], 1, "Potato.userRating must be at least 0 (got -1)"),
      (["rate", "Purple Haze", "3"], 1, "no potato variety is named 'Purple Haze'"),
      (["note", "Purple Haze", "?"], 1, "'Purple Haze'"),
      (["show", "Purple Haze"], 1, "'Purple Haze'"),
      (["rate", "Bintje", "lots"], 64, "'lots'"),
      (["rate", "Bintje"], 64, "<stars>"),
      (["import", "--delay", "-1"], 64, "--delay"),
      (["watch", "--for", "0"], 64, "--for"),
      (["list", "--store", "nope"], 64, "unknown store type 'nope'"),
    ]
    for (arguments, status, needle) in cases {
      let result = try Executables.run("tater-rater", [arguments[0], "--path", store] + arguments.dropFirst())
      #expect(result.status == status, "\(arguments): \(result.stderr)")
      #expect(result.stdout.isEmpty, "\(arguments)")
      #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
      #expect(result.stderr.hasPrefix("tater-rater: error: "), "\(result.stderr)")
      #expect(result.stderr.contains(needle), "\(arguments): \(result.stderr)")
    }
    #expect(try taterRater("list", "--json", "--path", store).stdout == before)
  }

  @Test func memoryStoreStartsFromThePreview() throws {
    let list = try taterRater("list", "--store", "memory", "--json")
    #expect(list.status == 0, "\(list.stderr)")
    #expect(try jsonRows(list).count == 10)
    #expect(try taterRater("import", "--store", "memory").stdout == "The store already has 10 potatoes; nothing imported\n")
  }

  @Test func defaultPathFollowsXDGDataHome() throws {
    let home = FileManager.default.temporaryDirectory.appending(path: "xdg-\(UUID().uuidString)").path
    let imported = try taterRater("import", environment: ["XDG_DATA_HOME": home])
    #expect(imported.status == 0, "\(imported.stderr)")
    #expect(FileManager.default.fileExists(atPath: home + "/tater-rater/TaterRater.sqlite"))
  }

  @Test func helpExplainsTheFlags() throws {
    let top = try taterRater("--help")
    #expect(top.status == 0)
    for command in ["import", "list", "rate", "note", "show", "watch"] { #expect(top.stdout.contains(command), "\(command)") }
    let expectations: [(String, [String])] = [
      ("import", ["--store", "--path", "--delay", "--seed"]), ("list", ["--store", "--path", "--sections", "--json"]),
      ("rate", ["--store", "--path", "<variety>", "<stars>"]), ("note", ["<variety>", "<text>"]),
      ("show", ["<variety>", "--json"]), ("watch", ["--store", "--path", "--for"]),
    ]
    for (command, flags) in expectations {
      let help = try taterRater(command, "--help")
      #expect(help.status == 0)
      for flag in flags { #expect(help.stdout.contains(flag), "\(command) \(flag)") }
    }
  }

  @Test func aWatcherSeesRatingsAndNotesOfOtherProcesses() throws {
    let store = taterStore()
    _ = try taterRater("import", "--seed", "4", "--path", store)
    let watcher = try RunningWatcher(["--for", "120", "--path", store])
    watcher.waitUntilWatching()
    let path = try PotatoesFile.indexPath(of: "Bintje")
    #expect(try taterRater("rate", "Bintje", "3", "--path", store).status == 0)
    // The note waits for the rating's line: two commits close together may show as one change.
    #expect(watcher.waitFor { $0.contains("update \(path) Bintje ★★★\n") }, "\(watcher.stdout)")
    #expect(try taterRater("note", "Bintje", "Floury", "--path", store).status == 0)
    let (status, stdout) = watcher.stop { $0.hasSuffix("\"Floury\"") }
    #expect(status == 0)
    let lines = stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains("update \(path) Bintje ★★★"), "\(stdout)")
    #expect(lines.contains("update \(path) Bintje ★★★ \"Floury\""), "\(stdout)")
    #expect(!lines.contains { $0.hasPrefix("insert ") || $0.hasPrefix("delete ") })
  }

  @Test func aWatcherSeesAnImportIntoAnEmptyStore() throws {
    let store = taterStore()
    let watcher = try RunningWatcher(["--for", "120", "--path", store])
    watcher.waitUntilWatching()
    #expect(try taterRater("import", "--path", store).status == 0)
    let sections = try PotatoesFile.sections()
    let count = try PotatoesFile.varieties().count
    let (status, stdout) = watcher.stop(afterLines: count) { $0.hasPrefix("insert ") }
    #expect(status == 0)
    let lines = stdout.split(separator: "\n").map(String.init)
    #expect(lines.first == "No potatoes.")
    #expect(lines.filter { $0.hasPrefix("insert ") }.count == count, "\(stdout)")
    #expect(lines.filter { $0.hasPrefix("section insert ") } == sections.enumerated().map { "section insert \($0) \($1.name)" })
    #expect(lines.contains("insert 0.0 \(sections[0].varieties[0])"))
  }
}
