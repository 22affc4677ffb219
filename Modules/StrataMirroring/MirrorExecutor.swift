import Dispatch
import Synchronization

/// Where the mirror's background work runs: automatic sync, and a hub's watch for news. A task executor on
/// dispatch queues of its own, so a cooperative pool that the app keeps busy or blocks (a synchronous wait
/// on a process, a lock, a `performAndWait`) does not hold syncing up. Its jobs run on a set of serial
/// queues: Dispatch gives each serial queue a thread of its own when the others are busy, where a
/// concurrent queue is served by as many threads as the machine has cores (on Linux, one blocked in a
/// `performAndWait` or a server's reply holds its place). A job goes to an idle queue, or to a queue of its own
/// when none is idle, so it never waits behind a blocked one and blocked rounds never stall the others.
///
/// ```swift
/// let watch = Task(executorPreference: MirrorExecutor.shared) { for await _ in hub.newPositions() {} }
/// ```
public final class MirrorExecutor: TaskExecutor {
  /// The executor every mirror and hub of the process shares.
  public static let shared = MirrorExecutor()

  /// A serial queue and the number of jobs queued or running on it.
  private final class Lane: Sendable {
    let queue: DispatchQueue
    let load = Atomic<Int>(0)
    init(_ index: Int) { queue = DispatchQueue(label: "strata.mirror.\(index)", qos: .utility) }
  }

  private static let width = 16
  private let lanes = (0..<MirrorExecutor.width).map(Lane.init)
  private let next = Atomic<Int>(0)

  private init() {}

  /// Runs `job` on an idle one of the mirror's queues (the search starts at the next in turn), or on a queue of
  /// its own when none is idle.
  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedTaskExecutor()
    let start = next.add(1, ordering: .relaxed).oldValue
    for step in 0..<Self.width {
      let lane = lanes[(start &+ step) & (Self.width - 1)]
      guard lane.load.load(ordering: .relaxed) == 0 else { continue }
      lane.load.add(1, ordering: .relaxed)
      lane.queue.async {
        job.runSynchronously(on: executor)
        lane.load.subtract(1, ordering: .relaxed)
      }
      return
    }
    // Every lane is busy, each perhaps blocked in a synchronous wait (a server's reply, a `performAndWait`):
    // the job gets a queue of its own, so it never waits for them.
    DispatchQueue(label: "strata.mirror.overflow", qos: .utility).async { job.runSynchronously(on: executor) }
  }
}
