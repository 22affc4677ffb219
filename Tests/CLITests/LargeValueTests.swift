import Foundation
import Testing

/// Strings of a mebibyte and more through the apps' write paths into SQLite and LMDB stores: they come
/// back exact in JSON, and a table shows them cut with their length instead of widening every line.
@Suite("large values")
struct LargeValueTests {
  /// `count` characters of mixed text (one to three UTF-8 bytes each), starting with `tag`.
  static func text(_ tag: String, characters count: Int) -> String {
    let unit = "aé€b"
    return tag + String(String(repeating: unit, count: count / unit.count + 1).prefix(count - tag.count))
  }

  @Test(arguments: ["sqlite", "lmdb"])
  func aMebibyteVenueNameRoundTripsThroughASeedFile(_ store: String) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let name = Self.text("Venue ", characters: 1 << 20)
    let address = Self.text("Street ", characters: 1 << 20)
    let venue: [String: Any] = [
      "name": name, "location": ["distance": 5, "address": address],
      "stats": ["checkinsCount": 1, "usersCount": 1, "tipCount": 0],
    ]
    let seed = directory + "/big-seed.json"
    try JSONSerialization.data(withJSONObject: ["response": ["venues": [venue]]]).write(to: URL(fileURLWithPath: seed))
    let path = directory + "/store." + store

    let seeded = try runBounded("bubble-tea-finder", ["seed", "--file", seed, "--store", store, "--path", path])
    #expect(seeded.status == 0, "\(seeded.stderr)")
    let json = try runBounded("bubble-tea-finder", ["list", "--json", "--store", store, "--path", path])
    #expect(json.status == 0, "\(json.stderr)")
    let venues = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
    #expect(venues?.count == 1)
    #expect(venues?.first?["name"] as? String == name, "the name comes back exact")

    let table = try runBounded("bubble-tea-finder", ["list", "--store", store, "--path", path])
    #expect(table.status == 0, "\(table.stderr)")
    #expect(table.stdout.contains(String(name.prefix(200)) + "… (\(name.count) characters)"), "\(table.stdout.prefix(600))")
    #expect(table.stdout.split(separator: "\n").allSatisfy { $0.count < 1_000 }, "no line is widened by the value")
  }

  /// Linux takes at most 128 KiB in one command-line argument (`MAX_ARG_STRLEN`); 100,000 characters
  /// (up to 250 KB of UTF-8) is what a command line can carry.
  @Test(arguments: ["sqlite", "lmdb"])
  func theLongestArgumentsRoundTripThroughTheCommandLine(_ store: String) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let title = Self.text("Title ", characters: 40_000)
    let flicks = directory + "/flicks." + store
    let added = try runBounded(
      "fave-flicks",
      ["add", "--title", title, "--genre", "Drama", "--release-date", "2020-01-01", "--store", store, "--path", flicks])
    #expect(added.status == 0, "\(added.stderr.prefix(300))")
    let twice = try runBounded(
      "fave-flicks",
      ["add", "--title", title, "--genre", "Drama", "--release-date", "2021-01-01", "--store", store, "--path", flicks])
    #expect(twice.status == 0, "a second movie of the same long title: \(twice.stderr.prefix(300))")
    let movies = try runBounded("fave-flicks", ["list", "--json", "--store", store, "--path", flicks])
    let rows = try JSONSerialization.jsonObject(with: Data(movies.stdout.utf8)) as? [[String: Any]]
    #expect(rows?.compactMap { $0["title"] as? String } == [title, title])

    // A group name is one line of at most 100 characters: a long one is refused in one line, the longest
    // allowed (multi-byte) round-trips and stays unique.
    let fireballs = directory + "/fireballs." + store
    let tooLong = try runBounded(
      "fireball-watch", ["group", "create", Self.text("Group ", characters: 40_000), "--store", store, "--path", fireballs])
    #expect(
      tooLong.status == 1 && isOneLineError(tooLong.stderr, tool: "fireball-watch")
        && tooLong.stderr.contains("at most 100 characters"), "\(tooLong.stderr.prefix(300))")
    let group = Self.text("Group ", characters: 100)
    let created = try runBounded("fireball-watch", ["group", "create", group, "--store", store, "--path", fireballs])
    #expect(created.status == 0, "\(created.stderr.prefix(300))")
    let again = try runBounded("fireball-watch", ["group", "create", group, "--store", store, "--path", fireballs])
    #expect(
      again.status == 1 && isOneLineError(again.stderr, tool: "fireball-watch"),
      "a group name is unique: \(again.stderr.prefix(300))")
    let groups = try runBounded("fireball-watch", ["groups", "--json", "--store", store, "--path", fireballs])
    let listed = try JSONSerialization.jsonObject(with: Data(groups.stdout.utf8)) as? [[String: Any]]
    #expect(listed?.compactMap { $0["name"] as? String } == [group])
  }
}
