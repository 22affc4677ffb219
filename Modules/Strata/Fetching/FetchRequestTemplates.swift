import Foundation
internal import StrataStoreKit

extension FetchRequest {
  /// A typed request with the contents of a store-level description (entity, predicate, sorts, paging,
  /// dictionary settings).
  public init(_ description: FetchDescription) {
    self.init(
      entityName: description.entityName, predicate: description.predicate, sortDescriptors: description.sortDescriptors,
      fetchLimit: description.fetchLimit, fetchOffset: description.fetchOffset)
    propertiesToFetch = description.propertiesToFetch
    propertiesToGroupBy = description.propertiesToGroupBy
    havingPredicate = description.havingPredicate
    returnsDistinctResults = description.returnsDistinctResults
    fetchBatchSize = description.fetchBatchSize
    relationshipKeyPathsForPrefetching = description.relationshipKeyPathsForPrefetching
  }
}

extension ObjectModel {
  /// The stored fetch-request template `name`, as a request for `T`. Templates are part of the model, an
  /// immutable value: the request returned is a copy, so changing it never changes the template.
  ///
  /// ```swift
  /// let model = try ObjectModel(Venue.self, fetchRequestTemplates: [
  ///   "byPrice": FetchDescription(entityName: "Venue", predicate: try QueryPredicate(format: "priceInfo.priceCategory == $PRICE")),
  /// ])
  /// let cheap = try model.fetchRequestFromTemplate(named: "byPrice", substitutionVariables: ["PRICE": "$"], as: Venue.self)
  /// ```
  ///
  /// - Throws: `.invalidQuery` when the model has no template `name` (listing those it has) or the
  ///   template fetches another entity than `T`'s.
  public func fetchRequestTemplate<T: ManagedObject>(named name: String, as type: T.Type = T.self) throws -> FetchRequest<T> {
    guard let template = fetchRequestTemplates[name] else {
      let known = fetchRequestTemplates.keys.sorted().joined(separator: ", ")
      throw StoreError(
        .invalidQuery, "the model has no fetch request template '\(name)' (it has: \(known.isEmpty ? "none" : known))",
        key: name)
    }
    guard T.self == ManagedObject.self || template.entityName == T.entityName else {
      throw StoreError(
        .invalidQuery, "the template '\(name)' fetches \(template.entityName), not \(T.entityName)",
        entity: template.entityName, key: name)
    }
    return FetchRequest<T>(template)
  }

  /// The template `name` with its `$VARIABLE`s replaced by `substitutionVariables`.
  /// - Throws: what ``fetchRequestTemplate(named:as:)`` throws; `.invalidQuery` naming a variable that
  ///   has no value.
  public func fetchRequestFromTemplate<T: ManagedObject>(
    named name: String, substitutionVariables: [String: any PredicateArgument], as type: T.Type = T.self
  ) throws -> FetchRequest<T> {
    var request = try fetchRequestTemplate(named: name, as: type)
    let values = substitutionVariables.mapValues(\.predicateValue)
    request.predicate = try request.predicate?.substituting(values)
    request.havingPredicate = try request.havingPredicate?.substituting(values)
    return request
  }
}
