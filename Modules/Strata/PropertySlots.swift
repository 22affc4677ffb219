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
final class SlotState {
  var counter: Int32 = 0
  var collector: PrototypeCollector?

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { pointer in
      #if canImport(Darwin)
        Unmanaged<SlotState>.fromOpaque(pointer).release()
      #else
        if let pointer { Unmanaged<SlotState>.fromOpaque(pointer).release() }
      #endif
    }
    return key
  }()

  static var current: SlotState {
    if let pointer = pthread_getspecific(key) {
      return Unmanaged<SlotState>.fromOpaque(pointer).takeUnretainedValue()
    }
    let state = SlotState()
    pthread_setspecific(key, Unmanaged.passRetained(state).toOpaque())
    return state
  }

  /// The slot for a wrapper being initialized now.
  @inline(__always)
  func takeSlot() -> Int32 {
    let slot = counter
    counter &+= 1
    return slot
  }

  /// The number of slots handed out since the last call, resetting the count.
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
