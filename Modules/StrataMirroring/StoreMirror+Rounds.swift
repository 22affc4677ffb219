import Foundation

/// How many sync rounds of a mirror ended, and who waits for the next end.
struct RoundEnds: Sendable {
  var ended = 0
  var waiting: [UUID: (after: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
}

extension StoreMirror {
  /// Counts one more ended round and wakes the tasks waiting for it.
  func endRound() {
    let woken = rounds.withLock { rounds in
      rounds.ended += 1
      let due = rounds.waiting.filter { $0.value.after < rounds.ended }
      for id in due.keys { rounds.waiting[id] = nil }
      return due.values.map(\.continuation)
    }
    for continuation in woken { continuation.resume() }
  }

  /// Returns once more than `count` rounds have ended, or `interval` has passed, or the task is cancelled.
  func roundEnd(after count: Int, orAfter interval: Duration) async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.roundEnd(after: count) }
      group.addTask { try? await Task.sleep(for: interval) }
      await group.next()
      group.cancelAll()
    }
  }

  /// Returns once more than `count` rounds have ended, or the task is cancelled.
  private func roundEnd(after count: Int) async {
    let id = UUID()
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let resumeNow = rounds.withLock { rounds in
          guard rounds.ended <= count, !Task.isCancelled else { return true }
          rounds.waiting[id] = (count, continuation)
          return false
        }
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      rounds.withLock { $0.waiting.removeValue(forKey: id) }?.continuation.resume()
    }
  }
}
