import Dispatch
import Foundation
import StrataMirroring
import Synchronization
import Testing

@Suite("Mirror executor")
struct MirrorExecutorTests {
  final class Counter: Sendable {
    let value = Atomic<Int>(0)
    var count: Int { value.load(ordering: .relaxed) }
    func increment() { value.add(1, ordering: .relaxed) }
  }

  /// Rounds blocked in synchronous waits (a server's reply, a `performAndWait`) must not hold up another mirror's
  /// round: with more blocked jobs than the executor has queues, every one starts, and a new job still runs.
  @Test func aJobRunsWhileMoreJobsThanQueuesAreBlocked() async throws {
    let blocked = 40
    let release = DispatchSemaphore(value: 0)
    let started = Counter()
    let holders = (0..<blocked).map { _ in
      Task(executorPreference: MirrorExecutor.shared) {
        started.increment()
        release.wait()
      }
    }
    let deadline = Date.now.addingTimeInterval(60)
    while started.count < blocked && Date.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    #expect(started.count == blocked, "every blocking job started: none queued behind another")
    let ran = Counter()
    let probe = Task(executorPreference: MirrorExecutor.shared) { ran.increment() }
    while ran.count == 0 && Date.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    #expect(ran.count == 1, "a job ran while \(blocked) others were blocked")
    for _ in 0..<blocked { release.signal() }
    for holder in holders { await holder.value }
    await probe.value
  }
}
