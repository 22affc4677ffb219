import Foundation

/// A string operator whose right side is fixed, prepared once and then applied to many left sides (a class:
/// every row reads it where it lies, where copying a struct retained each of its arrays): what a
/// predicate such as `title CONTAINS[cd] %@` costs per row in the evaluator and in SQLite's `strata_string`.
///
/// It answers exactly what ``StringSemantics/evaluate(_:_:_:_:)`` answers, but folds the right side (the
/// needle, pattern or regular expression) once, and works on the left side's UTF-8 without building a
/// `String` or a `Character`:
/// - an ASCII left side folds with a table (`[c]` lowercases, `[d]` keeps it as it is), on the stack;
/// - a left side with non-ASCII text folds run by run (`StringSemantics.appendFolded`):
///   only the runs around non-ASCII bytes go through Foundation's full Unicode folding;
/// - `LIKE` runs on the bytes of an ASCII left side (each byte one character), and on `Character`s only
///   for a non-ASCII one; `MATCHES` compiles its regular expression once (ICU still needs a `String`).
///
/// ```swift
/// let matcher = try StringMatcher(.contains, "NUMBER 99", [.caseInsensitive, .diacriticInsensitive])
/// try matcher.matches("Movie number 991")   // true
/// ```
public final class StringMatcher: Sendable {
  /// The operator.
  public let op: ComparisonOperator
  /// The right side as given.
  public let operand: String
  /// The options as given.
  public let givenOptions: StringOptions
  /// `[c]`/`[d]` as they apply: empty under `[n]`.
  let options: StringOptions
  /// The right side folded under ``options``.
  let folded: [UInt8]
  /// `LIKE`: the folded pattern, as units for an ASCII left side and as characters for any other.
  let likeUnits: [LikeUnit]
  let likeCharacters: [Character]
  /// `MATCHES`: the compiled expression.
  let regex: NSRegularExpression?

  /// Prepares `lhs op operand` under `options`.
  /// - Throws: for `MATCHES`, what ``StringSemantics/matches(_:_:_:)`` throws for the pattern (too long, not
  ///   a regular expression).
  public init(_ op: ComparisonOperator, _ operand: String, _ options: StringOptions) throws {
    self.op = op
    self.operand = operand
    givenOptions = options
    let effective: StringOptions =
      options.contains(.normalized) ? [] : options.intersection([.caseInsensitive, .diacriticInsensitive])
    self.options = effective
    switch op {
    case .like:
      let pattern = Array(StringSemantics.fold(operand, effective))
      likeCharacters = pattern
      likeUnits = pattern.map(LikeUnit.init)
      folded = []
      regex = nil
    case .matches:
      regex = try StringSemantics.matchesRegex(operand, options)
      likeCharacters = []
      likeUnits = []
      folded = []
    default:
      folded = Array(StringSemantics.fold(operand, effective).utf8)
      likeCharacters = []
      likeUnits = []
      regex = nil
    }
  }

  /// Whether `lhs op operand` holds.
  /// - Throws: for `MATCHES`, `.invalidQuery` past the matching-step limit.
  public func matches(_ lhs: String) throws -> Bool {
    if op == .matches, let regex {
      let subject = options.contains(.diacriticInsensitive) ? StringSemantics.fold(lhs, .diacriticInsensitive) : lhs
      return try StringSemantics.matches(subject, regex, operand)
    }
    return try lhs.withUTF8Contents { try matches(utf8: $0) }
  }

  /// Whether `lhs op operand` holds, `lhs` given as UTF-8 (invalid sequences read as U+FFFD, as
  /// `String(decoding:as:)` reads them).
  public func matches(utf8 lhs: UnsafeBufferPointer<UInt8>) throws -> Bool {
    switch op {
    case .like: return like(lhs)
    case .matches:
      guard let regex else { return false }
      let value = String(decoding: lhs, as: UTF8.self)
      let subject =
        options.contains(.diacriticInsensitive) ? StringSemantics.fold(value, .diacriticInsensitive) : value
      return try StringSemantics.matches(subject, regex, operand)
    case .between: return false
    default:
      return StringSemantics.withFolded(lhs, options) { a in
        folded.withUnsafeBufferPointer { b in Self.holds(op, a, b) }
      }
    }
  }

  /// `a op b` on folded UTF-8 (code-point order is byte order).
  static func holds(_ op: ComparisonOperator, _ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    switch op {
    case .equalTo: return compare(a, b) == 0
    case .notEqualTo: return compare(a, b) != 0
    case .lessThan: return compare(a, b) < 0
    case .lessThanOrEqualTo: return compare(a, b) <= 0
    case .greaterThan: return compare(a, b) > 0
    case .greaterThanOrEqualTo: return compare(a, b) >= 0
    case .contains: return !b.isEmpty && find(b, in: a)
    case .beginsWith:
      guard !b.isEmpty, a.count >= b.count, let p = a.baseAddress, let q = b.baseAddress else { return false }
      return memcmp(p, q, b.count) == 0
    case .endsWith:
      guard !b.isEmpty, a.count >= b.count, let p = a.baseAddress, let q = b.baseAddress else { return false }
      return memcmp(p + (a.count - b.count), q, b.count) == 0
    case .in: return !a.isEmpty && find(a, in: b)
    case .like, .matches, .between: return false
    }
  }

  /// `StringSemantics.codePointCompare` of two strings' UTF-8 bytes: negative, zero or positive.
  @usableFromInline
  package static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
    let common = min(a.count, b.count)
    if common > 0, let p = a.baseAddress, let q = b.baseAddress {
      let order = memcmp(p, q, common)
      if order != 0 { return order < 0 ? -1 : 1 }
    }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
  }

  /// Whether `needle` (not empty) occurs in `haystack`, byte for byte.
  static func find(_ needle: UnsafeBufferPointer<UInt8>, in haystack: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let n = needle.baseAddress, let h = haystack.baseAddress, needle.count <= haystack.count else {
      return needle.isEmpty
    }
    let first = Int32(n[0])
    let rest = needle.count - 1
    var start = h
    let last = h + (haystack.count - needle.count)
    while start <= last {
      guard let hit = memchr(start, first, last - start + 1) else { return false }
      let p = UnsafePointer(hit.assumingMemoryBound(to: UInt8.self))
      if rest == 0 || memcmp(p + 1, n + 1, rest) == 0 { return true }
      start = p + 1
    }
    return false
  }

  // MARK: LIKE

  /// One character of a folded `LIKE` pattern, as the byte algorithm needs it.
  struct LikeUnit: Sendable {
    /// `*`, `?`, `\`.
    let isStar: Bool
    let isQuestion: Bool
    let isBackslash: Bool
    /// The byte when the character is exactly one ASCII scalar (what a literal matches), else -1.
    let literal: Int16
    /// The ASCII byte the character equals as a `Character` (canonically: "K" for U+212A), else -1: what
    /// an escaped character matches.
    let equivalent: Int16

    init(_ character: Character) {
      isStar = character == "*"
      isQuestion = character == "?"
      isBackslash = character == "\\"
      let scalars = character.unicodeScalars
      if scalars.count == 1, let scalar = scalars.first, scalar.isASCII {
        literal = Int16(scalar.value)
        equivalent = literal
      } else {
        literal = -1
        let composed = String(character).precomposedStringWithCanonicalMapping.unicodeScalars
        if composed.count == 1, let scalar = composed.first, scalar.isASCII,
          character == Character(scalar)
        {
          equivalent = Int16(scalar.value)
        } else {
          equivalent = -1
        }
      }
    }
  }

  private func like(_ lhs: UnsafeBufferPointer<UInt8>) -> Bool {
    // An ASCII value is one character a byte, but for "\r\n", which is one `Character`.
    var ascii = true
    var previous: UInt8 = 0
    for byte in lhs {
      if byte >= 0x80 || (byte == 0x0A && previous == 0x0D) {
        ascii = false
        break
      }
      previous = byte
    }
    guard ascii else {
      let value = String(decoding: lhs, as: UTF8.self)
      return StringSemantics.like(Array(StringSemantics.fold(value, options)), likeCharacters)
    }
    if options.contains(.caseInsensitive) {
      return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(lhs.count, 1)) { buffer in
        for (i, byte) in lhs.enumerated() { buffer[i] = StringSemantics.asciiLowercase(byte) }
        return likeBytes(UnsafeBufferPointer(rebasing: buffer[0..<lhs.count]))
      }
    }
    return likeBytes(lhs)
  }

  /// ``StringSemantics/like(_:_:)`` step for step, over an ASCII value's bytes.
  private func likeBytes(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
    let p = likeUnits
    var vi = 0
    var pi = 0
    var starP = -1
    var starV = 0
    while vi < v.count {
      let byte = Int16(v[vi])
      if pi < p.count, p[pi].isBackslash, pi + 1 < p.count, p[pi + 1].equivalent == byte {
        vi += 1
        pi += 2
      } else if pi < p.count, p[pi].isQuestion || (!p[pi].isStar && p[pi].literal == byte) {
        vi += 1
        pi += 1
      } else if pi < p.count, p[pi].isStar {
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
    while pi < p.count, p[pi].isStar { pi += 1 }
    return pi == p.count
  }
}

extension StringSemantics {
  /// The ASCII byte lowercased.
  @inline(__always)
  static func asciiLowercase(_ byte: UInt8) -> UInt8 {
    byte &- 0x41 < 26 ? byte | 0x20 : byte
  }

  /// Whether every byte is ASCII.
  static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    var i = 0
    let count = bytes.count
    let raw = UnsafeRawPointer(base)
    while i + 8 <= count {
      if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
      i += 8
    }
    while i < count {
      if base[i] >= 0x80 { return false }
      i += 1
    }
    return true
  }

  /// Calls `body` with the UTF-8 of ``fold(_:_:)`` of `bytes` under `options` (`[c]`/`[d]` only): the bytes
  /// themselves when folding changes nothing, a lowercased copy on the stack for ASCII under `[c]`, and
  /// ``appendFolded(_:_:into:)`` otherwise.
  static func withFolded<R>(
    _ bytes: UnsafeBufferPointer<UInt8>, _ options: StringOptions, _ body: (UnsafeBufferPointer<UInt8>) throws -> R
  ) rethrows -> R {
    if options.isEmpty { return try body(bytes) }
    if isASCII(bytes) {
      guard options.contains(.caseInsensitive) else { return try body(bytes) }
      return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(bytes.count, 1)) { buffer in
        for (i, byte) in bytes.enumerated() { buffer[i] = asciiLowercase(byte) }
        return try body(UnsafeBufferPointer(rebasing: buffer[0..<bytes.count]))
      }
    }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count + bytes.count / 4)
    appendFolded(bytes, options, into: &out)
    return try out.withUnsafeBufferPointer(body)
  }

  /// Appends the UTF-8 of ``fold(_:_:)`` of `bytes` under `options` (`[c]`/`[d]`, not empty) to `out`,
  /// folding piece by piece. A point between two ASCII characters is a boundary no fold crosses (an ASCII
  /// character folds to one ASCII character, composes with nothing before it, and starts a new
  /// combining sequence), so the text is cut there: a lone ASCII character folds with a table, and each
  /// piece holding non-ASCII text, together with the ASCII characters on either side of it (a base letter
  /// its combining marks need, the context of a final sigma), goes through the full fold.
  static func appendFolded(_ bytes: UnsafeBufferPointer<UInt8>, _ options: StringOptions, into out: inout [UInt8]) {
    let lowercases = options.contains(.caseInsensitive)
    let count = bytes.count
    var start = 0
    var i = 0
    while i < count {
      let byte = bytes[i]
      if byte < 0x80 && (i + 1 == count || bytes[i + 1] < 0x80) {
        if start == i {
          out.append(lowercases ? asciiLowercase(byte) : byte)
        } else {
          appendFullFold(UnsafeBufferPointer(rebasing: bytes[start...i]), options, into: &out)
        }
        start = i + 1
      }
      i += 1
    }
    if start < count { appendFullFold(UnsafeBufferPointer(rebasing: bytes[start..<count]), options, into: &out) }
  }

  private static func appendFullFold(_ piece: UnsafeBufferPointer<UInt8>, _ options: StringOptions, into out: inout [UInt8]) {
    let folded = fold(String(decoding: piece, as: UTF8.self), options)
    out.append(contentsOf: folded.utf8)
  }
}
