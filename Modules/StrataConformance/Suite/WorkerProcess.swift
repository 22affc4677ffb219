import Foundation

/// A second process a test starts: an executable built beside the tests (see
/// ``ConformanceBackend/executable(named:)``), its output collected when it is finished.
///
/// ```swift
/// let worker = try WorkerProcess("strata-worker", ["create", "sqlite", url.path])
/// let (status, output, errors) = worker.finish()
/// ```
public struct WorkerProcess {
  /// The running process.
  public let process: Process
  private let output = Pipe()
  private let errors = Pipe()

  /// Starts `executable` with `arguments`.
  public init(_ executable: String, _ arguments: [String]) throws {
    process = Process()
    process.executableURL = ConformanceBackend.executable(named: executable)
    process.arguments = arguments
    process.standardOutput = output
    process.standardError = errors
    try process.run()
  }

  /// Waits for the process to end; its exit status and what it printed.
  public func finish() -> (status: Int32, stdout: String, stderr: String) {
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
  }
}
