import Foundation
import StrataCore
import Testing

@Suite struct QueryLimitsTests {
  /// Runs `body` on a thread with a 512 KB stack (a macOS secondary thread's default) and waits for it.
  private func onSmallStack(_ body: @escaping @Sendable () -> Bool) async -> Bool {
    await withCheckedContinuation { continuation in
      let thread = Thread { continuation.resume(returning: body()) }
      thread.stackSize = 512 * 1024
      thread.start()
    }
  }

  @Test func predicatesAtTheLimitsRoundTripOnASmallStack() async {
    let n = QueryLimits.maxDepth
    let formats = [
      Array(repeating: "a == 1", count: 10_000).joined(separator: " AND "),
      Array(repeating: "a == 1", count: 10_000).joined(separator: " OR "),
      String(repeating: "abs:(", count: n - 2) + "a" + String(repeating: ")", count: n - 2) + " > 1",
      "a" + String(repeating: " + 1", count: n - 2) + " > 1",
      String(repeating: "NOT ", count: n - 2) + "a == 1",
    ]
    let ok = await onSmallStack {
      formats.allSatisfy { format in
        guard let predicate = try? QueryPredicate(format: format) else { return false }
        return (try? QueryPredicate(format: predicate.description)) == predicate
      }
    }
    #expect(ok)
  }
}
