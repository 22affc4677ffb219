import Foundation
internal import StrataStoreKit

/// A Swift type that an `@Attribute` can hold: it names its `AttributeType` and converts to and
/// from `Value`.
///
/// The conversions are inlinable, so that reading and writing an attribute compiles to a plain switch in
/// the app's code rather than a call through generic metadata.
///
/// Conforming types: `Int16`, `Int32`, `Int64`, `Int`, `Double`, `Float`, `Decimal`, `String`, `Bool`,
/// `Date`, `Data`, `UUID`, `URL`, and `Optional` of any of them.
public protocol AttributeValue {
  /// The model type of the attribute.
  static var attributeType: AttributeType { get }
  /// Whether `nil` is allowed (true only for `Optional`).
  static var isOptionalAttribute: Bool { get }
  /// The value before anything is assigned, for a non-optional attribute without a default.
  static var zero: Self { get }
  /// Converts from a stored value; `nil` when the value does not fit.
  init?(storedValue: Value)
  /// The value as stored.
  var storedValue: Value { get }
  /// Whether a stored value can fail to convert (``CodableAttribute``, ``EnumAttribute``): fetches then
  /// check every such value and throw `.corrupted` naming the entity, object and key rather than hand
  /// out an object that cannot read it. `false` by default.
  static var checksStoredValues: Bool { get }
}

extension AttributeValue {
  public static var isOptionalAttribute: Bool { false }
  public static var checksStoredValues: Bool { false }
}

extension Int64: AttributeValue {
  public static var attributeType: AttributeType { .int64 }
  @inlinable public static var zero: Int64 { 0 }
  @inlinable public init?(storedValue: Value) {
    guard case .int(let i) = storedValue else { return nil }
    self = i
  }
  @inlinable public var storedValue: Value { .int(self) }
}

extension Int: AttributeValue {
  public static var attributeType: AttributeType { .int64 }
  @inlinable public static var zero: Int { 0 }
  @inlinable public init?(storedValue: Value) {
    guard case .int(let i) = storedValue, let v = Int(exactly: i) else { return nil }
    self = v
  }
  @inlinable public var storedValue: Value { .int(Int64(self)) }
}

extension Int32: AttributeValue {
  public static var attributeType: AttributeType { .int32 }
  @inlinable public static var zero: Int32 { 0 }
  @inlinable public init?(storedValue: Value) {
    guard case .int(let i) = storedValue, let v = Int32(exactly: i) else { return nil }
    self = v
  }
  @inlinable public var storedValue: Value { .int(Int64(self)) }
}

extension Int16: AttributeValue {
  public static var attributeType: AttributeType { .int16 }
  @inlinable public static var zero: Int16 { 0 }
  @inlinable public init?(storedValue: Value) {
    guard case .int(let i) = storedValue, let v = Int16(exactly: i) else { return nil }
    self = v
  }
  @inlinable public var storedValue: Value { .int(Int64(self)) }
}

extension Double: AttributeValue {
  public static var attributeType: AttributeType { .double }
  @inlinable public static var zero: Double { 0 }
  @inlinable public init?(storedValue: Value) {
    switch storedValue {
    case .double(let d): self = d
    case .int(let i): self = Double(i)
    default: return nil
    }
  }
  @inlinable public var storedValue: Value { .double(self) }
}

extension Float: AttributeValue {
  public static var attributeType: AttributeType { .float }
  @inlinable public static var zero: Float { 0 }
  @inlinable public init?(storedValue: Value) {
    switch storedValue {
    case .double(let d): self = Float(d)
    case .int(let i): self = Float(i)
    default: return nil
    }
  }
  @inlinable public var storedValue: Value { .double(Double(self)) }
}

extension Decimal: AttributeValue {
  public static var attributeType: AttributeType { .decimal }
  @inlinable public static var zero: Decimal { 0 }
  @inlinable public init?(storedValue: Value) {
    switch storedValue {
    case .decimal(let d): self = d
    case .int(let i): self = Decimal(i)
    default: return nil
    }
  }
  @inlinable public var storedValue: Value { .decimal(self) }
}

extension String: AttributeValue {
  public static var attributeType: AttributeType { .string }
  @inlinable public static var zero: String { "" }
  @inlinable public init?(storedValue: Value) {
    guard case .string(let s) = storedValue else { return nil }
    self = s
  }
  @inlinable public var storedValue: Value { .string(self) }
}

extension Bool: AttributeValue {
  public static var attributeType: AttributeType { .bool }
  @inlinable public static var zero: Bool { false }
  @inlinable public init?(storedValue: Value) {
    switch storedValue {
    case .bool(let b): self = b
    case .int(let i): self = i != 0
    default: return nil
    }
  }
  @inlinable public var storedValue: Value { .bool(self) }
}

extension Date: AttributeValue {
  public static var attributeType: AttributeType { .date }
  @inlinable public static var zero: Date { Date(timeIntervalSince1970: 0) }
  @inlinable public init?(storedValue: Value) {
    guard case .date(let d) = storedValue else { return nil }
    self = d
  }
  @inlinable public var storedValue: Value { .date(self) }
}

extension Data: AttributeValue {
  public static var attributeType: AttributeType { .data }
  @inlinable public static var zero: Data { Data() }
  @inlinable public init?(storedValue: Value) {
    guard case .data(let d) = storedValue else { return nil }
    self = d
  }
  @inlinable public var storedValue: Value { .data(self) }
}

extension UUID: AttributeValue {
  public static var attributeType: AttributeType { .uuid }
  @inlinable public static var zero: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
  @inlinable public init?(storedValue: Value) {
    guard case .uuid(let u) = storedValue else { return nil }
    self = u
  }
  @inlinable public var storedValue: Value { .uuid(self) }
}

extension URL: AttributeValue {
  public static var attributeType: AttributeType { .url }
  @inlinable public static var zero: URL { URL(fileURLWithPath: "/") }
  @inlinable public init?(storedValue: Value) {
    guard case .url(let u) = storedValue else { return nil }
    self = u
  }
  @inlinable public var storedValue: Value { .url(self) }
}

extension Optional: AttributeValue where Wrapped: AttributeValue {
  public static var attributeType: AttributeType { Wrapped.attributeType }
  public static var isOptionalAttribute: Bool { true }
  public static var checksStoredValues: Bool { Wrapped.checksStoredValues }
  @inlinable public static var zero: Wrapped? { nil }
  @inlinable public init?(storedValue: Value) {
    if case .null = storedValue {
      self = .none
      return
    }
    guard let wrapped = Wrapped(storedValue: storedValue) else { return nil }
    self = .some(wrapped)
  }
  @inlinable public var storedValue: Value { self?.storedValue ?? .null }
}
