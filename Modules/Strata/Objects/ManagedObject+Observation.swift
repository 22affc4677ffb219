import CStrataSlots
import Foundation
import Observation
internal import StrataStoreKit

// Observation of managed objects, written by hand (no macro): SwiftData's models are `@Observable`, and
// `withObservationTracking { _ = potato.userRating }` follows a Strata object the same way.
//
// What an unobserved object pays: Observation keeps "is a tracking recording on this thread?" in a
// thread-local of its own that only `ObservationRegistrar.access` reads. Every getter therefore makes one
// call, into the context's `ObservationProbe`, which asks Observation through a registrar of its own; an
// object gets a registrar (in its side allocation) only when it is read while a tracking records. Setters
// and the context's replacements of values look at one flag of the object (`isObservedStorage`).
//
// The probe sees the recording through its key path's subscript argument: a tracking that records an
// access hashes the key path into its set of properties, and hashing it hashes the argument, which notes
// the hit in a C thread-local (`strata_observation_probe_hits`). The observation tests fail if
// Observation ever stops hashing what it records.

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

/// An observed object's registrar and the properties read while a tracking recorded (in ``ObjectExtras``).
final class ObjectObservation {
  let registrar = ObservationRegistrar()
  /// The names of the properties read under tracking: the ones whose changes are announced.
  var observed: Set<String> = []
}

/// The values of an observed object before the context replaces them, to announce what changed.
struct ObservationBaseline {
  let values: [Value]
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
    if let binding, _slowPath(binding.observationProbe.isRecording()) { recordTrackedAccess(slot: slot) }
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
  private func propertyName(ofSlot slot: Int32) -> String? {
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
