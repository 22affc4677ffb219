import Foundation
import Testing

/// Two `fireball-watch import`s of the same data into one new store at once: whichever runs second finds
/// every fireball stored with the same values and writes nothing (issue 43, item 2; issue 44, item 4).
@Suite("concurrent fireball-watch imports")
struct ConcurrentImportTests {
  /// A fresh store location of `backend`.
  static func freshStore(_ backend: String) throws -> String {
    backend == "postgres" ? try PostgresServer.freshLocation() : fireballStore("Concurrent.\(backend)")
  }

  @Test(arguments: ["sqlite", "postgres"])
  func twoImportsAtOnceWriteEachFireballOnce(_ backend: String) throws {
    let total = try FireballSnapshot.rows().count
    for round in 1...4 {
      let store = try Self.freshStore(backend)
      let results = CollectedResults()
      DispatchQueue.concurrentPerform(iterations: 2) { _ in
        if let result = try? Executables.run(
          "fireball-watch", ["import", "--json", "--store", backend, "--path", store])
        {
          results.append(result)
        }
      }
      let both = results.all
      #expect(both.count == 2 && both.allSatisfy { $0.status == 0 }, "round \(round): \(both.map(\.stderr))")
      let summaries = both.compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Int]
      }
      #expect(summaries.count == 2, "round \(round): \(both.map(\.stdout))")
      // One import inserts every fireball; the other finds them stored as they are: 0 updated for both.
      #expect(summaries.map { $0["updated"] } == [0, 0], "round \(round): \(summaries)")
      #expect(summaries.reduce(0) { $0 + ($1["inserted"] ?? 0) } == total, "round \(round): \(summaries)")
      #expect(summaries.allSatisfy { ($0["inserted"] ?? 0) + ($0["unchanged"] ?? 0) == total }, "round \(round): \(summaries)")
      // History holds exactly one import transaction, of inserts only.
      let history = try fireballWatch("history", "--json", "--store", backend, "--path", store)
      #expect(history.status == 0, "\(history.stderr)")
      let entries = try jsonRows(history)
      #expect(entries.count == 1, "round \(round): \(history.stdout)")
      #expect(entries.first?["author"] as? String == "Fireball Data Import")
      #expect(entries.first?["inserted"] as? Int == total && entries.first?["updated"] as? Int == 0, "\(history.stdout)")
      let count = try Executables.run("strata", ["fetch", store, "--entity", "Fireball", "--count"])
      #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(total), "\(count.stdout)\(count.stderr)")
    }
  }
}
