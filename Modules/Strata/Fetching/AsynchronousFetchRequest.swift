import Foundation
internal import StrataStoreKit

/// A fetch that runs off the context's queue, reports progress and can be cancelled — Core Data's
/// `NSAsynchronousFetchRequest`.
///
/// The store is read on a background thread a chunk at a time; each chunk's objects are made on the
/// context's queue between the context's other work, so a long fetch never blocks the context.
///
/// ```swift
/// let request = AsynchronousFetchRequest(fetchRequest: FetchRequest<Venue>()) { result in
///   print(result.finalResult?.count ?? 0)          // on the context's queue
/// }
/// let running = context.execute(request)
/// running.progress.completedUnitCount               // objects read so far
/// running.cancel()
///
/// let venues = try await context.fetch(AsynchronousFetchRequest(fetchRequest: FetchRequest<Venue>()))
/// ```
public struct AsynchronousFetchRequest<T: ManagedObject>: Sendable {
  /// The fetch to run.
  public var fetchRequest: FetchRequest<T>
  /// Called on the context's queue when the fetch finishes, fails or is cancelled.
  public var completion: (@Sendable (AsynchronousFetchResult<T>) -> Void)?
  /// How many objects are read per step: the granularity of progress and of cancellation.
  public var chunkSize: Int

  /// A fetch of `fetchRequest`, read `chunkSize` objects at a time, calling `completion` when it ends.
  public init(
    fetchRequest: FetchRequest<T>, chunkSize: Int = 1_000,
    completion: (@Sendable (AsynchronousFetchResult<T>) -> Void)? = nil
  ) {
    self.fetchRequest = fetchRequest
    self.chunkSize = chunkSize
    self.completion = completion
  }
}

/// A running or finished ``AsynchronousFetchRequest``: its progress, its objects once done, its error.
///
/// `progress` and `cancel()` may be used from any thread; `finalResult` belongs to the context's queue.
// Safe because its state is constant (`Progress` is thread-safe), behind `state`'s lock, or — `objects` —
// written and read on the context's queue only (`finalResult` checks it in the concurrency debug mode).
public final class AsynchronousFetchResult<T: ManagedObject>: @unchecked Sendable {
  /// The fetch that runs.
  public let fetchRequest: FetchRequest<T>
  /// Counts the objects read: `totalUnitCount` is set once the matching IDs are known.
  public let progress: Progress
  /// The context the objects belong to.
  public let managedObjectContext: ObjectContext
  private let state = Locked<(error: StoreError?, cancelled: Bool)>((nil, false))
  /// Written and read on the context's queue only.
  private var objects: [T]?

  init(fetchRequest: FetchRequest<T>, context: ObjectContext) {
    self.fetchRequest = fetchRequest
    self.managedObjectContext = context
    self.progress = Progress(totalUnitCount: -1)
  }

  /// The fetched objects once the fetch has finished; `nil` while it runs, after an error or cancellation.
  public var finalResult: [T]? {
    managedObjectContext.checkQueue()
    return objects
  }
  /// Why the fetch failed: a store error, or `.cancelled`.
  public var operationError: StoreError? { state.withLock { $0.error } }
  /// Whether ``cancel()`` was called.
  public var isCancelled: Bool { state.withLock { $0.cancelled } }

  /// Stops the fetch at its next chunk; the completion then receives a `.cancelled` error.
  public func cancel() {
    state.withLock { $0.cancelled = true }
    progress.cancel()
  }

  func finish(objects: [T]?, error: StoreError?) {
    self.objects = objects
    state.withLock { $0.error = error }
  }
}

/// Carries a context's objects back to an awaiting caller; they are used on the context's queue.
private struct ContextBound<Value>: @unchecked Sendable {
  let value: Value
}

extension ObjectContext {
  /// Starts `request` and returns at once; the completion runs on the context's queue.
  ///
  /// Unsaved changes are reflected as in ``fetch(_:)-(FetchRequest<T>)``, as they stand when the fetch finishes.
  @discardableResult
  public func execute<T: ManagedObject>(_ request: AsynchronousFetchRequest<T>) -> AsynchronousFetchResult<T> {
    let result = AsynchronousFetchResult(fetchRequest: request.fetchRequest, context: self)
    start(request, result)
    return result
  }

  /// Runs `request` asynchronously and returns its objects; cancelling the task cancels the fetch
  /// (throwing `.cancelled`). Use the objects on the context's queue — for the view context, the main
  /// actor.
  ///
  /// ```swift
  /// let venues = try await context.fetch(AsynchronousFetchRequest(fetchRequest: FetchRequest<Venue>()))
  /// ```
  ///
  /// - Throws: what ``fetch(_:)`` throws; `.cancelled` when the task or the fetch was cancelled.
  public func fetch<T: ManagedObject>(_ request: AsynchronousFetchRequest<T>) async throws -> [T] {
    let result = AsynchronousFetchResult(fetchRequest: request.fetchRequest, context: self)
    let bound: ContextBound<[T]> = try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        var request = request
        let completion = request.completion
        request.completion = { finished in
          completion?(finished)
          if let objects = finished.finalResult {
            continuation.resume(returning: ContextBound(value: objects))
          } else {
            continuation.resume(throwing: finished.operationError ?? StoreError(.cancelled, "the fetch was cancelled"))
          }
        }
        if Task.isCancelled { result.cancel() }
        start(request, result)
      }
    } onCancel: {
      result.cancel()
    }
    return bound.value
  }

  private func start<T: ManagedObject>(_ request: AsynchronousFetchRequest<T>, _ result: AsynchronousFetchResult<T>) {
    let collector = ContextBound(value: AsynchronousFetchCollector<T>())
    DispatchQueue.global(qos: .userInitiated).async { [self] in
      do {
        try readInChunks(request, result, collector)
      } catch {
        finishOnQueue(request, result, failure: error)
      }
    }
  }

  /// Reads the matching IDs, then their snapshots a chunk at a time, off the context's queue; each chunk
  /// is made into objects on the queue, and the last step there merges unsaved changes and finishes.
  private func readInChunks<T: ManagedObject>(
    _ request: AsynchronousFetchRequest<T>, _ result: AsynchronousFetchResult<T>,
    _ collector: ContextBound<AsynchronousFetchCollector<T>>
  ) throws {
    let fetchRequest = request.fetchRequest
    let store = try requireStore()
    // The IDs and the chunks are read from one pinned generation, so that they agree: the context's
    // own when it is pinned, else one pinned for this fetch.
    let contextPin = performAndWait { pinnedGeneration }
    let ownPin = contextPin == nil ? try? GenerationPin(store: store) : nil
    let generation = (contextPin?.pin ?? ownPin)?.generation
    defer { withExtendedLifetime((contextPin, ownPin)) {} }
    let (mergesPending, storedRowCount, deleted) = performAndWait {
      let pending = pendingChanges(for: fetchRequest)
      return (!pending.isEmpty, pending.storedRowCount, pending.deleted)
    }
    var description = mergesPending ? fetchRequest.fetchDescription.widened(by: storedRowCount) : fetchRequest.fetchDescription
    description.resultType = .objectIDs
    guard case .objectIDs(let ids) = try store.fetch(description, generation: generation) else { return }
    result.progress.totalUnitCount = Int64(ids.count)
    let chunkSize = max(1, request.chunkSize)
    var start = 0
    while start < ids.count {
      if result.isCancelled { break }
      let chunk = Array(ids[start..<min(ids.count, start + chunkSize)])
      start += chunk.count
      let byID = Dictionary(
        try store.snapshots(for: chunk, generation: generation).map { ($0.objectID, $0) },
        uniquingKeysWith: { first, _ in first })
      let snapshots = chunk.compactMap { byID[$0] }.filter { !deleted.contains($0.objectID) }
      performLater { [self] in
        takePermanentIDsFromParent()
        registeringBatch(of: snapshots.count) {
          for snapshot in snapshots {
            collector.value.objects.append(materialize(snapshot, asFault: fetchRequest.returnsObjectsAsFaults))
          }
        }
        result.progress.completedUnitCount += Int64(chunk.count)
      }
    }
    performLater { [self] in
      guard !result.isCancelled else {
        return finishOnQueue(request, result, error: StoreError(.cancelled, "the fetch was cancelled"))
      }
      do {
        var objects = collector.value.objects
        if mergesPending {
          objects = try pendingChanges(for: fetchRequest).merge(objects, fetchRequest.fetchDescription, in: self)
        }
        if !fetchRequest.relationshipKeyPathsForPrefetching.isEmpty {
          try prefetch(fetchRequest.relationshipKeyPathsForPrefetching, of: objects, entityName: fetchRequest.entityName)
        }
        result.finish(objects: objects.compactMap { $0 as? T }, error: nil)
        request.completion?(result)
      } catch {
        finishOnQueue(request, result, failure: error)
      }
    }
  }

  private func finishOnQueue<T: ManagedObject>(
    _ request: AsynchronousFetchRequest<T>, _ result: AsynchronousFetchResult<T>, failure: any Error
  ) {
    finishOnQueue(request, result, error: (failure as? StoreError) ?? StoreError(.io, "the fetch failed: \(failure)"))
  }

  private func finishOnQueue<T: ManagedObject>(
    _ request: AsynchronousFetchRequest<T>, _ result: AsynchronousFetchResult<T>, error: StoreError
  ) {
    performLater {
      result.finish(objects: nil, error: error)
      request.completion?(result)
    }
  }
}

/// The objects an asynchronous fetch has made so far; touched only on the context's queue.
private final class AsynchronousFetchCollector<T: ManagedObject> {
  var objects: [ManagedObject] = []
}
