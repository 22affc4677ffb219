import Foundation

/// Fans values out to every `AsyncStream` handed out by ``stream()``.
///
/// Stores keep one for their change announcements; contexts keep one for their saves.
///
/// ```swift
/// let broadcaster = ChangeBroadcaster()          // Broadcaster<StoreChange>
/// func changes() -> AsyncStream<StoreChange> { broadcaster.stream() }
/// // after COMMIT:
/// broadcaster.yield(StoreChange(storeIdentifier: identifier, inserted: ids))
/// ```
public final class Broadcaster<Element: Sendable>: Sendable {
  private struct State {
    var nextID: UInt64 = 0
    var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
  }

  private let state = Locked(State())

  /// A broadcaster with no streams yet.
  public init() {}

  /// A new stream that receives every value yielded from now on (the newest 1,024 are buffered).
  public func stream() -> AsyncStream<Element> {
    let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(1024))
    let id = state.withLock { state -> UInt64 in
      state.nextID += 1
      state.continuations[state.nextID] = continuation
      return state.nextID
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
    }
    return stream
  }

  /// Whether any stream is listening.
  public var hasSubscribers: Bool { state.withLock { !$0.continuations.isEmpty } }

  /// Delivers `value` to every open stream.
  public func yield(_ value: Element) {
    let targets = state.withLock { Array($0.continuations.values) }
    for continuation in targets { continuation.yield(value) }
  }

  /// Ends every stream (when the store closes).
  public func finish() {
    let targets = state.withLock { state -> [AsyncStream<Element>.Continuation] in
      let all = Array(state.continuations.values)
      state.continuations.removeAll()
      return all
    }
    for continuation in targets { continuation.finish() }
  }
}

/// The broadcaster stores use for `StoreChange` announcements.
public typealias ChangeBroadcaster = Broadcaster<StoreChange>
