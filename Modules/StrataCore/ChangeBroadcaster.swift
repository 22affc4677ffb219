import Foundation

/// Fans store-change announcements out to every stream a store handed out with `changes()`.
///
/// Backends keep one and call ``yield(_:)`` after each commit.
///
/// ```swift
/// let broadcaster = ChangeBroadcaster()
/// func changes() -> AsyncStream<StoreChange> { broadcaster.stream() }
/// // after COMMIT:
/// broadcaster.yield(StoreChange(storeIdentifier: identifier, inserted: ids))
/// ```
public final class ChangeBroadcaster: Sendable {
  private let continuations = Locked<[UInt64: AsyncStream<StoreChange>.Continuation]>([:])
  private let nextID = Locked<UInt64>(0)

  public init() {}

  /// A new stream that receives every change yielded from now on.
  public func stream() -> AsyncStream<StoreChange> {
    let id = nextID.withLock { n -> UInt64 in
      n += 1
      return n
    }
    let (stream, continuation) = AsyncStream<StoreChange>.makeStream(bufferingPolicy: .bufferingNewest(1024))
    continuation.onTermination = { [weak self] _ in
      _ = self?.continuations.withLock { $0.removeValue(forKey: id) }
    }
    continuations.withLock { $0[id] = continuation }
    return stream
  }

  /// Whether any stream is listening.
  public var hasSubscribers: Bool { continuations.withLock { !$0.isEmpty } }

  /// Delivers `change` to every open stream.
  public func yield(_ change: StoreChange) {
    let targets = continuations.withLock { Array($0.values) }
    for continuation in targets { continuation.yield(change) }
  }

  /// Ends every stream (when the store closes).
  public func finish() {
    let targets = continuations.withLock { c -> [AsyncStream<StoreChange>.Continuation] in
      let all = Array(c.values)
      c.removeAll()
      return all
    }
    for continuation in targets { continuation.finish() }
  }
}
