import Foundation
internal import StrataStoreKit

/// A `Codable` value type an `@Attribute` can hold, stored as canonical JSON (`AttributeType.json`).
///
/// Arrays, sets and string-keyed dictionaries of `Codable` elements conform already; a struct (or any
/// other `Codable` type) adopts the protocol and names the value a non-optional attribute starts with:
///
/// ```swift
/// struct Address: CodableAttribute, Equatable {
///   var street = ""
///   var city = ""
///   static let zero = Address()
/// }
///
/// final class Venue: ManagedObject {
///   @Attribute var name: String
///   @Attribute var categories: [String]
///   @Attribute var address: Address?
/// }
/// // Fetch with: "ANY categories ==[cd] 'cafe'", "'Bakery' IN categories", "categories.@count > 2",
/// //             "address.city ==[c] 'paris'"
/// ```
///
/// The JSON is `JSONEncoder`'s (dates as seconds since 2001, data as Base64) rewritten with keys sorted
/// and no white space; a `Set` attribute stores its elements sorted by their JSON, so equal values store
/// equal bytes (a set nested inside a struct keeps `JSONEncoder`'s order). `sqlite3` shows the text as is.
/// A stored value that no longer decodes (the type changed without a migration) makes a fetch throw
/// `.corrupted` naming the entity, object and key.
public protocol CodableAttribute: AttributeValue, Codable {}

extension CodableAttribute {
  public static var attributeType: AttributeType { .json }
  public static var checksStoredValues: Bool { true }
  public init?(storedValue: Value) {
    guard let decoded = CodableAttributeCoding.decode(Self.self, storedValue) else { return nil }
    self = decoded
  }
  public var storedValue: Value { CodableAttributeCoding.encode(self) }
}

/// The JSON coding of Codable attributes, shared by every conformance.
enum CodableAttributeCoding {
  /// The canonical JSON of `value`; for a value `JSONEncoder` refuses (a NaN or an infinity), empty text,
  /// which no store accepts as JSON: the save fails with `.validation` naming the entity and key.
  static func encode(_ value: some Encodable) -> Value {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(value), let text = String(data: data, encoding: .utf8),
      let canonical = JSONText.canonical(text)
    else { return .string("") }
    return .string(canonical)
  }

  /// A set's JSON: its elements' JSON texts, sorted by code point.
  static func encodeSorted<S: Sequence>(_ elements: S) -> Value where S.Element: Encodable {
    var texts: [String] = []
    for element in elements {
      guard case .string(let text) = encode(element), !text.isEmpty else { return .string("") }
      texts.append(text)
    }
    texts.sort { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    return .string("[" + texts.joined(separator: ",") + "]")
  }

  static func decode<T: Decodable>(_ type: T.Type, _ value: Value) -> T? {
    guard case .string(let text) = value else { return nil }
    return try? JSONDecoder().decode(T.self, from: Data(text.utf8))
  }
}

extension Array: AttributeValue, CodableAttribute where Element: Codable {
  /// An empty array.
  public static var zero: [Element] { [] }
}

extension Set: AttributeValue, CodableAttribute where Element: Codable {
  /// An empty set.
  public static var zero: Set<Element> { [] }
  /// The elements' JSON, sorted, so equal sets store equal bytes.
  public var storedValue: Value { CodableAttributeCoding.encodeSorted(self) }
}

extension Dictionary: AttributeValue, CodableAttribute where Key == String, Value: Codable {
  /// An empty dictionary.
  public static var zero: [String: Value] { [:] }
}

/// An enum an `@Attribute` can hold, stored as its raw value (a `String` or an integer): a text or
/// integer column, compared in predicates with its cases' raw values.
///
/// ```swift
/// enum Status: String, EnumAttribute, CaseIterable {
///   case planned, released, cancelled
/// }
///
/// final class Film: ManagedObject {
///   @Attribute var status: Status = .planned
/// }
/// // Fetch with: "status == %@" and Status.released (or "released"), "status IN %@" and [Status.planned, .released]
/// ```
///
/// A raw value read from a store that is no case of the enum makes a fetch throw `.corrupted` naming the
/// entity, object and key, unless the enum declares a fallback (``unknownCase``), which reads it instead.
/// A non-optional attribute without a default starts with the first of `allCases` when the enum is
/// `CaseIterable`, else with ``unknownCase``; one of them is needed.
public protocol EnumAttribute: AttributeValue, RawRepresentable, PredicateArgument where RawValue: AttributeValue {
  /// The case that stands for a raw value the enum does not know (a store written by a newer version);
  /// `nil` (the default) makes such a value an error.
  static var unknownCase: Self? { get }
}

extension EnumAttribute {
  public static var unknownCase: Self? { nil }
  public static var attributeType: AttributeType { RawValue.attributeType }
  public static var checksStoredValues: Bool { true }
  public init?(storedValue: Value) {
    guard let raw = RawValue(storedValue: storedValue) else { return nil }
    guard let value = Self(rawValue: raw) ?? Self.unknownCase else { return nil }
    self = value
  }
  public var storedValue: Value { rawValue.storedValue }
  public var predicateValue: Value { rawValue.storedValue }
}

extension EnumAttribute where Self: CaseIterable {
  /// The first case.
  public static var zero: Self {
    guard let first = allCases.first ?? unknownCase else { preconditionFailure("\(Self.self) has no cases") }
    return first
  }
}
