import Foundation
import Strata
import StrataMemory
import StrataSQLite
import TaterRater
import Testing

enum Backend: String, CaseIterable, Sendable {
  case memory, sqlite

  func makeRater() throws -> PotatoRater {
    let registry = StoreRegistry([MemoryStoreFactory(), SQLiteStoreFactory()])
    switch self {
    case .memory:
      return PotatoRater(container: try PotatoRater.makeContainer(store: StoreDescription(type: .memory), registry: registry))
    case .sqlite:
      let url = FileManager.default.temporaryDirectory.appending(path: "taterrater-\(UUID().uuidString)/TaterRater.sqlite")
      return PotatoRater(
        container: try PotatoRater.makeContainer(store: StoreDescription(type: .sqlite, url: url), registry: registry))
    }
  }
}

enum VarietiesFile {
  static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appending(path: "Modules/TaterRater/Resources/Potatoes.txt")

  static func lines() throws -> [String] {
    try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
  }

  static func distinct() throws -> [String] {
    var seen = Set<String>()
    return try lines().filter { !$0.isEmpty && seen.insert($0).inserted }
  }

  static func folded(_ text: String) -> String {
    text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
  }

  /// Folded, then by code point; ties by the original code points (docs/QUERY-SEMANTICS.md, no digits here).
  static func sorted() throws -> [String] {
    try distinct().sorted { a, b in
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
}

@Suite("TaterRater")
struct PotatoRaterTests {
  static let crowdRatings = Set((0...49).map { Float($0) / 10 })

  @Test func theBundledFileIsTheResourceReadOnceEachVariety() throws {
    let lines = try VarietiesFile.lines()
    #expect(lines.count == 208)
    #expect(try Data(contentsOf: try PotatoRater.bundledVarietiesURL()) == Data(contentsOf: VarietiesFile.url))
    let varieties = try PotatoRater.varieties(in: try PotatoRater.bundledVarietiesURL())
    #expect(varieties == (try VarietiesFile.distinct()))
    #expect(lines.count - varieties.count == lines.count - Set(lines).count, "only repeated lines are dropped")
  }

  @Test(arguments: Backend.allCases)
  func importsEachVarietyOnceAndOnlyIntoAnEmptyStore(_ backend: Backend) async throws {
    let rater = try backend.makeRater()
    let varieties = try VarietiesFile.distinct()
    #expect(try await rater.importPotatoes() == .imported(count: varieties.count))
    #expect(try rater.potatoCount() == varieties.count)
    #expect(try await rater.importPotatoes(seed: 1) == .alreadyImported(potatoCount: varieties.count))
    let potatoes = try rater.potatoes()
    #expect(Set(potatoes.map(\.variety)) == Set(varieties) && potatoes.count == varieties.count)
    #expect(potatoes.allSatisfy { Self.crowdRatings.contains($0.crowdRating) })
    #expect(potatoes.allSatisfy { $0.userRating == 0 && $0.notes == nil })
  }

  @Test func progressIsReportedForEveryPotato() async throws {
    let rater = try Backend.memory.makeRater()
    let seen = Locked<[Int]>([])
    let total = try VarietiesFile.distinct().count
    try await rater.importPotatoes(delay: .milliseconds(10)) { done, all in
      #expect(all == total)
      seen.withLock { $0.append(done) }
    }
    #expect(seen.withLock { $0 } == Array(1...total))
  }

  @Test func seededCrowdRatingsRepeatOnEveryBackend() async throws {
    var ratings: [[String: Float]] = []
    for backend in Backend.allCases + [.memory] {
      let rater = try backend.makeRater()
      try await rater.importPotatoes(seed: 42)
      ratings.append(Dictionary(uniqueKeysWithValues: try rater.potatoes().map { ($0.variety, $0.crowdRating) }))
    }
    #expect(ratings.allSatisfy { $0 == ratings[0] })
    #expect(ratings[0].values.allSatisfy { Self.crowdRatings.contains($0) })
    #expect(Set(ratings[0].values).count > 30, "spread over the range")

    let other = try Backend.memory.makeRater()
    try await other.importPotatoes(seed: 43)
    #expect(Dictionary(uniqueKeysWithValues: try other.potatoes().map { ($0.variety, $0.crowdRating) }) != ratings[0])

    var generator = CrowdRatings(seed: 42)
    let first = (0..<5).map { _ in generator.next() }
    generator = CrowdRatings(seed: 42)
    #expect((0..<5).map { _ in generator.next() } == first)
  }

  @Test(arguments: Backend.allCases)
  func listsInLocalizedStandardOrderAndSectionsByFoldedFirstLetter(_ backend: Backend) async throws {
    let rater = try backend.makeRater()
    try await rater.importPotatoes(seed: 7)
    #expect(try rater.potatoes().map(\.variety) == (try VarietiesFile.sorted()))
    let sections = try rater.sections()
    let expected = try VarietiesFile.sections()
    #expect(sections.map(\.name) == expected.map(\.name))
    #expect(sections.map { $0.potatoes.map(\.variety) } == expected.map(\.varieties))
    #expect(sections.first { $0.name == "D" }?.potatoes.contains { $0.variety == "Désirée" } == true)
    #expect(Potato.section(of: "Épicure") == "E" && Potato.section(of: "ñora") == "N")
  }

  @Test(arguments: Backend.allCases)
  func rateNoteAndShow(_ backend: Backend) async throws {
    let rater = try backend.makeRater()
    try await rater.importPotatoes(seed: 3)
    let crowd = try rater.potato("Désirée").crowdRating
    #expect(try rater.rate("Désirée", stars: 4) == PotatoRecord(variety: "Désirée", crowdRating: crowd, userRating: 4))
    #expect(try rater.rate("desiree", stars: 5).userRating == 5, "case and accents ignored")
    #expect(try rater.note("DÉSIRÉE", text: "  Red skin, yellow flesh ").notes == "Red skin, yellow flesh")
    let fresh = PotatoRater(container: rater.container)
    #expect(
      try fresh.potato("Désirée")
        == PotatoRecord(variety: "Désirée", crowdRating: crowd, userRating: 5, notes: "Red skin, yellow flesh"))
    #expect(try rater.note("Désirée", text: "").notes == nil)
    #expect(try fresh.potato("Désirée").notes == nil)
    #expect(try rater.note("Désirée", text: "zeta first\nalpha second").notes == "zeta first\nalpha second")
    #expect(try rater.note("Désirée", text: "omega third").notes == "zeta first\nalpha second\nomega third")
    #expect(try fresh.potato("Désirée").notes == "zeta first\nalpha second\nomega third", "the order typed survives")
    #expect(try rater.note("Désirée", text: "").notes == nil)
    #expect(try rater.rate("Désirée", stars: 0).stars == "")
  }

  @Test(arguments: Backend.allCases)
  func aRatingOutOfRangeIsAValidationErrorNamingTheKeyAndChangesNothing(_ backend: Backend) async throws {
    let rater = try backend.makeRater()
    try await rater.importPotatoes(seed: 3)
    try rater.rate("Bintje", stars: 2)
    let before = try rater.potatoes()
    for (stars, rule) in [(9, "must be at most 5 (got 9)"), (-1, "must be at least 0 (got -1)"), (70_000, "must be at most 5")] {
      do {
        try rater.rate("Bintje", stars: stars)
        Issue.record("\(stars) stars should be refused")
      } catch let error as StoreError {
        #expect(error.code == .validation)
        #expect(error.key == "userRating")
        #expect(error.message.contains("Potato.userRating \(rule)"), "\(error.message)")
      }
    }
    #expect(try rater.potatoes() == before)
    #expect(try PotatoRater(container: rater.container).potato("Bintje").userRating == 2)
  }

  @Test(arguments: Backend.allCases)
  func anUnknownVarietyIsNotFound(_ backend: Backend) async throws {
    let rater = try backend.makeRater()
    try await rater.importPotatoes(seed: 3)
    let attempts: [(PotatoRater) throws -> Void] = [
      { _ = try $0.potato("Purple Haze") }, { try $0.rate("Purple Haze", stars: 3) },
      { try $0.note("Purple Haze", text: "?") },
    ]
    for attempt in attempts {
      do {
        try attempt(rater)
        Issue.record("an unknown variety should not be found")
      } catch let error as StoreError {
        #expect(error.code == .notFound)
        #expect(error.message.contains("Purple Haze"))
      }
    }
  }

  @Test func previewHoldsTenPotatoes() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let rater = try PotatoRater.preview(registry: registry)
    let potatoes = try rater.potatoes()
    #expect(potatoes.count == 10)
    #expect(Set(potatoes) == Set(PotatoRater.previewPotatoes))
    #expect(try rater.sections().first { $0.name == "C" }?.potatoes.map(\.variety) == ["Cara", "Chérie"])
    let letters = Set(PotatoRater.previewPotatoes.map { String(VarietiesFile.folded($0.variety).prefix(1)).uppercased() })
    #expect(try rater.sections().map(\.name) == letters.sorted())
  }
}
