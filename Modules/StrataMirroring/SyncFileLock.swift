import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A kernel lock (`flock`) on a file beside a local store, held by one sync round at a time across
/// processes: a second process syncing the same store waits for the round to end. The kernel releases it
/// when the holder closes it or dies, so a killed process never leaves it held.
struct SyncFileLock: ~Copyable {
  private let descriptor: Int32

  /// The lock file of the store at `url`: `<store path>.mirror-lock`, beside the store.
  static func path(beside url: URL) -> String { url.path + ".mirror-lock" }

  /// Takes the lock of the store at `url`, trying every 20 ms; `nil` for a store that is not a local file
  /// (a memory store, a server store: their own means serialize them).
  ///
  /// - Throws: ``MirrorError/syncInProgress`` when another process still holds it after `timeout`;
  ///   `CancellationError` when the task is cancelled while waiting.
  static func acquire(beside url: URL?, timeout: Duration = .seconds(60)) async throws -> SyncFileLock? {
    guard let url, url.isFileURL else { return nil }
    let descriptor = open(path(beside: url), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    // A directory that cannot hold the lock file (read-only): nothing else could sync it either.
    guard descriptor >= 0 else { return nil }
    let deadline = ContinuousClock.now + timeout
    while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
      guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
        close(descriptor)
        throw MirrorError.syncInProgress
      }
      do {
        try await Task.sleep(for: .milliseconds(20))
      } catch {
        close(descriptor)
        throw error
      }
    }
    return SyncFileLock(descriptor: descriptor)
  }

  private init(descriptor: Int32) { self.descriptor = descriptor }

  deinit { close(descriptor) }
}
