import Foundation
import Strata
import StrataCore
import Synchronization

extension StoreMirror {
  /// Syncs by itself until the task running it is cancelled: once at the start, after the app's local
  /// saves once they have been quiet for `debounce`, and whenever the hub announces a position this
  /// replica has not pulled (``MirrorHub/newPositions()``). The mirror's own saves (applied pulls,
  /// authored ``author``) start nothing. While the hub cannot be reached (or a sync fails) it tries again
  /// after 100 ms, then twice as long each time up to `maximumBackoff`; nothing is lost or applied twice,
  /// as with every ``sync()``. Cancellation lets a running sync finish, then returns; so does the store
  /// closing.
  ///
  /// Local saves are heard through `PersistentContainer.persistentStoreRemoteChanges()` when the store
  /// was opened with `StoreOptions(postsRemoteChangeNotifications: true)` (then the saves of other
  /// processes on the same store count too); otherwise the store's history token is looked at every 50 ms.
  /// Each sync is reported by ``events()`` as any other.
  ///
  /// ```swift
  /// let syncing = Task { await mirror.runAutomaticSync() }
  /// // … the app saves as usual …
  /// syncing.cancel()
  /// await syncing.value
  /// ```
  public func runAutomaticSync(debounce: Duration = .milliseconds(50), maximumBackoff: Duration = .seconds(30)) async {
    let wake = AutomaticWake()
    let hubPositions = hub.newPositions()
    let container = container
    let listensToStore = container.storeDescriptions.first?.options.postsRemoteChangeNotifications == true
    let storeChanges = listensToStore ? container.persistentStoreRemoteChanges() : nil
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        if let storeChanges {
          for await _ in storeChanges { wake.noteLocalSave() }
          return
        }
        var last = try? container.currentPersistentHistoryToken()
        while !Task.isCancelled {
          try? await Task.sleep(for: .milliseconds(50))
          let current = try? container.currentPersistentHistoryToken()
          if current != last {
            last = current
            wake.noteLocalSave()
          }
        }
      }
      group.addTask {
        for await position in hubPositions { wake.noteHubPosition(position) }
      }
      group.addTask {
        await self.syncWhenWoken(wake, debounce: debounce, maximumBackoff: maximumBackoff)
      }
      await group.next()
      group.cancelAll()
    }
  }

  /// Starts ``runAutomaticSync(debounce:maximumBackoff:)`` in a task of its own, unless it already runs;
  /// ``stopAutomaticSync()`` stops it. The task keeps the mirror alive until then.
  ///
  /// ```swift
  /// mirror.startAutomaticSync()
  /// try context.save()  // pushed about 50 ms later, and pulled by the other replicas
  /// await mirror.stopAutomaticSync()
  /// ```
  public func startAutomaticSync(debounce: Duration = .milliseconds(50), maximumBackoff: Duration = .seconds(30)) {
    automaticTask.withLock { running in
      guard running == nil else { return }
      let id = UUID()
      let task = Task(executorPreference: MirrorExecutor.shared) {
        await self.runAutomaticSync(debounce: debounce, maximumBackoff: maximumBackoff)
        // Ended by itself (the store closed): no longer running.
        self.automaticTask.withLock { if $0?.id == id { $0 = nil } }
      }
      running = (id, task)
    }
  }

  /// Stops the automatic sync started by ``startAutomaticSync(debounce:maximumBackoff:)`` and returns once
  /// it has stopped (a sync it was running finishes first). Saves made after it are pushed by the next
  /// ``sync()`` or automatic sync. Nothing happens when none runs.
  ///
  /// ```swift
  /// await mirror.stopAutomaticSync()
  /// ```
  public func stopAutomaticSync() async {
    let running = automaticTask.withLock { running in
      defer { running = nil }
      return running?.task
    }
    guard let task = running else { return }
    task.cancel()
    await task.value
  }

  /// Whether the automatic sync of ``startAutomaticSync(debounce:maximumBackoff:)`` runs.
  ///
  /// ```swift
  /// if !mirror.isSyncingAutomatically { mirror.startAutomaticSync() }
  /// ```
  public var isSyncingAutomatically: Bool { automaticTask.withLock { $0 != nil } }

  /// The loop of the automatic sync: a round at the start, then one per wake that needs it.
  private func syncWhenWoken(_ wake: AutomaticWake, debounce: Duration, maximumBackoff: Duration) async {
    var catchingUp = true
    while !Task.isCancelled {
      if !catchingUp {
        guard await wake.next() else { return }
        // Local saves: wait until none came for `debounce` (unless the hub has news).
        while let due = wake.localSaveDue(after: debounce), ContinuousClock.now < due {
          do { try await Task.sleep(until: due, clock: .continuous) } catch { return }
        }
      }
      let (savedLocally, hubPosition) = wake.take()
      guard catchingUp || needsRound(savedLocally: savedLocally, hubPosition: hubPosition) else { continue }
      catchingUp = false
      await syncRetrying(maximumBackoff: maximumBackoff)
    }
  }

  /// Whether a wake calls for a sync: an app's save is pending, or the hub holds a position not pulled.
  private func needsRound(savedLocally: Bool, hubPosition: Int64?) -> Bool {
    let context = mirrorContext()
    do {
      return try context.performAndWait {
        let state = try MirrorState(context)
        if let hubPosition, hubPosition > state.pulled { return true }
        guard savedLocally else { return false }
        return try !pendingTransactions(after: state.acknowledged, in: context).isEmpty
      }
    } catch {
      return true
    }
  }

  /// Syncs until a sync succeeds, waiting longer after each failure; cancellation ends the wait.
  private func syncRetrying(maximumBackoff: Duration) async {
    var delay = Duration.milliseconds(100)
    while !Task.isCancelled {
      do {
        _ = try await sync()
        return
      } catch {
        // Reported by the sync's events and recorded in the status; try again later.
      }
      do { try await Task.sleep(for: delay) } catch { return }
      delay = min(delay * 2, max(maximumBackoff, .milliseconds(100)))
    }
  }
}

/// What woke the automatic sync since it last looked, and a signal for it to look.
final class AutomaticWake: Sendable {
  private struct Pending {
    var lastLocalSave: ContinuousClock.Instant?
    var hubPosition: Int64?
  }

  private let pending = Locked(Pending())
  private let signals: AsyncStream<Void>
  private let signal: AsyncStream<Void>.Continuation

  init() {
    (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
  }

  func noteLocalSave() {
    pending.withLock { $0.lastLocalSave = .now }
    signal.yield()
  }

  func noteHubPosition(_ position: Int64) {
    pending.withLock { $0.hubPosition = max(position, $0.hubPosition ?? 0) }
    signal.yield()
  }

  /// Waits for a wake; `false` when cancelled. One caller at a time (the automatic sync's loop).
  func next() async -> Bool {
    var iterator = signals.makeAsyncIterator()
    return await iterator.next() != nil
  }

  /// When the last local save becomes `debounce` old; `nil` when none is pending, or when the hub has
  /// news (a pull does not wait for local saves to settle: they go along, or with the next round).
  func localSaveDue(after debounce: Duration) -> ContinuousClock.Instant? {
    pending.withLock { $0.hubPosition == nil ? $0.lastLocalSave.map { $0.advanced(by: debounce) } : nil }
  }

  /// What is pending, cleared.
  func take() -> (savedLocally: Bool, hubPosition: Int64?) {
    pending.withLock { pending in
      defer { pending = Pending() }
      return (pending.lastLocalSave != nil, pending.hubPosition)
    }
  }
}
