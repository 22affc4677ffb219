import Foundation
internal import StrataStoreKit

/// Declares a derived attribute of a ``ManagedObject`` subclass: a stored value the store computes from
/// a derivation expression every time it writes the object, or an object it reads.
///
/// The property is read-only: assigning to it does not compile, and `setValue(_:forKey:)` throws. Until
/// the object is first saved it holds its type's zero value (`nil` when optional); afterwards, what the
/// store computed at the last save. A context's unsaved changes do not update it. Derived attributes
/// are stored, so predicates and sorts can use them. See `DerivedAttributes` for the supported forms.
///
/// ```swift
/// final class TodoList: ManagedObject {
///   @Attribute var name: String
///   @Relationship(inverse: "list") var items: Set<TodoItem>
///   @Derived("items.@count") var itemCount: Int64
///   @Derived("canonical:(name)", .indexed) var searchName: String
/// }
/// final class TodoItem: ManagedObject {
///   @Attribute var title: String
///   @Relationship(inverse: "items") var list: TodoList?
///   @Derived("list.name") var listName: String?
///   @Derived("now()") var lastSaved: Date?
/// }
/// ```
@propertyWrapper
public struct Derived<Value: AttributeValue> {
  @usableFromInline let slot: Int32

  /// A derived attribute computed by `derivation`.
  /// - Parameters:
  ///   - derivation: the expression the store computes, such as `"canonical:(title)"` or `"items.@count"`.
  ///   - options: `.indexed`, `.unique` and `.preserveValueOnDeletion` apply; `.transient` makes
  ///     the model invalid (a derived attribute is stored).
  @inlinable
  public init(_ derivation: String, _ options: AttributeOptions = []) {
    slot = SlotState.takeSlot()
    if _slowPath(SlotState.isCollecting) { Self.declare(slot: slot, derivation: derivation, options: options) }
  }

  @usableFromInline
  static func declare(slot: Int32, derivation: String, options: AttributeOptions) {
    SlotState.declare(
      slot,
      .attribute(
        type: Value.attributeType, isOptional: Value.isOptionalAttribute, options: options, defaultValue: nil,
        derivation: derivation, validation: AttributeValidation(), originalName: nil))
  }

  @available(*, unavailable, message: "@Derived is only available on ManagedObject subclasses")
  public var wrappedValue: Value { fatalError("unreachable") }

  @inlinable
  public static subscript<Object: ManagedObject>(
    _enclosingInstance object: Object,
    wrapped wrappedKeyPath: KeyPath<Object, Value>,
    storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
  ) -> Value {
    // Always inlined, as `Attribute`'s getter is: out of line, the storage key path is instantiated on
    // every read.
    @inline(__always) get {
      let slot = object[keyPath: storageKeyPath].slot
      object.checkContextQueue(slot: slot)
      object.noteAccess(slot: slot)
      return object.attributeValue(slot: slot, as: Value.self)
    }
  }
}

extension Derived: SlotCarrying {}
