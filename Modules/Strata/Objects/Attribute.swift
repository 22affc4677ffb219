import Foundation
internal import StrataStoreKit

/// Options of an `@Attribute`.
public struct AttributeOptions: OptionSet, Sendable, Hashable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// The attribute's value is unique among the entity's objects (a uniqueness constraint).
  public static let unique = AttributeOptions(rawValue: 1)
  /// Tracked by contexts, never stored.
  public static let transient = AttributeOptions(rawValue: 2)
  /// The store keeps an index on the attribute.
  public static let indexed = AttributeOptions(rawValue: 4)
  /// Persistent history keeps the value after the object is deleted.
  public static let preserveValueOnDeletion = AttributeOptions(rawValue: 8)
  /// Large values of a `Data` attribute are kept out of the store's rows (SwiftData's `.externalStorage`,
  /// Core Data's "Allows External Storage"): from `AttributeDescription.externalStorageThreshold` bytes
  /// (100 KiB) a value goes to a file beside an SQLite or LMDB store, or to a table of its own on
  /// PostgreSQL, written with the save; smaller values stay in the row. Fetching or faulting an object
  /// does not read such a value: the first read of the property does (a missing value reads as nil and
  /// logs a warning; `fulfilledValue(forKey:)` throws it). Only for `Data` and `Data?`.
  ///
  /// ```swift
  /// final class Film: ManagedObject {
  ///   @Attribute(.externalStorage) var poster: Data?
  /// }
  /// ```
  public static let externalStorage = AttributeOptions(rawValue: 16)
}

/// Declares a stored property of a ``ManagedObject`` subclass: one line per attribute.
///
/// The property's Swift type gives the attribute type (`String`, `Int16`, `Date?`, …); an initial value
/// becomes the model's default value.
///
/// ```swift
/// final class Movie: ManagedObject {
///   @Attribute(.unique) var title: String
///   @Attribute var genre: String
///   @Attribute var releaseDate: Date
///   @Attribute var rating: Int16 = 3
///   @Attribute var notes: String?
/// }
/// ```
@propertyWrapper
public struct Attribute<Value: AttributeValue> {
  @usableFromInline let slot: Int32

  // The initializers are inlinable: every object made runs one per attribute, and inlined they are a
  // thread-local increment (the options matter only while a prototype is built).

  /// An attribute without a default: `nil` if optional, otherwise the type's zero value.
  ///
  /// `originalName` is the attribute's name in the previous model version when it was renamed
  /// (`@Attribute(originalName: "lastModified") var updatedAt: Date?`): migration moves the values over.
  @inlinable
  public init(
    _ options: AttributeOptions = [], minimum: Double? = nil, maximum: Double? = nil, minimumLength: Int? = nil,
    maximumLength: Int? = nil, pattern: String? = nil, originalName: String? = nil
  ) {
    slot = SlotState.takeSlot()
    if _slowPath(SlotState.isCollecting) {
      Self.declare(
        slot: slot, options: options, defaultValue: nil, minimum: minimum, maximum: maximum, minimumLength: minimumLength,
        maximumLength: maximumLength, pattern: pattern, originalName: originalName)
    }
  }

  /// An attribute whose new objects start with `wrappedValue`.
  @inlinable
  public init(
    wrappedValue: Value, _ options: AttributeOptions = [], minimum: Double? = nil, maximum: Double? = nil,
    minimumLength: Int? = nil, maximumLength: Int? = nil, pattern: String? = nil, originalName: String? = nil
  ) {
    slot = SlotState.takeSlot()
    if _slowPath(SlotState.isCollecting) {
      Self.declare(
        slot: slot, options: options, defaultValue: wrappedValue.storedValue, minimum: minimum, maximum: maximum,
        minimumLength: minimumLength, maximumLength: maximumLength, pattern: pattern, originalName: originalName)
    }
  }

  @usableFromInline
  static func declare(
    slot: Int32, options: AttributeOptions, defaultValue: StrataCore.Value?, minimum: Double?, maximum: Double?,
    minimumLength: Int?, maximumLength: Int?, pattern: String?, originalName: String?
  ) {
    if Value.checksStoredValues {
      SlotState.declareValueCheck(slot, Value.self)
    }
    var defaultValue = defaultValue
    if defaultValue == nil, Value.attributeType == .json, !Value.isOptionalAttribute {
      defaultValue = Value.zero.storedValue
    }
    SlotState.declare(
      slot,
      .attribute(
        type: Value.attributeType, isOptional: Value.isOptionalAttribute, options: options,
        defaultValue: defaultValue, derivation: nil,
        validation: AttributeValidation(
          minimum: minimum, maximum: maximum, minimumLength: minimumLength, maximumLength: maximumLength,
          pattern: pattern),
        originalName: originalName))
  }

  @available(*, unavailable, message: "@Attribute is only available on ManagedObject subclasses")
  public var wrappedValue: Value {
    get { fatalError("unreachable") }
    set { fatalError("unreachable") }
  }

  @inlinable
  public static subscript<Object: ManagedObject>(
    _enclosingInstance object: Object,
    wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
    storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
  ) -> Value {
    // Always inlined: a getter left out of line takes the storage key path as an argument and
    // instantiates it at run time on every read, where inlined it folds into a field load.
    @inline(__always) get {
      let slot = object[keyPath: storageKeyPath].slot
      object.checkContextQueue(slot: slot)
      object.noteAccess(slot: slot)
      return object.attributeValue(slot: slot, as: Value.self)
    }
    @inline(__always) set {
      let slot = object[keyPath: storageKeyPath].slot
      object.checkContextQueue(slot: slot)
      if let index = object.quietlySettableAttributeIndex(slot: slot) {
        object.values[index] = newValue.storedValue
      } else {
        object.setAttributeValue(newValue.storedValue, slot: slot)
      }
    }
  }
}
