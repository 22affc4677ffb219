import Foundation

/// Draws `[#########---------------------] 300/973` on standard error, in place; the last call ends the line.
public func drawProgress(done: Int, total: Int) {
  let width = 30
  let filled = total > 0 ? min(width, done * width / total) : width
  let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
  FileHandle.standardError.write(Data("\r[\(bar)] \(done)/\(total)\(done == total ? "\n" : "")".utf8))
}

/// A progress reporter for long work: ``drawProgress(done:total:)`` when standard error is a terminal,
/// else `nil`, so that redirected output stays clean.
public func terminalProgress() -> (@Sendable (Int, Int) -> Void)? {
  isatty(STDERR_FILENO) != 0 ? drawProgress : nil
}
