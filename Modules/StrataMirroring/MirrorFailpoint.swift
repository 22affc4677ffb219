import Foundation
import StrataCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The durable steps of a sync at which the kill tests stop a replica (docs/MIRRORING.md, "Kill
/// campaigns"). A test seam of the package, not API: it costs one comparison per step when unset.
///
/// A process arms it with `STRATA_MIRROR_FAILPOINT=step[:n][:pause]`, read once: at the `n`-th time (default
/// 1) the step is reached the process ends with `_exit(MirrorFailpoint.exitStatus)`, or with `:pause` it
/// writes `paused step` on standard output and waits for a line on standard input before going on. A
/// test in one process arms one mirror instead (`StoreMirror.failpoint`): the hook throws
/// ``MirrorFailpoint/Killed`` and the sync stops there, recording nothing more, as a killed process would.
package enum MirrorFailpoint: String, Sendable, CaseIterable {
  /// The push is about to read the outbox: local saves are committed, nothing of them is pushed yet.
  case beforePush
  /// The hub acknowledged one more transaction of the outbox; the replica has not recorded it yet.
  case afterPush
  /// Inside the hub's PostgreSQL transaction, every write sent but the `COMMIT` not sent.
  case beforeHubCommit
  /// The hub's transaction committed; its reply has not reached the replica.
  case afterHubCommit
  /// One pulled batch was applied and its position saved in the local store; more may follow.
  case afterPullBatch

  /// The exit status of a process the failpoint ended.
  package static let exitStatus: Int32 = 86

  /// What a hook throws to stop a sync where a kill would have.
  package struct Killed: Error, Sendable, CustomStringConvertible {
    package let step: MirrorFailpoint
    package init(_ step: MirrorFailpoint) { self.step = step }
    package var description: String { "killed by the failpoint at \(step.rawValue)" }
  }

  private struct Armed: Sendable {
    let step: MirrorFailpoint
    let count: Int
    let pauses: Bool
  }

  /// The process's failpoint, from the environment, read once.
  private static let armed: Armed? = {
    guard let text = ProcessInfo.processInfo.environment["STRATA_MIRROR_FAILPOINT"], !text.isEmpty else { return nil }
    let parts = text.split(separator: ":").map(String.init)
    guard let step = parts.first.flatMap(MirrorFailpoint.init(rawValue:)) else { return nil }
    let count = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
    return Armed(step: step, count: max(1, count), pauses: parts.count > 2 && parts[2] == "pause")
  }()

  private static let reached = Locked<[MirrorFailpoint: Int]>([:])

  /// Called by the mirror and the hubs at `step`: ends or pauses the process when its failpoint is armed
  /// there and this is the armed occurrence.
  package static func reach(_ step: MirrorFailpoint) {
    guard let armed, armed.step == step else { return }
    let count = reached.withLock { counts in
      counts[step, default: 0] += 1
      return counts[step, default: 0]
    }
    guard count == armed.count else { return }
    if armed.pauses {
      FileHandle.standardOutput.write(Data("paused \(step.rawValue)\n".utf8))
      _ = readLine()
      return
    }
    _exit(exitStatus)
  }
}
