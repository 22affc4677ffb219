import Foundation

enum BenchError: Error, CustomStringConvertible {
  case sqlite(String)
  case lmdb(String)
  /// A Strata scenario that went wrong, whichever the store.
  case store(String)
  var description: String {
    switch self {
    case .sqlite(let message): "sqlite: \(message)"
    case .lmdb(let message): "lmdb: \(message)"
    case .store(let message): "strata: \(message)"
    }
  }
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
  let start = DispatchTime.now().uptimeNanoseconds
  try body()
  return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
}

func freshDirectory() throws -> URL {
  let url = FileManager.default.temporaryDirectory.appending(path: "strata-bench-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}

func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return 0 }
  let mid = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

var phasesRequested: Bool { ProcessInfo.processInfo.environment["STRATA_BENCH_PHASES"] != nil }

func printPhase(_ line: String) {
  FileHandle.standardError.write(Data("  \(line)\n".utf8))
}

/// The resident memory of this process and its peak since the last ``resetPeakMemory()``, in MiB
/// (`VmRSS` and `VmHWM` of /proc/self/status); `nil` where there is no such file.
func residentMemory() -> (current: Double, peak: Double)? {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
  func kibibytes(_ field: String) -> Double? {
    status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
      .flatMap { Double($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
  }
  guard let current = kibibytes("VmRSS"), let peak = kibibytes("VmHWM") else { return nil }
  return (current / 1024, peak / 1024)
}

/// Hands the allocator's free memory back to the system (so that what an earlier scenario freed does not
/// hide what the next one allocates; not with `STRATA_BENCH_NO_TRIM`), then resets the peak `residentMemory()` reports to the current size
/// (Linux: 5 into /proc/self/clear_refs).
func resetPeakMemory() {
  // glibc's malloc_trim, looked up at run time (the Glibc module does not declare it).
  if ProcessInfo.processInfo.environment["STRATA_BENCH_NO_TRIM"] == nil, let trim = dlsym(nil, "malloc_trim") {
    _ = unsafeBitCast(trim, to: (@convention(c) (Int) -> Int32).self)(0)
  }
  try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

/// A small deterministic generator (SplitMix64), so both sides of a scenario visit keys in one order.
struct SeededGenerator: RandomNumberGenerator {
  var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// The positions 0..<count in one random order, the same in every run and on both sides.
func shuffledPositions(_ count: Int) -> [Int] {
  var generator = SeededGenerator(seed: 24)
  return (0..<count).shuffled(using: &generator)
}
