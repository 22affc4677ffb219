import Foundation
import StrataCore

/// A typed fetch request: which objects of `Result` to fetch, in which order, how many.
///
/// ```swift
/// var request = FetchRequest<Movie>(
///   where: \.genre ~= "drama",
///   sortBy: [QuerySort(\Movie.title, comparator: .localizedStandard)])
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
  public init(where condition: Where<Result>, sortBy: [QuerySort] = []) {
    self.init(predicate: condition.predicate, sortDescriptors: sortBy)
  }

  /// A request with an NSPredicate-style format string.
  /// - Throws: `.invalidQuery` naming the position when the format does not parse.
  public init(format: String, _ arguments: any PredicateArgument..., sortBy: [QuerySort] = []) throws {
    self.init(predicate: try QueryPredicate(format: format, argumentArray: arguments), sortDescriptors: sortBy)
  }

  /// A request with an NSPredicate-style format string and its arguments as an array.
  public init(format: String, argumentArray: [any PredicateArgument], sortBy: [QuerySort] = []) throws {
    self.init(predicate: try QueryPredicate(format: format, argumentArray: argumentArray), sortDescriptors: sortBy)
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
    return description
  }
}

extension ObjectContext {
  /// The objects matching `request`, as objects of this context (one per ID).
  ///
  /// Objects already in the context keep their unsaved changes; objects deleted in the context and not
  /// saved yet are left out. Objects inserted and not saved yet are not included (they are once saved).
  ///
  /// - Throws: `.invalidQuery` naming the entity and key when the predicate or a sort names an unknown or
  ///   transient key or compares incompatible types; `.misuse` when no store is loaded.
  public func fetch<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [T] {
    var description = request.fetchDescription
    let pendingDeletes = pendingDeletionCount(of: description.entityName)
    if pendingDeletes > 0, let limit = description.effectiveLimit { description.fetchLimit = limit + pendingDeletes }
    guard case .snapshots(let snapshots) = try requireStore().fetch(description, generation: nil) else { return [] }
    var objects: [T] = []
    objects.reserveCapacity(snapshots.count)
    for snapshot in snapshots where !isPendingDeletion(snapshot.objectID) {
      guard let object = materialize(snapshot) as? T else { continue }
      objects.append(object)
    }
    if let limit = request.fetchDescription.effectiveLimit, objects.count > limit { objects.removeLast(objects.count - limit) }
    return objects
  }

  /// The IDs of the objects matching `request`, without materializing objects.
  public func fetchObjectIDs<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [ObjectID] {
    var description = request.fetchDescription
    description.resultType = .objectIDs
    guard case .objectIDs(let ids) = try requireStore().fetch(description, generation: nil) else { return [] }
    return ids.filter { !isPendingDeletion($0) }
  }

  /// Rows of values instead of objects, computed by the store (SQL `GROUP BY`, `SUM`, … in SQLite):
  /// the request's `propertiesToFetch` (attributes, key paths through to-one relationships, named
  /// expressions), grouped by `propertiesToGroupBy`, filtered by `havingPredicate`. Nil values are left
  /// out of a row. See ``DictionaryFetch`` for the rules.
  ///
  /// ```swift
  /// var request = FetchRequest<Venue>()
  /// request.propertiesToFetch = [
  ///   .keyPath("priceInfo.priceCategory"),
  ///   try .expression("venues", format: "count:(name)", resultType: .int64),
  /// ]
  /// request.propertiesToGroupBy = ["priceInfo.priceCategory"]
  /// let rows = try context.fetchDictionaries(request)   // [["priceInfo.priceCategory": "$", "venues": 61], …]
  /// ```
  ///
  /// - Throws: `.invalidQuery` naming the key for a to-many or unknown key path, an ungrouped property
  ///   beside aggregates, a having predicate reading an unfetched key.
  public func fetchDictionaries<T: ManagedObject>(_ request: FetchRequest<T>) throws -> [[String: Value]] {
    var description = request.fetchDescription
    description.resultType = .dictionaries
    guard case .dictionaries(let rows) = try requireStore().fetch(description, generation: nil) else { return [] }
    return rows
  }

  /// The number of objects a fetch of `request` would return, asked of the store as a count result type
  /// (limit and offset apply, as they would to the objects); nothing is materialized.
  public func fetchCount<T: ManagedObject>(_ request: FetchRequest<T>) throws -> Int {
    var description = request.fetchDescription
    description.resultType = .count
    guard case .count(let count) = try requireStore().fetch(description, generation: nil) else { return 0 }
    return count
  }

  /// The number of stored objects matching `request`, counted by the store.
  public func count<T: ManagedObject>(for request: FetchRequest<T>) throws -> Int {
    try requireStore().count(request.fetchDescription, generation: nil)
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

  public init(_ predicate: QueryPredicate) { self.predicate = predicate }

  public static func && (a: Where, b: Where) -> Where { Where(.and([a.predicate, b.predicate])) }
  public static func || (a: Where, b: Where) -> Where { Where(.or([a.predicate, b.predicate])) }
  public static prefix func ! (a: Where) -> Where { Where(.not(a.predicate)) }
}

private func compare<Root: ManagedObject, V: AttributeValue>(
  _ keyPath: KeyPath<Root, V>, _ op: ComparisonOperator, _ value: V, options: StringOptions = []
) -> Where<Root> {
  Where(.comparison(Comparison(.keyPath(KeyPathNames.name(of: keyPath)), op, .constant(value.storedValue), options: options)))
}

public func == <Root: ManagedObject, V: AttributeValue & Equatable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .equalTo, rhs)
}
public func != <Root: ManagedObject, V: AttributeValue & Equatable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .notEqualTo, rhs)
}
public func < <Root: ManagedObject, V: AttributeValue & Comparable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .lessThan, rhs)
}
public func <= <Root: ManagedObject, V: AttributeValue & Comparable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .lessThanOrEqualTo, rhs)
}
public func > <Root: ManagedObject, V: AttributeValue & Comparable>(lhs: KeyPath<Root, V>, rhs: V) -> Where<Root> {
  compare(lhs, .greaterThan, rhs)
}
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
  public init<Root: ManagedObject, V>(_ keyPath: KeyPath<Root, V>, ascending: Bool = true, comparator: StringComparator = .default) {
    self.init(KeyPathNames.name(of: keyPath), ascending: ascending, comparator: comparator)
  }
}

extension ManagedObject: PredicateArgument {
  /// A managed object in a predicate stands for its object ID.
  public var predicateValue: Value { .objectID(objectID) }
}
