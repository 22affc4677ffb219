import Foundation

extension Conformance {
  /// The rounds a randomized comparison or load campaign runs: `full`, or the percentage of it that
  /// `STRATA_CAMPAIGN_PERCENT` sets (at least `minimum`). The sanitizer runs set 25: under a sanitizer
  /// each round costs ten to fifty times more, and the code paths a quarter of the rounds take are the
  /// ones the sanitizer watches; `scripts/test` runs them all.
  ///
  /// ```swift
  /// let queries = Conformance.rounds(500, minimum: 40)  // 500, or 125 with STRATA_CAMPAIGN_PERCENT=25
  /// ```
  public static func rounds(_ full: Int, minimum: Int = 1) -> Int {
    guard let text = ProcessInfo.processInfo.environment["STRATA_CAMPAIGN_PERCENT"], let percent = Int(text),
      (1...100).contains(percent)
    else { return full }
    return max(minimum, full * percent / 100)
  }
}
