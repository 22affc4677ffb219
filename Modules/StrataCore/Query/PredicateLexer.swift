import Foundation

/// One token of a predicate format string, with the scalar offsets it spans.
struct PredicateToken {
  enum Kind: Equatable {
    /// An identifier or a keyword (keywords are recognized by the parser, case-insensitively).
    case word(String)
    /// `#name`: an identifier that is never a keyword.
    case escapedWord(String)
    /// `@count`, `@sum`…: the name after `@`, as written.
    case collectionOperator(String)
    /// `$NAME`.
    case variable(String)
    /// A number as written (`12`, `1.5e3`, `0x1F`); converted by the parser, which knows its sign.
    case number(String)
    case string(String)
    /// `%@`, `%K`, `%d`…, with the index of the argument it consumes.
    case argument(ArgumentSpecifier, index: Int)
    /// `%%` outside a string.
    case percent
    case symbol(Symbol)
    case end
  }

  var kind: Kind
  /// Offset of the first scalar, 0-based.
  var start: Int
  /// Offset just past the last scalar.
  var end: Int
  /// The keyword a `.word` spells, if any (looked up once here rather than at every parser check).
  var keyword: Keyword?

  init(kind: Kind, start: Int, end: Int) {
    self.kind = kind
    self.start = start
    self.end = end
    if case .word(let word) = kind { keyword = Keyword(word: word) }
  }
}

/// What a `%` specifier accepts.
enum ArgumentSpecifier: Equatable {
  /// `%@`: any argument.
  case object
  /// `%K`: a key path string.
  case keyPath
  /// `%d %i %u` (with `h hh l ll q z` length modifiers): an integer.
  case integer
  /// `%f %e %g` (with `l L`): a floating-point number.
  case float
}

enum Symbol: Equatable {
  case openParen, closeParen, openBrace, closeBrace, openBracket, closeBracket
  case comma, dot, colon
  case equal, notEqual, less, lessEqual, greater, greaterEqual
  case andAnd, orOr, bang
  case plus, minus, star, slash, starStar
}

/// Reserved words of the format language (matched case-insensitively). Any of them can be used as a
/// key by escaping it with `#`.
enum Keyword: String, CaseIterable {
  case and = "AND"
  case or = "OR"
  case not = "NOT"
  case `in` = "IN"
  case between = "BETWEEN"
  case contains = "CONTAINS"
  case beginsWith = "BEGINSWITH"
  case endsWith = "ENDSWITH"
  case like = "LIKE"
  case matches = "MATCHES"
  case anyModifier = "ANY"
  case allModifier = "ALL"
  case someModifier = "SOME"
  case noneModifier = "NONE"
  case subquery = "SUBQUERY"
  case cast = "CAST"
  case truePredicate = "TRUEPREDICATE"
  case falsePredicate = "FALSEPREDICATE"
  case nilLiteral = "NIL"
  case nullLiteral = "NULL"
  case yesLiteral = "YES"
  case noLiteral = "NO"
  case trueLiteral = "TRUE"
  case falseLiteral = "FALSE"
  case selfKeyword = "SELF"

  private static let byName: [String: Keyword] = Dictionary(
    uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

  init?(word: String) {
    guard word.utf8.count <= 14, let keyword = Keyword.byName[word.uppercased()] else { return nil }
    self = keyword
  }
}

/// Character classes shared by the lexer and the printer, so that what one writes the other reads.
enum PredicateCharacters {
  static func isIdentifierStart(_ s: Unicode.Scalar) -> Bool {
    s == "_" || (s.isASCII ? (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") : s.properties.isAlphabetic)
  }

  static func isIdentifierContinue(_ s: Unicode.Scalar) -> Bool {
    if isIdentifierStart(s) || isDigit(s) { return true }
    if s.isASCII { return false }
    switch s.properties.generalCategory {
    case .decimalNumber, .nonspacingMark, .spacingMark: return true
    default: return false
    }
  }

  static func isDigit(_ s: Unicode.Scalar) -> Bool { s >= "0" && s <= "9" }

  static func isHexDigit(_ s: Unicode.Scalar) -> Bool {
    isDigit(s) || (s >= "a" && s <= "f") || (s >= "A" && s <= "F")
  }

  /// Whether `name` lexes as one plain identifier (and so may be written without `#` unless a keyword).
  static func isIdentifier(_ name: String) -> Bool {
    var scalars = name.unicodeScalars.makeIterator()
    guard let first = scalars.next(), isIdentifierStart(first) else { return false }
    while let s = scalars.next() {
      if !isIdentifierContinue(s) { return false }
    }
    return true
  }

  /// Whether `name` can follow `#` (identifier characters, possibly starting with a digit).
  static func isEscapable(_ name: String) -> Bool {
    !name.isEmpty && name.unicodeScalars.allSatisfy(isIdentifierContinue)
  }
}

/// Splits a format string into tokens. Positions are 0-based offsets in Unicode scalars.
struct PredicateLexer {
  struct Failure: Error {
    var message: String
    var position: Int
  }

  private let scalars: [Unicode.Scalar]
  private var position = 0
  private var argumentCount = 0

  init(_ scalars: [Unicode.Scalar]) {
    self.scalars = scalars
  }

  /// The tokens of the whole input, ending with `.end`, and the number of arguments the specifiers use.
  static func tokenize(_ scalars: [Unicode.Scalar]) throws(Failure) -> (tokens: [PredicateToken], argumentCount: Int) {
    var lexer = PredicateLexer(scalars)
    var tokens: [PredicateToken] = []
    while true {
      let token = try lexer.next()
      tokens.append(token)
      if token.kind == .end { return (tokens, lexer.argumentCount) }
    }
  }

  private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
    let i = position + offset
    return i < scalars.count ? scalars[i] : nil
  }

  private mutating func next() throws(Failure) -> PredicateToken {
    while let s = peek(), s.properties.isWhitespace { position += 1 }
    let start = position
    guard let s = peek() else { return PredicateToken(kind: .end, start: start, end: start) }
    let kind = try lexToken(startingWith: s)
    return PredicateToken(kind: kind, start: start, end: position)
  }

  private mutating func lexToken(startingWith s: Unicode.Scalar) throws(Failure) -> PredicateToken.Kind {
    let start = position
    if PredicateCharacters.isIdentifierStart(s) { return .word(readRun()) }
    if PredicateCharacters.isDigit(s) || (s == "." && peek(1).map(PredicateCharacters.isDigit) == true) {
      return try readNumber()
    }
    switch s {
    case "\"", "'": return .string(try readString(quote: s))
    case "#", "$", "@":
      position += 1
      let name = readRun(allowLeadingDigit: s == "#")
      guard !name.isEmpty, s == "#" || PredicateCharacters.isIdentifierStart(name.unicodeScalars.first ?? "0")
      else {
        let what =
          s == "#" ? "a key after '#'" : s == "$" ? "a variable name after '$'" : "a collection operator after '@'"
        throw Failure(message: "expected \(what)", position: start)
      }
      return s == "#" ? .escapedWord(name) : s == "$" ? .variable(name) : .collectionOperator(name)
    case "%": return try readSpecifier()
    default: break
    }
    position += 1
    func two(_ second: Unicode.Scalar, _ matched: Symbol, else single: Symbol?) throws(Failure) -> Symbol {
      if peek() == second {
        position += 1
        return matched
      }
      guard let single else {
        throw Failure(message: "unexpected character '\(s)' (did you mean '\(s)\(second)'?)", position: start)
      }
      return single
    }
    let symbol: Symbol
    switch s {
    case "(": symbol = .openParen
    case ")": symbol = .closeParen
    case "{": symbol = .openBrace
    case "}": symbol = .closeBrace
    case "[": symbol = .openBracket
    case "]": symbol = .closeBracket
    case ",": symbol = .comma
    case ".": symbol = .dot
    case ":": symbol = .colon
    case "+": symbol = .plus
    case "-": symbol = .minus
    case "/": symbol = .slash
    case "*": symbol = try two("*", .starStar, else: .star)
    case "&": symbol = try two("&", .andAnd, else: nil)
    case "|": symbol = try two("|", .orOr, else: nil)
    case "!": symbol = try two("=", .notEqual, else: .bang)
    case "=":
      switch peek() {
      case "=":
        position += 1
        symbol = .equal
      case "<":
        position += 1
        symbol = .lessEqual
      case ">":
        position += 1
        symbol = .greaterEqual
      default: symbol = .equal
      }
    case "<":
      switch peek() {
      case "=":
        position += 1
        symbol = .lessEqual
      case ">":
        position += 1
        symbol = .notEqual
      default: symbol = .less
      }
    case ">": symbol = try two("=", .greaterEqual, else: .greater)
    default:
      throw Failure(message: "unexpected character \(PredicateLexer.describe(s))", position: start)
    }
    return .symbol(symbol)
  }

  /// `'<prefix><s>'`, or `'<prefix>' followed by U+XXXX` when `s` is invisible or a line break.
  static func describe(_ s: Unicode.Scalar, prefix: String = "") -> String {
    let category = s.properties.generalCategory
    if category == .control || category == .format || s.properties.isWhitespace
      || category == .nonspacingMark || category == .enclosingMark
    {
      let code = "U+" + String(s.value, radix: 16, uppercase: true).leftPadded(to: 4)
      return prefix.isEmpty ? code : "'\(prefix)' followed by \(code)"
    }
    return "'\(prefix)\(s)'"
  }

  private mutating func readRun(allowLeadingDigit: Bool = false) -> String {
    var view = String.UnicodeScalarView()
    if let s = peek(), PredicateCharacters.isIdentifierStart(s) || (allowLeadingDigit && PredicateCharacters.isDigit(s)) {
      view.append(s)
      position += 1
      while let s = peek(), PredicateCharacters.isIdentifierContinue(s) {
        view.append(s)
        position += 1
      }
    }
    return String(view)
  }

  private mutating func readNumber() throws(Failure) -> PredicateToken.Kind {
    let start = position
    var text = ""
    func take(while accept: (Unicode.Scalar) -> Bool) {
      while let s = peek(), accept(s) {
        text.unicodeScalars.append(s)
        position += 1
      }
    }
    if peek() == "0", let marker = peek(1), "xXoObB".unicodeScalars.contains(marker) {
      position += 2
      text = "0" + String(marker).lowercased()
      let digit: (Unicode.Scalar) -> Bool =
        switch marker {
        case "x", "X": PredicateCharacters.isHexDigit
        case "o", "O": { $0 >= "0" && $0 <= "7" }
        default: { $0 == "0" || $0 == "1" }
        }
      take(while: digit)
      if text.count == 2 { throw Failure(message: "expected digits after '\(text)'", position: start) }
    } else {
      take(while: PredicateCharacters.isDigit)
      if peek() == ".", let after = peek(1), PredicateCharacters.isDigit(after) {
        text += "."
        position += 1
        take(while: PredicateCharacters.isDigit)
      }
      if let e = peek(), e == "e" || e == "E" {
        var offset = 1
        if let sign = peek(1), sign == "+" || sign == "-" { offset = 2 }
        if let digit = peek(offset), PredicateCharacters.isDigit(digit) {
          for _ in 0..<offset {
            if let s = peek() { text.unicodeScalars.append(s) }
            position += 1
          }
          take(while: PredicateCharacters.isDigit)
        }
      }
    }
    if let s = peek(), PredicateCharacters.isIdentifierContinue(s) {
      take(while: PredicateCharacters.isIdentifierContinue)
      throw Failure(message: "invalid number '\(text)'", position: start)
    }
    return .number(text)
  }

  private mutating func readString(quote: Unicode.Scalar) throws(Failure) -> String {
    let start = position
    position += 1
    var view = String.UnicodeScalarView()
    while true {
      guard let s = peek() else {
        throw Failure(message: "unterminated string starting", position: start)
      }
      position += 1
      if s == quote { return String(view) }
      guard s == "\\" else {
        view.append(s)
        continue
      }
      let escapeStart = position - 1
      guard let e = peek() else { throw Failure(message: "unterminated string starting", position: start) }
      position += 1
      switch e {
      case "\"", "'", "\\", "/": view.append(e)
      case "n": view.append("\n")
      case "t": view.append("\t")
      case "r": view.append("\r")
      case "0": view.append("\0")
      case "u": view.append(try readUnicodeEscape(escapeStart))
      default:
        throw Failure(
          message: "unknown escape \(PredicateLexer.describe(e, prefix: "\\")) in a string", position: escapeStart)
      }
    }
  }

  /// `\uXXXX` (4 hex digits), with a UTF-16 surrogate pair written as two escapes.
  private mutating func readUnicodeEscape(_ escapeStart: Int) throws(Failure) -> Unicode.Scalar {
    func hex4() throws(Failure) -> UInt32 {
      var value: UInt32 = 0
      for _ in 0..<4 {
        guard let s = peek(), PredicateCharacters.isHexDigit(s), let d = UInt32(String(s), radix: 16) else {
          throw Failure(message: "expected 4 hex digits after '\\u'", position: escapeStart)
        }
        value = value * 16 + d
        position += 1
      }
      return value
    }
    let high = try hex4()
    if (0xD800..<0xDC00).contains(high), peek() == "\\", peek(1) == "u" {
      position += 2
      let low = try hex4()
      if (0xDC00..<0xE000).contains(low), let s = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)) {
        return s
      }
    }
    guard let scalar = Unicode.Scalar(high) else {
      throw Failure(message: "'\\u' escape names a lone surrogate", position: escapeStart)
    }
    return scalar
  }

  private mutating func readSpecifier() throws(Failure) -> PredicateToken.Kind {
    let start = position
    position += 1
    var length = ""
    while let s = peek(), "hlqzL".unicodeScalars.contains(s), length.count < 2 {
      length.unicodeScalars.append(s)
      position += 1
    }
    guard let conversion = peek() else {
      throw Failure(message: "incomplete format specifier '%\(length)'", position: start)
    }
    position += 1
    let specifier: ArgumentSpecifier
    switch (length, conversion) {
    case ("", "%"): return .percent
    case ("", "@"): specifier = .object
    case ("", "K"): specifier = .keyPath
    case ("", "d"), ("", "i"), ("", "u"), ("h", "d"), ("h", "i"), ("h", "u"), ("hh", "d"), ("hh", "i"),
      ("hh", "u"), ("l", "d"), ("l", "i"), ("l", "u"), ("ll", "d"), ("ll", "i"), ("ll", "u"), ("q", "d"),
      ("q", "i"), ("q", "u"), ("z", "d"), ("z", "u"):
      specifier = .integer
    case ("", "f"), ("", "e"), ("", "g"), ("l", "f"), ("l", "e"), ("l", "g"), ("L", "f"):
      specifier = .float
    default:
      throw Failure(
        message: "unknown format specifier \(PredicateLexer.describe(conversion, prefix: "%" + length))"
          + " (expected %@, %K, %d, %i, %u, %ld, %lld, %f, %lf or %%)",
        position: start)
    }
    defer { argumentCount += 1 }
    return .argument(specifier, index: argumentCount)
  }
}

extension String {
  fileprivate func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: "0", count: width - count) + self
  }
}
