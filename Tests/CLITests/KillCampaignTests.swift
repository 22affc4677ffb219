import Foundation
import Testing

/// An app killed in the middle of its write path: `fireball-watch import` (one batch-insert upsert and
/// its history transaction) SIGKILLed at moments spread over a whole import leaves a store that opens and
/// holds every fireball or none, with one import transaction in its history or none — never part.
@Suite("kills during app imports")
struct KillCampaignTests {
  /// The fireballs and the import transactions in the store at `path` (none when there is no store).
  static func contents(_ path: String, _ store: String) throws -> (fireballs: Int, imports: Int) {
    let list = try runBounded("fireball-watch", ["list", "--json", "--store", store, "--path", path])
    #expect(list.status == 0, "\(list.stderr)")
    let fireballs = (try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [Any])?.count ?? -1
    let history = try runBounded("fireball-watch", ["history", "--json", "--store", store, "--path", path])
    #expect(history.status == 0, "\(history.stderr)")
    let imports = (try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [Any])?.count ?? -1
    return (fireballs, imports)
  }

  @Test(arguments: ["sqlite", "lmdb"])
  func anImportKilledAtAnyMomentLeavesAllOrNothing(_ store: String) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let whole = directory + "/whole." + store
    let started = ContinuousClock.now
    let imported = try runBounded("fireball-watch", ["import", "--store", store, "--path", whole])
    let duration = ContinuousClock.now - started
    #expect(imported.status == 0, "\(imported.stderr)")
    let full = try Self.contents(whole, store)
    #expect(full.fireballs > 0 && full.imports == 1)

    var outcomes: [String: Int] = [:]
    for round in 0..<12 {
      let path = directory + "/killed-\(round)." + store
      let process = Process()
      process.executableURL = Executables.url("fireball-watch")
      process.arguments = ["import", "--store", store, "--path", path]
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      try process.run()
      let delay = duration * Double(round) / 10
      usleep(UInt32(clamping: Int(delay / .microseconds(1))))
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      let found = try Self.contents(path, store)
      #expect(
        (found.fireballs == 0 && found.imports == 0) || (found.fireballs == full.fireballs && found.imports == 1),
        "round \(round): \(found.fireballs) fireballs and \(found.imports) transactions")
      if FileManager.default.fileExists(atPath: path) {
        let info = try runBounded("strata", ["info", path, "--store", store])
        #expect(info.status == 0 || info.stderr.contains("no store"), "the store opens: \(info.stderr)")
      }
      outcomes[found.fireballs == 0 ? "nothing" : "whole", default: 0] += 1
    }
    print("kill during fireball-watch import (\(store), a whole import \(duration)): \(outcomes.sorted { $0.key < $1.key })")
  }
}
