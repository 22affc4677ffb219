import Foundation
import Testing

@testable import StrataCore

/// ``StringMatcher`` (the needle prepared once, the value folded on its UTF-8 with an ASCII fast path) must
/// answer exactly what ``StringSemantics/evaluate(_:_:_:_:)`` answers, string by string.
@Suite struct StringMatcherTests {
  /// Characters that interact with folding: ASCII letters, wildcards and CR/LF beside accents, combining
  /// marks (after ASCII and after non-ASCII), ß/ẞ, İ/ı, sigma, a ligature, the Kelvin and Ohm signs,
  /// U+0345 (a combining mark that case-folds to a letter), emoji with modifiers, Han.
  static let alphabet: [String] = [
    "a", "A", "e", "E", "i", "I", "k", "K", "s", "S", "f", "o", " ", "*", "?", "%", "_", "\\", "\r", "\n", "^", "`",
    "~", "é", "É", "e\u{301}", "\u{301}", "\u{308}", "\u{345}", "ß", "ẞ", "İ", "ı", "i\u{307}", "Σ", "σ", "ς",
    "\u{FB01}", "\u{212A}", "\u{2126}", "Ω", "ῼ", "👩", "🏽", "\u{200D}", "中", "ǅ", "ﬀ", "Å", "\u{30A}",
  ]

  static func randomString(_ random: inout SplitMix64, maxLength: Int) -> String {
    var s = ""
    for _ in 0..<Int(random.next() % UInt64(maxLength + 1)) {
      // Mostly ASCII, as real text is, with runs of everything else.
      if random.next() % 3 == 0 {
        s += alphabet[Int(random.next() % UInt64(alphabet.count))]
      } else {
        s += alphabet[Int(random.next() % 22)]
      }
    }
    return s
  }

  static let allOptions: [StringOptions] = [
    [], [.caseInsensitive], [.diacriticInsensitive], [.caseInsensitive, .diacriticInsensitive], [.normalized],
    [.caseInsensitive, .normalized],
  ]

  @Test func foldingPieceByPieceIsFoldingTheWhole() {
    var random = SplitMix64(seed: 42)
    for _ in 0..<3_000 {
      let s = Self.randomString(&random, maxLength: 16)
      for options in Self.allOptions where !options.contains(.normalized) && !options.isEmpty {
        var out: [UInt8] = []
        s.withUTF8Contents { StringSemantics.appendFolded($0, options, into: &out) }
        let whole = Array(StringSemantics.fold(s, options).utf8)
        #expect(out == whole, "\(s.unicodeScalars.map { String($0.value, radix: 16) }) \(options)")
      }
    }
  }

  @Test func matcherAgreesWithTheReference() throws {
    var random = SplitMix64(seed: 7)
    let operators: [ComparisonOperator] = [
      .equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo, .contains,
      .beginsWith, .endsWith, .in, .like,
    ]
    for _ in 0..<1_500 {
      let value = Self.randomString(&random, maxLength: 14)
      var needle = Self.randomString(&random, maxLength: 4)
      if random.next() % 4 == 0, !value.isEmpty {
        // A piece of the value, so that positive answers are common.
        let scalars = Array(value.unicodeScalars)
        let start = Int(random.next() % UInt64(scalars.count))
        let end = min(scalars.count, start + 1 + Int(random.next() % 5))
        needle = String(String.UnicodeScalarView(scalars[start..<end]))
      }
      for op in operators {
        for options in Self.allOptions {
          let operand = op == .like && random.next() % 2 == 0 ? "*" + needle + "*" : needle
          let expected = try StringSemantics.evaluate(op, value, operand, options)
          let matcher = try StringMatcher(op, operand, options)
          #expect(
            try matcher.matches(value) == expected,
            "\(value.unicodeScalars.map { String($0.value, radix: 16) }) \(op.rawValue) \(operand.unicodeScalars.map { String($0.value, radix: 16) }) \(options)"
          )
        }
      }
    }
  }

  @Test func matchesCompilesOnceAndAnswersAlike() throws {
    for (pattern, options) in [("Zo. .*", StringOptions()), ("zo. .*", [.caseInsensitive]), ("Zoe .*", [.diacriticInsensitive])] {
      let matcher = try StringMatcher(.matches, pattern, options)
      for value in ["Zoë Kravitz", "Zoe\u{308} K", "zoe x", "ZOË", ""] {
        #expect(try matcher.matches(value) == (try StringSemantics.matches(value, pattern, options)))
      }
    }
    #expect(throws: StoreError.self) { try StringMatcher(.matches, "(", []) }
  }

  @Test func asciiFastPathsNeedNoString() throws {
    let matcher = try StringMatcher(.contains, "NUMBER 99999 ", [.caseInsensitive, .diacriticInsensitive])
    let bytes = Array("Movie number 99999 with a somewhat longer title".utf8)
    #expect(try bytes.withUnsafeBufferPointer { try matcher.matches(utf8: $0) })
    #expect(try !matcher.matches("Movie number 999990 with"))
    // A needle with non-ASCII text never occurs in ASCII text, and an empty one nowhere.
    #expect(try !StringMatcher(.contains, "é", [.caseInsensitive]).matches("e"))
    #expect(try !StringMatcher(.contains, "", [.caseInsensitive]).matches("anything"))
    #expect(try !StringMatcher(.contains, "\u{301}", [.diacriticInsensitive]).matches("é"))
  }
}
