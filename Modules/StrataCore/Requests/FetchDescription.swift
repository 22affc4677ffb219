import Foundation

/// What a fetch returns.
public enum FetchResultType: String, Sendable, Hashable, Codable {
  /// Full snapshots, from which contexts make managed objects.
  case snapshots
  /// Object IDs only.
  case objectIDs
  /// The number of matching objects only.
  case count
  /// One dictionary per row, keyed by property or expression name (see ``FetchDescription/propertiesToFetch``).
  case dictionaries
}

/// A property or computed value to fetch in a dictionary result.
public enum PropertySelection: Sendable, Hashable, Codable {
  /// An attribute, or a key path through to-one relationships (`location.city`).
  case keyPath(String)
  /// A named expression such as `sum:(specialCount)`, with the type of its result.
  case expression(name: String, expression: QueryExpression, resultType: AttributeType)
}

extension PropertySelection {
  /// A named expression written in the format language.
  ///
  /// ```swift
  /// let deals = try PropertySelection.expression("deals", format: "sum:(specialCount)", resultType: .int64)
  /// ```
  /// - Throws: `.invalidQuery` naming the position when the format does not parse.
  public static func expression(_ name: String, format: String, resultType: AttributeType) throws -> PropertySelection {
    .expression(name: name, expression: try QueryExpression(format: format), resultType: resultType)
  }
}

/// A fetch request as stores receive it: plain data, `Sendable` and `Codable`.
///
/// The object graph's typed `FetchRequest<T>` wraps one of these.
///
/// ```swift
/// var request = FetchDescription(entityName: "Movie")
/// request.predicate = try QueryPredicate(format: "genre CONTAINS[c] %@", "drama")
/// request.sortDescriptors = [QuerySort("title", comparator: .localizedStandard)]
/// request.fetchLimit = 10
/// ```
public struct FetchDescription: Sendable, Hashable, Codable {
  /// The entity whose objects are fetched.
  public var entityName: String
  /// The condition objects must meet; `nil` matches every object.
  public var predicate: QueryPredicate?
  /// The order of results; ties keep the store's primary-key order.
  public var sortDescriptors: [QuerySort]
  /// The most results to return; `nil` or 0 means no limit.
  public var fetchLimit: Int?
  /// How many leading results to skip.
  public var fetchOffset: Int
  /// What the store returns: snapshots, object IDs, a count or dictionaries.
  public var resultType: FetchResultType
  /// For dictionary results: what each dictionary holds. `nil` means every attribute.
  public var propertiesToFetch: [PropertySelection]?
  /// For dictionary results: group rows by these key paths.
  public var propertiesToGroupBy: [String]?
  /// For grouped dictionary results: keep only groups matching this predicate.
  public var havingPredicate: QueryPredicate?
  /// For dictionary results: drop duplicate rows.
  public var returnsDistinctResults: Bool
  /// How many objects a context materializes at a time while results are walked (0 = all at once).
  public var fetchBatchSize: Int
  /// To-one relationship key paths whose targets the fetch loads along with the objects.
  public var relationshipKeyPathsForPrefetching: [String]
  /// Whether the objects of the entity's sub-entities are fetched too (the default, as in Core Data's
  /// `NSFetchRequest.includesSubentities`); `false` fetches only objects whose entity is `entityName`.
  ///
  /// ```swift
  /// var films = FetchDescription(entityName: "Media")
  /// films.includesSubentities = false   // only objects of Media itself (none when it is abstract)
  /// ```
  public var includesSubentities = true

  /// A request for the objects of `entityName` that match `predicate`, in the order of `sortDescriptors`.
  public init(
    entityName: String, predicate: QueryPredicate? = nil, sortDescriptors: [QuerySort] = [],
    fetchLimit: Int? = nil, fetchOffset: Int = 0, resultType: FetchResultType = .snapshots
  ) {
    self.entityName = entityName
    self.predicate = predicate
    self.sortDescriptors = sortDescriptors
    self.fetchLimit = fetchLimit
    self.fetchOffset = fetchOffset
    self.resultType = resultType
    self.propertiesToFetch = nil
    self.propertiesToGroupBy = nil
    self.havingPredicate = nil
    self.returnsDistinctResults = false
    self.fetchBatchSize = 0
    self.relationshipKeyPathsForPrefetching = []
  }

  /// The effective limit: `nil` when there is none.
  public var effectiveLimit: Int? {
    guard let fetchLimit, fetchLimit > 0 else { return nil }
    return fetchLimit
  }
}

extension FetchDescription {
  private enum CodingKeys: String, CodingKey {
    case entityName, predicate, sortDescriptors, fetchLimit, fetchOffset, resultType, propertiesToFetch
    case propertiesToGroupBy, havingPredicate, returnsDistinctResults, fetchBatchSize
    case relationshipKeyPathsForPrefetching, includesSubentities
  }

  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      entityName: try c.decode(String.self, forKey: .entityName),
      predicate: try c.decodeIfPresent(QueryPredicate.self, forKey: .predicate),
      sortDescriptors: try c.decode([QuerySort].self, forKey: .sortDescriptors),
      fetchLimit: try c.decodeIfPresent(Int.self, forKey: .fetchLimit),
      fetchOffset: try c.decode(Int.self, forKey: .fetchOffset),
      resultType: try c.decode(FetchResultType.self, forKey: .resultType))
    propertiesToFetch = try c.decodeIfPresent([PropertySelection].self, forKey: .propertiesToFetch)
    propertiesToGroupBy = try c.decodeIfPresent([String].self, forKey: .propertiesToGroupBy)
    havingPredicate = try c.decodeIfPresent(QueryPredicate.self, forKey: .havingPredicate)
    returnsDistinctResults = try c.decode(Bool.self, forKey: .returnsDistinctResults)
    fetchBatchSize = try c.decode(Int.self, forKey: .fetchBatchSize)
    relationshipKeyPathsForPrefetching = try c.decode([String].self, forKey: .relationshipKeyPathsForPrefetching)
    includesSubentities = try c.decodeIfPresent(Bool.self, forKey: .includesSubentities) ?? true
  }

  /// Encodes the request; `includesSubentities` only when `false`, so a stored model's fingerprint does not
  /// change for templates written before it existed.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(entityName, forKey: .entityName)
    try c.encodeIfPresent(predicate, forKey: .predicate)
    try c.encode(sortDescriptors, forKey: .sortDescriptors)
    try c.encodeIfPresent(fetchLimit, forKey: .fetchLimit)
    try c.encode(fetchOffset, forKey: .fetchOffset)
    try c.encode(resultType, forKey: .resultType)
    try c.encodeIfPresent(propertiesToFetch, forKey: .propertiesToFetch)
    try c.encodeIfPresent(propertiesToGroupBy, forKey: .propertiesToGroupBy)
    try c.encodeIfPresent(havingPredicate, forKey: .havingPredicate)
    try c.encode(returnsDistinctResults, forKey: .returnsDistinctResults)
    try c.encode(fetchBatchSize, forKey: .fetchBatchSize)
    try c.encode(relationshipKeyPathsForPrefetching, forKey: .relationshipKeyPathsForPrefetching)
    if !includesSubentities { try c.encode(includesSubentities, forKey: .includesSubentities) }
  }
}
