import Foundation
internal import StrataStoreKit

// How each supported `PredicateExpressions` node becomes part of a `QueryPredicate`. Types without a
// conformance here (NilCoalesce, Conditional, Filter, casts, subscripts, …) are reported as unsupported.

extension PredicateExpressions.Variable: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    guard let prefix = context.prefixes[key] else {
      throw PredicateTranslationContext.unsupported("variable of type \(Output.self) bound outside the predicate")
    }
    return .expression(prefix.isEmpty ? .evaluatedObject : .keyPath(prefix))
  }
}

extension PredicateExpressions.KeyPath: StrataPredicateTranslatable where Root.Output: ManagedObject {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    let prefix = try context.keyPathPrefix(of: root)
    let partial: PartialKeyPath<Root.Output> = keyPath
    let name = KeyPathNames.name(of: partial)
    guard !name.hasPrefix("<") else {
      throw PredicateTranslationContext.unsupported(
        "key path \(keyPath) (not an @Attribute or @Relationship property)")
    }
    return .expression(.keyPath(prefix.isEmpty ? name : prefix + "." + name))
  }
}

extension PredicateExpressions.Value: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    return .expression(.constant(try PredicateTranslationContext.constant(value)))
  }
}

extension PredicateExpressions.NilLiteral: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    .expression(.constant(.null))
  }
}

extension PredicateExpressions.Equal: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.comparison(lhs, .equalTo, rhs)
  }
}

extension PredicateExpressions.NotEqual: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.comparison(lhs, .notEqualTo, rhs)
  }
}

extension PredicateExpressions.Comparison: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    let converted: ComparisonOperator =
      switch op {
      case .lessThan: .lessThan
      case .lessThanOrEqual: .lessThanOrEqualTo
      case .greaterThan: .greaterThan
      case .greaterThanOrEqual: .greaterThanOrEqualTo
      }
    return try context.comparison(lhs, converted, rhs)
  }
}

extension PredicateExpressions.Conjunction: StrataPredicateTranslatable, ConjunctionMarker {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.junction(lhs, rhs, isAnd: true)
  }
}

extension PredicateExpressions.Disjunction: StrataPredicateTranslatable, DisjunctionMarker {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.junction(lhs, rhs, isAnd: false)
  }
}

extension PredicateExpressions.Negation: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    .predicate(.not(try context.predicate(wrapped)))
  }
}

extension PredicateExpressions.OptionalFlatMap: StrataPredicateTranslatable {
  /// `$0.director?.name`: the transform's variable stands for the wrapped key path (`director`), so the
  /// transform's key paths continue it (`director.name`). A nil along the way compares as nil in the store.
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    var inner = context
    inner.prefixes[variable.key] = try context.keyPathPrefix(of: wrapped)
    return try inner.node(transform)
  }
}

extension PredicateExpressions.ForcedUnwrap: StrataPredicateTranslatable {
  /// `$0.director!.name` reads like `director.name`: the store compares a missing value as nil instead
  /// of failing.
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.node(inner)
  }
}

extension PredicateExpressions.Arithmetic: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    let name =
      switch op {
      case .add: "add:to:"
      case .subtract: "from:subtract:"
      case .multiply: "multiply:by:"
      }
    return try context.function(name, lhs, rhs)
  }
}

extension PredicateExpressions.FloatDivision: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.function("divide:by:", lhs, rhs)
  }
}

extension PredicateExpressions.CollectionContainsCollection: StrataPredicateTranslatable
where Base.Output: StringProtocol {
  /// `$0.title.contains("heat")`: `title CONTAINS "heat"`.
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.comparison(base, .contains, other)
  }
}

extension PredicateExpressions.SequenceStartsWith: StrataPredicateTranslatable where Base.Output: StringProtocol {
  /// `$0.title.starts(with: "He")`: `title BEGINSWITH "He"`.
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.comparison(base, .beginsWith, prefix)
  }
}

extension PredicateExpressions.SequenceContains: StrataPredicateTranslatable {
  /// `[1990, 1995].contains($0.year)`: `year IN {1990, 1995}`.
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.comparison(element, .in, sequence)
  }
}

// MARK: localizedStandardContains

#if !canImport(Darwin)
  extension PredicateExpressions {
    /// What `#Predicate { $0.genre.localizedStandardContains("drama") }` expands to. Foundation on Apple
    /// platforms declares this builder; swift-foundation on Linux does not, so Strata supplies it.
    public static func build_localizedStandardContains<Root, Other>(
      _ root: Root, _ other: Other
    )
      -> StrataLocalizedStandardContains<Root, Other>
    where
      Root: PredicateExpression, Other: PredicateExpression, Root.Output: StringProtocol,
      Other.Output: StringProtocol
    {
      StrataLocalizedStandardContains(root: root, other: other)
    }
  }
#endif

/// `string.localizedStandardContains(other)` inside a `#Predicate`: true when `root` contains `other`,
/// ignoring case and diacritics. Strata translates it to `CONTAINS[cd]`.
public struct StrataLocalizedStandardContains<Root: PredicateExpression, Other: PredicateExpression>:
  PredicateExpression
where Root.Output: StringProtocol, Other.Output: StringProtocol {
  /// The expression yields a `Bool`.
  public typealias Output = Bool

  /// The string searched.
  public let root: Root
  /// The string searched for.
  public let other: Other

  /// The expression `root.localizedStandardContains(other)`.
  public init(root: Root, other: Other) {
    self.root = root
    self.other = other
  }

  /// Evaluates the expression in memory, as Foundation's `localizedStandardContains` does.
  public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
    let text = String(try root.evaluate(bindings))
    let search = String(try other.evaluate(bindings))
    return text.localizedStandardContains(search)
  }
}

extension StrataLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}
extension StrataLocalizedStandardContains: Codable where Root: Codable, Other: Codable {}
extension StrataLocalizedStandardContains: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

extension StrataLocalizedStandardContains: StrataPredicateTranslatable {
  func strataTranslate(_ context: PredicateTranslationContext) throws -> PredicateTranslationNode {
    try context.comparison(root, .contains, other, options: [.caseInsensitive, .diacriticInsensitive])
  }
}
