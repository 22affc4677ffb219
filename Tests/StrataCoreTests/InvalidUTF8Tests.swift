import Foundation
import StrataCore
import Testing

/// `InvalidUTF8.first(in:)` against inputs built as a valid prefix, one ill-formed sequence, and a tail:
/// the offset is the prefix's length and the line one more than the prefix's newlines.
@Suite struct InvalidUTF8Tests {
  static let bad: [(String, [UInt8])] = [
    ("a lone continuation byte", [0x80]), ("0xFF", [0xFF]), ("0xFE", [0xFE]), ("an overlong slash", [0xC0, 0xAF]),
    ("an overlong three-byte form", [0xE0, 0x80, 0xAF]), ("a surrogate", [0xED, 0xA0, 0x80]),
    ("past U+10FFFF", [0xF4, 0x90, 0x80, 0x80]), ("a five-byte lead", [0xF8, 0x88, 0x80, 0x80, 0x80]),
    ("a truncated euro sign", [0xE2, 0x82]), ("a lead byte then ASCII", [0xC3, 0x41]),
  ]

  @Test(arguments: bad.map(\.0))
  func theFirstBadByteIsFoundWithItsLine(_ name: String) throws {
    let sequence = try #require(Self.bad.first { $0.0 == name }).1
    for prefix in ["", "plain", "line one\nline two é€😀\n", String(repeating: "ü", count: 5_000) + "\n\n"] {
      for tail in [[], Array("rest\n".utf8), [0xFF]] as [[UInt8]] {
        let data = Data(Array(prefix.utf8) + sequence + tail)
        let found = try #require(InvalidUTF8.first(in: data), "\(name) after \(prefix.count) characters")
        #expect(found.offset == prefix.utf8.count)
        #expect(found.line == 1 + prefix.filter { $0 == "\n" }.count)
        #expect(found.byte == sequence[0])
        #expect(String(validating: data, as: UTF8.self) == nil, "the oracle agrees the data is not UTF-8")
      }
    }
  }

  @Test func validTextHasNoBadByte() {
    for text in ["", "ascii", "é€😀\u{10FFFF}\u{FEFF}", String(repeating: "日本語\n", count: 10_000)] {
      #expect(InvalidUTF8.first(in: Data(text.utf8)) == nil)
    }
    #expect(InvalidUTF8(offset: 17, line: 2, byte: 0xFF).description == "invalid byte 0xFF at offset 17 (line 2)")
  }
}
