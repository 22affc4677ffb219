import ArgumentParser
import Foundation

/// `--for SECONDS`, shared by the CLIs' commands that run until they are stopped.
public struct WatchDuration: ParsableArguments, Sendable {
  @Option(
    name: .customLong("for"),
    help: ArgumentHelp("Stop after this many seconds (default: at Ctrl-C or SIGTERM).", valueName: "seconds"))
  public var seconds: Double?

  public init() {}

  public func validate() throws {
    if let seconds, !(seconds > 0 && seconds <= 31_536_000) {
      throw ValidationError("--for must be more than 0 and at most 31536000 seconds")
    }
  }
}

/// Returns after `duration` seconds, or at Ctrl-C (SIGINT) or SIGTERM; never without either.
public func stopSignal(after duration: Double?) async throws {
  let stop = AsyncStream<Void> { continuation in
    let sources = SignalSources()
    for number in [SIGINT, SIGTERM] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { continuation.yield() }
      source.resume()
      sources.held.append(source)
    }
    continuation.onTermination = { _ in sources.cancel() }
    if let duration {
      DispatchQueue.global().asyncAfter(deadline: .now() + duration) { continuation.yield() }
    }
  }
  for await _ in stop { return }
}

/// The signal sources of ``stopSignal(after:)``, kept alive until its stream ends.
final class SignalSources: @unchecked Sendable {
  var held: [any DispatchSourceSignal] = []

  func cancel() {
    for source in held { source.cancel() }
  }
}
