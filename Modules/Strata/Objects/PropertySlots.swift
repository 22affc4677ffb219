import CStrataSlots
import Foundation
internal import StrataStoreKit

/// Per-thread bookkeeping that lets a property wrapper find its property without knowing its name.
///
/// Each `@Attribute` / `@Relationship` takes the next slot number of its thread when it is initialized;
/// Swift initializes a class's stored properties in declaration order, subclass first, before
/// `ManagedObject.init` runs. `ManagedObject.init` then takes the count and resets it, so slot `n` of
/// an object is its `n`-th wrapper. While a prototype is built (to derive the model from a class), the
/// wrappers also record their declared options here.
///
/// The state is a pair of C thread-locals (`CStrataSlots`): every wrapper of every object made takes a
/// slot, and through a pthread key each would cost a once-check and a call.
@usableFromInline
enum SlotState {
  /// The slot count of this thread.
  static var counter: Int32 {
    get { strata_slot_count() }
    set { strata_set_slot_count(newValue) }
  }

  /// Whether a prototype is being built on this thread (its wrappers declare themselves).
  @inlinable
  static var isCollecting: Bool { strata_collector() != nil }

  /// What a prototype being built collects; `nil` while ordinary objects are made.
  static var collector: PrototypeCollector? {
    get {
      guard let pointer = strata_collector() else { return nil }
      return RetainedPointer<PrototypeCollector>.object(at: pointer)
    }
    set {
      if let old = strata_collector() { RetainedPointer<PrototypeCollector>.release(old) }
      strata_set_collector(newValue.map(RetainedPointer.make))
    }
  }

  /// The slot for a wrapper being initialized now.
  @inlinable
  static func takeSlot() -> Int32 { strata_take_slot() }

  /// The number of slots handed out since the last call, resetting the count.
  @inline(__always)
  static func take() -> Int32 { strata_take_slot_count() }

  /// Records what the wrapper of `slot` declares in the prototype being built.
  @usableFromInline
  static func declare(_ slot: Int32, _ declaration: PrototypeCollector.Declaration) {
    collector?.declarations[slot] = declaration
  }

  /// Records how to tell whether a stored value decodes as the Swift type of the attribute of `slot`.
  @usableFromInline
  static func declareValueCheck(_ slot: Int32, _ check: any AttributeValue.Type) {
    collector?.valueChecks[slot] = check
  }
}

/// What the wrappers of a prototype declared, by slot.
@usableFromInline
final class PrototypeCollector {
  @usableFromInline
  enum Declaration {
    case attribute(
      type: AttributeType, isOptional: Bool, options: AttributeOptions, defaultValue: Value?,
      derivation: String?, validation: AttributeValidation, originalName: String?)
    case relationship(
      destination: ManagedObject.Type, isToMany: Bool, inverse: String?, deleteRule: DeleteRule,
      isOptional: Bool, minCount: Int, maxCount: Int, originalName: String?, isOrdered: Bool)
  }

  var declarations: [Int32: Declaration] = [:]
  /// By slot: whether a stored value decodes as the attribute's Swift type, for the types that can fail
  /// (``CodableAttribute``, ``EnumAttribute``).
  var valueChecks: [Int32: any AttributeValue.Type] = [:]
}
