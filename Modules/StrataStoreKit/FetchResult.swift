import Foundation

/// The answer to a `FetchDescription`, shaped by its result type.
public enum FetchResult: Sendable, Hashable {
  /// For `.snapshots`: the objects' snapshots.
  case snapshots([Snapshot])
  /// For `.objectIDs`: the objects' IDs.
  case objectIDs([ObjectID])
  /// For `.count`: how many objects match.
  case count(Int)
  /// For `.dictionaries`: one dictionary per row.
  case dictionaries([[String: Value]])

  /// The number of results, whatever their shape.
  public var count: Int {
    switch self {
    case .snapshots(let s): s.count
    case .objectIDs(let ids): ids.count
    case .count(let n): n
    case .dictionaries(let d): d.count
    }
  }
}

extension FetchDescription {
  /// The answer of this request from `rows`, the matching snapshots already filtered and sorted:
  /// offset and limit applied, shaped by the result type (dictionary rows through `dictionaries`, the
  /// request's checked ``DictionaryFetch``). Used by stores that evaluate in memory.
  ///
  /// ```swift
  /// return try request.result(from: sortedRows, dictionaries: plan, source: source)
  /// ```
  public func result(
    from rows: [Snapshot], dictionaries: DictionaryFetch?, source: some EvaluationSource
  ) throws
    -> FetchResult
  {
    if let dictionaries {
      let result = try dictionaries.rows(from: rows, source: source)
      return .dictionaries(DictionaryFetch.page(result, offset: fetchOffset, limit: effectiveLimit))
    }
    let start = min(max(fetchOffset, 0), rows.count)
    let end = start + (effectiveLimit.map { min(rows.count - start, $0) } ?? rows.count - start)
    let page = rows[start..<end]
    switch resultType {
    case .snapshots: return .snapshots(Array(page))
    case .objectIDs: return .objectIDs(page.map(\.objectID))
    case .count: return .count(page.count)
    case .dictionaries: return .dictionaries([])
    }
  }
}
