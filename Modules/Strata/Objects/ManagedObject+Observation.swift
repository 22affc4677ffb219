import CStrataSlots
import Foundation
import Observation
internal import StrataStoreKit

// Observation of managed objects, written by hand (no macro): SwiftData's models are `@Observable`, and
// `withObservationTracking { _ = potato.userRating }` follows a Strata object the same way.
//
// What an unobserved object pays: Observation keeps "is a tracking recording on this thread?" in a
// thread-local of its own (a pointer to the access list being filled, null otherwise) that only
// `ObservationRegistrar.access` reads, out of line. Strata reads that thread-local where it lies: once per
// process it finds libswiftObservation's thread-local block (`dl_iterate_phdr`) and the one word of it
// that is set inside `withObservationTracking` and null outside (`ObservationThreadLocal`); each thread
// then keeps the word's address in a C thread-local of its own (`strata_observation_slot`). Every getter
// loads the two (`strata_observation_may_be_recording`, inlined) and goes on; only a read inside a
// tracking (or a thread's first read) takes the slow path, and an object gets a registrar (in its side
// allocation) only when it is read there. Setters and the context's replacements of values look at one
// flag of the object (`isObservedStorage`).
//
// Where the word cannot be found (Observation linked statically, another platform, a future Observation
// that keeps its state elsewhere: the calibration checks the behaviour, not a name), every read asks
// Observation through the context's `ObservationProbe`: one call per read, correct but not free. The
// probe sees the recording through its key path's subscript argument: a tracking that records an access
// hashes the key path into its set of properties, and hashing it hashes the argument, which notes the hit
// in a C thread-local (`strata_observation_probe_hits`). The observation tests run whichever way the
// process uses, and `ObservationThreadLocalTests` checks that the fast way is found here.

extension ManagedObject: Observable {}

/// Tells whether a `withObservationTracking` is recording on the current thread: one per ``EntityBinding``.
@usableFromInline
final class ObservationProbe: Observable {
  /// The probe key path's subscript argument: hashing or comparing it is how the probe notices that
  /// Observation recorded the key path.
  struct Token: Hashable {
    func hash(into hasher: inout Hasher) {
      strata_note_observation_probe_hit()
      hasher.combine(0)
    }
    static func == (_: Token, _: Token) -> Bool {
      strata_note_observation_probe_hit()
      return true
    }
  }

  private let registrar = ObservationRegistrar()
  /// Made once: a key path with a subscript argument is instantiated each time its literal is evaluated.
  private let keyPath: KeyPath<ObservationProbe, Int>

  init() { keyPath = \ObservationProbe.[probe: Token()] }

  subscript(probe _: Token) -> Int { 0 }

  /// Whether a tracking recorded the probe's access just now, i.e. one is recording on this thread.
  ///
  /// Outside a tracking the registrar reads Observation's thread-local and returns.
  @usableFromInline
  func isRecording() -> Bool {
    _ = strata_take_observation_probe_hits()
    registrar.access(self, keyPath: keyPath)
    return strata_take_observation_probe_hits() != 0
  }
}

/// Where Observation's thread-local lies in its TLS block, found once per process by watching it change
/// around a `withObservationTracking`.
enum ObservationThreadLocal {
  /// The TLS module of libswiftObservation and the word of its block that is set while a tracking
  /// records; `nil` when not found (the getters then ask through ``ObservationProbe``).
  static let location: (module: Int, word: Int)? = calibrate()

  private static func calibrate() -> (module: Int, word: Int)? {
    var size = 0
    let module = strata_observation_tls_module(&size)
    let words = size / MemoryLayout<UnsafeRawPointer?>.stride
    guard module != 0, words > 0, let block = strata_tls_block(module) else { return nil }
    let slots = block.assumingMemoryBound(to: UnsafeRawPointer?.self)
    let outside = (0..<words).map { slots[$0] }
    var inside: [UnsafeRawPointer?] = []
    // Nothing is read inside, so the tracking installs nothing. This may run inside a tracking (the first
    // getter to ask may be in one): the word then holds the outer tracking's list before and after, the
    // inner one's inside.
    withObservationTracking {
      inside = (0..<words).map { slots[$0] }
    } onChange: {
    }
    let after = (0..<words).map { slots[$0] }
    let flipping = (0..<words).filter { inside[$0] != nil && inside[$0] != outside[$0] && after[$0] == outside[$0] }
    guard flipping.count == 1, let word = flipping.first else { return nil }
    return (Int(module), word)
  }

  /// Points this thread's `strata_observation_slot` at its copy of Observation's thread-local; `false`
  /// when the location is unknown.
  static func locateOnThisThread() -> Bool {
    guard let location, let block = strata_tls_block(location.module) else { return false }
    let slot = block.assumingMemoryBound(to: UnsafeRawPointer?.self) + location.word
    strata_set_observation_tls_slot(UnsafeRawPointer(slot).assumingMemoryBound(to: UnsafeMutableRawPointer?.self))
    return true
  }

  /// Whether a tracking records on this thread, by the located thread-local (after
  /// ``locateOnThisThread()`` succeeded on this thread).
  static var isRecording: Bool { strata_observation_tls_slot()?.pointee != nil }
}

/// An observed object's registrar and the properties read while a tracking recorded (in ``ObjectExtras``).
final class ObjectObservation {
  let registrar = ObservationRegistrar()
  /// The names of the properties read under tracking: the ones whose changes are announced.
  var observed: Set<String> = []
}

/// The values of an observed object before the context replaces them, to announce what changed.
struct ObservationBaseline {
  let values: AttributeValues
  let toOne: [ObjectID?]
  let toMany: [Set<ObjectID>?]
  let toManyOrder: [Int: [ObjectID]]
  let wasFault: Bool
}

extension ManagedObject {
  /// What every `@Attribute`, `@Derived` and `@Relationship` getter runs: records the read with the
  /// object's registrar when a tracking is recording.
  @inlinable @inline(__always)
  final func noteAccess(slot: Int32) {
    if _slowPath(strata_observation_may_be_recording() != 0) { noteAccessSlowly(slot: slot) }
  }

  /// A read that may be inside a tracking: recorded with the object's registrar if it is.
  @usableFromInline
  final func noteAccessSlowly(slot: Int32) {
    guard let binding else { return }
    let recording =
      strata_observation_tls_slot() != nil || ObservationThreadLocal.locateOnThisThread()
      ? ObservationThreadLocal.isRecording : binding.observationProbe.isRecording()
    if recording { recordTrackedAccess(slot: slot) }
  }

  /// The key path under which the property called `name` is registered with the object's registrar.
  final subscript(observedProperty _: String) -> Int { 0 }

  @usableFromInline
  final func recordTrackedAccess(slot: Int32) {
    guard let name = propertyName(ofSlot: slot) else { return }
    let observation = madeObservation
    observation.observed.insert(name)
    observation.registrar.access(self, keyPath: \ManagedObject.[observedProperty: name])
  }

  /// The name of the property declared at `slot`.
  func propertyName(ofSlot slot: Int32) -> String? {
    guard let entity = info?.entity else { return nil }
    switch target(ofSlot: slot) {
    case .attribute(let index): return entity.attributes[index].name
    case .toOne(let index): return entity.toOneRelationships[index].name
    case .toMany(let index): return entity.toManyRelationships[index].name
    case .none: return nil
    }
  }

  /// The observation of the object, made now (and the object marked observed) if it was not.
  private var madeObservation: ObjectObservation {
    if let observation { return observation }
    let made = ObjectObservation()
    observation = made
    isObservedStorage = true
    return made
  }

  /// The observation of `name`, if a tracking read it.
  private func observation(of name: String) -> ObjectObservation? {
    guard isObservedStorage, let observation, observation.observed.contains(name) else { return nil }
    return observation
  }

  /// Tells the trackings that read `name` that it changed (after the change).
  final func notifyObservers(ofProperty name: String) {
    guard let observation = observation(of: name) else { return }
    let keyPath = \ManagedObject.[observedProperty: name]
    observation.registrar.willSet(self, keyPath: keyPath)
    observation.registrar.didSet(self, keyPath: keyPath)
  }

  /// Tells every tracking that read a property of the object that it changed: the object left its context
  /// (a merged deletion), so no value read from it still holds.
  final func notifyObserversOfEveryProperty() {
    guard _slowPath(isObservedStorage), let observation else { return }
    for name in observation.observed.sorted() { notifyObservers(ofProperty: name) }
  }

  /// Stores `value` as the attribute at `index`, telling the trackings that read it before it changes.
  final func replaceAttribute(_ value: Value, at index: Int) {
    guard _slowPath(isObservedStorage), let name = info?.entity.attributes[index].name,
      let observation = observation(of: name), values[index] != value
    else {
      values[index] = value
      return
    }
    let keyPath = \ManagedObject.[observedProperty: name]
    observation.registrar.willSet(self, keyPath: keyPath)
    values[index] = value
    observation.registrar.didSet(self, keyPath: keyPath)
  }

  /// Runs `body`, which replaces values of the object wholesale (a refresh, rollback, merge, save),
  /// then tells the trackings of each property read under tracking that changed.
  final func withObservedChanges<T>(_ body: () throws -> T) rethrows -> T {
    guard _slowPath(isObservedStorage) else { return try body() }
    let before = ObservationBaseline(
      values: values, toOne: toOne, toMany: toMany, toManyOrder: toManyOrder, wasFault: isFaultStorage)
    let result = try body()
    for name in changedObservedProperties(since: before) { notifyObservers(ofProperty: name) }
    return result
  }

  /// The properties read under tracking whose values differ from `before`. A property whose value was
  /// dropped (the object turned into a fault, a to-many unloaded) counts as changed: its next read may
  /// differ.
  private func changedObservedProperties(since before: ObservationBaseline) -> [String] {
    guard let info, let observation else { return [] }
    let entity = info.entity
    let dropped = isFaultStorage && !before.wasFault
    return observation.observed.filter { name in
      switch entity.property(named: name) {
      case .attribute(_, let index)?:
        if dropped { return true }
        guard index < values.count, index < before.values.count else { return false }
        return values[index] != before.values[index]
      case .toOne(_, let index)?:
        if dropped { return true }
        guard index < toOne.count, index < before.toOne.count else { return false }
        return toOne[index] != before.toOne[index]
      case .toMany(let rel)?:
        guard let index = info.toManyIndex[rel.name], index < before.toMany.count, let old = before.toMany[index]
        else { return false }
        guard index < toMany.count, let new = toMany[index] else { return true }
        return new != old || (rel.isOrdered && toManyOrder[index] != before.toManyOrder[index])
      case nil:
        return false
      }
    }
  }
}
