import Foundation
import Testing

func bubbleTeaStore() -> String {
  FileManager.default.temporaryDirectory.appending(path: "bubble-tea-cli-\(UUID().uuidString)/BubbleTeaFinder.sqlite").path
}

func bubbleTeaFinder(_ arguments: String..., environment: [String: String] = [:]) throws -> CommandResult {
  try Executables.run("bubble-tea-finder", arguments, environment: environment)
}

func jsonRows(_ result: CommandResult) throws -> [[String: Any]] {
  try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
}

enum SeedJSON {
  static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "Modules/BubbleTeaFinder/Resources/seed.json")

  static func venues() throws -> [[String: Any]] {
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
    return (object?["response"] as? [String: Any])?["venues"] as? [[String: Any]] ?? []
  }

  static func names(where include: ([String: Any]) -> Bool = { _ in true }) throws -> [String] {
    try venues().filter(include).compactMap { $0["name"] as? String }.sorted()
  }
}

@Suite("bubble-tea-finder CLI")
struct BubbleTeaFinderCLITests {
  @Test func categoryListsVenuesOfAnyCategoryInAnyCaseWithOrWithoutAccents() throws {
    let store = bubbleTeaStore()
    #expect(try bubbleTeaFinder("seed", "--path", store).status == 0)
    for query in ["CAFE", "bubble tea shop", "tea room"] {
      let list = try bubbleTeaFinder("list", "--category", query, "--json", "--path", store)
      #expect(list.status == 0, "\(list.stderr)")
      let rows = try jsonRows(list)
      let expected = try SeedJSON.names { venue in
        (venue["categories"] as? [[String: Any]] ?? []).contains {
          ($0["name"] as? String)?.compare(query, options: [.caseInsensitive, .diacriticInsensitive]) == .orderedSame
        }
      }
      #expect(!expected.isEmpty)
      #expect(rows.compactMap { $0["name"] as? String }.sorted() == expected, "--category \(query)")
      #expect(rows.allSatisfy { ($0["categories"] as? [String])?.isEmpty == false })
    }
    let none = try bubbleTeaFinder("list", "--category", "Steakhouse", "--path", store)
    #expect(none.stdout == "No venues.\n")
  }

  @Test func whatOneProcessSeedsTheNextLists() throws {
    let store = bubbleTeaStore()
    let before = try bubbleTeaFinder("list", "--path", store)
    #expect(before.status == 0, "\(before.stderr)")
    #expect(before.stdout == "No venues.\n")

    let seed = try bubbleTeaFinder("seed", "--path", store)
    #expect(seed.status == 0, "\(seed.stderr)")
    #expect(seed.stdout == "Imported 30 venues from seed.json\n")
    let again = try bubbleTeaFinder("seed", "--path", store)
    #expect(again.status == 0)
    #expect(again.stdout == "The store already has 30 venues; nothing imported\n")

    let list = try bubbleTeaFinder("list", "--json", "--path", store)
    #expect(list.status == 0, "\(list.stderr)")
    let rows = try jsonRows(list)
    #expect(rows.compactMap { $0["name"] as? String }.sorted() == (try SeedJSON.names()))
    let kungFu = try #require(rows.first { $0["name"] as? String == "Kung Fu Tea 功夫茶" && $0["distance"] as? Int == 4787 })
    #expect(kungFu["priceCategory"] as? String == "$")
    #expect(kungFu["specialCount"] as? Int == 0)
    #expect(kungFu["favorite"] as? Bool == false)
    #expect(kungFu["phone"] as? String == "2123343536")
    #expect(kungFu["city"] as? String == "New York")

    let table = try bubbleTeaFinder("list", "--path", store)
    let lines = table.stdout.split(separator: "\n")
    #expect(lines.count == 32)
    #expect(lines.first?.hasPrefix("Name") == true)
    #expect(lines.contains { $0.hasPrefix("The Bao Shoppe") && $0.contains("$$$") && $0.contains("5760 m") })
  }

  @Test func filtersAndSorts() throws {
    let store = bubbleTeaStore()
    _ = try bubbleTeaFinder("seed", "--path", store)
    func names(_ arguments: String...) throws -> [String] {
      let result = try Executables.run("bubble-tea-finder", ["list", "--json", "--path", store] + arguments)
      #expect(result.status == 0, "\(arguments): \(result.stderr)")
      return try jsonRows(result).compactMap { $0["name"] as? String }
    }
    func price(_ venue: [String: Any]) -> String? { (venue["price"] as? [String: Any])?["currency"] as? String }
    func specials(_ venue: [String: Any]) -> Int { (venue["specials"] as? [String: Any])?["count"] as? Int ?? 0 }
    func distance(_ venue: [String: Any]) -> Int { (venue["location"] as? [String: Any])?["distance"] as? Int ?? .max }
    func tips(_ venue: [String: Any]) -> Int { (venue["stats"] as? [String: Any])?["tipCount"] as? Int ?? 0 }

    for category in ["$", "$$", "$$$"] {
      #expect(try names("--price", category).sorted() == (try SeedJSON.names { price($0) == category }), "\(category)")
    }
    #expect(try names("--deals").sorted() == (try SeedJSON.names { specials($0) > 0 }))
    #expect(try names("--walking").sorted() == (try SeedJSON.names { distance($0) < 500 }))
    #expect(try names("--tips").sorted() == (try SeedJSON.names { tips($0) > 0 }))
    #expect(try names("--price", "$", "--deals").sorted() == (try SeedJSON.names { price($0) == "$" && specials($0) > 0 }))

    let byDistance = try SeedJSON.venues().filter { specials($0) > 0 }.sorted { distance($0) < distance($1) }
    #expect(try names("--deals", "--sort", "distance") == byDistance.compactMap { $0["name"] as? String })
    let byName = try names("--sort", "name")
    #expect(try names("--sort", "name-desc") == byName.reversed())
    #expect(try names() == byName)
    let prices = try jsonRows(try bubbleTeaFinder("list", "--json", "--sort", "price", "--path", store))
      .compactMap { $0["priceCategory"] as? String }
    #expect(prices == prices.sorted() && prices.count == 30)
  }

  @Test func asyncListingGivesTheSameVenues() throws {
    let store = bubbleTeaStore()
    _ = try bubbleTeaFinder("seed", "--path", store)
    for arguments in [["--sort", "distance"], ["--deals", "--sort", "name-desc"], ["--price", "$$"]] {
      let plain = try Executables.run("bubble-tea-finder", ["list", "--json", "--path", store] + arguments)
      let async = try Executables.run("bubble-tea-finder", ["list", "--json", "--async", "--path", store] + arguments)
      #expect(async.status == 0, "\(arguments): \(async.stderr)")
      #expect(async.stdout == plain.stdout, "\(arguments)")
      #expect(!(try jsonRows(async)).isEmpty, "\(arguments)")
    }
    let memory = try bubbleTeaFinder("list", "--store", "memory", "--async", "--json")
    #expect(try jsonRows(memory).count == 30)
    let garbage = bubbleTeaStore()
    try FileManager.default.createDirectory(
      at: URL(fileURLWithPath: garbage).deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data("not a database, not at all".utf8).write(to: URL(fileURLWithPath: garbage))
    let bad = try bubbleTeaFinder("list", "--async", "--path", garbage)
    #expect(bad.status != 0)
    #expect(bad.stderr.split(separator: "\n").count == 1, "\(bad.stderr)")
    #expect(try String(contentsOfFile: garbage, encoding: .utf8) == "not a database, not at all")
  }

  @Test func memoryStoreStartsFromThePreview() throws {
    let list = try bubbleTeaFinder("list", "--store", "memory", "--json")
    #expect(list.status == 0, "\(list.stderr)")
    #expect(try jsonRows(list).count == 30)
    let seed = try bubbleTeaFinder("seed", "--store", "memory")
    #expect(seed.stdout == "The store already has 30 venues; nothing imported\n")
  }

  @Test(arguments: [
    (["list", "--price", "$$$$"], ["'$', '$$' or '$$$'", "--price"]),
    (["list", "--sort", "rating"], ["'name', 'name-desc', 'distance' or 'price'", "--sort"]),
  ])
  func unknownValuesAreOneLineUsageErrors(_ arguments: [String], _ needles: [String]) throws {
    let result = try Executables.run("bubble-tea-finder", arguments + ["--path", bubbleTeaStore()])
    #expect(result.status == 64)
    #expect(result.stdout.isEmpty)
    #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    #expect(result.stderr.hasPrefix("bubble-tea-finder: error: "))
    for needle in needles { #expect(result.stderr.contains(needle), "\(result.stderr)") }
  }

  @Test func aBadSeedFileIsOneLineNamingThePlaceAndImportsNothing() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "bubble-tea-bad-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let truncated = directory.appending(path: "truncated.json")
    let seed = try Data(contentsOf: SeedJSON.url)
    try seed.prefix(seed.count - 100).write(to: truncated)
    let wrongShape = directory.appending(path: "wrong.json")
    try Data(#"{"response": {"venues": [{"name": "Tea", "location": {"distance": "near"}}]}}"#.utf8).write(to: wrongShape)

    let store = bubbleTeaStore()
    let cases: [(String, String)] = [
      (truncated.path, "\(truncated.path): is not valid JSON"),
      (wrongShape.path, "\(wrongShape.path): response.venues[0].location.distance: expected a number"),
      (directory.appending(path: "missing.json").path, "missing.json: no such file"),
    ]
    for (file, needle) in cases {
      let result = try bubbleTeaFinder("seed", "--file", file, "--path", store)
      #expect(result.status == 1)
      #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
      #expect(result.stderr.contains(needle), "\(result.stderr)")
    }
    #expect(try bubbleTeaFinder("list", "--path", store).stdout == "No venues.\n")
  }

  @Test func defaultPathFollowsXDGDataHome() throws {
    let home = FileManager.default.temporaryDirectory.appending(path: "xdg-\(UUID().uuidString)").path
    let seed = try bubbleTeaFinder("seed", environment: ["XDG_DATA_HOME": home])
    #expect(seed.status == 0, "\(seed.stderr)")
    #expect(FileManager.default.fileExists(atPath: home + "/bubble-tea-finder/BubbleTeaFinder.sqlite"))
  }

  @Test func helpExplainsTheFlags() throws {
    let list = try bubbleTeaFinder("list", "--help")
    #expect(list.status == 0)
    for flag in ["--store", "--path", "--price", "--deals", "--walking", "--tips", "--sort", "--async", "--json"] {
      #expect(list.stdout.contains(flag), "\(flag)")
    }
    let seed = try bubbleTeaFinder("seed", "--help")
    for flag in ["--store", "--path", "--file"] { #expect(seed.stdout.contains(flag), "\(flag)") }
  }

  @Test func statsFavoriteAllAndDeleteAcrossProcesses() throws {
    let store = bubbleTeaStore()
    #expect(try bubbleTeaFinder("seed", "--path", store).status == 0)
    let venues = try SeedJSON.venues()
    func price(_ venue: [String: Any]) -> String? { (venue["price"] as? [String: Any])?["currency"] as? String }
    let stats = try bubbleTeaFinder("stats", "--json", "--path", store)
    #expect(stats.status == 0, "\(stats.stderr)")
    let numbers = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Int])
    let deals: Int = venues.map { ($0["specials"] as? [String: Any])?["count"] as? Int ?? 0 }.reduce(0, +)
    var expected: [String: Int] = ["venues": venues.count, "deals": deals]
    for (key, symbol) in [("cheap", "$"), ("moderate", "$$"), ("expensive", "$$$")] {
      expected[key] = venues.filter { price($0) == symbol }.count
    }
    #expect(numbers == expected)

    #expect(try bubbleTeaFinder("favorite-all", "--path", store).stdout == "Records updated \(venues.count)\n")
    let listed = try jsonRows(try bubbleTeaFinder("list", "--json", "--path", store))
    #expect(listed.count == venues.count && listed.allSatisfy { $0["favorite"] as? Bool == true })

    let moderate = venues.filter { price($0) == "$$" }.count
    let deleted = try bubbleTeaFinder("delete", "--where", "priceInfo.priceCategory == '$$'", "--path", store)
    #expect(deleted.stdout == "Records deleted \(moderate)\n", "\(deleted.stderr)")
    let after = try bubbleTeaFinder("stats", "--json", "--path", store)
    let remaining = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Int])
    #expect(remaining["venues"] == venues.count - moderate && remaining["moderate"] == 0)

    let bad = try bubbleTeaFinder("delete", "--where", "name ==", "--path", store)
    #expect(bad.status == 1)
    #expect(bad.stderr.hasPrefix("bubble-tea-finder: error: ") && bad.stderr.split(separator: "\n").count == 1)
    #expect(bad.stderr.contains("position 7"))
    let unchanged = try bubbleTeaFinder("stats", "--json", "--path", store)
    #expect(unchanged.stdout == after.stdout)
  }
}
