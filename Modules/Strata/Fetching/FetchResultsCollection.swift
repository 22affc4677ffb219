import Foundation
internal import StrataStoreKit

/// The results of a batched fetch: every matching ID up front, objects made one batch at a time as the
/// collection is walked — so walking 100,000 results holds about one batch of objects in memory, not
/// 100,000. Each batch's values load in one store call when its first object is read.
///
/// ```swift
/// var total: Int64 = 0
/// for venue in try context.fetch(FetchRequest<Venue>(), batchSize: 500) {
///   total += venue.specialCount            // one store read per 500 venues
/// }
/// ```
///
/// Objects belong to the context: use the collection on the context's queue. An object kept by the
/// caller stays valid after its batch is left behind.
public struct FetchResultsCollection<Element: ManagedObject>: RandomAccessCollection {
  /// The IDs of every result, in order.
  public let objectIDs: [ObjectID]
  private let window: BatchWindow

  init(objectIDs: [ObjectID], window: BatchWindow) {
    self.objectIDs = objectIDs
    self.window = window
  }

  public var startIndex: Int { 0 }
  public var endIndex: Int { objectIDs.count }

  public subscript(position: Int) -> Element {
    guard let object = window.object(at: position, in: objectIDs) as? Element else {
      preconditionFailure("\(objectIDs[position]) is not a \(Element.self)")
    }
    return object
  }
}

/// The one batch of objects a ``FetchResultsCollection`` holds.
final class BatchWindow {
  let context: ObjectContext
  let batchSize: Int
  let prefetching: [String]
  private var batchIndex = -1
  private var objects: [ManagedObject] = []

  init(context: ObjectContext, batchSize: Int, prefetching: [String]) {
    self.context = context
    self.batchSize = max(1, batchSize)
    self.prefetching = prefetching
  }

  func object(at position: Int, in ids: [ObjectID]) -> ManagedObject {
    let batch = position / batchSize
    if batch != batchIndex {
      let start = batch * batchSize
      let slice = Array(ids[start..<min(ids.count, start + batchSize)])
      objects = []
      objects = context.faults(for: slice, batchSize: batchSize)
      batchIndex = batch
      if !prefetching.isEmpty, let entityName = slice.first?.entityName {
        try? context.prefetch(prefetching, of: objects, entityName: entityName)
      }
    }
    return objects[position - batch * batchSize]
  }
}

extension ObjectContext {
  /// The results of `request` as a collection that makes its objects `batchSize` at a time while it is
  /// walked, holding one batch (see ``FetchResultsCollection``). The IDs are fetched now, with the
  /// request's unsaved-changes rules; values load batch by batch.
  ///
  /// ```swift
  /// let all = try context.fetch(FetchRequest<Fireball>(sortDescriptors: [QuerySort("date")]), batchSize: 1_000)
  /// print(all.count, all.first?.impactEnergy ?? 0)
  /// ```
  ///
  /// - Throws: what ``fetch(_:)-(FetchRequest<T>)`` throws; `.misuse` when `T` is not the class of the request's entity.
  public func fetch<T: ManagedObject>(_ request: FetchRequest<T>, batchSize: Int) throws -> FetchResultsCollection<T> {
    checkQueue()
    guard let info = coordinator.info(forEntity: request.entityName) else {
      throw StoreError(.invalidQuery, "the model has no entity '\(request.entityName)'", entity: request.entityName)
    }
    guard info.objectClass is T.Type else {
      throw StoreError(
        .misuse, "\(request.entityName) objects are \(info.objectClass), not \(T.self)", entity: request.entityName)
    }
    let ids = try fetchObjectIDs(request)
    let window = BatchWindow(
      context: self, batchSize: batchSize > 0 ? batchSize : (request.fetchBatchSize > 0 ? request.fetchBatchSize : 100),
      prefetching: request.relationshipKeyPathsForPrefetching)
    return FetchResultsCollection(objectIDs: ids, window: window)
  }
}
