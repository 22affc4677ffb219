import Foundation
import Strata

/// Something the mirror did, as ``StoreMirror/events()`` gives it.
///
/// ```swift
/// for await event in mirror.events() where event.kind == .rejection {
///   print("refused: \(event.error ?? "")")
/// }
/// ```
public struct MirrorEvent: Sendable, Hashable, Codable {
  /// What happened.
  public enum Kind: String, Sendable, Hashable, Codable {
    /// A push: `count` local transactions acknowledged.
    case push
    /// A pull: `count` entries of other replicas applied.
    case pull
    /// `count` conflicts the hub resolved during a push (``StoreMirror/conflicts()`` lists them).
    case conflict
    /// One local transaction the hub refused (`error` says why); it is in ``StoreMirror/rejected()``.
    case rejection
  }

  /// What happened.
  public var kind: Kind
  /// How many transactions, entries or conflicts.
  public var count: Int
  /// When it started.
  public var startedAt: Date
  /// When it ended.
  public var endedAt: Date
  /// The error that ended it (a push or pull that failed), or the hub's reason for a rejection; one line.
  public var error: String?

  /// An event.
  ///
  /// ```swift
  /// let event = MirrorEvent(kind: .push, count: 3, startedAt: Date())
  /// ```
  public init(kind: Kind, count: Int, startedAt: Date, endedAt: Date = Date(), error: String? = nil) {
    self.kind = kind
    self.count = count
    self.startedAt = startedAt
    self.endedAt = endedAt
    self.error = error
  }
}

/// What a mirror last learned of its hub.
struct HubContact: Sendable {
  var isConnected = false
  var offlineReason: String?
  var hubPosition: Int64?
}

extension StoreMirror {
  /// One round, as the mirror's only sync: `push`, then a pull, each reported as an event, with one event
  /// for the conflicts the push met.
  func round(pushing push: (inout SyncReport) async throws -> Void) async throws -> SyncReport {
    guard claimSync(true) else { throw MirrorError.syncInProgress }
    defer {
      _ = claimSync(false)
      endRound()
    }
    // Another process syncing the same store file: wait for its round to end.
    let fileLock = try await SyncFileLock.acquire(beside: container.storeDescriptions.first?.url)
    defer { withExtendedLifetime(fileLock) {} }
    var report = SyncReport()
    let started = Date()
    try await phase(.push, &report, push)
    if report.conflicts > 0 { emit(MirrorEvent(kind: .conflict, count: report.conflicts, startedAt: started)) }
    try await phase(.pull, &report) { report in try await self.pull(into: &report) }
    do {
      try await hub.roundEnded(by: self)
    } catch {
      note(error)
      throw error
    }
    return report
  }

  /// Runs a push or pull, emitting its event with the counts it reached and the error that ended it.
  func phase(
    _ kind: MirrorEvent.Kind, _ report: inout SyncReport, _ body: (inout SyncReport) async throws -> Void
  ) async throws {
    let started = Date()
    do {
      try await body(&report)
    } catch {
      note(error)
      emit(MirrorEvent(kind: kind, count: kind == .push ? report.pushed : report.pulled, startedAt: started, error: "\(error)"))
      throw error
    }
    emit(MirrorEvent(kind: kind, count: kind == .push ? report.pushed : report.pulled, startedAt: started))
  }

  /// Asks the hub for its last position, recording whether it answered.
  @discardableResult
  func reachHub() async throws -> Int64 {
    do {
      if !admitted.withLock({ $0 }) {
        try await hub.admit(replicaOf: container.model)
        admitted.withLock { $0 = true }
      }
      let position = try await hub.lastPosition()
      contact.withLock { $0 = HubContact(isConnected: true, hubPosition: max(position, $0.hubPosition ?? 0)) }
      return position
    } catch {
      note(error)
      throw error
    }
  }

  /// Records a hub that failed a request as not connected (a local error changes nothing).
  func note(_ error: any Error) {
    guard let error = error as? MirrorError else { return }
    switch error {
    case .hubUnreachable, .hubFailed:
      contact.withLock {
        $0.isConnected = false
        $0.offlineReason = error.description
      }
    case .unsupported, .syncInProgress, .rejected: break
    }
  }

  /// Records a hub position seen in a receipt or a pull.
  func noteHubPosition(_ position: Int64) {
    contact.withLock {
      $0.isConnected = true
      $0.offlineReason = nil
      $0.hubPosition = max(position, $0.hubPosition ?? 0)
    }
  }

  func emit(_ event: MirrorEvent) {
    for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
  }
}
