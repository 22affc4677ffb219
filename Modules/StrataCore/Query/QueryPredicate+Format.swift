import Foundation

extension QueryPredicate {
  /// Parses an NSPredicate format string, replacing `%@`, `%K`, `%d`, `%f`… with `arguments` in order.
  ///
  /// ```swift
  /// let p = try QueryPredicate(format: "title BEGINSWITH[cd] %@ AND year BETWEEN {1990, 1999}", "the")
  /// let q = try QueryPredicate(format: "ANY %K.name IN %@", "actors", ["Pacino", "De Niro"])
  /// let r = try QueryPredicate(format: "SUBQUERY(items, $i, $i.price > 5).@count > 0")
  /// ```
  ///
  /// The grammar is NSPredicate's:
  /// - **Logic**: `AND &&`, `OR ||`, `NOT !` (NOT binds tighter than AND, AND tighter than OR),
  ///   parentheses, `TRUEPREDICATE`, `FALSEPREDICATE`.
  /// - **Comparisons**: `== = != <> < <= =< > >= => BETWEEN IN CONTAINS BEGINSWITH ENDSWITH LIKE MATCHES`,
  ///   any of them followed by options `[c]`, `[d]`, `[n]` or a combination (`[cd]`); `ANY`/`SOME`,
  ///   `ALL`, `NONE` before a comparison. `BETWEEN` takes `{lower, upper}` (or a two-element argument);
  ///   `IN` takes `{…}`, an array argument, a key path, a variable or a string.
  /// - **Expressions**: key paths (`title`, `director.name`, `movies.@count`, `items.price.@sum`; the
  ///   key-value-coding form `items.@sum.price` is accepted and stored as `items.price.@sum`; collection
  ///   operators are `@count @sum @avg @min @max`), `#key` to use a reserved word as a key, `SELF`,
  ///   `$VARIABLE` (and `$x.key` inside a subquery, stored as the key path `"$x.key"`),
  ///   `SUBQUERY(collection, $x, predicate)` with an optional `.@count` (or `.@sum` …) after it,
  ///   `nil NULL YES NO TRUE FALSE`, numbers (`12`, `-3`, `1.5`, `2e10`, `.5`, `0x1F`, `0o17`, `0b101`),
  ///   strings in `"…"` or `'…'` with escapes `\" \' \\ \/ \n \t \r \0 \uXXXX`, literal collections
  ///   `{1, 2, 'a'}`, arithmetic `+ - * / **` and unary minus (which binds tighter than `**`), functions
  ///   `now()`, `random()`, `lowercase:(x)`, `uppercase:(x)`, `canonical:(x)` (case and diacritic folded),
  ///   `abs: sqrt: log: ln: exp: floor: ceiling: trunc:`, `modulus:by:(a, b)`, and on a collection
  ///   `sum: count: min: max: average: median: mode: stddev:` (`sum:(a, b)` means `sum:({a, b})`), and
  ///   `CAST(x, "NSDate" | "NSNumber" | "NSDecimalNumber" | "NSString" | "UUID" | "NSURL" | "NSData" | "ObjectID")`.
  /// - **Arguments**: `%@` (any ``PredicateArgument``), `%K` (a key path string), `%d %i %u` with length
  ///   modifiers (`%ld`, `%lld`, `%hd`, `%qd`, `%zd`…; an integer or a Bool), `%f %lf %e %g` (a number).
  ///   Specifiers inside quotes are literal text. `%%` is a literal percent sign, which is only
  ///   meaningful inside a string, where it is kept as written.
  ///
  /// Keywords are case-insensitive. Subscripts follow a collection: `items[0]`, `SELF[FIRST]`,
  /// `SELF[LAST]`, `tags[SIZE]`, `items[FIRST].name` (see ``QuerySubscript``); elsewhere `FIRST`, `LAST`
  /// and `SIZE` are ordinary keys. `FUNCTION(…)` and other functions are rejected. Nesting (parentheses, braces,
  /// calls, `NOT`s, unary minuses, operators in one arithmetic chain) is limited to 100 levels.
  ///
  /// How the pieces are stored: arguments become constants; `{…}` of constants becomes
  /// `.constant(.array)`, otherwise `.aggregate`; arithmetic becomes `.function("add:to:")`,
  /// `"from:subtract:"`, `"multiply:by:"`, `"divide:by:"`, `"raise:toPower:"` (unary minus of a
  /// non-constant is `from:subtract:` with 0); `X.@count` after a non-key-path becomes `count:(X)`;
  /// `CAST` of a constant folds to a constant, of anything else becomes `castObject:toType:`;
  /// `SOME` is `.any`; `SELF.key` is the key path `key`.
  ///
  /// - Throws: ``StoreError`` `.invalidQuery` with a one-line message naming the 0-based position
  ///   (in Unicode scalars, the character offset for ordinary text), what was expected and what was
  ///   found, e.g. `predicate "title ==": expected an expression at position 8, found end of input`.
  ///   Too few or too many arguments, an argument of the wrong type for its specifier, an unknown
  ///   specifier or option, unterminated strings and unbalanced parentheses are all reported this way.
  public init(format: String, _ arguments: any PredicateArgument...) throws {
    self = try PredicateParser.parsePredicate(format, arguments)
  }

  /// Parses an NSPredicate format string with its arguments in an array. See ``init(format:_:)``.
  ///
  /// ```swift
  /// let args: [any PredicateArgument] = ["title", "Heat"]
  /// let p = try QueryPredicate(format: "%K == %@", argumentArray: args)
  /// ```
  /// - Throws: ``StoreError`` `.invalidQuery` naming the position of the problem.
  public init(format: String, argumentArray: [any PredicateArgument]) throws {
    self = try PredicateParser.parsePredicate(format, argumentArray)
  }
}

extension QueryExpression {
  /// Parses one expression in NSPredicate syntax, such as a derived attribute or a computed property.
  ///
  /// ```swift
  /// let e = try QueryExpression(format: "lowercase:(title)")
  /// let f = try QueryExpression(format: "specialCount + %d", 1)  // .function("add:to:", …)
  /// ```
  /// The grammar is the expression part of ``QueryPredicate/init(format:_:)``.
  /// - Throws: ``StoreError`` `.invalidQuery` naming the position of the problem.
  public init(format: String, _ arguments: any PredicateArgument...) throws {
    self = try PredicateParser.parseExpression(format, arguments)
  }

  /// Parses one expression with its arguments in an array. See ``init(format:_:)``.
  /// - Throws: ``StoreError`` `.invalidQuery` naming the position of the problem.
  public init(format: String, argumentArray: [any PredicateArgument]) throws {
    self = try PredicateParser.parseExpression(format, argumentArray)
  }
}

extension QueryPredicate: CustomStringConvertible {
  /// The predicate as a canonical format string, which parses back to an equal predicate:
  /// `title BEGINSWITH[cd] "the" AND (year < 1990 OR year > 1999)`.
  ///
  /// Constants are written so they read back as the same kind of value: strings in double quotes,
  /// `YES`/`NO`, `nil`, dates as `CAST(<seconds since 2001-01-01>, "NSDate")`, decimals as
  /// `CAST("1.5", "NSDecimalNumber")`, UUIDs as `CAST("…", "UUID")`, URLs as `CAST("…", "NSURL")`,
  /// data as `CAST("<hex>", "NSData")`, object IDs as `CAST("strata://…", "ObjectID")`, and infinite
  /// or NaN numbers as `CAST("inf", "NSNumber")`.
  public var description: String {
    switch self {
    case .constant(let value): value ? "TRUEPREDICATE" : "FALSEPREDICATE"
    case .comparison(let c):
      c.modifier.formatPrefix + c.left.description + " " + c.op.rawValue + c.options.formatSuffix + " "
        + c.right.description
    case .and(let items): Self.joined(items, "AND", empty: "TRUEPREDICATE")
    case .or(let items): Self.joined(items, "OR", empty: "FALSEPREDICATE")
    case .not(let p):
      switch p {
      case .and, .or: "NOT (" + p.description + ")"
      default: "NOT " + p.description
      }
    }
  }

  private static func joined(_ items: [QueryPredicate], _ word: String, empty: String) -> String {
    guard !items.isEmpty else { return empty }
    return items.map { item in
      switch item {
      case .and, .or: "(" + item.description + ")"
      default: item.description
      }
    }.joined(separator: " \(word) ")
  }
}

extension ComparisonModifier {
  fileprivate var formatPrefix: String {
    switch self {
    case .direct: ""
    case .any: "ANY "
    case .all: "ALL "
    case .none: "NONE "
    }
  }
}

extension QueryExpression: CustomStringConvertible {
  /// The expression as a canonical format string, which parses back to an equal expression:
  /// `lowercase:(title)`, `(price - discount) * 2`, `SUBQUERY(items, $i, $i.price > 5).@count`.
  /// Constants are written as described on ``QueryPredicate/description``.
  public var description: String { formatted.text }

  private static let infix: [String: (symbol: String, precedence: Int)] = [
    "add:to:": ("+", 1), "from:subtract:": ("-", 1), "multiply:by:": ("*", 2), "divide:by:": ("/", 2),
    "raise:toPower:": ("**", 3),
  ]

  /// The text and the binding strength of its outermost operator (4 for an atom).
  private var formatted: (text: String, precedence: Int) {
    switch self {
    case .constant(let value): return (value.formatLiteral, 4)
    case .keyPath(let path): return (Self.formatKeyPath(path), 4)
    case .variable(let name): return ("$" + name, 4)
    case .evaluatedObject: return ("SELF", 4)
    case .aggregate(let items): return ("{" + items.map(\.description).joined(separator: ", ") + "}", 4)
    case .subquery(let collection, let variable, let predicate):
      return ("SUBQUERY(\(collection), $\(variable), \(predicate))", 4)
    case .function(let name, let args):
      if let op = Self.infix[name], args.count == 2 {
        let isPower = op.precedence == 3
        let left = args[0].formatted
        let right = args[1].formatted
        let leftText =
          left.precedence < op.precedence || (isPower && left.precedence == 3) ? "(\(left.text))" : left.text
        let rightText =
          right.precedence < op.precedence || (!isPower && right.precedence == op.precedence)
          ? "(\(right.text))" : right.text
        return ("\(leftText) \(op.symbol) \(rightText)", op.precedence)
      }
      if name == "castObject:toType:", args.count == 2, case .constant(.string(let type)) = args[1] {
        return ("CAST(\(args[0]), \(FormatLiterals.quoted(type)))", 4)
      }
      if name == "count:", args.count == 1, case .subquery = args[0] {
        return ("\(args[0]).@count", 4)
      }
      if let parts = subscriptParts {
        let collection = parts.collection.formatted
        let base = collection.precedence < 4 ? "(\(collection.text))" : collection.text
        let index: String
        switch parts.position {
        case .index(let expression): index = expression.description
        case .first: index = "FIRST"
        case .last: index = "LAST"
        case .size: index = "SIZE"
        }
        let key = parts.keyPath.map { "." + Self.formatKeyPath($0) } ?? ""
        return ("\(base)[\(index)]\(key)", 4)
      }
      return ("\(name)(" + args.map(\.description).joined(separator: ", ") + ")", 4)
    }
  }

  /// Key components as written: reserved words and keys that start with a digit get a `#`.
  private static func formatKeyPath(_ path: String) -> String {
    path.split(separator: ".", omittingEmptySubsequences: false).enumerated().map { i, part in
      let name = String(part)
      if name.hasPrefix("@") || (i == 0 && name.hasPrefix("$")) { return name }
      if PredicateCharacters.isIdentifier(name) && Keyword(word: name) == nil { return name }
      return PredicateCharacters.isEscapable(name) ? "#" + name : name
    }.joined(separator: ".")
  }
}

extension Value {
  /// The value as a format-string literal that parses back to an equal value.
  var formatLiteral: String {
    switch self {
    case .null: "nil"
    case .int(let i): String(i)
    case .double(let d): FormatLiterals.number(d)
    case .decimal(let d): "CAST(\(FormatLiterals.quoted(d.description)), \"NSDecimalNumber\")"
    case .string(let s): FormatLiterals.quoted(s)
    case .bool(let b): b ? "YES" : "NO"
    case .date(let d): "CAST(\(FormatLiterals.number(d.timeIntervalSinceReferenceDate)), \"NSDate\")"
    case .data(let d): "CAST(\"\(FormatLiterals.hex(d))\", \"NSData\")"
    case .uuid(let u): "CAST(\"\(u.uuidString)\", \"UUID\")"
    case .url(let u): "CAST(\(FormatLiterals.quoted(u.absoluteString)), \"NSURL\")"
    case .objectID(let id): "CAST(\(FormatLiterals.quoted(id.uriRepresentation)), \"ObjectID\")"
    case .array(let items): "{" + items.map(\.formatLiteral).joined(separator: ", ") + "}"
    }
  }
}
