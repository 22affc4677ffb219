import Foundation
import StrataCore

// The object graph's departures from Swift's checked memory model, each as a small helper stating the
// invariant it relies on. Call sites use these helpers; nothing else in the module uses `Unmanaged`,
// `unsafeBitCast` or raw memory of Swift objects.
//
// `@exclusivity(unchecked)` is an attribute of a stored property and stays on its declaration (the
// state of `ManagedObject`, `ObjectRegistry`, `ChangeSignals` and the context's `ChangeTracker`). It
// relies on one invariant: that state is confined to its context's queue, and the framework never
// holds an access to it across a call that could reach it again. The run-time check (a thread-local
// access set per read and write) would only cost time on every property access of every object.

/// A reference that is not counted: copying it or passing it costs no retain or release.
///
/// Invariant: whoever makes one keeps the object alive for as long as the reference is used — the
/// coordinator holds every ``EntityInfo`` for as long as a context of it exists, a context holds its
/// ``ChangeSignals``, and a class layout is held by its class's cache.
@usableFromInline
struct Unretained<Object: AnyObject> {
  @usableFromInline let reference: Unmanaged<Object>

  @inlinable @inline(__always)
  init(_ object: Object) { reference = .passUnretained(object) }

  /// The object as a counted reference, for a stored property that keeps it: exactly one retain.
  @inlinable @inline(__always)
  func retained() -> Object { reference.retain().takeRetainedValue() }

  /// The object as an ordinary (counted) reference.
  @inlinable @inline(__always)
  var object: Object { reference.takeUnretainedValue() }

  /// Runs `body` with the object, neither retained nor released around the call.
  @inlinable @inline(__always)
  func withObject<Result>(_ body: (Object) throws -> Result) rethrows -> Result {
    try reference._withUnsafeGuaranteedRef(body)
  }
}

/// The entity info of the entity a context last materialized, uncounted (see ``Unretained``), with an ID
/// of that entity to recognise the next one by.
struct LastEntityInfo {
  let id: ObjectID
  let info: Unretained<EntityInfo>
}
