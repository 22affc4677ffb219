import Foundation

/// A predicate: the condition of a fetch request, in one syntax tree shared by every front end
/// (format strings, typed key paths, `#Predicate`) and every backend (SQL compiler, in-memory evaluator).
///
/// ```swift
/// let p = try QueryPredicate(format: "genre CONTAINS[c] %@ AND releaseDate > %@", "action", cutoff)
/// let q: QueryPredicate = .and([
///   .comparison(.init(.keyPath("genre"), .contains, .constant("action"), options: .caseInsensitive)),
///   .comparison(.init(.keyPath("releaseDate"), .greaterThan, .constant(.date(cutoff)))),
/// ])
/// ```
public indirect enum QueryPredicate: Sendable, Hashable, Codable {
  /// `TRUEPREDICATE` or `FALSEPREDICATE`.
  case constant(Bool)
  /// A comparison of two expressions.
  case comparison(Comparison)
  /// All of the subpredicates hold (`AND`, `&&`).
  case and([QueryPredicate])
  /// Any of the subpredicates holds (`OR`, `||`).
  case or([QueryPredicate])
  /// The subpredicate does not hold (`NOT`, `!`).
  case not(QueryPredicate)

  /// `TRUEPREDICATE`.
  public static let `true` = QueryPredicate.constant(true)
  /// `FALSEPREDICATE`.
  public static let `false` = QueryPredicate.constant(false)

  /// The predicate with every `$NAME` variable replaced by the value given for it.
  /// - Throws: ``StoreError`` `.invalidQuery` naming a variable that has no value.
  public func substituting(_ variables: [String: Value]) throws -> QueryPredicate {
    switch self {
    case .constant: return self
    case .comparison(let c):
      var c = c
      c.left = try c.left.substituting(variables)
      c.right = try c.right.substituting(variables)
      return .comparison(c)
    case .and(let ps): return .and(try ps.map { try $0.substituting(variables) })
    case .or(let ps): return .or(try ps.map { try $0.substituting(variables) })
    case .not(let p): return .not(try p.substituting(variables))
    }
  }

  /// Every key path the predicate reads, outermost first (subquery variables excluded).
  public var keyPaths: [String] {
    switch self {
    case .constant: []
    case .comparison(let c): c.left.keyPaths + c.right.keyPaths
    case .and(let ps), .or(let ps): ps.flatMap(\.keyPaths)
    case .not(let p): p.keyPaths
    }
  }
}

/// How a comparison treats a to-many key path on its left side.
public enum ComparisonModifier: String, Sendable, Hashable, Codable {
  /// A plain comparison.
  case direct
  /// `ANY` / `SOME`: true when at least one element matches.
  case any
  /// `ALL`: true when every element matches (true for an empty collection).
  case all
  /// `NONE`: true when no element matches.
  case none
}

/// A comparison operator.
public enum ComparisonOperator: String, Sendable, Hashable, Codable, CaseIterable {
  /// `==`: equal.
  case equalTo = "=="
  /// `!=`: not equal.
  case notEqualTo = "!="
  /// `<`: less than.
  case lessThan = "<"
  /// `<=`: less than or equal.
  case lessThanOrEqualTo = "<="
  /// `>`: greater than.
  case greaterThan = ">"
  /// `>=`: greater than or equal.
  case greaterThanOrEqualTo = ">="
  /// `CONTAINS`: the left string contains the right one.
  case contains = "CONTAINS"
  /// `BEGINSWITH`: the left string starts with the right one.
  case beginsWith = "BEGINSWITH"
  /// `ENDSWITH`: the left string ends with the right one.
  case endsWith = "ENDSWITH"
  /// `LIKE`: a wildcard pattern over the whole string (`*` any run of characters, `?` one character).
  case like = "LIKE"
  /// `MATCHES`: an ICU regular expression matching the whole string.
  case matches = "MATCHES"
  /// The left value is an element of the right collection (or a substring of the right string).
  case `in` = "IN"
  /// The left value lies between the two elements of the right collection, inclusive.
  case between = "BETWEEN"

  /// Whether the operator only makes sense on strings (and so honours ``StringOptions``).
  public var isStringOperator: Bool {
    switch self {
    case .contains, .beginsWith, .endsWith, .like, .matches: true
    default: false
    }
  }
}

/// Options of a string comparison, written `[c]`, `[d]`, `[n]` or combined (`[cd]`) after the operator.
public struct StringOptions: OptionSet, Sendable, Hashable, Codable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// `[c]`: case-insensitive, with full Unicode case folding (`ß` matches `SS`).
  public static let caseInsensitive = StringOptions(rawValue: 1)
  /// `[d]`: diacritic-insensitive (`é` matches `e`).
  public static let diacriticInsensitive = StringOptions(rawValue: 2)
  /// `[n]`: both sides are already normalized; compare code points as they are.
  public static let normalized = StringOptions(rawValue: 4)

  /// The options as written in a format string: `[cd]`, or an empty string when there are none.
  public var formatSuffix: String {
    var s = ""
    if contains(.caseInsensitive) { s += "c" }
    if contains(.diacriticInsensitive) { s += "d" }
    if contains(.normalized) { s += "n" }
    return s.isEmpty ? "" : "[\(s)]"
  }
}

/// One comparison: `left op right`, with a modifier for to-many key paths and string options.
public struct Comparison: Sendable, Hashable, Codable {
  /// The value compared, usually a key path.
  public var left: QueryExpression
  /// The operator.
  public var op: ComparisonOperator
  /// The value compared with, usually a constant.
  public var right: QueryExpression
  /// `ANY`, `ALL`, `NONE` for a to-many key path on the left; `direct` otherwise.
  public var modifier: ComparisonModifier
  /// Case, diacritic and normalization options of a string operator.
  public var options: StringOptions

  /// A comparison `left op right`.
  public init(
    _ left: QueryExpression, _ op: ComparisonOperator, _ right: QueryExpression,
    modifier: ComparisonModifier = .direct, options: StringOptions = []
  ) {
    self.left = left
    self.op = op
    self.right = right
    self.modifier = modifier
    self.options = options
  }
}

/// An expression inside a predicate, a sort, or a computed property.
public indirect enum QueryExpression: Sendable, Hashable, Codable {
  /// A literal value (including `nil`, and arrays written `{a, b}` once their elements are constants).
  case constant(Value)
  /// A key path from the evaluated object: `title`, `director.name`, `movies.@count`, `items.price.@sum`.
  case keyPath(String)
  /// A substitution variable `$NAME`, replaced before execution (or bound by a `SUBQUERY`).
  case variable(String)
  /// `SELF`: the evaluated object itself.
  case evaluatedObject
  /// An aggregate literal `{a, b, …}` whose elements are expressions.
  case aggregate([QueryExpression])
  /// A function call: `now()`, `lowercase:(title)`, `sum:(…)`, arithmetic `add:to:` and so on.
  case function(String, [QueryExpression])
  /// `SUBQUERY(collection, $variable, predicate)`: the elements of `collection` matching `predicate`.
  case subquery(collection: QueryExpression, variable: String, predicate: QueryPredicate)

  /// The expression with every free `$NAME` variable replaced by the value given for it.
  /// - Throws: ``StoreError`` `.invalidQuery` naming a variable that has no value.
  public func substituting(_ variables: [String: Value], bound: Set<String> = []) throws -> QueryExpression {
    switch self {
    case .constant, .keyPath, .evaluatedObject: return self
    case .variable(let name):
      if bound.contains(name) { return self }
      guard let value = variables[name] else {
        throw StoreError(.invalidQuery, "no value was given for the variable $\(name)", key: name)
      }
      return .constant(value)
    case .aggregate(let items): return .aggregate(try items.map { try $0.substituting(variables, bound: bound) })
    case .function(let name, let args):
      return .function(name, try args.map { try $0.substituting(variables, bound: bound) })
    case .subquery(let collection, let variable, let predicate):
      let substitutedPredicate = try predicate.substituting(variablesExcluding: variable, from: variables)
      return .subquery(
        collection: try collection.substituting(variables, bound: bound), variable: variable,
        predicate: substitutedPredicate)
    }
  }

  /// Every key path the expression reads from the evaluated object.
  public var keyPaths: [String] {
    switch self {
    case .keyPath(let k): [k]
    case .constant, .variable, .evaluatedObject: []
    case .aggregate(let items): items.flatMap(\.keyPaths)
    case .function(_, let args): args.flatMap(\.keyPaths)
    case .subquery(let collection, _, _): collection.keyPaths
    }
  }
}

extension QueryPredicate {
  fileprivate func substituting(
    variablesExcluding bound: String, from variables: [String: Value]
  ) throws
    -> QueryPredicate
  {
    switch self {
    case .constant: return self
    case .comparison(let c):
      var c = c
      c.left = try c.left.substituting(variables, bound: [bound])
      c.right = try c.right.substituting(variables, bound: [bound])
      return .comparison(c)
    case .and(let ps): return .and(try ps.map { try $0.substituting(variablesExcluding: bound, from: variables) })
    case .or(let ps): return .or(try ps.map { try $0.substituting(variablesExcluding: bound, from: variables) })
    case .not(let p): return .not(try p.substituting(variablesExcluding: bound, from: variables))
    }
  }
}

/// How strings are ordered by a ``QuerySort``.
public enum StringComparator: String, Sendable, Hashable, Codable, CaseIterable {
  /// Code-point order ("B" before "a").
  case `default`
  /// Case-insensitive order, ties broken by code point.
  case caseInsensitive
  /// Case- and diacritic-insensitive order ("é" with "e"), ties broken by code point.
  case localized
  /// Finder-style order: case- and diacritic-insensitive and numeric-aware ("File2" before "file10").
  case localizedStandard
}

/// One sort key of a fetch: a key path, a direction, and for strings a comparator.
///
/// ```swift
/// QuerySort("title", comparator: .localizedStandard)
/// QuerySort("releaseDate", ascending: false)
/// ```
public struct QuerySort: Sendable, Hashable, Codable {
  /// The key path to sort by (`title`, `director.name`).
  public var keyPath: String
  /// Whether smaller values come first.
  public var ascending: Bool
  /// How strings are compared.
  public var comparator: StringComparator

  /// A sort by `keyPath`: `QuerySort("title", comparator: .localizedStandard)`.
  public init(_ keyPath: String, ascending: Bool = true, comparator: StringComparator = .default) {
    self.keyPath = keyPath
    self.ascending = ascending
    self.comparator = comparator
  }

  /// The same key and comparator in the opposite direction.
  public var reversed: QuerySort {
    var copy = self
    copy.ascending.toggle()
    return copy
  }
}
