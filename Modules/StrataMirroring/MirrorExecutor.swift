import Dispatch

/// Where the mirror's background work runs: automatic sync, and a hub's watch for news. A task executor on a
/// dispatch queue of its own, so a cooperative pool that the app keeps busy or blocks (a synchronous wait
/// on a process, a lock, a `performAndWait`) does not hold syncing up; the queue's threads are Dispatch's,
/// which grows them when one blocks.
///
/// ```swift
/// let watch = Task(executorPreference: MirrorExecutor.shared) { for await _ in hub.newPositions() {} }
/// ```
public final class MirrorExecutor: TaskExecutor {
  /// The executor every mirror and hub of the process shares.
  public static let shared = MirrorExecutor()

  private let queue = DispatchQueue(label: "strata.mirror", qos: .utility, attributes: .concurrent)

  private init() {}

  /// Runs `job` on the mirror's queue.
  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedTaskExecutor()
    queue.async { job.runSynchronously(on: executor) }
  }
}
