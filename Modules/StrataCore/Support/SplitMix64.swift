/// A small deterministic random number generator (SplitMix64): the same seed gives the same sequence,
/// so seeded imports, property tests and fuzzing repeat. Its finalizer, ``mix(_:)``, also spreads
/// ``ObjectID`` keys over hash tables.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let rating = Int.random(in: 0...5, using: &random)   // the same on every run
/// ```
@usableFromInline
package struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  package init(seed: UInt64) { state = seed }

  @usableFromInline
  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    return Self.mix(state)
  }

  /// SplitMix64's finalizer: every input bit affects every output bit.
  @inline(__always)
  @inlinable
  package static func mix(_ value: UInt64) -> UInt64 {
    var z = value
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
