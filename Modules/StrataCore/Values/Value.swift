import Foundation

/// A single stored value: an attribute's content, a to-one relationship target, or a constant in a query.
///
/// Every backend reads and writes values in this form, so a store never needs the app's classes.
///
/// ```swift
/// let title: Value = "Heat"
/// let year: Value = .int(1995)
/// ```
public enum Value: Sendable, Hashable, Codable {
  /// No value (an optional attribute or to-one relationship that is unset).
  case null
  /// An integer of any width (`Int16`, `Int32`, `Int64` attributes).
  case int(Int64)
  /// A `Double` or `Float` attribute's value.
  case double(Double)
  /// An exact decimal number.
  case decimal(Decimal)
  /// A string.
  case string(String)
  /// A Boolean.
  case bool(Bool)
  /// A point in time.
  case date(Date)
  /// Bytes.
  case data(Data)
  /// A UUID.
  case uuid(UUID)
  /// A URL.
  case url(URL)
  /// A reference to another object, as held by a to-one relationship. Boxed (`indirect`) so that
  /// every other value fits in 24 bytes: attribute arrays of every object and snapshot stay half the size.
  indirect case objectID(ObjectID)
  /// An ordered collection of values: an `IN {…}` literal or the targets of a to-many key path.
  case array([Value])

  /// Whether this value is `.null`.
  public var isNull: Bool {
    if case .null = self { return true }
    return false
  }

  /// The value as a `Double` when it is numeric (`int`, `double`, `decimal`, `bool`), else `nil`.
  public var numericValue: Double? {
    switch self {
    case .int(let i): Double(i)
    case .double(let d): d
    case .decimal(let d): NSDecimalNumber(decimal: d).doubleValue
    case .bool(let b): b ? 1 : 0
    default: nil
    }
  }

  /// The value as a string when it is one, else `nil`.
  public var stringValue: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  /// A short name of the value's kind, used in error messages ("string", "integer", …).
  public var kindName: String {
    switch self {
    case .null: "nil"
    case .int: "integer"
    case .double: "floating-point number"
    case .decimal: "decimal"
    case .string: "string"
    case .bool: "boolean"
    case .date: "date"
    case .data: "data"
    case .uuid: "UUID"
    case .url: "URL"
    case .objectID: "object ID"
    case .array: "collection"
    }
  }
}

extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
  ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral
{
  public init(stringLiteral value: String) { self = .string(value) }
  public init(integerLiteral value: Int64) { self = .int(value) }
  public init(floatLiteral value: Double) { self = .double(value) }
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  public init(nilLiteral: ()) { self = .null }
  public init(arrayLiteral elements: Value...) { self = .array(elements) }
}

extension Value: CustomStringConvertible {
  /// The value written as an NSPredicate-style literal: strings quoted, dates as `CAST(…, "NSDate")`.
  public var description: String {
    switch self {
    case .null: return "nil"
    case .int(let i): return String(i)
    case .double(let d): return String(d)
    case .decimal(let d): return "\(d)"
    case .string(let s): return Value.quoted(s)
    case .bool(let b): return b ? "YES" : "NO"
    case .date(let d): return "CAST(\(d.timeIntervalSinceReferenceDate), \"NSDate\")"
    case .data(let d): return "<\(d.map { String(format: "%02x", $0) }.joined())>"
    case .uuid(let u): return Value.quoted(u.uuidString)
    case .url(let u): return Value.quoted(u.absoluteString)
    case .objectID(let id): return Value.quoted(id.uriRepresentation)
    case .array(let items): return "{" + items.map(\.description).joined(separator: ", ") + "}"
    }
  }

  static func quoted(_ s: String) -> String {
    var out = "\""
    for ch in s {
      switch ch {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\t": out += "\\t"
      default: out.append(ch)
      }
    }
    return out + "\""
  }
}

/// The type of an attribute, as declared in the model.
public enum AttributeType: String, Sendable, Hashable, Codable, CaseIterable {
  /// One case per Swift type an attribute can have: `Int16`, `Int32`, `Int64`, `Double`, `Float`, `Decimal`,
  /// `String`, `Bool`, `Date`, `Data`, `UUID` and `URL`.
  case int16, int32, int64, double, float, decimal, string, bool, date, data, uuid, url
  /// A `Codable` value (a struct, `[String]`, `[String: Int]`, a `Set`), stored as canonical JSON text in a
  /// `.string` value: keys sorted, a set's elements sorted, so equal values store equal bytes (see
  /// ``JSONText``). Predicates read it as a tree: `tags CONTAINS 'a'`, `address.city ==[c] 'paris'`.
  case json

  /// Whether values of this type are numbers that compare numerically.
  public var isNumeric: Bool {
    switch self {
    case .int16, .int32, .int64, .double, .float, .decimal: true
    default: false
    }
  }

  /// Whether values of this type are whole numbers.
  public var isInteger: Bool { self == .int16 || self == .int32 || self == .int64 }

  /// The value a non-optional attribute of this type holds before anything is assigned.
  public var zeroValue: Value {
    switch self {
    case .int16, .int32, .int64: .int(0)
    case .double, .float: .double(0)
    case .decimal: .decimal(0)
    case .string: .string("")
    case .json: .string("null")
    case .bool: .bool(false)
    case .date: .date(Date(timeIntervalSince1970: 0))
    case .data: .data(Data())
    case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
    case .url: .url(URL(fileURLWithPath: "/"))
    }
  }

  /// Whether `value` is already in this type's canonical representation (what ``coerce(_:)`` would
  /// return unchanged), so a store can keep it exactly as sent.
  ///
  /// Stores ask this of every value of every object they write; it is always inlined and reads the
  /// value's case first.
  @inlinable @inline(__always)
  public func isCanonical(_ value: Value) -> Bool {
    switch value {
    case .null: return true
    case .int(let i):
      switch self {
      case .int64: return true
      case .int32: return Int32(exactly: i) != nil
      case .int16: return Int16(exactly: i) != nil
      default: return false
      }
    case .double(let d): return self == .double || (self == .float && AttributeType.isFloat(d))
    case .string: return self == .string
    case .bool: return self == .bool
    case .date: return self == .date
    case .data: return self == .data
    case .uuid: return self == .uuid
    case .url: return self == .url
    case .decimal: return self == .decimal
    case .objectID, .array: return false
    }
  }

  /// Whether a `float` attribute can hold `d`: a finite value that does not round to infinity as a
  /// `Float` (it would read back as one), or an infinity or NaN, which a `Float` holds as such.
  ///
  /// ```swift
  /// AttributeType.floatCanHold(1e38)   // true
  /// AttributeType.floatCanHold(1e39)   // false
  /// ```
  @inlinable
  public static func floatCanHold(_ d: Double) -> Bool {
    !d.isFinite || Float(d).isFinite
  }

  /// Whether `d` is exactly a `Float`'s value (NaN included): the form a `float` attribute stores, so a
  /// value saved through a context, a batch insert or a batch update compares equal however it came.
  ///
  /// ```swift
  /// AttributeType.isFloat(0.5)                  // true
  /// AttributeType.isFloat(0.1)                  // false: a Float holds 0.100000001490116…
  /// AttributeType.isFloat(Double(Float(0.1)))   // true
  /// ```
  @inlinable
  public static func isFloat(_ d: Double) -> Bool {
    Double(Float(d)) == d || d.isNaN
  }

  /// Converts `value` into this type's canonical representation, or returns `nil` when it cannot.
  ///
  /// Integers widen to floating point for `double`/`float`; whole doubles narrow to integers when exact;
  /// integer ranges of `int16`/`int32` and the range of `float` are checked; a `float` takes the nearest
  /// `Float` (as assigning the number to a `Float` property would); strings convert to UUID and URL.
  /// `.null` passes through unchanged.
  public func coerce(_ value: Value) -> Value? {
    switch (self, value) {
    case (_, .null): return .null
    // `Optional.none`, not `nil`: Value is ExpressibleByNilLiteral, so a bare `nil` here would be `.null`.
    case (.int16, .int(let i)): return (Int64(Int16.min)...Int64(Int16.max)).contains(i) ? value : Optional.none
    case (.int32, .int(let i)): return (Int64(Int32.min)...Int64(Int32.max)).contains(i) ? value : Optional.none
    case (.int64, .int): return value
    case (.int16, .double(let d)), (.int32, .double(let d)), (.int64, .double(let d)):
      guard d.rounded() == d, let i = Int64(exactly: d) else { return nil }
      return coerce(.int(i))
    case (.int16, .bool(let b)), (.int32, .bool(let b)), (.int64, .bool(let b)): return .int(b ? 1 : 0)
    case (.double, .double): return value
    case (.float, .double(let d)): return AttributeType.floatCanHold(d) ? .double(Double(Float(d))) : Optional.none
    case (.double, .int(let i)): return .double(Double(i))
    case (.float, .int(let i)): return .double(Double(Float(i)))
    case (.double, .decimal): return value.numericValue.map(Value.double)
    case (.float, .decimal):
      guard let d = value.numericValue, AttributeType.floatCanHold(d) else { return nil }
      return .double(Double(Float(d)))
    case (.decimal, .decimal): return value
    case (.decimal, .int(let i)): return .decimal(Decimal(i))
    case (.decimal, .double(let d)): return Decimal.converting(d).map(Value.decimal)
    case (.decimal, .string(let s)): return Decimal(string: s).map(Value.decimal)
    case (.string, .string): return value
    case (.json, .string(let text)): return JSONText.canonical(text).map(Value.string)
    case (.json, _): return .string(JSONText.text(of: JSONText.node(from: value)))
    case (.bool, .bool): return value
    case (.bool, .int(let i)): return i == 0 || i == 1 ? .bool(i == 1) : Optional.none
    case (.date, .date): return value
    case (.data, .data): return value
    case (.uuid, .uuid): return value
    case (.uuid, .string(let s)): return UUID(uuidString: s).map(Value.uuid)
    case (.url, .url): return value
    case (.url, .string(let s)): return URL(string: s).map(Value.url)
    default: return nil
    }
  }
}

extension Decimal {
  /// `d` as a `Decimal`, or `nil` when no `Decimal` holds it: an infinity or NaN (on which
  /// `Decimal.init(_: Double)` traps) or a magnitude beyond `Decimal`'s range (about 1e-128 to 1e159 from a
  /// `Double`, where the conversion gives NaN). Every query path converts doubles through here.
  ///
  /// ```swift
  /// Decimal.converting(2.5)        // 2.5
  /// Decimal.converting(.infinity)  // nil
  /// Decimal.converting(1e200)      // nil
  /// ```
  package static func converting(_ d: Double) -> Decimal? {
    guard d.isFinite else { return nil }
    let decimal = Decimal(d)
    return decimal.isNaN ? nil : decimal
  }
}
