import Foundation
import StrataStoreKit

extension BatchResult {
  /// The result of a native batch insert that wrote `ids` (`inserted` new, `updated` upserted, in the
  /// order rows first wrote them) and left `unchanged` as they were, announced to `broadcaster` when it
  /// wrote anything, reported as `resultType` asks.
  package static func nativeInsert(
    ids: [ObjectID], inserted: [ObjectID], updated: [ObjectID], unchanged: [ObjectID], token: HistoryToken?,
    storeIdentifier: String, broadcaster: ChangeBroadcaster, as resultType: BatchResultType
  ) -> BatchResult {
    guard !ids.isEmpty else { return BatchResult(count: 0, unchangedObjectIDs: unchanged).reported(as: resultType) }
    broadcaster.yield(
      StoreChange(storeIdentifier: storeIdentifier, historyToken: token, inserted: inserted, updated: updated))
    return BatchResult(
      count: ids.count, objectIDs: ids, historyToken: token, updatedObjectIDs: updated, unchangedObjectIDs: unchanged
    )
    .reported(as: resultType)
  }
}
