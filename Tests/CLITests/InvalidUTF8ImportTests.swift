import Foundation
import Testing

/// Import and seed files with a byte that is not UTF-8: one line naming the file, the byte's offset and
/// its line; exit 1; the store as it was (or none at all where there was none).
@Suite("invalid UTF-8 in import files")
struct InvalidUTF8ImportTests {
  /// A file of valid JSON text but for one 0xFF inside a string on line 3, and that byte's offset.
  static func badFile(_ head: String, _ tail: String) -> (Data, offset: Int) {
    let prefix = Array(head.utf8)
    return (Data(prefix + [0xFF] + Array(tail.utf8)), prefix.count)
  }

  @Test(arguments: ["sqlite", "lmdb"])
  func anImportFileThatIsNotUTF8IsRefusedAndTheStoreIsUnchanged(_ store: String) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let fireballs = directory + "/fireballs." + store
    #expect(try runBounded("fireball-watch", ["import", "--store", store, "--path", fireballs]).status == 0)
    let (data, offset) = Self.badFile(
      "{\"fields\": [\"date\", \"energy\"],\n\"data\": [\n[\"2024-01-01 00:00:00\", \"", "\"]]}\n")
    let file = directory + "/bad-fireballs.json"
    try data.write(to: URL(fileURLWithPath: file))
    try settle(fireballs, store)
    let before = try snapshot(directory)
    let imported = try runBounded("fireball-watch", ["import", "--file", file, "--store", store, "--path", fireballs])
    #expect(imported.status == 1, "\(imported.stderr)")
    #expect(isOneLineError(imported.stderr, tool: "fireball-watch"), "\(imported.stderr)")
    #expect(imported.stderr.contains(file) && imported.stderr.contains("offset \(offset) (line 3)"), "\(imported.stderr)")
    #expect(try snapshot(directory) == before, "the store is byte-identical")

    let (seedData, seedOffset) = Self.badFile(
      "{\"response\": {\"venues\": [\n{\"name\": \"Tea\", \"location\": {\"distance\": 1},\n\"stats\": {\"checkinsCount\": 1, \"usersCount\": 1, \"tipCount\": 0}, \"contact\": {\"phone\": \"",
      "\"}}]}}\n")
    let seed = directory + "/bad-seed.json"
    try seedData.write(to: URL(fileURLWithPath: seed))
    let venues = directory + "/venues." + store
    let seeded = try runBounded("bubble-tea-finder", ["seed", "--file", seed, "--store", store, "--path", venues])
    #expect(seeded.status == 1, "\(seeded.stderr)")
    #expect(isOneLineError(seeded.stderr, tool: "bubble-tea-finder"), "\(seeded.stderr)")
    #expect(
      seeded.stderr.contains("bad-seed.json") && seeded.stderr.contains("offset \(seedOffset) (line 3)"), "\(seeded.stderr)")
    #expect(!FileManager.default.fileExists(atPath: venues), "a refused seed leaves no store")
  }
}
