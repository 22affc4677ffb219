import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A deliberate data race, to show that a clean ThreadSanitizer run would have caught one.
///
/// Disabled unless `STRATA_SANITIZER_CANARY=1`: `scripts/sanitize thread` runs it alone, after the suite,
/// and fails when ThreadSanitizer does *not* report it. See docs/SANITIZERS.md.
@Suite("Sanitizer canary")
struct SanitizerCanaryTests {
  /// Shared between threads with no lock: the race the canary exists for.
  final class UnguardedCounter: @unchecked Sendable {
    var value = 0
  }

  @Test(
    "two threads increment a counter without a lock",
    .enabled(if: ProcessInfo.processInfo.environment["STRATA_SANITIZER_CANARY"] == "1"))
  func unguardedIncrementsRace() throws {
    let counter = UnguardedCounter()
    let context = Unmanaged.passRetained(counter).toOpaque()
    defer { Unmanaged<UnguardedCounter>.fromOpaque(context).release() }
    var threads: [pthread_t] = []
    for _ in 0..<2 {
      var thread = pthread_t()
      let started = pthread_create(
        &thread, nil,
        { raw in
          let counter = Unmanaged<UnguardedCounter>.fromOpaque(raw!).takeUnretainedValue()
          for _ in 0..<1_000 { counter.value += 1 }
          return nil
        }, context)
      try #require(started == 0)
      threads.append(thread)
    }
    for thread in threads { pthread_join(thread, nil) }
    #expect(counter.value > 0)
  }
}
