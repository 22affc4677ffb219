import Foundation
import StrataCore

/// Draws `[#########---------------------] 300/973` on standard error, in place; the last call ends the line.
public func drawProgress(done: Int, total: Int) {
  let width = 30
  let filled = total > 0 ? min(width, done * width / total) : width
  let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
  FileHandle.standardError.write(Data("\r[\(bar)] \(done)/\(total)\(done == total ? "\n" : "")".utf8))
}

/// A progress reporter for long work: ``drawProgress(done:total:)`` when standard output is a terminal
/// (and standard error, where the bar is drawn, too), else `nil`, so that output piped to another tool or a
/// file stays clean.
public func terminalProgress() -> (@Sendable (Int, Int) -> Void)? {
  isatty(STDOUT_FILENO) != 0 && isatty(STDERR_FILENO) != 0 ? drawProgress : nil
}

/// A migration progress reporter drawing ``drawProgress(done:total:)`` in percent, when
/// ``terminalProgress()`` draws at all.
public func terminalMigrationProgress() -> (@Sendable (MigrationProgress) -> Void)? {
  guard let draw = terminalProgress() else { return nil }
  return { progress in draw(Int((progress.fractionCompleted * 100).rounded(.down)), 100) }
}
