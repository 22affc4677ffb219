import Foundation

/// String comparison rules shared by every backend: the SQLite store registers these functions as SQL
/// functions and collations, the in-memory evaluator calls them directly, so both give the same answers.
///
/// - Without options, strings compare literally, by Unicode code point (the order of their UTF-8 bytes),
///   which is also SQLite's `BINARY` collation and NSString's literal comparison: "é" (U+00E9) and
///   "e" + U+0301 differ, as they do in Core Data's SQLite store.
/// - `[c]` folds case (full, locale-independent Unicode case folding: "ß" matches "SS", "ς" matches "Σ",
///   "İ" folds to "i̇", so `[c]` does not equate "İ" and "i" but `[cd]` does); `[d]` removes diacritics
///   ("é" matches "e"). Under either, canonically equivalent strings are equal: both sides are brought
///   to their canonical composition (NFC) after folding.
/// - `[n]` says the operands are already normalized and, as in NSPredicate, supersedes `[c]` and `[d]`:
///   the comparison is literal.
/// - `LIKE` works on user-perceived characters (`?` is one `Character`, so `Zo?` matches "Zoë" whether
///   "ë" is one code point or two), each compared code point by code point as above; `MATCHES` is an ICU
///   regular expression, whose `.` is one code point.
/// - ``StringComparator/localizedStandard`` orders like Finder: case- and diacritic-insensitive, digit
///   runs compared as numbers ("File2" < "file10"); ties are broken by code point so order is total.
public enum StringSemantics {
  /// `s` folded for a comparison with `options`: the canonical form two strings share when they match
  /// under those options.
  public static func fold(_ s: String, _ options: StringOptions) -> String {
    if options.contains(.normalized) { return s }
    var foldOptions: String.CompareOptions = []
    if options.contains(.caseInsensitive) { foldOptions.insert(.caseInsensitive) }
    if options.contains(.diacriticInsensitive) { foldOptions.insert(.diacriticInsensitive) }
    if foldOptions.isEmpty { return s }
    if s.utf8.allSatisfy({ $0 < 0x80 }) {
      return foldOptions.contains(.caseInsensitive) ? s.lowercased() : s
    }
    // Foundation's fold applies full case folding ("ß" and "ẞ" become "ss") but keeps the composition
    // it was given, so canonical equivalents need composing (NFC) on top.
    return s.folding(options: foldOptions, locale: nil).precomposedStringWithCanonicalMapping
  }

  /// Three-way code-point comparison: negative, zero or positive.
  ///
  /// UTF-8 keeps code-point order byte by byte, so the strings' contiguous UTF-8 is compared with one
  /// `memcmp` (iterating the two `utf8` views cost ~30 instructions a byte).
  ///
  /// ```swift
  /// StringSemantics.codePointCompare("B", "a")   // -1: "B" is U+0042, "a" U+0061
  /// ```
  @inlinable
  public static func codePointCompare(_ a: String, _ b: String) -> Int {
    a.withUTF8Contents { x in b.withUTF8Contents { y in StringMatcher.compare(x, y) } }
  }

  /// Three-way comparison of `a` and `b` under `comparator`: negative, zero or positive.
  public static func compare(_ a: String, _ b: String, _ comparator: StringComparator) -> Int {
    switch comparator {
    case .default:
      return codePointCompare(a, b)
    case .caseInsensitive:
      let r = codePointCompare(fold(a, .caseInsensitive), fold(b, .caseInsensitive))
      return r != 0 ? r : codePointCompare(a, b)
    case .localized:
      let options: StringOptions = [.caseInsensitive, .diacriticInsensitive]
      let r = codePointCompare(fold(a, options), fold(b, options))
      return r != 0 ? r : codePointCompare(a, b)
    case .localizedStandard:
      return localizedStandardCompare(a, b)
    }
  }

  /// Finder-style comparison: case- and diacritic-insensitive, with runs of decimal digits compared by
  /// numeric value ("File2" < "file10", "a01" == "a1" then broken by code point). Total and deterministic.
  public static func localizedStandardCompare(_ a: String, _ b: String) -> Int {
    if let ascii = asciiStandardCompare(a, b) { return ascii != 0 ? ascii : codePointCompare(a, b) }
    return scalarStandardCompare(a, b)
  }

  /// ``localizedStandardCompare(_:_:)`` for any strings, scalar by scalar.
  static func scalarStandardCompare(_ a: String, _ b: String) -> Int {
    let fa = Array(fold(a, [.caseInsensitive, .diacriticInsensitive]).unicodeScalars)
    let fb = Array(fold(b, [.caseInsensitive, .diacriticInsensitive]).unicodeScalars)
    var i = 0
    var j = 0
    while i < fa.count && j < fb.count {
      let ca = fa[i]
      let cb = fb[j]
      if let da = digit(ca), let db = digit(cb) {
        _ = da
        _ = db
        let startA = i
        let startB = j
        while i < fa.count, digit(fa[i]) != nil { i += 1 }
        while j < fb.count, digit(fb[j]) != nil { j += 1 }
        let r = compareDigitRuns(fa[startA..<i], fb[startB..<j])
        if r != 0 { return r }
        continue
      }
      if ca != cb { return ca.value < cb.value ? -1 : 1 }
      i += 1
      j += 1
    }
    if i < fa.count { return 1 }
    if j < fb.count { return -1 }
    return codePointCompare(a, b)
  }

  /// ``localizedStandardCompare(_:_:)`` of two ASCII strings before the final code-point tie break,
  /// without allocating (folding ASCII is lowercasing, and its only decimal digits are 0–9); `nil` when
  /// either string is not ASCII.
  static func asciiStandardCompare(_ first: String, _ second: String) -> Int? {
    first.withUTF8Contents { x in
      second.withUTF8Contents { y -> Int? in
        guard x.allSatisfy({ $0 < 0x80 }), y.allSatisfy({ $0 < 0x80 }) else { return nil }
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        func lower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c + 32 : c }
        var i = 0
        var j = 0
        while i < x.count && j < y.count {
          if isDigit(x[i]) && isDigit(y[j]) {
            var endI = i
            var endJ = j
            while endI < x.count, isDigit(x[endI]) { endI += 1 }
            while endJ < y.count, isDigit(y[endJ]) { endJ += 1 }
            while i < endI - 1, x[i] == 0x30 { i += 1 }
            while j < endJ - 1, y[j] == 0x30 { j += 1 }
            if x[i] == 0x30 && endI - i == 1 { i = endI }
            if y[j] == 0x30 && endJ - j == 1 { j = endJ }
            if endI - i != endJ - j { return endI - i < endJ - j ? -1 : 1 }
            while i < endI {
              if x[i] != y[j] { return x[i] < y[j] ? -1 : 1 }
              i += 1
              j += 1
            }
            i = endI
            j = endJ
            continue
          }
          let ca = lower(x[i])
          let cb = lower(y[j])
          if ca != cb { return ca < cb ? -1 : 1 }
          i += 1
          j += 1
        }
        if i < x.count { return 1 }
        if j < y.count { return -1 }
        return 0
      }
    }
  }

  private static func digit(_ s: Unicode.Scalar) -> UInt32? {
    s.properties.numericType == .decimal ? UInt32(s.properties.numericValue ?? 0) : nil
  }

  private static func compareDigitRuns(_ a: ArraySlice<Unicode.Scalar>, _ b: ArraySlice<Unicode.Scalar>) -> Int {
    let da = a.drop { digit($0) == 0 }.map { digit($0) ?? 0 }
    let db = b.drop { digit($0) == 0 }.map { digit($0) ?? 0 }
    if da.count != db.count { return da.count < db.count ? -1 : 1 }
    for (x, y) in zip(da, db) where x != y { return x < y ? -1 : 1 }
    return 0
  }

  /// Whether `value` matches the `LIKE` pattern (`*` any run of characters, `?` one character),
  /// under `options`. The whole string must match.
  public static func like(_ value: String, _ pattern: String, _ options: StringOptions) -> Bool {
    like(Array(fold(value, options)), Array(fold(pattern, options)))
  }

  /// ``like(_:_:_:)`` of the folded value's characters `v` against the folded pattern's `p`.
  static func like(_ v: [Character], _ p: [Character]) -> Bool {
    var vi = 0
    var pi = 0
    var starP = -1
    var starV = 0
    while vi < v.count {
      if pi < p.count, p[pi] == "\\", pi + 1 < p.count, p[pi + 1] == v[vi] {
        vi += 1
        pi += 2
      } else if pi < p.count, p[pi] == "?" || (p[pi] != "*" && sameScalars(p[pi], v[vi])) {
        vi += 1
        pi += 1
      } else if pi < p.count, p[pi] == "*" {
        starP = pi
        starV = vi
        pi += 1
      } else if starP >= 0 {
        pi = starP + 1
        starV += 1
        vi = starV
      } else {
        return false
      }
    }
    while pi < p.count, p[pi] == "*" { pi += 1 }
    return pi == p.count
  }

  /// Literal equality of two characters (`Character`'s `==` would equate canonical equivalents).
  private static func sameScalars(_ a: Character, _ b: Character) -> Bool {
    a.unicodeScalars.elementsEqual(b.unicodeScalars)
  }

  /// Whether `value` matches the regular expression `pattern` as a whole (ICU syntax, as `MATCHES`), within
  /// ``QueryLimits/maxPatternLength`` and ``QueryLimits/maxMatchSteps``.
  /// - Throws: ``StoreError`` `.invalidQuery` when the pattern is not a valid regular expression, is too long,
  ///   or needs more matching steps than the limit (or more backtracking memory than ICU allows).
  public static func matches(_ value: String, _ pattern: String, _ options: StringOptions) throws -> Bool {
    let regex = try matchesRegex(pattern, options)
    let subject =
      options.contains(.diacriticInsensitive) && !options.contains(.normalized)
      ? fold(value, .diacriticInsensitive) : value
    return try matches(subject, regex, pattern)
  }

  /// The regular expression `MATCHES` compiles `pattern` to under `options` (a `[d]` pattern folded).
  /// - Throws: ``StoreError`` `.invalidQuery` when the pattern is too long or not a regular expression.
  static func matchesRegex(_ pattern: String, _ options: StringOptions) throws -> NSRegularExpression {
    guard pattern.utf16.count <= QueryLimits.maxPatternLength else { throw QueryLimits.patternTooLong(pattern) }
    let options = options.contains(.normalized) ? [] : options
    var regexOptions: NSRegularExpression.Options = []
    if options.contains(.caseInsensitive) { regexOptions.insert(.caseInsensitive) }
    let pat = options.contains(.diacriticInsensitive) ? fold(pattern, .diacriticInsensitive) : pattern
    do {
      return try NSRegularExpression(pattern: "^(?:\(pat))$", options: regexOptions)
    } catch {
      throw StoreError(.invalidQuery, "MATCHES pattern '\(pattern)' is not a valid regular expression", value: .string(pattern))
    }
  }

  /// Whether the (already folded) `subject` matches `regex` as a whole, within the step limit.
  static func matches(_ subject: String, _ regex: NSRegularExpression, _ pattern: String) throws -> Bool {
    let range = NSRange(subject.startIndex..., in: subject)
    // ICU calls back with `.progress` every `stepsPerReport` steps of its matcher: counting the calls
    // bounds the work deterministically (a deadline would answer differently on a loaded machine).
    let stepsPerReport = 10_000
    let maxReports = QueryLimits.maxMatchSteps / stepsPerReport
    var reports = 0
    var outcome = MatchOutcome.noMatch
    regex.enumerateMatches(in: subject, options: [.anchored, .reportProgress, .reportCompletion], range: range) {
      match, flags, stop in
      if match != nil {
        outcome = .matched
        stop.pointee = true
      } else if flags.contains(.internalError), outcome == .noMatch {
        outcome = .failed
      } else if flags.contains(.progress) {
        reports += 1
        if reports > maxReports {
          outcome = .exceeded
          stop.pointee = true
        }
      }
    }
    switch outcome {
    case .matched: return true
    case .noMatch: return false
    case .exceeded: throw QueryLimits.matchTooLong(pattern)
    case .failed:
      throw StoreError(
        .invalidQuery,
        "MATCHES pattern '\(QueryLimits.shortened(pattern))' could not be evaluated (the matcher ran out of backtracking "
          + "memory)", value: .string(pattern))
    }
  }

  private enum MatchOutcome { case matched, noMatch, exceeded, failed }

  /// Evaluates a string operator (`==`, `!=`, `<`…, `CONTAINS`, `BEGINSWITH`, `ENDSWITH`, `LIKE`,
  /// `MATCHES`) on two strings under `options`.
  public static func evaluate(
    _ op: ComparisonOperator, _ lhs: String, _ rhs: String, _ options: StringOptions
  ) throws
    -> Bool
  {
    if op == .like { return like(lhs, rhs, options) }
    if op == .matches { return try matches(lhs, rhs, options) }
    let a = fold(lhs, options)
    let b = fold(rhs, options)
    switch op {
    case .equalTo: return codePointCompare(a, b) == 0
    case .notEqualTo: return !(try evaluate(.equalTo, lhs, rhs, options))
    case .lessThan: return codePointCompare(a, b) < 0
    case .lessThanOrEqualTo: return codePointCompare(a, b) <= 0
    case .greaterThan: return codePointCompare(a, b) > 0
    case .greaterThanOrEqualTo: return codePointCompare(a, b) >= 0
    case .contains: return !b.isEmpty && a.utf8.firstRange(of: b.utf8) != nil
    case .beginsWith: return !b.isEmpty && a.utf8.starts(with: b.utf8)
    case .endsWith: return !b.isEmpty && a.utf8.reversed().starts(with: b.utf8.reversed())
    case .in: return !a.isEmpty && b.utf8.firstRange(of: a.utf8) != nil
    case .like, .matches, .between: return false
    }
  }
}

extension String {
  /// Calls `body` with the string's UTF-8 where it lies: in its storage, or for a small string in a copy
  /// on the stack. Unlike `withUTF8`, which is `mutating`, it needs no `var` copy of the string, and a
  /// copy counts a reference (an atomic increment and decrement): encoders and comparisons call this for
  /// every string value they read. A string whose UTF-8 is not contiguous (bridged) is copied first.
  ///
  /// ```swift
  /// let count = "Heat".withUTF8Contents { $0.count }   // 4
  /// ```
  @inlinable
  package func withUTF8Contents<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
    var copy = self
    return try copy.withUTF8(body)
  }
}
