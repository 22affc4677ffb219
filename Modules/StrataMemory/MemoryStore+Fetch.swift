import Foundation
import StrataStoreKit

extension MemoryStore {
  /// Runs a fetch with the shared evaluator and sorter: filter, sort, then offset and limit.
  ///
  /// A count answers how many results the same request would return, offset and limit included.
  /// Dictionary results follow ``DictionaryFetch``.
  /// - Throws: `.invalidQuery` / `.unsupported` from ``QueryValidator`` and ``DictionaryFetch``; `.misuse`
  ///   when closed or the generation is not pinned.
  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let state = try readState(generation)
    let entity = try model.requireEntity(request.entityName)
    let evaluator = try request.predicate.map { try PredicateEvaluator($0, entity: entity, model: model) }
    let sorter = try SnapshotSorter(request.sortDescriptors, entity: entity, model: model)
    let dictionaries = request.resultType == .dictionaries ? try DictionaryFetch(request, model: model) : nil
    let source = MemoryEvaluationSource(state: state, model: model, storeIdentifier: identifier)
    var rows = state.orderedRows(
      of: model.inheritance.fetchedEntities(entity.name, includesSubentities: request.includesSubentities))
    if let evaluator { rows = try evaluator.filter(rows, source: source) }
    if !request.sortDescriptors.isEmpty { try sorter.sort(&rows, source: source) }
    return try request.result(from: rows, dictionaries: dictionaries, source: source)
  }
}
