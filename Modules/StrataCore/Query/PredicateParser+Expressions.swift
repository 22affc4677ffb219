import Foundation

/// The expression half of the format-string grammar: arithmetic, unary minus, key paths and their
/// collection operators, literals, arguments, functions, `CAST` and `SUBQUERY`.
///
/// The recursive path is `parseExpression (or parseChain → parseOperand) → parsePrimary →
/// parseGroup / parseCollectionLiteral / parseFunction / parseSubquery / parseCast → parseExpression`;
/// everything that only builds a value or an error sits in leaf functions off that path.
extension PredicateParser {
  /// A primary expression, kept open while `.key` suffixes may still extend it.
  enum Primary {
    case keyPath([KeyComponent])
    case variable(String)
    case evaluatedObject
    case other(QueryExpression)
  }

  struct KeyComponent {
    var name: String
    var isOperator: Bool
    var position: Int
  }

  enum BinaryOperator {
    case add, subtract, multiply, divide, power

    var functionName: String {
      switch self {
      case .add: "add:to:"
      case .subtract: "from:subtract:"
      case .multiply: "multiply:by:"
      case .divide: "divide:by:"
      case .power: "raise:toPower:"
      }
    }

    var precedence: Int {
      switch self {
      case .add, .subtract: 1
      case .multiply, .divide: 2
      case .power: 3
      }
    }
  }

  /// `@count` and friends after a non-key-path expression, as functions.
  static let collectionFunctions = [
    "count": "count:", "sum": "sum:", "avg": "average:", "min": "min:", "max": "max:",
  ]

  // MARK: Operators

  mutating func parseExpression() throws -> QueryExpression {
    let first: QueryExpression
    if isSymbol(.minus) {
      first = try parseNegation()
    } else {
      let primary = try parsePrimary()
      first = try parseSuffixes(primary)
    }
    return binaryOperator() == nil ? first : try parseChain(first)
  }

  /// An arithmetic chain whose first operand is already parsed (`(a + b) * 2` after the `)`).
  mutating func continueExpression(_ first: QueryExpression) throws -> QueryExpression {
    binaryOperator() == nil ? first : try parseChain(first)
  }

  /// Collects `a op b op c …`, then reduces it by precedence without recursion (`**` is
  /// right-associative, the others left-associative). Each operator counts as a level of nesting.
  private mutating func parseChain(_ first: QueryExpression) throws -> QueryExpression {
    let base = depth
    defer { depth = base }
    var operands = [first]
    var operators: [BinaryOperator] = []
    while let op = binaryOperator() {
      operators.append(op)
      guard base + operators.count <= Self.maxDepth else { throw chainTooLong() }
      depth = base + operators.count
      advance()
      operands.append(try parseOperand())
    }
    return Self.reduce(operands, operators)
  }

  private func chainTooLong() -> StoreError {
    failure("the predicate nests deeper than \(Self.maxDepth) levels", at: current.start)
  }

  private static func reduce(_ operands: [QueryExpression], _ operators: [BinaryOperator]) -> QueryExpression {
    var output: [QueryExpression] = operands.prefix(1).map { $0 }
    var pending: [BinaryOperator] = []
    func apply(_ op: BinaryOperator) {
      guard output.count >= 2 else { return }
      let right = output.removeLast()
      let left = output.removeLast()
      output.append(.function(op.functionName, [left, right]))
    }
    for (i, op) in operators.enumerated() where i + 1 < operands.count {
      while let top = pending.last, top.precedence > op.precedence || (top.precedence == op.precedence && op != .power) {
        apply(pending.removeLast())
      }
      pending.append(op)
      output.append(operands[i + 1])
    }
    while let op = pending.popLast() { apply(op) }
    return output.first ?? .constant(.null)
  }

  private func binaryOperator() -> BinaryOperator? {
    switch current.kind {
    case .symbol(.plus): .add
    case .symbol(.minus): .subtract
    case .symbol(.star): .multiply
    case .symbol(.slash): .divide
    case .symbol(.starStar): .power
    default: nil
    }
  }

  /// One operand: unary minus (which binds tighter than any binary operator, `-2 ** 2` is 4) or a
  /// primary with its suffixes.
  private mutating func parseOperand() throws -> QueryExpression {
    if isSymbol(.minus) { return try parseNegation() }
    let primary = try parsePrimary()
    return try parseSuffixes(primary)
  }

  /// `-x`: a negative constant for a number (so `-9223372036854775808` fits), the negated constant
  /// for a numeric constant, `from:subtract:(0, x)` otherwise.
  private mutating func parseNegation() throws -> QueryExpression {
    let base = depth
    defer { depth = base }
    var minuses = 0
    while isSymbol(.minus) {
      try enter()
      minuses += 1
      advance()
    }
    var expression: QueryExpression
    if case .number(let text) = current.kind {
      expression = .constant(try numberValue(text, negative: true, at: current.start))
      advance()
      minuses -= 1
    } else {
      let primary = try parsePrimary()
      expression = try parseSuffixes(primary)
    }
    for _ in 0..<minuses { expression = Self.negated(expression) }
    return expression
  }

  private static func negated(_ expression: QueryExpression) -> QueryExpression {
    switch expression {
    case .constant(.int(let i)) where i != .min: .constant(.int(-i))
    case .constant(.double(let d)): .constant(.double(-d))
    case .constant(.decimal(let d)): .constant(.decimal(-d))
    default: .function("from:subtract:", [.constant(.int(0)), expression])
    }
  }

  // MARK: Key paths

  /// `.key` and `.@operator` suffixes and subscripts (`[n]`, `[FIRST]`, `[LAST]`, `[SIZE]`, then keys of
  /// the element); then the finished expression.
  private mutating func parseSuffixes(_ start: Primary) throws -> QueryExpression {
    let base = depth
    defer { depth = base }
    var primary = start
    var subscripted: (collection: QueryExpression, position: QuerySubscript, keys: [String])?
    func finishSubscript(_ s: (collection: QueryExpression, position: QuerySubscript, keys: [String])) -> QueryExpression {
      .subscripted(s.collection, by: s.position, keyPath: s.keys.isEmpty ? nil : s.keys.joined(separator: "."))
    }
    while isSymbol(.dot) || isSymbol(.openBracket) {
      if isSymbol(.openBracket) {
        let collection = try subscripted.map(finishSubscript) ?? finish(primary)
        try enter()
        advance()
        let index = try parseSubscriptIndex()
        guard isSymbol(.closeBracket) else {
          throw failure("expected ']' to close the subscript", at: current.start, found: describe(current))
        }
        advance()
        subscripted = (collection, index, [])
        continue
      }
      if var element = subscripted {
        advance()
        let token = current
        guard case .word(let name) = token.kind, element.position != .size else {
          throw failure(
            element.position == .size
              ? "a key cannot follow [SIZE], which is a number" : "only a key can follow a subscript's element",
            at: token.start, found: describe(token))
        }
        advance()
        element.keys.append(name)
        if element.keys.count >= QueryLimits.maxKeyPathComponents {
          throw failure("a key path has more than \(QueryLimits.maxKeyPathComponents) components", at: token.start)
        }
        subscripted = element
        continue
      }
      advance()
      let token = current
      let component: KeyComponent
      switch token.kind {
      case .word(let name), .escapedWord(let name):
        component = KeyComponent(name: name, isOperator: false, position: token.start)
      case .collectionOperator(let name):
        component = KeyComponent(
          name: try collectionOperator(name, at: token.start), isOperator: true, position: token.start)
      default:
        throw failure("expected a key after '.'", at: token.start, found: describe(token))
      }
      advance()
      switch primary {
      case .keyPath(var components):
        primary = .evaluatedObject  // releases the array so the append below does not copy it
        components.append(component)
        primary = .keyPath(components)
      case .variable(let name):
        primary = .keyPath([KeyComponent(name: "$" + name, isOperator: false, position: token.start), component])
      case .evaluatedObject where !component.isOperator: primary = .keyPath([component])
      case .evaluatedObject, .other:
        let operand = try finish(primary)
        try enter()
        guard component.isOperator, let function = Self.collectionFunctions[component.name] else {
          throw failure(
            "a key can only follow a key path, SELF or a $variable", at: token.start, found: describe(token))
        }
        primary = .other(.function(function, [operand]))
      }
      if case .keyPath(let components) = primary, components.count > QueryLimits.maxKeyPathComponents {
        throw failure("a key path has more than \(QueryLimits.maxKeyPathComponents) components", at: token.start)
      }
    }
    if let element = subscripted { return finishSubscript(element) }
    return try finish(primary)
  }

  /// What stands between a subscript's brackets: `FIRST`, `LAST`, `SIZE` (any case) or an index expression.
  private mutating func parseSubscriptIndex() throws -> QuerySubscript {
    if case .word(let name) = current.kind, let symbolic = QuerySubscript.symbolicFunctions[name.uppercased()],
      case .symbol(.closeBracket) = peekKind(1)
    {
      advance()
      return symbolic
    }
    return .index(try parseExpression())
  }

  private func collectionOperator(_ name: String, at position: Int) throws -> String {
    let lowered = name.lowercased()
    guard Self.collectionFunctions[lowered] != nil else {
      throw failure(
        "unknown collection operator '@\(name)' (expected @count, @sum, @avg, @min or @max)", at: position)
    }
    return lowered
  }

  private func finish(_ primary: Primary) throws -> QueryExpression {
    switch primary {
    case .keyPath(let components): return try keyPath(components)
    case .variable(let name): return .variable(name)
    case .evaluatedObject: return .evaluatedObject
    case .other(let expression): return expression
    }
  }

  /// Joins key components into a dotted key path, moving a collection operator written in the middle
  /// (`items.@sum.price`, as key-value coding writes it) to the end (`items.price.@sum`).
  private func keyPath(_ components: [KeyComponent]) throws -> QueryExpression {
    let operators = components.indices.filter { components[$0].isOperator }
    var ordered = components
    if let i = operators.first {
      let op = components[i]
      if operators.count > 1 {
        throw failure("a key path can hold only one collection operator", at: components[operators[1]].position)
      }
      if i == 0 {
        throw failure("a collection operator must follow a to-many key path", at: op.position)
      }
      if op.name == "count" && i != components.count - 1 {
        throw failure("@count must end the key path", at: components[i + 1].position)
      }
      ordered.remove(at: i)
      ordered.append(op)
    }
    return .keyPath(ordered.map { $0.isOperator ? "@" + $0.name : $0.name }.joined(separator: "."))
  }

  // MARK: Primaries

  private mutating func parsePrimary() throws -> Primary {
    switch current.kind {
    case .symbol(.openParen): return .other(try parseGroup())
    case .symbol(.openBrace): return .other(try parseCollectionLiteral())
    case .word: return try parseWord()
    default: return try parseAtom()
    }
  }

  private mutating func parseGroup() throws -> QueryExpression {
    let open = current
    try enter()
    defer { depth -= 1 }
    advance()
    let expression = try parseExpression()
    try expectClose(.closeParen, "')'", opening: open)
    return expression
  }

  /// `{a, b}`: a constant array when every element is a constant, else an aggregate expression.
  private mutating func parseCollectionLiteral() throws -> QueryExpression {
    let items = try parseList(.openBrace, .closeBrace)
    return Self.collection(items)
  }

  /// `( a, b, … )` or `{ a, b, … }`, possibly empty, at the opening symbol (which the caller checked).
  private mutating func parseList(_ open: Symbol, _ close: Symbol) throws -> [QueryExpression] {
    let opening = current
    try enter()
    defer { depth -= 1 }
    advance()
    var items: [QueryExpression] = []
    if !isSymbol(close) {
      items.append(try parseExpression())
      while isSymbol(.comma) {
        advance()
        items.append(try parseExpression())
      }
    }
    try expectClose(close, close == .closeBrace ? "',' or '}'" : "',' or ')'", opening: opening)
    return items
  }

  static func collection(_ items: [QueryExpression]) -> QueryExpression {
    var values: [Value] = []
    for item in items {
      guard case .constant(let value) = item else { return .aggregate(items) }
      values.append(value)
    }
    return .constant(.array(values))
  }

  private mutating func parseWord() throws -> Primary {
    switch current.keyword {
    case .subquery?: return .other(try parseSubquery())
    case .cast?: return .other(try parseCast())
    case nil: return isCall() ? .other(try parseFunction()) : takeKey()
    default: return try takeKeywordLiteral()
    }
  }

  /// Whether the word at hand names a function: `now(`, `lowercase:(`, `add:to:(`.
  private func isCall() -> Bool {
    switch peekKind(1) {
    case .symbol(.colon), .symbol(.openParen): true
    default: false
    }
  }

  private mutating func takeKey() -> Primary {
    let token = current
    advance()
    guard case .word(let name) = token.kind else { return .other(.constant(.null)) }
    return .keyPath([KeyComponent(name: name, isOperator: false, position: token.start)])
  }

  private mutating func takeKeywordLiteral() throws -> Primary {
    let token = current
    let primary: Primary
    switch token.keyword {
    case .nilLiteral?, .nullLiteral?: primary = .other(.constant(.null))
    case .yesLiteral?, .trueLiteral?: primary = .other(.constant(.bool(true)))
    case .noLiteral?, .falseLiteral?: primary = .other(.constant(.bool(false)))
    case .selfKeyword?: primary = .evaluatedObject
    default: throw failure("expected an expression", at: token.start, found: describe(token))
    }
    advance()
    return primary
  }

  /// Literals, `$variables`, `#keys` and arguments: everything that does not nest.
  private mutating func parseAtom() throws -> Primary {
    let token = current
    let primary: Primary
    switch token.kind {
    case .number(let text): primary = .other(.constant(try numberValue(text, negative: false, at: token.start)))
    case .string(let s): primary = .other(.constant(.string(s)))
    case .variable(let name): primary = .variable(name)
    case .escapedWord(let name):
      primary = .keyPath([KeyComponent(name: name, isOperator: false, position: token.start)])
    case .argument(let specifier, let i): primary = try argument(specifier, i, token)
    case .collectionOperator:
      throw failure("a collection operator must follow a to-many key path", at: token.start)
    case .percent:
      throw failure(
        "expected an expression", at: token.start, found: "'%%' (a literal percent sign belongs inside a quoted string)"
      )
    case .word, .symbol, .end:
      throw failure("expected an expression", at: token.start, found: describe(token))
    }
    advance()
    return primary
  }

  // MARK: Calls

  private mutating func parseSubquery() throws -> QueryExpression {
    try enter()
    defer { depth -= 1 }
    advance()
    let open = current
    try expectOpen(after: "SUBQUERY")
    let collection = try parseExpression()
    try expectComma(in: "SUBQUERY(", opening: open)
    let variable = try takeSubqueryVariable()
    try expectComma(in: "SUBQUERY(", opening: open)
    let node = try parseOr()
    let predicate = try requirePredicate(node)
    try expectClose(.closeParen, "')'", opening: open)
    return .subquery(collection: collection, variable: variable, predicate: predicate)
  }

  private mutating func takeSubqueryVariable() throws -> String {
    guard case .variable(let variable) = current.kind else {
      throw failure(
        "expected a $variable as the second argument of SUBQUERY", at: current.start, found: describe(current))
    }
    advance()
    return variable
  }

  private mutating func parseCast() throws -> QueryExpression {
    try enter()
    defer { depth -= 1 }
    advance()
    let open = current
    try expectOpen(after: "CAST")
    let valueStart = current.start
    let value = try parseExpression()
    try expectComma(in: "CAST(", opening: open)
    let typeStart = current.start
    let type = try parseExpression()
    try expectClose(.closeParen, "')'", opening: open)
    return try cast(value, at: valueStart, to: type, at: typeStart)
  }

  private func cast(
    _ value: QueryExpression, at valueStart: Int, to type: QueryExpression, at typeStart: Int
  ) throws
    -> QueryExpression
  {
    guard case .constant(.string(let typeName)) = type else {
      throw failure("expected a type name string (\"NSDate\", \"UUID\", …) in CAST", at: typeStart)
    }
    do {
      return try FormatLiterals.cast(value, to: typeName)
    } catch {
      throw failure(error.message, at: error.isTypeError ? typeStart : valueStart)
    }
  }

  private mutating func parseFunction() throws -> QueryExpression {
    let start = current.start
    let function = try takeFunctionName()
    let arguments = try parseList(.openParen, .closeParen)
    return try call(function, arguments, at: start)
  }

  /// `name`, `name:` or `name:part:` before `(`, looked up in the known functions.
  private mutating func takeFunctionName() throws -> FormatLiterals.Function {
    let token = current
    guard case .word(var name) = token.kind else { throw failure("expected a function name", at: token.start) }
    advance()
    if isSymbol(.colon) {
      name += ":"
      advance()
      while case .word(let part) = current.kind, peekKind(1) == .symbol(.colon) {
        name += part + ":"
        advance()
        advance()
      }
    }
    if name.uppercased() == "FUNCTION" {
      throw failure("FUNCTION(…) is not supported; call a built-in function as name:(arguments)", at: token.start)
    }
    guard let function = FormatLiterals.functions[name.lowercased()] else {
      throw failure("unknown function '\(name)'", at: token.start)
    }
    guard isSymbol(.openParen) else {
      throw failure("expected '(' after '\(function.name)'", at: current.start, found: describe(current))
    }
    return function
  }

  private func call(
    _ function: FormatLiterals.Function, _ arguments: [QueryExpression], at start: Int
  ) throws
    -> QueryExpression
  {
    var arguments = arguments
    if function.takesCollection && arguments.count > 1 { arguments = [Self.collection(arguments)] }
    guard arguments.count == function.arity else {
      throw failure(
        "\(function.name) takes \(Self.plural(function.arity, "argument")), found \(arguments.count)", at: start)
    }
    return .function(function.name, arguments)
  }

  // MARK: Arguments and numbers

  private func argument(_ specifier: ArgumentSpecifier, _ i: Int, _ token: PredicateToken) throws -> Primary {
    guard i < arguments.count else {
      throw failure("missing argument \(i + 1) for '\(sourceText(token))'", at: token.start)
    }
    let value = arguments[i].predicateValue
    func wrong(_ expected: String) -> StoreError {
      failure(
        "argument \(i + 1) for '\(sourceText(token))' must be \(expected)", at: token.start, found: describe(value))
    }
    switch (specifier, value) {
    case (.object, _): return .other(.constant(value))
    case (.keyPath, .string(let path)): return .keyPath(try keyComponents(path, token, i))
    case (.keyPath, _): throw wrong("a key path string")
    case (.integer, .int): return .other(.constant(value))
    case (.integer, .bool(let b)): return .other(.constant(.int(b ? 1 : 0)))
    case (.integer, _): throw wrong("an integer")
    case (.float, .double): return .other(.constant(value))
    case (.float, _):
      guard let d = value.numericValue else { throw wrong("a number") }
      return .other(.constant(.double(d)))
    }
  }

  /// The components of a `%K` key path string; each must be an identifier or a collection operator.
  private func keyComponents(_ path: String, _ token: PredicateToken, _ i: Int) throws -> [KeyComponent] {
    var components: [KeyComponent] = []
    for part in path.split(separator: ".", omittingEmptySubsequences: false) {
      let name = String(part)
      if name.hasPrefix("@") {
        let op = try collectionOperator(String(name.dropFirst()), at: token.start)
        components.append(KeyComponent(name: op, isOperator: true, position: token.start))
      } else if PredicateCharacters.isIdentifier(name) {
        components.append(KeyComponent(name: name, isOperator: false, position: token.start))
      } else {
        throw failure(
          "argument \(i + 1) for '%K' is not a key path", at: token.start, found: FormatLiterals.quoted(path))
      }
    }
    return components
  }

  private func numberValue(_ text: String, negative: Bool, at position: Int) throws -> Value {
    var outOfRange: StoreError { failure("number \(negative ? "-" : "")\(text) is out of range", at: position) }
    var radix = 10
    var digits = Substring(text)
    if text.hasPrefix("0x") || text.hasPrefix("0o") || text.hasPrefix("0b") {
      radix = text.hasPrefix("0x") ? 16 : text.hasPrefix("0o") ? 8 : 2
      digits = digits.dropFirst(2)
    } else if text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
      guard let d = Double(text), d.isFinite else { throw outOfRange }
      return .double(negative ? -d : d)
    }
    guard let magnitude = UInt64(digits, radix: radix) else { throw outOfRange }
    if !negative {
      guard let i = Int64(exactly: magnitude) else { throw outOfRange }
      return .int(i)
    }
    if magnitude == UInt64(Int64.max) + 1 { return .int(.min) }
    guard let i = Int64(exactly: magnitude) else { throw outOfRange }
    return .int(-i)
  }
}
