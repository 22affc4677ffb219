import Foundation
import StrataCore

extension MemoryStore {
  /// Runs a fetch with the shared evaluator and sorter: filter, sort, then offset and limit.
  ///
  /// A count answers how many results the same request would return, offset and limit included.
  /// - Throws: `.invalidQuery` / `.unsupported` from ``QueryValidator``; `.unsupported` for dictionary
  ///   results (not implemented yet); `.misuse` when closed or the generation is not pinned.
  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let state = try readState(generation)
    let entity = try model.requireEntity(request.entityName)
    let evaluator = try request.predicate.map { try PredicateEvaluator($0, entity: entity, model: model) }
    let sorter = try SnapshotSorter(request.sortDescriptors, entity: entity, model: model)
    if request.resultType == .dictionaries {
      throw StoreError(
        .unsupported, "the memory store does not support dictionary results yet", entity: entity.name)
    }
    let source = MemoryEvaluationSource(state: state, model: model, storeIdentifier: identifier)
    var rows = state.orderedRows(of: entity.name)
    if let evaluator { rows = try evaluator.filter(rows, source: source) }
    if !request.sortDescriptors.isEmpty { rows = try sorter.sorted(rows, source: source) }
    let start = min(max(request.fetchOffset, 0), rows.count)
    let end = start + (request.effectiveLimit.map { min(rows.count - start, $0) } ?? rows.count - start)
    let page = rows[start..<end]
    switch request.resultType {
    case .snapshots: return .snapshots(Array(page))
    case .objectIDs: return .objectIDs(page.map(\.objectID))
    case .count: return .count(page.count)
    case .dictionaries: return .dictionaries([])
    }
  }
}
