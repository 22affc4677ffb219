import Dispatch
import Synchronization

/// Where the mirror's background work runs: automatic sync, and a hub's watch for news. A task executor on
/// dispatch queues of its own, so a cooperative pool that the app keeps busy or blocks (a synchronous wait
/// on a process, a lock, a `performAndWait`) does not hold syncing up. Its jobs go round a set of serial
/// queues: Dispatch gives each serial queue a thread of its own when the others are busy, where a concurrent
/// queue is served by as many threads as the machine has cores (on Linux, one blocked in a `performAndWait`
/// or a server's reply holds its place), so a few blocked rounds never stall the others.
///
/// ```swift
/// let watch = Task(executorPreference: MirrorExecutor.shared) { for await _ in hub.newPositions() {} }
/// ```
public final class MirrorExecutor: TaskExecutor {
  /// The executor every mirror and hub of the process shares.
  public static let shared = MirrorExecutor()

  private let queues = (0..<16).map { DispatchQueue(label: "strata.mirror.\($0)", qos: .utility) }
  private let next = Atomic<Int>(0)

  private init() {}

  /// Runs `job` on the next of the mirror's queues.
  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedTaskExecutor()
    let index = next.add(1, ordering: .relaxed).oldValue & (queues.count - 1)
    queues[index].async { job.runSynchronously(on: executor) }
  }
}
