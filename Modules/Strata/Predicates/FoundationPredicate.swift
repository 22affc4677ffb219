import Foundation
internal import StrataStoreKit

extension QueryPredicate {
  /// Translates a Foundation `#Predicate` over a managed object class into Strata's predicate syntax tree,
  /// so the same condition runs in every store (SQL or in memory).
  ///
  /// ```swift
  /// let heat = try QueryPredicate(#Predicate<Movie> { $0.title == "Heat" && $0.year > 1990 })
  /// // the same tree as try QueryPredicate(format: "title == 'Heat' AND year > 1990")
  /// ```
  ///
  /// Supported: `==`, `!=`, `<`, `<=`, `>`, `>=`, `&&`, `||`, `!`; key paths through `@Attribute` and
  /// `@Relationship` properties, including optional chaining (`$0.director?.name` → `director.name`) and
  /// forced unwrapping; constants of any `PredicateArgument` or ``AttributeValue`` type, `nil`, object
  /// IDs and managed objects; `==`/`!=` against `nil`; `string.contains(s)` (`CONTAINS`),
  /// `string.starts(with: s)` (`BEGINSWITH`), `string.localizedStandardContains(s)` (`CONTAINS[cd]`);
  /// `array.contains(value)` (`value IN array`); arithmetic `+`, `-`, `*` and floating-point `/`; a Boolean
  /// key path on its own (`$0.isFavorite` → `isFavorite == YES`).
  ///
  /// - Throws: `StoreError` `.unsupported` naming the construct (for example
  ///   `PredicateExpressions.NilCoalesce`, `PredicateExpressions.Conditional`, or a key path that is not an
  ///   `@Attribute`/`@Relationship` property) when the predicate uses something Strata cannot express.
  public init<Root: ManagedObject>(_ predicate: Foundation.Predicate<Root>) throws {
    let context = PredicateTranslationContext(prefixes: [predicate.variable.key: ""])
    self = try context.predicate(predicate.expression)
  }
}

extension FetchRequest {
  /// A request whose condition is a Foundation `#Predicate`, translated to Strata's predicate tree.
  ///
  /// ```swift
  /// let request = try FetchRequest<Movie>(
  ///   #Predicate<Movie> { $0.genre.localizedStandardContains("drama") || $0.director?.name == "Michael Mann" },
  ///   sortDescriptors: [QuerySort(\Movie.title)])
  /// let movies = try context.fetch(request)
  /// ```
  /// - Throws: `StoreError` `.unsupported` naming the construct the predicate uses that Strata cannot
  ///   translate; see `QueryPredicate.init(_:)`.
  public init(_ predicate: Foundation.Predicate<Result>, sortDescriptors: [QuerySort] = []) throws {
    self.init(predicate: try QueryPredicate(predicate), sortDescriptors: sortDescriptors)
  }
}

/// What one node of a `#Predicate` expression tree becomes.
enum PredicateTranslationNode {
  /// A condition (`==`, `&&`, `contains`, …).
  case predicate(QueryPredicate)
  /// A value (a key path, a constant, arithmetic, the evaluated object).
  case expression(QueryExpression)
}

/// Implemented by the `PredicateExpressions` types Strata can translate.
protocol StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode
}

/// The state of a translation: the model key path each `#Predicate` variable stands for.
struct PredicateTranslationContext {
  /// By variable: `""` for the predicate's own input (the evaluated object), `director` for the variable
  /// that `$0.director?…` binds.
  var prefixes: [PredicateExpressions.VariableID: String]

  /// The node of any `PredicateExpressions` value.
  func node(_ expression: Any) throws -> PredicateTranslationNode {
    guard let translatable = expression as? any StrataPredicateTranslatable else {
      throw Self.unsupported(constructName(of: expression))
    }
    return try translatable.strataTranslate(self)
  }

  /// The node of `expression` as a condition; a Boolean key path becomes `key == YES`.
  func predicate(_ expression: Any) throws -> QueryPredicate {
    switch try node(expression) {
    case .predicate(let predicate): return predicate
    case .expression(.constant(.bool(let flag))): return .constant(flag)
    case .expression(let value) where Self.isKeyPath(value):
      return .comparison(StrataCore.Comparison(value, .equalTo, .constant(.bool(true))))
    case .expression:
      throw Self.unsupported("\(constructName(of: expression)) used as a condition")
    }
  }

  /// The node of `expression` as a value.
  func expression(_ expression: Any) throws -> QueryExpression {
    switch try node(expression) {
    case .expression(let value): return value
    case .predicate:
      throw Self.unsupported("\(constructName(of: expression)) used as a value")
    }
  }

  /// A comparison of two subexpressions.
  func comparison(
    _ lhs: Any, _ op: ComparisonOperator, _ rhs: Any, options: StringOptions = []
  )
    throws -> PredicateTranslationNode
  {
    .predicate(.comparison(StrataCore.Comparison(try expression(lhs), op, try expression(rhs), options: options)))
  }

  /// The conditions of a chain of `&&` (or `||`), flattened the way the format parser groups them.
  func junction(_ lhs: Any, _ rhs: Any, isAnd: Bool) throws -> PredicateTranslationNode {
    var parts: [QueryPredicate] = []
    for side in [lhs, rhs] {
      let part = try predicate(side)
      switch (part, isAnd) {
      case (.and(let items), true) where Self.isJunction(side, isAnd: true): parts += items
      case (.or(let items), false) where Self.isJunction(side, isAnd: false): parts += items
      default: parts.append(part)
      }
    }
    return .predicate(isAnd ? .and(parts) : .or(parts))
  }

  /// A function call (`add:to:` and so on) on two subexpressions.
  func function(_ name: String, _ lhs: Any, _ rhs: Any) throws -> PredicateTranslationNode {
    .expression(.function(name, [try expression(lhs), try expression(rhs)]))
  }

  /// The model key path a translated key-path root stands for: `""` for the evaluated object.
  func keyPathPrefix(of root: Any) throws -> String {
    switch try expression(root) {
    case .evaluatedObject: return ""
    case .keyPath(let path): return path
    default: throw Self.unsupported("key path on \(constructName(of: root))")
    }
  }

  /// A Swift constant as a stored value.
  static func constant(_ value: Any) throws -> StrataCore.Value {
    if let argument = value as? any PredicateArgument { return argument.predicateValue }
    if let attribute = value as? any AttributeValue { return attribute.storedValue }
    let mirror = Mirror(reflecting: value)
    if mirror.displayStyle == .optional, mirror.children.isEmpty { return .null }
    throw unsupported("constant of type \(type(of: value))")
  }

  static func unsupported(_ construct: String) -> StoreError {
    StoreError(
      .unsupported,
      "#Predicate construct \(construct) cannot be translated to a Strata query; use a format string or Where<T>")
  }

  private static func isKeyPath(_ expression: QueryExpression) -> Bool {
    if case .keyPath = expression { return true }
    return false
  }

  private static func isJunction(_ expression: Any, isAnd: Bool) -> Bool {
    isAnd ? expression is any ConjunctionMarker : expression is any DisjunctionMarker
  }
}

/// `PredicateExpressions.Comparison<…>` as `PredicateExpressions.Comparison`: the construct without its
/// generic arguments, which would repeat the whole subtree.
func constructName(of expression: Any) -> String {
  let full = String(reflecting: type(of: expression))
  let base = full.prefix { $0 != "<" }
  let trimmed = base.hasPrefix("FoundationEssentials.") ? base.dropFirst("FoundationEssentials.".count) : base
  return String(trimmed)
}

/// Marks `&&` nodes, so a chain `a && b && c` flattens to one `.and` like the format parser's.
protocol ConjunctionMarker {}
/// Marks `||` nodes, so a chain `a || b || c` flattens to one `.or` like the format parser's.
protocol DisjunctionMarker {}
