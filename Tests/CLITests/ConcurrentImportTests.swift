import Foundation
import Testing

/// Starts `count` processes of `tool` at once and waits for all of them.
private func runAtOnce(_ count: Int, _ tool: String, _ arguments: [String]) throws -> [CommandResult] {
  let started = (0..<count).map { _ in
    let process = Process()
    process.executableURL = Executables.url(tool)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    return (process, out, err)
  }
  for (process, _, _) in started { try process.run() }
  return started.map { process, out, err in
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(
      status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
      stderr: String(decoding: stderr, as: UTF8.self))
  }
}

private func count(_ entity: String, in store: String) throws -> Int? {
  let result = try Executables.run("strata", ["fetch", store, "--entity", entity, "--count"])
  return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
}

@Suite("Seeding and importing from several processes at once")
struct ConcurrentImportTests {
  static let rounds = 6

  @Test(arguments: ["sqlite", "lmdb"])
  func threeSeedsAtOnceSeedOnce(_ backend: String) throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "seed-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    for round in 0..<Self.rounds {
      let store = directory.appending(path: "r\(round).\(backend)").path
      let results = try runAtOnce(3, "bubble-tea-finder", ["seed", "--store", backend, "--path", store])
      for result in results { #expect(result.status == 0, "round \(round): \(result.stderr)") }
      #expect(results.filter { $0.stdout.contains("Imported") }.count == 1, "round \(round): \(results.map(\.stdout))")
      #expect(try count("Venue", in: store) == 30, "round \(round)")
    }
  }

  @Test(arguments: ["sqlite", "lmdb"])
  func threeImportsAtOnceImportOnce(_ backend: String) throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "import-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let single = directory.appending(path: "single.\(backend)").path
    let alone = try Executables.run("tater-rater", ["import", "--seed", "1", "--store", backend, "--path", single])
    #expect(alone.status == 0, "\(alone.stderr)")
    let varieties = try #require(try count("Potato", in: single))
    for round in 0..<Self.rounds {
      let store = directory.appending(path: "r\(round).\(backend)").path
      let results = try runAtOnce(3, "tater-rater", ["import", "--seed", "\(round)", "--store", backend, "--path", store])
      for result in results {
        #expect(result.status == 0, "round \(round): \(result.stderr)")
        #expect(result.stderr.count < 300, "round \(round): one short line at most: \(result.stderr)")
      }
      #expect(try count("Potato", in: store) == varieties, "round \(round)")
    }
  }
}
