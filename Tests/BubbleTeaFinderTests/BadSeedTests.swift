import BubbleTeaFinder
import Foundation
import Strata
import Testing

struct BadSeed: Sendable, CustomTestStringConvertible {
  var label: String
  var path: String
  var problem: String
  var contents: @Sendable () throws -> Data

  var testDescription: String { label }

  static func edited(
    _ label: String, path: String, problem: String, _ edit: @escaping @Sendable (inout [[String: Any]]) -> Void
  ) -> BadSeed {
    BadSeed(label: label, path: path, problem: problem) {
      var object = try ExpectedVenue.seedObject()
      var response = object["response"] as? [String: Any] ?? [:]
      var venues = response["venues"] as? [[String: Any]] ?? []
      edit(&venues)
      response["venues"] = venues
      object["response"] = response
      return try JSONSerialization.data(withJSONObject: object)
    }
  }

  static func nested(_ venue: inout [String: Any], _ key: String, _ field: String, _ value: Any?) {
    var inner = venue[key] as? [String: Any] ?? [:]
    inner[field] = value
    venue[key] = inner
  }

  static let all: [BadSeed] = [
    BadSeed(label: "truncated", path: "", problem: "is not valid JSON") {
      let data = try Data(contentsOf: ExpectedVenue.seedURL)
      return data.prefix(data.count / 2)
    },
    BadSeed(label: "empty", path: "", problem: "is not valid JSON") { Data() },
    BadSeed(label: "an array at the top", path: "", problem: "expected an object") { Data("[]".utf8) },
    BadSeed(label: "no response", path: "response", problem: "is missing") { Data(#"{"meta": {}}"#.utf8) },
    BadSeed(label: "venues not a list", path: "response.venues", problem: "expected a list") {
      Data(#"{"response": {"venues": {"name": "x"}}}"#.utf8)
    },
    edited("distance a string", path: "response.venues[29].location.distance", problem: "expected a number") {
      nested(&$0[29], "location", "distance", "far")
    },
    edited("tip count missing", path: "response.venues[29].stats.tipCount", problem: "is missing") {
      nested(&$0[29], "stats", "tipCount", nil)
    },
    edited("name null", path: "response.venues[12].name", problem: "is null") { $0[12]["name"] = NSNull() },
    edited("name empty", path: "response.venues[28].name", problem: "is empty") { $0[28]["name"] = "  " },
    edited("unknown currency", path: "response.venues[29].price.currency", problem: "'$$$$'") {
      nested(&$0[29], "price", "currency", "$$$$")
    },
    edited("negative specials", path: "response.venues[29].specials.count", problem: "negative") {
      nested(&$0[29], "specials", "count", -1)
    },
  ]
}

@Suite("BubbleTeaFinder bad seed files")
struct BadSeedTests {
  @Test(arguments: BadSeed.all)
  func aBadFileIsNamedWithThePlaceAndImportsNothing(_ bad: BadSeed) throws {
    let url = try temporaryFile("bad.json", contents: try bad.contents())
    let storeURL = temporaryStoreURL()
    let finder = try Backend.sqlite.makeFinder(url: storeURL)
    let error = try #require(throws: SeedError.self) { try finder.seed(from: url) }
    #expect(error.file == url.path)
    #expect(error.path == bad.path)
    #expect(error.problem.contains(bad.problem), "\(error)")
    #expect(error.description.hasPrefix(bad.path.isEmpty ? "\(url.path): " : "\(url.path): \(bad.path): "))
    #expect(!error.description.contains("\n"))
    #expect(!finder.container.viewContext.hasChanges)
    #expect(try finder.venueCount() == 0)
    finder.container.close()

    let reopened = try Backend.sqlite.makeFinder(url: storeURL)
    #expect(try reopened.venueCount() == 0)
    #expect(try reopened.seed() == .imported(count: 30, file: "seed.json"))
  }

  @Test func aMissingFileIsNamed() throws {
    let finder = try Backend.sqlite.makeFinder()
    let missing = FileManager.default.temporaryDirectory.appending(path: "no-such-\(UUID().uuidString).json")
    let error = try #require(throws: SeedError.self) { try finder.seed(from: missing) }
    #expect(error.description == "\(missing.path): no such file")
    #expect(try finder.venueCount() == 0)
  }

  @Test func aBadFileLeavesASeededStoreAsItWas() throws {
    let storeURL = temporaryStoreURL()
    let finder = try Backend.sqlite.makeFinder(url: storeURL)
    try finder.seed()
    let before = try finder.venues()
    let bad = try #require(BadSeed.all.first { $0.label == "distance a string" })
    let url = try temporaryFile("bad.json", contents: try bad.contents())
    #expect(throws: SeedError.self) { try finder.seed(from: url) }
    finder.container.close()
    #expect(try Backend.sqlite.makeFinder(url: storeURL).venues() == before)
  }
}
