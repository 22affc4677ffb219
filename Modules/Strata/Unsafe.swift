import CStrataSlots
import Foundation
internal import StrataStoreKit

// The object graph's departures from Swift's checked memory model, each as a small helper stating the
// invariant it relies on. Call sites use these helpers; nothing else in the module uses `Unmanaged`,
// `unsafeBitCast` or raw memory of Swift objects.
//
// `@exclusivity(unchecked)` is an attribute of a stored property and stays on its declaration (the
// state of `ManagedObject`, `ObjectRegistry`, `ChangeSignals`, the context's `ChangeTracker` and its
// prefetch caches, `rowCache` and `toManyCache`). It
// relies on one invariant: that state is confined to its context's queue, and the framework never
// holds an access to it across a call that could reach it again. The run-time check (a thread-local
// access set per read and write) would only cost time on every property access of every object.

/// A reference that is not counted: copying it or passing it costs no retain or release.
///
/// Invariant: whoever makes one keeps the object alive for as long as the reference is used — the
/// coordinator holds every ``EntityInfo`` for as long as a context of it exists, a context holds its
/// ``ChangeSignals`` and its ``EntityBinding``s, and a class layout is held by its class's cache.
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

extension Array where Element: AnyObject {
  /// Calls `body` with each element lent: not retained and released around the call, as a `for` loop
  /// does (two atomic operations an element, for every object a save goes through).
  ///
  /// Invariant: the array is not mutated while `body` runs (call it on a constant), so it keeps every
  /// element alive.
  @inline(__always)
  func forEachLent(_ body: (Element) throws -> Void) rethrows {
    try withUnsafeBufferPointer { elements in
      for i in elements.indices {
        try Unmanaged.passUnretained(elements[i])._withUnsafeGuaranteedRef(body)
      }
    }
  }
}

extension ManagedObject {
  /// Calls `body` with the object's entity info lent (`nil` for a prototype), not retained and released
  /// around the call.
  ///
  /// Invariant: the object keeps its binding, and the binding its info, while `body` runs; the info also
  /// lives as long as its coordinator.
  @inline(__always)
  final func withLentInfo<Result>(_ body: (EntityInfo?) throws -> Result) rethrows -> Result {
    guard let info = binding.map({ Unmanaged.passUnretained($0.info) }) else { return try body(nil) }
    return try info._withUnsafeGuaranteedRef { try body($0) }
  }
}

extension ObjectContext {
  /// Runs `body` as this context's work on the current thread: meanwhile its objects reach it lent
  /// (``ChangeSignals/withContext(_:)``), not through their weak reference — a weakly referenced object
  /// keeps its counts in a side table, so loading one strongly and releasing it are two slow atomic
  /// operations, once per fault fired or saved object changed.
  ///
  /// Invariant: the caller holds the context for as long as `body` runs (`performAndWait` is a method of
  /// it; a block queued by `perform` captures it), and the previous value is restored after, so the
  /// thread names a context only while that context is alive and its work runs there.
  @inline(__always)
  func running<Result>(_ body: () throws -> Result) rethrows -> Result {
    let previous = strata_running_context_signals()
    strata_set_running_context_signals(Unmanaged.passUnretained(changeLog.signals).toOpaque())
    defer { strata_set_running_context_signals(previous) }
    return try body()
  }
}

extension ChangeSignals {
  /// Runs `body` with the context these signals belong to, if it is alive: lent, neither retained nor
  /// released, when its work runs on this thread (``ObjectContext/running(_:)``), else loaded from the
  /// weak reference. `nil` without running `body` when the context is gone.
  ///
  /// Invariant: the thread names these signals only while their context runs work on it, so that
  /// context is alive. Signals at a reused address cannot be mistaken for them: the caller holds these
  /// signals (an object holds its binding, the binding its signals), so their memory is not reused.
  @inline(__always)
  func withContext<Result>(_ body: (ObjectContext) throws -> Result) rethrows -> Result? {
    if strata_running_context_signals() == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()),
      let unretainedContext
    {
      return try unretainedContext._withUnsafeGuaranteedRef(body)
    }
    guard let context else { return nil }
    return try body(context)
  }
}

extension ManagedObject {
  /// Runs `body` with the object's context, `nil` when it has none (a prototype, a detached object, a
  /// context gone): lent when the context's work runs on this thread, as it does inside `perform`.
  ///
  /// Invariant: the object holds its binding and the binding its signals for as long as `body` runs, or
  /// the context does (through its change log) when `body` replaces the binding.
  @inline(__always)
  final func withContext<Result>(_ body: (ObjectContext) throws -> Result) rethrows -> Result? {
    guard !isDetached, let signals = binding.map({ Unmanaged.passUnretained($0.signals) }) else { return nil }
    return try signals._withUnsafeGuaranteedRef { try $0.withContext(body) }
  }
}

/// The binding of the entity a context last materialized, uncounted (see ``Unretained``: the context
/// keeps its bindings), with an ID of that entity to recognise the next one by.
struct LastEntityBinding {
  let id: ObjectID
  let binding: Unretained<EntityBinding>
}

/// `objects` as an array of `T`, without copying: arrays of class references share one layout (what the
/// standard library's own cast does on Apple platforms).
///
/// Invariant: every element is an instance of `T` (or a subclass) — a fetch's objects of an entity
/// are all made from the entity's class, which the caller has checked is `T`.
@inline(__always)
func reinterpretCast<T: ManagedObject>(_ objects: [ManagedObject], to type: T.Type) -> [T] {
  unsafeBitCast(objects, to: [T].self)
}

/// The slots of 32 neighbouring primary keys of one entity in ``ObjectRegistry``, after a header: the
/// number of slots in use, the slots holding objects registered since the registry's last sweep (one bit
/// each) and whether the page is on the registry's list of pages to visit at its next young sweep. One
/// block of memory the registry frees, so that finding a page and filling a slot counts no reference.
///
/// Invariant: the registry owns each page — it allocates it, is the only one to read or write it (on its
/// context's queue), and calls ``deallocate()`` exactly once, when the page leaves it or in its `deinit`;
/// a `RegistryPage` value is a plain pointer and must not outlive that.
struct RegistryPage {
  static let shift = 5
  static let size = 1 << shift
  private static let header = 2 * MemoryLayout<Int>.stride

  private let base: UnsafeMutableRawPointer

  static func allocate() -> RegistryPage {
    let base = UnsafeMutableRawPointer.allocate(
      byteCount: header + size * MemoryLayout<ManagedObject?>.stride, alignment: 8)
    base.initializeMemory(as: Int.self, repeating: 0, count: 2)
    (base + header).initializeMemory(as: ManagedObject?.self, repeating: nil, count: size)
    return RegistryPage(base: base)
  }

  func deallocate() {
    slots.deinitialize(count: Self.size)
    base.deallocate()
  }

  /// How many slots hold an object.
  var count: Int {
    get { base.load(as: Int.self) }
    nonmutating set { base.storeBytes(of: newValue, as: Int.self) }
  }

  /// The slots holding an object registered since the last sweep: bit `slot`.
  var young: UInt32 {
    get { base.load(fromByteOffset: 8, as: UInt32.self) }
    nonmutating set { base.storeBytes(of: newValue, toByteOffset: 8, as: UInt32.self) }
  }

  /// Whether the page is on the registry's list of pages with young slots.
  var isListed: Bool {
    get { base.load(fromByteOffset: 12, as: UInt32.self) != 0 }
    nonmutating set { base.storeBytes(of: newValue ? 1 : 0, toByteOffset: 12, as: UInt32.self) }
  }

  var slots: UnsafeMutablePointer<ManagedObject?> {
    (base + Self.header).assumingMemoryBound(to: ManagedObject?.self)
  }

  static func === (a: RegistryPage, b: RegistryPage) -> Bool { a.base == b.base }

  /// Runs `body` with the object in `slot`, lent: neither retained nor released around the call.
  ///
  /// Invariant: `body` leaves the slot alone (the page keeps the object while `body` runs).
  @inline(__always)
  func withObject<Result>(in slot: Int, _ body: (ManagedObject) throws -> Result) rethrows -> Result? {
    guard let object = slots[slot].map(Unmanaged.passUnretained) else { return nil }
    return try object._withUnsafeGuaranteedRef(body)
  }
}

/// Snapshots a fetch has read and not yet made into objects: the store's reading and the context's making
/// of objects alternate batch by batch rather than row by row, through one buffer moved in and out of.
///
/// Invariant: slots `0..<count` hold initialized snapshots and the rest are uninitialized; `append` is
/// called only when the batch is not full (the caller drains it when ``isFull``). Being `~Copyable`, the
/// buffer has one owner, which frees it.
struct SnapshotBatch: ~Copyable {
  private let base: UnsafeMutablePointer<Snapshot>
  private let capacity: Int
  private var count = 0

  init(capacity: Int) {
    base = .allocate(capacity: capacity)
    self.capacity = capacity
  }

  deinit {
    base.deinitialize(count: count)
    base.deallocate()
  }

  var isFull: Bool { count == capacity }

  mutating func append(_ snapshot: consuming Snapshot) {
    (base + count).initialize(to: snapshot)
    count += 1
  }

  /// Hands each snapshot to `body` in the order appended, moving it out, and empties the batch.
  mutating func drain(_ body: (consuming Snapshot) -> Void) {
    let taken = count
    count = 0
    for i in 0..<taken { body((base + i).move()) }
  }
}
