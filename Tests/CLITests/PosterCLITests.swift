import Foundation
import Testing

/// `fave-flicks poster`: a multi-megabyte image stored with `--file` comes back byte for byte with
/// `--output` on every backend, kept beside a file store (in `<store>_SUPPORT/_EXTERNAL_DATA/`), not in
/// its rows.
@Suite("fave-flicks poster")
struct PosterCLITests {
  /// 3 MiB of bytes that repeat nowhere a compressor or a page could share (a xorshift sequence).
  static let image: Data = {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var bytes = [UInt8](repeating: 0, count: 3 << 20)
    for index in bytes.indices {
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      bytes[index] = UInt8(truncatingIfNeeded: state)
    }
    return Data(bytes)
  }()

  @Test(arguments: ["sqlite", "lmdb", "postgres"])
  func aPosterRoundTripsByteForByte(_ store: String) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = store == "postgres" ? try PostgresServer.freshLocation() : directory + "/FaveFlicks." + store
    let flags = ["--store", store, "--path", path]
    let image = directory + "/poster.png"
    try Self.image.write(to: URL(fileURLWithPath: image))
    let added = try faveFlicks(
      ["add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15"] + flags)
    #expect(added.status == 0, "\(added.stderr)")

    let stored = try faveFlicks(["poster", "--title", "Heat", "--file", image] + flags)
    #expect(stored.status == 0, "\(stored.stderr)")
    #expect(stored.stdout == "Stored a poster of \(Self.image.count) bytes for Heat\n")
    if store != "postgres" {
      let files = try FileManager.default.contentsOfDirectory(atPath: path + "_SUPPORT/_EXTERNAL_DATA")
      #expect(files.count == 1, "the poster is kept beside the store: \(files)")
    }

    let output = directory + "/out.png"
    let written = try faveFlicks(["poster", "--title", "Heat", "--output", output] + flags)
    #expect(written.status == 0, "\(written.stderr)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == Self.image, "byte-identical")
  }

  @Test func mistakesAreOneLineErrors() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = directory + "/FaveFlicks.sqlite"
    _ = try faveFlicks("add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--path", store)

    let none = try faveFlicks("poster", "--title", "Heat", "--output", directory + "/out.png", "--path", store)
    #expect(none.status == 1)
    #expect(none.stderr == "fave-flicks: error: Heat has no poster\n")
    let missing = try faveFlicks("poster", "--title", "Heat", "--file", directory + "/nothing.png", "--path", store)
    #expect(missing.status == 1)
    #expect(missing.stderr.hasPrefix("fave-flicks: error: cannot read \(directory)/nothing.png"), "\(missing.stderr)")
    #expect(missing.stderr.split(separator: "\n").count == 1)
    let unknown = try faveFlicks("poster", "--title", "Ran", "--output", directory + "/out.png", "--path", store)
    #expect(unknown.status == 1)
    #expect(unknown.stderr == "fave-flicks: error: no movie is titled 'Ran'\n")
    let neither = try faveFlicks("poster", "--title", "Heat", "--path", store)
    #expect(neither.status == 64, "\(neither.stderr)")
    #expect(neither.stderr.contains("--file IMAGE"))
    let help = try faveFlicks("poster", "--help")
    #expect(help.status == 0)
    for flag in ["--title", "--file <IMAGE>", "--output <FILE>", "--store", "--path"] {
      #expect(help.stdout.contains(flag), "\(flag) in \(help.stdout)")
    }
  }

  /// Posters are read only when asked for: with the stored image gone, the list still shows the movie and
  /// `--output` fails with one line naming the missing value.
  @Test(arguments: ["sqlite", "lmdb"])
  func aMissingPosterFailsOnlyTheCommandThatReadsIt(_ store: String) throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/FaveFlicks." + store
    let flags = ["--store", store, "--path", path]
    let image = directory + "/poster.png"
    try Self.image.write(to: URL(fileURLWithPath: image))
    _ = try faveFlicks(["add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15"] + flags)
    let stored = try faveFlicks(["poster", "--title", "Heat", "--file", image] + flags)
    #expect(stored.status == 0, "\(stored.stderr)")
    let external = path + "_SUPPORT/_EXTERNAL_DATA"
    for file in try FileManager.default.contentsOfDirectory(atPath: external) {
      try FileManager.default.removeItem(atPath: external + "/" + file)
    }

    let listed = try faveFlicks(["list"] + flags)
    #expect(listed.status == 0, "\(listed.stderr)")
    #expect(listed.stdout.contains("Heat"))
    let written = try faveFlicks(["poster", "--title", "Heat", "--output", directory + "/out.png"] + flags)
    #expect(written.status == 1)
    #expect(
      written.stderr.hasPrefix("fave-flicks: error: the value of Movie.poster kept in external storage"), "\(written.stderr)")
    #expect(written.stderr.split(separator: "\n").count == 1)
  }
}

func faveFlicks(_ arguments: [String]) throws -> CommandResult {
  try Executables.run("fave-flicks", arguments)
}

@Suite("strata copy with posters")
struct PosterCopyCLITests {
  @Test func strataCopyCarriesThePosters() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let source = directory + "/FaveFlicks.sqlite"
    let image = directory + "/poster.png"
    try PosterCLITests.image.write(to: URL(fileURLWithPath: image))
    _ = try faveFlicks("add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--path", source)
    let stored = try faveFlicks("poster", "--title", "Heat", "--file", image, "--path", source)
    #expect(stored.status == 0, "\(stored.stderr)")

    let copy = directory + "/Copy.lmdb"
    let copied = try Executables.run("strata", ["copy", source, copy, "--to", "lmdb"])
    #expect(copied.status == 0, "\(copied.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: copy + "_SUPPORT/_EXTERNAL_DATA").count == 1)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { !$0.contains(".partial-") },
      "nothing of the staged copy is left")
    let output = directory + "/out.png"
    let written = try faveFlicks("poster", "--title", "Heat", "--output", output, "--store", "lmdb", "--path", copy)
    #expect(written.status == 0, "\(written.stderr)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == PosterCLITests.image)
  }
}
