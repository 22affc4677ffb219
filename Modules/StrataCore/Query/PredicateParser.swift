import Foundation

/// A recursive-descent parser for NSPredicate format strings, producing ``QueryPredicate`` and
/// ``QueryExpression`` trees. Tokens come from ``PredicateLexer``; the grammar is documented on
/// `QueryPredicate.init(format:_:)`. Predicates are parsed here, expressions in
/// `PredicateParser+Expressions.swift`.
///
/// The parser never backtracks: a `(` where a predicate may start is parsed as "a predicate or an
/// expression" and the caller decides from what follows (`(a + 1) * 2 > 3` versus `(a > 1)`), so its
/// work is linear in the input. Nesting is capped at ``maxDepth`` levels so hostile input cannot
/// exhaust the stack, and the functions on the recursive path stay small (their error messages are
/// built in separate functions), because unoptimized builds give every temporary its own stack slot.
/// Every failure is a ``StoreError`` `.invalidQuery` naming a 0-based position.
struct PredicateParser {
  /// The deepest nesting of parentheses, braces, function calls, `.@` suffixes on expressions,
  /// subqueries, `NOT`s, unary minuses and chained arithmetic operators accepted: ``QueryLimits/maxDepth``,
  /// the limit every tree meets (checked again on the finished tree, which also counts comparisons and
  /// `AND`/`OR` groups).
  static let maxDepth = QueryLimits.maxDepth

  enum Node {
    case predicate(QueryPredicate)
    case expression(QueryExpression)
  }

  let scalars: [Unicode.Scalar]
  let subject: String
  let tokens: [PredicateToken]
  let arguments: [any PredicateArgument]
  var index = 0
  var depth = 0

  // MARK: Entry points

  static func parsePredicate(_ format: String, _ arguments: [any PredicateArgument]) throws -> QueryPredicate {
    var parser = try PredicateParser(format, subject: "predicate", arguments)
    let node = try parser.parseOr()
    let predicate = try parser.requirePredicate(node)
    try parser.expectEnd(afterPredicate: true)
    try parser.checkLimits { try QueryLimits.check(predicate) }
    return predicate
  }

  static func parseExpression(_ format: String, _ arguments: [any PredicateArgument]) throws -> QueryExpression {
    var parser = try PredicateParser(format, subject: "expression", arguments)
    let expression = try parser.parseExpression()
    try parser.expectEnd(afterPredicate: false)
    try parser.checkLimits { try QueryLimits.check(expression) }
    return expression
  }

  private init(_ format: String, subject: String, _ arguments: [any PredicateArgument]) throws {
    scalars = Array(format.unicodeScalars)
    self.subject = subject
    self.arguments = arguments
    let lexed: (tokens: [PredicateToken], argumentCount: Int)
    do {
      lexed = try PredicateLexer.tokenize(scalars)
    } catch {
      throw PredicateParser.failure(subject, scalars, error.message, at: error.position, note: nil, found: nil)
    }
    tokens = lexed.tokens
    if lexed.argumentCount > arguments.count {
      for token in tokens {
        if case .argument(_, let i) = token.kind, i == arguments.count {
          throw failure(
            "missing argument \(i + 1) for '\(sourceText(token))'", at: token.start,
            note: "(\(Self.plural(arguments.count, "argument")) given)")
        }
      }
    } else if lexed.argumentCount < arguments.count {
      throw failure(
        "too many arguments", at: scalars.count,
        note:
          "(end of input: \(Self.plural(arguments.count, "argument")) given, the format uses \(lexed.argumentCount))")
    }
  }

  // MARK: Predicates

  /// `a OR b AND NOT c …`: NOT binds tighter than AND, AND tighter than OR. A single operand comes
  /// back as it is, so that `(a + 1)` can still turn out to be an expression.
  mutating func parseOr() throws -> Node {
    let first = isKeyword(.not) || isSymbol(.bang) ? try parseNot() : try parsePrimaryNode()
    guard isJunction() else { return first }
    return .predicate(try parseJunctions(first))
  }

  private func isJunction() -> Bool {
    isKeyword(.and) || isSymbol(.andAnd) || isKeyword(.or) || isSymbol(.orOr)
  }

  /// The rest of `first AND b OR c …`, grouped as an OR of ANDs.
  private mutating func parseJunctions(_ first: Node) throws -> QueryPredicate {
    var alternatives: [QueryPredicate] = []
    var conjuncts = [try requirePredicate(first)]
    while isJunction() {
      let isAnd = isKeyword(.and) || isSymbol(.andAnd)
      advance()
      let node = isKeyword(.not) || isSymbol(.bang) ? try parseNot() : try parsePrimaryNode()
      let predicate = try requirePredicate(node)
      if isAnd {
        conjuncts.append(predicate)
      } else {
        alternatives.append(conjuncts.count == 1 ? conjuncts[0] : .and(conjuncts))
        conjuncts = [predicate]
      }
    }
    alternatives.append(conjuncts.count == 1 ? conjuncts[0] : .and(conjuncts))
    return alternatives.count == 1 ? alternatives[0] : .or(alternatives)
  }

  private mutating func parseNot() throws -> Node {
    let base = depth
    defer { depth = base }
    var count = 0
    while isKeyword(.not) || isSymbol(.bang) {
      try enter()
      count += 1
      advance()
    }
    let node = try parsePrimaryNode()
    var predicate = try requirePredicate(node)
    for _ in 0..<count { predicate = .not(predicate) }
    return .predicate(predicate)
  }

  mutating func parsePrimaryNode() throws -> Node {
    switch current.keyword {
    case .truePredicate?, .falsePredicate?: return .predicate(takeConstantPredicate())
    case .anyModifier?, .someModifier?: return .predicate(try parseModified(.any))
    case .allModifier?: return .predicate(try parseModified(.all))
    case .noneModifier?: return .predicate(try parseModified(.none))
    default: break
    }
    let left: QueryExpression
    if isSymbol(.openParen) {
      switch try parseGroupNode() {
      case .predicate(let predicate): return .predicate(predicate)
      case .expression(let expression): left = try continueExpression(expression)
      }
    } else {
      left = try parseExpression()
    }
    guard let op = comparisonOperator() else { return .expression(left) }
    return .predicate(try parseComparison(left, op, .direct))
  }

  private mutating func takeConstantPredicate() -> QueryPredicate {
    let value = current.keyword == .truePredicate
    advance()
    return .constant(value)
  }

  /// `( … )` where a predicate may start: a parenthesized predicate, or an expression that a
  /// comparison continues after the `)`.
  private mutating func parseGroupNode() throws -> Node {
    let open = current
    try enter()
    defer { depth -= 1 }
    advance()
    let inner = try parseOr()
    try expectClose(.closeParen, "')'", opening: open)
    return inner
  }

  private mutating func parseModified(_ modifier: ComparisonModifier) throws -> QueryPredicate {
    advance()
    let left = try parseExpression()
    guard let op = comparisonOperator() else { throw missingOperator() }
    return try parseComparison(left, op, modifier)
  }

  private mutating func parseComparison(
    _ left: QueryExpression, _ op: ComparisonOperator, _ modifier: ComparisonModifier
  ) throws -> QueryPredicate {
    advance()
    let options = isSymbol(.openBracket) ? try parseOptions() : []
    let rightStart = current.start
    let right = try parseExpression()
    try check(op, right, at: rightStart)
    return .comparison(Comparison(left, op, right, modifier: modifier, options: options))
  }

  private mutating func parseOptions() throws -> StringOptions {
    let open = current
    advance()
    guard case .word(let letters) = current.kind else {
      throw failure("expected option letters c, d or n after '['", at: current.start, found: describe(current))
    }
    var options: StringOptions = []
    for letter in letters.lowercased() {
      switch letter {
      case "c": options.insert(.caseInsensitive)
      case "d": options.insert(.diacriticInsensitive)
      case "n": options.insert(.normalized)
      default:
        throw failure("unknown option '\(letter)' in [\(letters)] (expected c, d or n)", at: current.start)
      }
    }
    advance()
    try expectClose(.closeBracket, "']'", opening: open)
    return options
  }

  /// Rejects right-hand sides that can never work: `BETWEEN` without two bounds, `IN` a number.
  private func check(_ op: ComparisonOperator, _ right: QueryExpression, at position: Int) throws {
    switch (op, right) {
    case (.between, .constant(.array(let items))) where items.count != 2:
      throw failure("BETWEEN needs two bounds {lower, upper}", at: position, found: Self.plural(items.count, "element"))
    case (.between, .aggregate(let items)) where items.count != 2:
      throw failure("BETWEEN needs two bounds {lower, upper}", at: position, found: Self.plural(items.count, "element"))
    case (.between, .constant(let value)) where !isArray(value):
      throw failure("BETWEEN needs two bounds {lower, upper}", at: position, found: describe(value))
    case (.in, .constant(let value)) where !isArray(value) && value.stringValue == nil:
      throw failure("IN needs a collection or a string", at: position, found: describe(value))
    default: return
    }
  }

  private func isArray(_ value: Value) -> Bool {
    if case .array = value { return true }
    return false
  }

  private func comparisonOperator() -> ComparisonOperator? {
    switch current.kind {
    case .symbol(.equal): return .equalTo
    case .symbol(.notEqual): return .notEqualTo
    case .symbol(.less): return .lessThan
    case .symbol(.lessEqual): return .lessThanOrEqualTo
    case .symbol(.greater): return .greaterThan
    case .symbol(.greaterEqual): return .greaterThanOrEqualTo
    default: break
    }
    switch current.keyword {
    case .contains?: return .contains
    case .beginsWith?: return .beginsWith
    case .endsWith?: return .endsWith
    case .like?: return .like
    case .matches?: return .matches
    case .in?: return .in
    case .between?: return .between
    default: return nil
    }
  }

  /// The predicate in `node`; an expression there means a comparison operator is missing at the
  /// current token. (Pass an already-evaluated node: in `requirePredicate(parseAnd())` Swift reads
  /// `self`, and so `current`, before the argument is parsed.)
  func requirePredicate(_ node: Node) throws -> QueryPredicate {
    switch node {
    case .predicate(let predicate): return predicate
    case .expression: throw missingOperator()
    }
  }

  private func missingOperator() -> StoreError {
    failure(
      "expected a comparison operator (==, !=, <, <=, >, >=, BETWEEN, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, "
        + "MATCHES)",
      at: current.start, found: describe(current))
  }

  // MARK: Tokens

  var current: PredicateToken { tokens[min(index, tokens.count - 1)] }

  func peekKind(_ offset: Int) -> PredicateToken.Kind {
    tokens[min(index + offset, tokens.count - 1)].kind
  }

  mutating func advance() {
    if index < tokens.count - 1 { index += 1 }
  }

  func isKeyword(_ keyword: Keyword) -> Bool { current.keyword == keyword }

  func isSymbol(_ symbol: Symbol) -> Bool { current.kind == .symbol(symbol) }

  /// Goes one level deeper at the current token, or fails past ``maxDepth``.
  mutating func enter() throws {
    guard depth < Self.maxDepth else {
      throw failure("the predicate nests deeper than \(Self.maxDepth) levels", at: current.start)
    }
    depth += 1
  }

  mutating func expectOpen(after what: String) throws {
    guard isSymbol(.openParen) else {
      throw failure("expected '(' after \(what)", at: current.start, found: describe(current))
    }
    advance()
  }

  mutating func expectComma(in what: String, opening: PredicateToken) throws {
    guard isSymbol(.comma) else {
      throw failure(
        "expected ','", at: current.start, note: "(in the \(what) at position \(opening.start))",
        found: describe(current))
    }
    advance()
  }

  mutating func expectClose(_ symbol: Symbol, _ what: String, opening: PredicateToken) throws {
    guard isSymbol(symbol) else {
      throw failure(
        "expected \(what)", at: current.start,
        note: "(to close the '\(sourceText(opening))' at position \(opening.start))", found: describe(current))
    }
    advance()
  }

  /// Runs a ``QueryLimits`` check on the finished tree; a failure is reported for the whole input.
  private func checkLimits(_ check: () throws -> Void) throws {
    do {
      try check()
    } catch let error as StoreError {
      throw failure(error.message, at: 0)
    }
  }

  private func expectEnd(afterPredicate: Bool) throws {
    guard current.kind != .end else { return }
    if isSymbol(.closeParen) || isSymbol(.closeBrace) {
      throw failure("unbalanced '\(sourceText(current))' with nothing to close", at: current.start)
    }
    let expected = afterPredicate ? "expected AND, OR or end of input" : "expected an operator or end of input"
    throw failure(expected, at: current.start, found: describe(current))
  }

  // MARK: Errors

  static func plural(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
  }

  func sourceText(_ token: PredicateToken) -> String {
    let end = min(token.end, token.start + 40, scalars.count)
    var view = String.UnicodeScalarView()
    view.append(contentsOf: scalars[min(token.start, end)..<end])
    return String(view) + (token.end > end ? "…" : "")
  }

  func describe(_ token: PredicateToken) -> String {
    switch token.kind {
    case .end: "end of input"
    case .string(let s):
      FormatLiterals.quoted(s.unicodeScalars.count > 40 ? String(s.unicodeScalars.prefix(40)) + "…" : s)
    case .number: "number \(sourceText(token))"
    default: "'\(sourceText(token))'"
    }
  }

  func describe(_ value: Value) -> String {
    let literal = value.formatLiteral
    let short = literal.count > 60 ? String(literal.prefix(60)) + "…" : literal
    return "\(value.kindName) \(short)"
  }

  func failure(_ what: String, at position: Int, note: String? = nil, found: String? = nil) -> StoreError {
    Self.failure(subject, scalars, what, at: position, note: note, found: found)
  }

  /// `predicate "<format>": <what> at position <n> [<note>][, found <found>]`, on one line.
  private static func failure(
    _ subject: String, _ scalars: [Unicode.Scalar], _ what: String, at position: Int, note: String?,
    found: String?
  ) -> StoreError {
    let limit = 120
    var view = String.UnicodeScalarView()
    view.append(contentsOf: scalars.prefix(limit))
    let snippet = FormatLiterals.quoted(String(view) + (scalars.count > limit ? "…" : ""))
    var message = "\(subject) \(snippet): \(what) at position \(position)"
    if let note { message += " " + note }
    if let found { message += ", found " + found }
    return StoreError(.invalidQuery, message)
  }
}
