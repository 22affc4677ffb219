import Foundation
internal import StrataStoreKit

/// A typed fetch request: which objects of `Result` to fetch, in which order, how many.
///
/// ```swift
/// var request = FetchRequest<Movie>(
///   where: \.genre ~= "drama",
///   sortDescriptors: [QuerySort(\Movie.title, comparator: .localizedStandard)])
/// request.fetchLimit = 10
/// let movies = try context.fetch(request)
///
/// let recent = try FetchRequest<Movie>(format: "releaseDate > %@", cutoff)
/// ```
public struct FetchRequest<Result: ManagedObject>: Sendable, Hashable {
  /// The entity to fetch; `Result.entityName` unless given.
  public var entityName: String
  /// The condition objects must meet; `nil` fetches every object.
  public var predicate: QueryPredicate?
  /// The order of the results; without one, results come in the store's primary-key order.
  public var sortDescriptors: [QuerySort]
  /// The most objects to return (`nil` or 0: no limit).
  public var fetchLimit: Int?
  /// How many leading objects to skip.
  public var fetchOffset: Int
  /// For ``ObjectContext/fetchDictionaries(_:)``: what each row holds (`nil`: every attribute).
  public var propertiesToFetch: [PropertySelection]?
  /// For ``ObjectContext/fetchDictionaries(_:)``: one row per group of these key paths.
  public var propertiesToGroupBy: [String]?
  /// For grouped dictionary rows: the groups to keep; its key paths are the rows' keys.
  public var havingPredicate: QueryPredicate?
  /// For dictionary rows: drop repeated rows.
  public var returnsDistinctResults = false
  /// With a value above 0, ``ObjectContext/fetch(_:)-(FetchRequest<T>)`` returns faults whose values load this many at a
  /// time, in one store call per batch, when the first of them is read; and
  /// ``ObjectContext/fetch(_:batchSize:)`` walks the results holding only one batch of objects.
  public var fetchBatchSize = 0
  /// Whether fetched objects come back as faults (the default, as in Core Data). A fault already holds
  /// the values the fetch read, so reading it costs no store call; `awakeFromFetch()` runs on first read.
  /// With `false`, values are loaded and `awakeFromFetch()` runs during the fetch.
  public var returnsObjectsAsFaults = true
  /// Relationship key paths (`location`, `location.venue`, `films`) whose targets the fetch loads along
  /// with the objects: one store call per relationship, whatever the number of objects.
  public var relationshipKeyPathsForPrefetching: [String] = []
  /// Whether the fetch reflects the context's unsaved changes (the default): inserted objects that match
  /// are included, deleted ones left out, and changed objects matched and sorted by their current values.
  /// Dictionary results always read the store as it is, as in Core Data.
  public var includesPendingChanges = true
  /// Whether objects of the entity's sub-entities are fetched too (the default, as in Core Data): a fetch
  /// of `Media` returns its `Film`s and `Series`, each as its own class. `false` fetches only objects
  /// whose entity is ``entityName`` itself.
  ///
  /// ```swift
  /// var request = FetchRequest<Media>()
  /// request.includesSubentities = false
  /// ```
  public var includesSubentities = true

  /// A request for every object of `Result`'s entity that matches `predicate` (all when `nil`), in the order
  /// of `sortDescriptors`.
  public init(
    entityName: String? = nil, predicate: QueryPredicate? = nil, sortDescriptors: [QuerySort] = [],
    fetchLimit: Int? = nil, fetchOffset: Int = 0
  ) {
    self.entityName = entityName ?? Result.entityName
    self.predicate = predicate
    self.sortDescriptors = sortDescriptors
    self.fetchLimit = fetchLimit
    self.fetchOffset = fetchOffset
  }

  /// A request with a typed predicate built from key paths.
  public init(where condition: Where<Result>, sortDescriptors: [QuerySort] = []) {
    self.init(predicate: condition.predicate, sortDescriptors: sortDescriptors)
  }

  /// A request with an NSPredicate-style format string.
  /// - Throws: `.invalidQuery` naming the position when the format does not parse.
  public init(format: String, _ arguments: any PredicateArgument..., sortDescriptors: [QuerySort] = []) throws {
    self.init(predicate: try QueryPredicate(format: format, argumentArray: arguments), sortDescriptors: sortDescriptors)
  }

  /// A request with an NSPredicate-style format string and its arguments as an array.
  public init(format: String, argumentArray: [any PredicateArgument], sortDescriptors: [QuerySort] = []) throws {
    self.init(predicate: try QueryPredicate(format: format, argumentArray: argumentArray), sortDescriptors: sortDescriptors)
  }

  /// The request as stores receive it.
  public var fetchDescription: FetchDescription {
    var description = FetchDescription(
      entityName: entityName, predicate: predicate, sortDescriptors: sortDescriptors, fetchLimit: fetchLimit,
      fetchOffset: fetchOffset)
    description.propertiesToFetch = propertiesToFetch
    description.propertiesToGroupBy = propertiesToGroupBy
    description.havingPredicate = havingPredicate
    description.returnsDistinctResults = returnsDistinctResults
    description.fetchBatchSize = fetchBatchSize
    description.relationshipKeyPathsForPrefetching = relationshipKeyPathsForPrefetching
    description.includesSubentities = includesSubentities
    return description
  }
}

/// A typed predicate over `Root`'s key paths, built with operators:
///
/// ```swift
/// let heat: Where<Movie> = \.title == "Heat"
/// let recentDramas: Where<Movie> = \.genre ~= "drama" && \.releaseDate > cutoff
/// let byDirector: Where<Movie> = \.director?.name == "Michael Mann"
/// let notes: Where<Movie> = (\Movie.title).contains("heat", options: .caseInsensitive)
/// ```
///
/// A key path that does not go through `@Attribute`/`@Relationship` properties is reported when the
/// request runs, as an `.invalidQuery` error naming it.
public struct Where<Root: ManagedObject>: Sendable, Hashable {
  /// The predicate as every backend receives it.
  public let predicate: QueryPredicate

  /// A condition given as a predicate value.
  public init(_ predicate: QueryPredicate) { self.predicate = predicate }

  // A chain `a && b && c` stays one flat list (as the format `a AND b AND c` parses), so a long chain is
  // one level deep under QueryLimits.maxDepth.
  /// Both conditions hold: `\.genre == "Crime" && \.year > 1990`.
  public static func && (a: Where, b: Where) -> Where {
    if case .and(let parts) = a.predicate { return Where(.and(parts + [b.predicate])) }
    return Where(.and([a.predicate, b.predicate]))
  }
  /// At least one condition holds.
  public static func || (a: Where, b: Where) -> Where {
    if case .or(let parts) = a.predicate { return Where(.or(parts + [b.predicate])) }
    return Where(.or([a.predicate, b.predicate]))
  }
  /// The condition does not hold.
  public static prefix func ! (a: Where) -> Where { Where(.not(a.predicate)) }
}

private func compare<Root: ManagedObject, V: AttributeValue>(
  _ keyPath: KeyPath<Root, V>, _ op: ComparisonOperator, _ value: V, options: StringOptions = []
) -> Where<Root> {
  Where(.comparison(Comparison(.keyPath(KeyPathNames.name(of: keyPath)), op, .constant(value.storedValue), options: options)))
}

/// The attribute at `lhs` equals `rhs`: `FetchRequest<Movie>(where: \.title == "Heat")`.
public func == <Root: ManagedObject, V: AttributeValue & Equatable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .equalTo, rhs)
}
/// The attribute at `lhs` differs from `rhs`.
public func != <Root: ManagedObject, V: AttributeValue & Equatable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .notEqualTo, rhs)
}
/// The attribute at `lhs` is less than `rhs`.
public func < <Root: ManagedObject, V: AttributeValue & Comparable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .lessThan, rhs)
}
/// The attribute at `lhs` is less than or equal to `rhs`.
public func <= <Root: ManagedObject, V: AttributeValue & Comparable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .lessThanOrEqualTo, rhs)
}
/// The attribute at `lhs` is greater than `rhs`.
public func > <Root: ManagedObject, V: AttributeValue & Comparable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .greaterThan, rhs)
}
/// The attribute at `lhs` is greater than or equal to `rhs`.
public func >= <Root: ManagedObject, V: AttributeValue & Comparable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .greaterThanOrEqualTo, rhs)
}

/// `keyPath ~= text`: the string contains `text`, ignoring case and diacritics (`CONTAINS[cd]`).
public func ~= <Root: ManagedObject>(lhs: KeyPath<Root, String>, rhs: String) -> Where<Root> {
  compare(lhs, .contains, rhs, options: [.caseInsensitive, .diacriticInsensitive])
}

extension KeyPath where Root: ManagedObject, Value == String {
  /// The string contains `text` (`CONTAINS`, with `[c]`/`[d]` from `options`).
  public func contains(_ text: String, options: StringOptions = []) -> Where<Root> {
    compare(self, .contains, text, options: options)
  }
  /// The string starts with `text` (`BEGINSWITH`).
  public func beginsWith(_ text: String, options: StringOptions = []) -> Where<Root> {
    compare(self, .beginsWith, text, options: options)
  }
  /// The string ends with `text` (`ENDSWITH`).
  public func endsWith(_ text: String, options: StringOptions = []) -> Where<Root> {
    compare(self, .endsWith, text, options: options)
  }
  /// The string equals `text` under `options` (`==[cd]`).
  public func equals(_ text: String, options: StringOptions) -> Where<Root> {
    compare(self, .equalTo, text, options: options)
  }
}

extension KeyPath where Root: ManagedObject, Value == String? {
  /// The string contains `text` (`CONTAINS`, with `[c]`/`[d]` from `options`); false when nil.
  public func contains(_ text: String, options: StringOptions = []) -> Where<Root> {
    compare(self, .contains, text, options: options)
  }
  /// The string starts with `text` (`BEGINSWITH`); false when nil.
  public func beginsWith(_ text: String, options: StringOptions = []) -> Where<Root> {
    compare(self, .beginsWith, text, options: options)
  }
}

extension QuerySort {
  /// A sort on a typed key path.
  ///
  /// ```swift
  /// QuerySort(\Movie.title, comparator: .localizedStandard)
  /// QuerySort(\Movie.releaseDate, ascending: false)
  /// ```
  public init<Root: ManagedObject, V>(
    _ keyPath: KeyPath<Root, V>, ascending: Bool = true, comparator: StringComparator = .default
  ) {
    self.init(KeyPathNames.name(of: keyPath), ascending: ascending, comparator: comparator)
  }
}

extension ManagedObject: PredicateArgument {
  /// A managed object in a predicate stands for its object ID.
  public var predicateValue: Value { .objectID(objectID) }
}
