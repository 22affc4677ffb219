/// The test hook of the PostgreSQL store: faults that `StrataPostgresTests` injects into the next writes
/// (through `@testable import`) to prove the retry and commit-status paths of
/// `PostgresStore.writeTransaction` against a real server. Empty in normal use, where it costs one read
/// under a lock per write; nothing outside the tests sets it.
struct PostgresFaults: Sendable {
  /// Statements run inside the next writes just before `COMMIT`, one per write (a `DO` block raising
  /// SQLSTATE 40001 simulates a serialization failure).
  var beforeCommit: [String] = []
  /// The next write's connection is terminated just before `COMMIT` is sent.
  var terminateBeforeCommit = false
  /// The next write commits, then its connection closes as if the server's reply had been lost.
  var loseCommitReply = false
}
