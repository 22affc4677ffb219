// StrataCore's departures from Swift's checked memory model, each as a small helper stating the
// invariant it relies on. Call sites use these helpers.

/// A reference to an object that lives as long as the process, held without counting: copying,
/// hashing and comparing a value that holds one costs no retain or release.
///
/// Invariant: the object is never deallocated — it is interned in a table the process keeps (as
/// `ObjectID`'s scopes are). Anything else held this way would dangle.
@frozen @usableFromInline
struct ImmortalReference<Object: AnyObject & Sendable>: @unchecked Sendable {
  @usableFromInline unowned(unsafe) let object: Object

  @inlinable @inline(__always)
  init(_ object: Object) { self.object = object }
}

/// The two machine words of a `String` value, as they are: for a string of up to 15 UTF-8 bytes, its
/// bytes (stored inline), so equal short strings have equal words.
///
/// Invariant: a `String` is two words on every 64-bit platform Swift supports; equal words imply equal
/// strings, but equal strings (when either is stored out of line, or bridged) need not have equal words,
/// so a caller compares words first and falls back to comparing strings.
@inlinable @inline(__always)
package func stringWords(_ string: String) -> (UInt64, UInt64) {
  unsafeBitCast(string, to: (UInt64, UInt64).self)
}

/// An object kept alive by a raw pointer handed to C (Strata's per-thread prototype collector slot,
/// SQLite's aggregate contexts).
///
/// Invariant: each pointer from ``make(_:)`` holds one retain, given back exactly once by
/// ``release(_:)``; ``object(at:)`` is used only between the two.
package enum RetainedPointer<Object: AnyObject> {
  package static func make(_ object: Object) -> UnsafeMutableRawPointer {
    Unmanaged.passRetained(object).toOpaque()
  }

  package static func object(at pointer: UnsafeMutableRawPointer) -> Object {
    Unmanaged<Object>.fromOpaque(pointer).takeUnretainedValue()
  }

  package static func release(_ pointer: UnsafeMutableRawPointer) {
    Unmanaged<Object>.fromOpaque(pointer).release()
  }
}
