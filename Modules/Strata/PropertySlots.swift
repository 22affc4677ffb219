import Foundation
import StrataCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Per-thread bookkeeping that lets a property wrapper find its property without knowing its name.
///
/// Each `@Attribute` / `@Relationship` takes the next slot number of its thread when it is initialized;
/// Swift initializes a class's stored properties in declaration order, subclass first, before
/// `ManagedObject.init` runs. `ManagedObject.init` then takes the count and resets it, so slot `n` of
/// an object is its `n`-th wrapper. While a prototype is built (to derive the model from a class), the
/// wrappers also record their declared options here.
///
/// The state lives in a per-thread block reached through a pointer: every wrapper of every object made
/// takes a slot, and a class reference there would cost a retain and a release each time.
struct SlotState {
  private struct Storage {
    var counter: Int32 = 0
    var collector: Unmanaged<PrototypeCollector>?
  }

  private let storage: UnsafeMutablePointer<Storage>

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { pointer in
      #if canImport(Darwin)
        let storage = pointer.assumingMemoryBound(to: Storage.self)
      #else
        guard let storage = pointer?.assumingMemoryBound(to: Storage.self) else { return }
      #endif
      storage.pointee.collector?.release()
      storage.deinitialize(count: 1)
      storage.deallocate()
    }
    return key
  }()

  @inline(__always)
  static var current: SlotState {
    if let pointer = pthread_getspecific(key) {
      return SlotState(storage: pointer.assumingMemoryBound(to: Storage.self))
    }
    let storage = UnsafeMutablePointer<Storage>.allocate(capacity: 1)
    storage.initialize(to: Storage())
    pthread_setspecific(key, storage)
    return SlotState(storage: storage)
  }

  var counter: Int32 {
    get { storage.pointee.counter }
    nonmutating set { storage.pointee.counter = newValue }
  }

  /// What a prototype being built collects; `nil` while ordinary objects are made.
  var collector: PrototypeCollector? {
    get { storage.pointee.collector?.takeUnretainedValue() }
    nonmutating set {
      storage.pointee.collector?.release()
      storage.pointee.collector = newValue.map { Unmanaged.passRetained($0) }
    }
  }

  /// The slot for a wrapper being initialized now.
  @inline(__always)
  func takeSlot() -> Int32 {
    let slot = storage.pointee.counter
    storage.pointee.counter &+= 1
    return slot
  }

  /// The number of slots handed out since the last call, resetting the count.
  @inline(__always)
  static func take() -> Int32 {
    let state = current
    let count = state.counter
    state.counter = 0
    return count
  }
}

/// What the wrappers of a prototype declared, by slot.
final class PrototypeCollector {
  enum Declaration {
    case attribute(type: AttributeType, isOptional: Bool, options: AttributeOptions, defaultValue: Value?,
      derivation: String?, validation: AttributeValidation)
    case relationship(destination: ManagedObject.Type, isToMany: Bool, inverse: String?, deleteRule: DeleteRule,
      isOptional: Bool, minCount: Int, maxCount: Int)
  }

  var declarations: [Int32: Declaration] = [:]
}
