import Foundation

// The LMDB store's departures from Swift's checked memory model, each stating the invariant it relies
// on. The `mdb_*` calls with `MDB_val`s over Swift buffers are ordinary FFI and stay with their callers.

/// The bytes of the record being written, reused from record to record: written through a pointer after
/// one capacity check per value, not appended to an array byte by byte.
///
/// Invariant: the `appendUnchecked` calls that follow a ``reserve(_:)`` write at most the bytes it
/// reserved (an unsigned varint at most 10); the buffer is used by one write transaction at a time.
final class RecordBuffer {
  private var base: UnsafeMutableRawPointer
  private var capacity: Int
  /// How many bytes are written.
  var count = 0

  init(capacity: Int = 256) {
    self.capacity = capacity
    base = .allocate(byteCount: capacity, alignment: 8)
  }

  deinit { base.deallocate() }

  /// Makes room for `extra` more bytes, so that that many unchecked appends are safe.
  @inline(__always)
  func reserve(_ extra: Int) {
    if count + extra > capacity { grow(to: count + extra) }
  }

  // Releases no object (raw memory only), and says so: an encoder holding a value read out of an array
  // across a `reserve` then needs no copy of it (a retain and a release) for fear the call frees it.
  @inline(never) @_effects(releasenone)
  private func grow(to needed: Int) {
    let newCapacity = max(needed, capacity * 2)
    let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
    newBase.copyMemory(from: base, byteCount: count)
    base.deallocate()
    base = newBase
    capacity = newCapacity
  }

  @inline(__always)
  func appendUnchecked(_ byte: UInt8) {
    base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
    count &+= 1
  }

  @inline(__always)
  func appendUnchecked(_ bytes: UnsafeRawBufferPointer) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    (base + count).copyMemory(from: source, byteCount: bytes.count)
    count &+= bytes.count
  }

  /// A field: `tag`, the length of `bytes` as a varint, then `bytes`. Out of line and, like `grow`, declared
  /// to release no object (it writes raw memory only): an encoder passing a string it read out of a value
  /// array then needs no copy of the value to keep it alive across the call.
  @inline(never) @_effects(releasenone)
  func appendLengthPrefixed(_ tag: UInt8, _ bytes: UnsafeRawBufferPointer) {
    reserve(11 + bytes.count)
    appendUnchecked(tag)
    appendVarintUnchecked(UInt64(bytes.count))
    appendUnchecked(bytes)
  }

  /// An unsigned LEB128 varint (at most 10 bytes).
  @inline(__always)
  func appendVarintUnchecked(_ value: UInt64) {
    var v = value
    while v >= 0x80 {
      appendUnchecked(UInt8(truncatingIfNeeded: v) | 0x80)
      v >>= 7
    }
    appendUnchecked(UInt8(v))
  }

  /// The bytes written.
  func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    try body(UnsafeRawBufferPointer(start: base, count: count))
  }
}

extension LMDBStore {
  /// The store's scope, uncounted, for the closure of a read that runs once per fault: captured as a
  /// reference it cost three retains and three releases around the read's layers.
  @inline(__always)
  var lentScope: LentScope { LentScope(reference: .passUnretained(scope)) }
}

/// A reference to a store's scope that copying and capturing do not count (``LMDBStore/lentScope``).
///
/// Invariant: the store holds its scope (a constant) as long as it lives, whoever calls a method of the
/// store holds the store for the call, and a `LentScope` does not outlive the call that made it.
struct LentScope {
  fileprivate let reference: Unmanaged<LMDBScope>

  /// Runs `body` with the scope, neither retained nor released around the call.
  @inline(__always)
  func with<Result>(_ body: (LMDBScope) throws -> Result) rethrows -> Result {
    try reference._withUnsafeGuaranteedRef(body)
  }
}
