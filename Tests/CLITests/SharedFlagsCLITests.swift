import Foundation
import Testing

@Suite("Flags every CLI shares")
struct SharedFlagsCLITests {
  @Test func storeFlagsMayStandBeforeTheSubcommand() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "shared-flags-\(UUID().uuidString)").path
    let store = directory + "/Movies.lmdb"
    let add = try faveFlicks(
      "--store", "lmdb", "--path", store, "add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15")
    #expect(add.status == 0, "\(add.stderr)")
    let before = try faveFlicks("--path=\(store)", "--store=lmdb", "list", "--json")
    let after = try faveFlicks("list", "--json", "--store", "lmdb", "--path", store)
    #expect(before.status == 0 && after.status == 0, "\(before.stderr) \(after.stderr)")
    #expect(before.stdout == after.stdout && before.stdout.contains("\"Heat\""))
    #expect(FileManager.default.fileExists(atPath: store + "/data.mdb"))

    let nested = try Executables.run("fireball-watch", ["--store", "memory", "group", "create", "Night"])
    #expect(nested.status == 0, "\(nested.stderr)")
    let unknown = try faveFlicks("--store", "bogus", "list")
    #expect(unknown.status == 64)
    #expect(
      unknown.stderr
        == "fave-flicks: error: unknown store type 'bogus' (available: lmdb, memory, postgres, sqlite) (see 'fave-flicks --help')\n"
    )
  }

  @Test(arguments: ["fave-flicks", "bubble-tea-finder", "tater-rater", "fireball-watch", "strata"])
  func everyToolHasAVersionAndDocumentsItsExitStatus(_ tool: String) throws {
    let version = try Executables.run(tool, ["--version"])
    #expect(version.status == 0)
    #expect(version.stdout.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil, "\(version.stdout)")
    let help = try Executables.run(tool, ["--help"])
    #expect(help.stdout.contains("Exit status: 0 on success"), "\(help.stdout)")
    #expect(help.stdout.contains("--generate-completion-script bash|zsh|fish"), "\(help.stdout)")
    let completion = try Executables.run(tool, ["--generate-completion-script", "bash"])
    #expect(completion.status == 0 && completion.stdout.hasPrefix("#!/bin/bash"), "\(completion.stderr)")
    if tool != "strata" {
      #expect(completion.stdout.contains("'sqlite'$'\\n''lmdb'$'\\n''postgres'$'\\n''memory'"), "--store offers its values")
    }
  }

  @Test func readingCreatesNothingAndAnEmptyPathIsAUsageError() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "stray-\(UUID().uuidString)").path
    let reads: [(String, [String])] = [
      ("fave-flicks", ["list", "--path", directory + "/a.sqlite"]),
      ("fave-flicks", ["list", "--store", "lmdb", "--path", directory + "/a.lmdb"]),
      ("bubble-tea-finder", ["stats", "--path", directory + "/b.sqlite"]),
      ("bubble-tea-finder", ["list", "--path", directory + "/b.sqlite"]),
      ("tater-rater", ["list", "--path", directory + "/t.sqlite"]),
      ("tater-rater", ["show", "--path", directory + "/t.sqlite", "Agria"]),
      ("fireball-watch", ["list", "--path", directory + "/f.sqlite"]),
      ("fireball-watch", ["group", "list", "--path", directory + "/f.sqlite"]),
    ]
    for (tool, arguments) in reads {
      let result = try Executables.run(tool, arguments)
      #expect(result.status == 0 || result.stderr.hasPrefix("\(tool): error: "), "\(tool) \(arguments): \(result.stderr)")
    }
    #expect(!FileManager.default.fileExists(atPath: directory), "a command that only reads creates nothing")

    let failedWrites: [(String, [String])] = [
      ("fave-flicks", ["add", "--title", "", "--genre", "x", "--release-date", "2020-01-01", "--path", directory + "/w.sqlite"]),
      (
        "fave-flicks",
        [
          "add", "--title", "", "--genre", "x", "--release-date", "2020-01-01", "--store", "lmdb", "--path",
          directory + "/w.lmdb",
        ]
      ),
      ("tater-rater", ["rate", "Agria", "3", "--path", directory + "/w2.sqlite"]),
      ("fireball-watch", ["group", "add", "Nope", "2024-01-01 00:00:00", "--path", directory + "/w3.sqlite"]),
    ]
    for (tool, arguments) in failedWrites {
      let result = try Executables.run(tool, arguments)
      #expect(result.status == 1, "\(tool) \(arguments): \(result.stderr)")
    }
    let left = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    #expect(left.isEmpty, "a failed write leaves no store it created: \(left)")

    for tool in ["fave-flicks", "bubble-tea-finder", "tater-rater", "fireball-watch"] {
      let empty = try Executables.run(tool, ["list", "--path", ""])
      #expect(empty.status == 64 && empty.stderr.contains("--path must not be empty"), "\(tool): \(empty.stderr)")
    }
  }

  @Test func tablesShowControlCharactersEscaped() throws {
    let store = temporaryStore()
    let add = try faveFlicks(
      "add", "--title", "Bell\u{7}Ring", "--genre", "Red\u{1B}[31m", "--release-date", "2020-01-01", "--path", store)
    #expect(add.status == 0, "\(add.stderr)")
    let list = try faveFlicks("list", "--path", store)
    #expect(list.stdout.contains("Bell\\u{7}Ring") && list.stdout.contains("Red\\u{1B}[31m"), "\(list.stdout)")
    #expect(!list.stdout.unicodeScalars.contains { $0.properties.generalCategory == .control && $0 != "\n" })
    let json = try faveFlicks("list", "--path", store, "--json")
    #expect(json.stdout.contains("Bell\\u0007Ring"), "JSON keeps its own escaping: \(json.stdout)")
  }
}
