import Foundation
import Strata
import StrataStoreKit
import Testing

extension Conformance {
  /// Names chosen to break a fast string path: SQL and `LIKE` wildcards, a backslash, "ß" and "ẞ", dotted
  /// and dotless i, final and medial sigma, decomposed and precomposed accents (and a combining mark
  /// right after ASCII), the Kelvin sign, CR LF (one `Character`), long ASCII text with one accent in the
  /// middle, and the empty string. Not among them yet: a character whose full case folding differs from
  /// its lowercase ("ﬁ" folds to "fi", U+0345 to "ι", "µ" to "μ"), which PostgreSQL's `lower()` keeps.
  static let trickyNames: [String] = [
    "Straße 5%", "STRASSE", "strasse_x", "GROẞE", "a*b?c", "100% pure", "under_score", "back\\slash",
    "Zoe\u{301} decomposed", "Zo\u{E9} precomposed", "cafe\u{301}", "café", "İstanbul", "istanbul", "ıstanbul",
    "i\u{307}stanbul", "ΟΔΟΣ", "οδος", "ὀδός", "FILE", "\u{212A}elvin", "Kelvin", "line\r\nbreak",
    "line\nbreak", "", "Movie number 99999 with a somewhat longer title",
    "Movie NUMBER 99999 with an \u{E9}l\u{E8}ve in it", "Ǆ digraph", "👩🏽‍🚀 Astronaut", "宋康昊",
    "%_*?\\", "ends with space ",
  ]

  /// Right sides for `==`, `CONTAINS`, `BEGINSWITH` and `ENDSWITH`.
  static let trickyNeedles: [String] = [
    "ß", "SS", "ss", "ẞ", "%", "_", "*", "?", "\\", "", " ", "É", "e\u{301}", "é", "e", "\u{301}", "İ", "i\u{307}",
    "i", "I", "ı", "Σ", "ς", "σ", "ΟΣ", "fi", "FI", "\u{FB01}", "K", "k", "\u{212A}", "\r\n", "\n", "\r",
    "NUMBER 99999 ", "number 99999 w", "title", "ÉLÈVE", "eleve", "\u{345}", "ι", "ǆ", "Ǆ", "🏽", "康", "%_",
    "Straße 5%", "strasse", "STRASSE", "GROSSE", "café", "cafe", "Istanbul", "istanbul",
  ]

  /// `LIKE` patterns with wildcards, escapes and the same tricky characters.
  static let trickyPatterns: [String] = [
    "*", "?", "*%*", "*_*", "*\\**", "*\\?*", "*\\\\*", "*\\\\", "stra?e*", "STRA?E*", "*ß*", "*ss*", "caf?",
    "cafe*", "Zo? *", "Zoe? *", "?stanbul", "İ*", "i*", "*ος", "*ΟΣ", "?le", "fi*", "K*", "line?break", "line??break",
    "*99999 *", "*NUMBER 99999 *", "*élève*", "*eleve*", "x?y", "x??y", "? Astronaut", "???", "", "\\", "a\\*b?c",
    "%_\\*\\?\\\\", "*space ", "back\\slash", "back\\\\slash",
  ]

  /// A store holding an actor for each of ``trickyNames``, read by a fresh context; and whether the
  /// backend's `LIKE` is known to diverge (PostgreSQL translates `LIKE` to a regular expression over code
  /// points: a `?` or a literal there does not take a whole `Character` ("i*" finds "i\u{307}stanbul",
  /// "cafe*" finds "cafe\u{301}", "line?break" misses CR LF), and `\` always escapes. Known, not yet
  /// fixed: its `LIKE` answers are recorded as known issues rather than failures).
  static func trickyNamesStore(_ backend: ConformanceBackend) throws -> (context: ObjectContext, likeDiverges: Bool) {
    let url = try backend.makeLocation()
    let container = try backend.container(at: url)
    let writer = container.viewContext
    for name in trickyNames {
      let actor = Actor(context: writer)
      actor.name = name
    }
    try writer.save()
    return (try backend.freshContext(container, url), backend.factory.storeType.rawValue == "postgres")
  }

  /// Every string operator under every option, on ``trickyNames``, must answer what
  /// ``StringSemantics/evaluate(_:_:_:_:)`` (the reference, string by string) answers.
  static func stringOperatorsAnswerAsTheReference(_ backend: ConformanceBackend) throws {
    let (context, likeDiverges) = try trickyNamesStore(backend)
    let allOptions: [String] = ["", "[c]", "[d]", "[cd]", "[n]"]
    let byOperator: [(ComparisonOperator, [String])] = [
      (.equalTo, trickyNeedles), (.contains, trickyNeedles), (.beginsWith, trickyNeedles), (.endsWith, trickyNeedles),
      (.like, trickyPatterns),
    ]
    // PostgreSQL translates `LIKE` to a regular expression over code points: a `?` or a literal there does
    // not take a whole `Character` ("i*" finds "i\u{307}stanbul", "cafe*" finds "cafe\u{301}", "line?break"
    // misses CR LF), and `\` always escapes. Known, not yet fixed: its `LIKE` answers are recorded as known
    // issues rather than failures.
    for (op, operands) in byOperator {
      for suffix in allOptions {
        let options = try optionSet(suffix)
        for operand in operands {
          let expected = try trickyNames.filter { try StringSemantics.evaluate(op, $0, operand, options) }
          let format = "name \(op.rawValue)\(suffix) %@"
          let names = try exactNames(context, format, operand)
          if op == .like && likeDiverges {
            withKnownIssue("PostgreSQL LIKE works on code points", isIntermittent: true) {
              #expect(names.fetched == utf8(expected), "\(format) with \(operand.debugDescription)")
            }
            continue
          }
          #expect(names.fetched == utf8(expected), "\(format) with \(operand.debugDescription)")
          #expect(names.counted == expected.count, "count of \(format) with \(operand.debugDescription)")
        }
      }
    }
  }

  /// `MATCHES` with options answers what ``StringSemantics/matches(_:_:_:)`` answers.
  static func matchesAnswersAsTheReference(_ backend: ConformanceBackend) throws {
    let (context, _) = try trickyNamesStore(backend)
    for (pattern, suffix) in [("Zo. .*", ""), ("zo. .*", "[c]"), ("Zoe .*", "[d]"), ("stra(ss|ß)e.*", "[c]"), (".*99999.*", "")] {
      let expected = try trickyNames.filter { try StringSemantics.matches($0, pattern, try optionSet(suffix)) }
      let names = try exactNames(context, "name MATCHES\(suffix) %@", pattern)
      #expect(names.fetched == utf8(expected), "MATCHES\(suffix) \(pattern)")
    }
  }

  /// A few answers written by hand, from docs/QUERY-SEMANTICS.md, so that the reference cannot drift with
  /// the backends.
  static func stringAnswersWrittenByHand(_ backend: ConformanceBackend) throws {
    let (context, likeDiverges) = try trickyNamesStore(backend)
    let handCases: [(String, String, [String])] = [
      ("name CONTAINS %@", "%", ["Straße 5%", "100% pure", "%_*?\\"]),
      ("name CONTAINS %@", "_", ["strasse_x", "under_score", "%_*?\\"]),
      ("name CONTAINS %@", "", []),
      ("name CONTAINS[cd] %@", "", []),
      ("name CONTAINS[c] %@", "ss", ["Straße 5%", "STRASSE", "strasse_x", "GROẞE"]),
      ("name ==[c] %@", "strasse", ["STRASSE"]),
      ("name BEGINSWITH[c] %@", "i", ["İstanbul", "istanbul", "i\u{307}stanbul"]),
      ("name ==[c] %@", "istanbul", ["istanbul"]),
      ("name ==[cd] %@", "istanbul", ["İstanbul", "istanbul", "i\u{307}stanbul"]),
      ("name ==[c] %@", "zoé precomposed", ["Zo\u{E9} precomposed"]),
      ("name BEGINSWITH[c] %@", "zoé", ["Zoe\u{301} decomposed", "Zo\u{E9} precomposed"]),
      ("name ==[c] %@", "café", ["cafe\u{301}", "café"]),
      ("name == %@", "café", ["café"]),
      (
        "name CONTAINS[c] %@", "number 99999 ",
        ["Movie number 99999 with a somewhat longer title", "Movie NUMBER 99999 with an \u{E9}l\u{E8}ve in it"]
      ),
      ("name CONTAINS[cd] %@", "ELEVE", ["Movie NUMBER 99999 with an \u{E9}l\u{E8}ve in it"]),
      ("name ENDSWITH %@", " ", ["ends with space "]),
      ("name LIKE %@", "*%*", ["Straße 5%", "100% pure", "%_*?\\"]),
      ("name LIKE %@", "a\\*b\\?c", ["a*b?c"]),
      ("name LIKE %@", "line?break", ["line\r\nbreak", "line\nbreak"]),
      // Folded, "ß" is "ss": two characters for `?`.
      ("name LIKE[c] %@", "stra?e*", []),
      ("name LIKE[c] %@", "stra??e*", ["Straße 5%", "STRASSE", "strasse_x"]),
      ("name LIKE %@", "Stra?e*", ["Straße 5%"]),
      ("name ==[c] %@", "ΟΔΟΣ", ["ΟΔΟΣ", "οδος"]),
      ("name ==[cd] %@", "οδος", ["ΟΔΟΣ", "οδος", "ὀδός"]),
    ]
    for (format, operand, expected) in handCases {
      let names = try exactNames(context, format, operand)
      if likeDiverges && format.contains("LIKE") {
        withKnownIssue("PostgreSQL LIKE works on code points", isIntermittent: true) {
          #expect(names.fetched == utf8(expected), "\(format) with \(operand.debugDescription)")
        }
        continue
      }
      #expect(names.fetched == utf8(expected), "\(format) with \(operand.debugDescription)")
    }
  }

  /// The names an actor fetch finds, as their UTF-8 in order (a `Set<String>` would merge canonically
  /// equivalent names, "café" and "cafe\u{301}"), and the count the store gives.
  private static func exactNames(
    _ context: ObjectContext, _ format: String, _ operand: String
  ) throws -> (
    fetched: [[UInt8]], counted: Int
  ) {
    let request = try FetchRequest<Actor>(format: format, argumentArray: [operand])
    return (utf8(try context.fetch(request).map(\.name)), try context.count(for: request))
  }

  private static func utf8(_ names: [String]) -> [[UInt8]] {
    names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
  }

  private static func optionSet(_ suffix: String) throws -> StringOptions {
    var options: StringOptions = []
    if suffix.contains("c") { options.insert(.caseInsensitive) }
    if suffix.contains("d") { options.insert(.diacriticInsensitive) }
    if suffix.contains("n") { options.insert(.normalized) }
    return options
  }
}
