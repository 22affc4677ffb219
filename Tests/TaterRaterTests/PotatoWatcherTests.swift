import Foundation
import Strata
import TaterRater
import Testing

@Suite("TaterRater watcher")
struct PotatoWatcherTests {
  func settle(_ lines: Locked<[String]>, until done: ([String]) -> Bool) async throws -> [String] {
    for _ in 0..<1500 {
      if done(lines.withLock { $0 }) { break }
      try await Task.sleep(for: .milliseconds(20))
    }
    return lines.withLock { $0 }
  }

  @Test(arguments: Backend.allCases)
  func reportsImportsRatingsAndNotesAsLines(_ backend: Backend) async throws {
    let rater = try backend.makeRater()
    let lines = Locked<[String]>([])
    let watcher = PotatoWatcher(container: rater.container) { line in lines.withLock { $0.append(line) } }
    defer { watcher.stop() }
    #expect(try watcher.start().isEmpty)

    try await rater.importPotatoes(seed: 5)
    let varieties = try VarietiesFile.distinct()
    let sections = try VarietiesFile.sections()
    let imported = try await settle(lines) { $0.filter { $0.hasPrefix("insert ") }.count == varieties.count }
    #expect(imported.filter { $0.hasPrefix("insert ") }.count == varieties.count)
    #expect(
      imported.filter { $0.hasPrefix("section insert ") } == sections.enumerated().map { "section insert \($0) \($1.name)" })
    let first = sections[0].varieties[0]
    #expect(imported.contains("insert 0.0 \(first)"))

    lines.withLock { $0 = [] }
    let d = try #require(sections.firstIndex { $0.name == "D" })
    let item = try #require(sections[d].varieties.firstIndex(of: "Désirée"))
    try rater.rate("Désirée", stars: 3)
    #expect(try await settle(lines) { !$0.isEmpty } == ["update \(d).\(item) Désirée ★★★"])
    lines.withLock { $0 = [] }
    try rater.note("Désirée", text: "Roasts well")
    #expect(try await settle(lines) { !$0.isEmpty } == ["update \(d).\(item) Désirée ★★★ \"Roasts well\""])
  }
}
