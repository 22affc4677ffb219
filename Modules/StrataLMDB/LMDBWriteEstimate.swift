import StrataStoreKit

/// How many bytes of pages a large write will need, estimated before it starts, so that the map can be
/// grown once beforehand (``LMDBEnvironment/reserve(extraBytes:)``) instead of the write filling the map,
/// being aborted and run again from the start on a map twice as large — which for a save of a million
/// objects on the 64 MiB map ran the whole write four times. The file does not grow until pages are
/// written, so an estimate on the high side costs address space only.
enum LMDBWriteEstimate {
  /// Below this many objects a write is left to the map's doubling: it is small enough that a rerun
  /// costs little, and the estimate would cost as much as it saves.
  static let threshold = 1_000
  /// Objects sampled to estimate the average record.
  static let sampleSize = 64

  /// About what `count` records whose values look like `sample`'s take in pages, with their keys, index
  /// entries and history, doubled for half-full pages after splits and copied-on-write pages.
  static func bytes(count: Int, sample: [some Collection<Value>]) -> Int {
    guard count >= threshold, !sample.isEmpty else { return 0 }
    let total = sample.reduce(0) { sum, values in sum + values.reduce(48) { $0 + valueBytes($1) } }
    let perRecord = total / sample.count
    let (bytes, overflow) = count.multipliedReportingOverflow(by: (perRecord + 64) * 4)
    return overflow ? Int.max / 2 : bytes
  }

  /// The positions of at most ``sampleSize`` elements spread over `count`.
  static func samplePositions(_ count: Int) -> StrideTo<Int> {
    stride(from: 0, to: count, by: max(1, count / sampleSize))
  }

  private static func valueBytes(_ value: Value) -> Int {
    switch value {
    case .string(let string): string.utf8.count + 2
    case .data(let data): data.count + 4
    case .array(let items): items.reduce(2) { $0 + valueBytes($1) }
    default: 10
    }
  }
}
