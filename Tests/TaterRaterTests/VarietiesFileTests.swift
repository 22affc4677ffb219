import Foundation
import Strata
import TaterRater
import Testing

/// A varieties file with a byte that is not UTF-8 is refused naming the file, the offset and the line.
@Suite struct VarietiesFileTests {
  @Test func aVarietiesFileThatIsNotUTF8IsRefusedNamingTheByte() throws {
    let url = FileManager.default.temporaryDirectory.appending(path: "varieties-\(UUID().uuidString).txt")
    defer { try? FileManager.default.removeItem(at: url) }
    let head = Array("Agria\nBintje\nLinda ".utf8)
    try Data(head + [0xC3, 0x28] + Array("\nNicola\n".utf8)).write(to: url)
    do {
      _ = try PotatoRater.varieties(in: url)
      Issue.record("a file that is not UTF-8 was read")
    } catch let error as StoreError {
      #expect(error.message.contains(url.path) && error.message.contains("offset \(head.count) (line 3)"), "\(error.message)")
    }
    try Data("Agria\nBintje\n".utf8).write(to: url)
    #expect(try PotatoRater.varieties(in: url) == ["Agria", "Bintje"])
  }
}
