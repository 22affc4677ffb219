import Foundation
import StrataTestSupport
import Testing

@testable import StrataCore

@Suite struct StringSemanticsTests {
  @Test func codePointOrderWithoutOptions() {
    #expect(StringSemantics.compare("B", "a", .default) < 0)
    #expect(StringSemantics.compare("a", "a", .default) == 0)
    #expect(StringSemantics.compare("ab", "a", .default) > 0)
    // é (U+00E9) sorts after every ASCII letter by code point.
    #expect(StringSemantics.compare("é", "z", .default) > 0)
  }

  /// The byte comparison agrees with comparing the strings' Unicode scalars one by one, over random
  /// strings of one- to four-byte scalars (NUL and canonically equivalent spellings included), small and
  /// heap-allocated, with shared prefixes.
  @Test func codePointCompareAgreesWithScalarOrder() {
    let alphabet: [Unicode.Scalar] = ["\u{0}", "a", "B", "z", "\u{7F}", "\u{80}", "é", "e", "\u{301}", "ß", "\u{FFFF}", "😀", "中"]
    var random = SplitMix64(seed: 24)
    func string() -> String {
      var scalars = String.UnicodeScalarView()
      for _ in 0..<Int(random.next() % 24) { scalars.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
      return String(scalars)
    }
    func scalarOrder(_ a: String, _ b: String) -> Int {
      for (x, y) in zip(a.unicodeScalars, b.unicodeScalars) where x != y { return x.value < y.value ? -1 : 1 }
      let (m, n) = (a.unicodeScalars.count, b.unicodeScalars.count)
      return m == n ? 0 : (m < n ? -1 : 1)
    }
    for _ in 0..<2_000 {
      let a = string()
      let b = random.next() % 4 == 0 ? a + string() : string()
      #expect(
        StringSemantics.codePointCompare(a, b) == scalarOrder(a, b),
        "\(a.unicodeScalars.map(\.value)) vs \(b.unicodeScalars.map(\.value))")
      #expect(StringSemantics.codePointCompare(b, a) == scalarOrder(b, a))
      #expect(StringSemantics.codePointCompare(a, a) == 0)
    }
  }

  /// `withUTF8Contents` lends exactly the string's UTF-8, for small (inline, up to 15 bytes) and
  /// heap-allocated strings, empty and sliced ones. (Every string is contiguous on Linux: the fallback for
  /// a bridged one is not reachable here.)
  @Test func withUTF8ContentsLendsTheUTF8() {
    let heap = String(repeating: "Straße 😀 ", count: 8)
    let sliced = String(heap.dropFirst(3).prefix(40))
    let strings = ["", "a", "é", "exactly15bytes!", "sixteen bytes ok", heap, sliced, "nul\u{0}inside"]
    for string in strings {
      #expect(string.withUTF8Contents { Array($0) } == Array(string.utf8), "\(string.debugDescription)")
    }
  }

  @Test func caseFolding() throws {
    #expect(try StringSemantics.evaluate(.equalTo, "straße", "STRASSE", .caseInsensitive))
    #expect(try StringSemantics.evaluate(.equalTo, "HeAt", "heat", .caseInsensitive))
    #expect(try !StringSemantics.evaluate(.equalTo, "HeAt", "heat", []))
    #expect(try !StringSemantics.evaluate(.equalTo, "café", "CAFE", .caseInsensitive))
  }

  @Test func diacriticFolding() throws {
    #expect(try StringSemantics.evaluate(.equalTo, "café", "cafe", .diacriticInsensitive))
    #expect(try !StringSemantics.evaluate(.equalTo, "café", "CAFE", .diacriticInsensitive))
    #expect(try StringSemantics.evaluate(.equalTo, "Crème Brûlée", "CREME BRULEE", [.caseInsensitive, .diacriticInsensitive]))
    #expect(try StringSemantics.evaluate(.equalTo, "İ", "I", .diacriticInsensitive))
  }

  @Test func substringOperators() throws {
    #expect(try StringSemantics.evaluate(.contains, "Heat", "ea", []))
    #expect(try !StringSemantics.evaluate(.contains, "Heat", "", []))
    #expect(try !StringSemantics.evaluate(.beginsWith, "Heat", "", []))
    #expect(try !StringSemantics.evaluate(.endsWith, "Heat", "", []))
    #expect(try StringSemantics.evaluate(.beginsWith, "Heat", "HE", .caseInsensitive))
    #expect(try StringSemantics.evaluate(.endsWith, "Résumé", "sume", .diacriticInsensitive))
    #expect(try StringSemantics.evaluate(.in, "ea", "Heat", []))
  }

  @Test func like() {
    #expect(StringSemantics.like("Heat", "H*t", []))
    #expect(StringSemantics.like("Heat", "H??t", []))
    #expect(!StringSemantics.like("Heat", "H?t", []))
    #expect(!StringSemantics.like("Heat", "eat", []))
    #expect(StringSemantics.like("Heat", "*", []))
    #expect(StringSemantics.like("", "*", []))
    #expect(StringSemantics.like("HEAT", "h*", .caseInsensitive))
    #expect(!StringSemantics.like("HEAT", "h*", []))
    #expect(StringSemantics.like("a*b", "a\\*b", []))
    #expect(!StringSemantics.like("axb", "a\\*b", []))
  }

  @Test func matchesWholeString() throws {
    #expect(try StringSemantics.matches("Heat", "H.a.", []))
    #expect(try !StringSemantics.matches("Heat 2", "H.a.", []))
    #expect(try StringSemantics.matches("HEAT", "h.a.", .caseInsensitive))
    expectStoreError(.invalidQuery) { try StringSemantics.matches("x", "(", []) }
  }

  @Test func localizedStandardOrder() {
    #expect(StringSemantics.compare("File2", "file10", .localizedStandard) < 0)
    #expect(StringSemantics.compare("file10", "File2", .localizedStandard) > 0)
    #expect(StringSemantics.compare("a", "B", .localizedStandard) < 0)
    #expect(StringSemantics.compare("é", "f", .localizedStandard) < 0)
    // Equal apart from case or leading zeros: still a total order, broken by code point.
    #expect(StringSemantics.compare("a01", "a1", .localizedStandard) != 0)
    #expect(StringSemantics.compare("a01", "a1", .localizedStandard) == -StringSemantics.compare("a1", "a01", .localizedStandard))
    #expect(StringSemantics.compare("File", "file", .localizedStandard) < 0)
    let names = ["file10", "File2", "file1", "File1b", "file 3"]
    let sorted = names.sorted { StringSemantics.compare($0, $1, .localizedStandard) < 0 }
    #expect(sorted == ["file 3", "file1", "File1b", "File2", "file10"])
  }

  @Test func caseInsensitiveAndLocalizedBreakTiesByCodePoint() {
    #expect(StringSemantics.compare("apple", "Banana", .caseInsensitive) < 0)
    #expect(StringSemantics.compare("Apple", "apple", .caseInsensitive) < 0)
    #expect(StringSemantics.compare("apple", "Apple", .caseInsensitive) > 0)
    #expect(StringSemantics.compare("éclair", "eclair", .localized) > 0)
    #expect(StringSemantics.compare("éclair", "Ezra", .localized) < 0)
  }
}

@Suite("Standard compare, ASCII fast path")
struct StandardCompareFastPathTests {
  /// The ASCII path must order exactly as the scalar path: random strings of letters, digits (with
  /// leading zeros) and punctuation, compared both ways.
  @Test func asciiPathAgreesWithTheScalarPath() {
    var state: UInt64 = 0x5EED
    func next(_ bound: Int) -> Int {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int((state >> 33) % UInt64(bound))
    }
    let alphabet = Array("aAbBzZ0001239 -_.~")
    func word() -> String { String((0..<next(9)).map { _ in alphabet[next(alphabet.count)] }) }
    var disagreements: [String] = []
    for _ in 0..<20_000 {
      let a = word()
      let b = word()
      let fast = StringSemantics.localizedStandardCompare(a, b)
      let slow = StringSemantics.scalarStandardCompare(a, b)
      if fast.signum() != slow.signum() { disagreements.append("\(a) vs \(b): \(fast) / \(slow)") }
    }
    #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    #expect(StringSemantics.asciiStandardCompare("Amélie", "Amelie") == nil)
    #expect(StringSemantics.localizedStandardCompare("File2", "file10") < 0)
    #expect(StringSemantics.localizedStandardCompare("a01", "a1") != 0)
    #expect(StringSemantics.localizedStandardCompare("x0", "x00") == StringSemantics.scalarStandardCompare("x0", "x00"))
  }
}
