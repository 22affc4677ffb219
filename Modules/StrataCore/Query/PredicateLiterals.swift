import Foundation

/// The literal forms shared by the format parser and the canonical printer: quoting, numbers, `CAST`
/// conversions, and the table of functions the format language knows.
enum FormatLiterals {
  struct Function {
    /// The canonical name, as stored in ``QueryExpression/function(_:_:)``.
    var name: String
    var arity: Int
    /// Takes one collection; several arguments are gathered into one (`sum:(a, b)` = `sum:({a, b})`).
    var takesCollection: Bool
  }

  /// Known functions by lowercased name.
  static let functions: [String: Function] = {
    var table: [String: Function] = [:]
    func add(_ names: [String], arity: Int, collection: Bool = false) {
      for name in names { table[name.lowercased()] = Function(name: name, arity: arity, takesCollection: collection) }
    }
    add(["now", "random"], arity: 0)
    add(
      [
        "lowercase:", "uppercase:", "canonical:", "abs:", "sqrt:", "log:", "ln:", "exp:", "floor:", "ceiling:",
        "trunc:",
      ],
      arity: 1)
    add(["sum:", "count:", "min:", "max:", "average:", "median:", "mode:", "stddev:"], arity: 1, collection: true)
    add(["add:to:", "from:subtract:", "multiply:by:", "divide:by:", "modulus:by:", "raise:toPower:"], arity: 2)
    return table
  }()

  // MARK: Printing

  /// `s` in double quotes, with `"`, `\` and control characters escaped.
  static func quoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\t": out += "\\t"
      case "\r": out += "\\r"
      default:
        let isControl =
          scalar.isASCII
          ? scalar.value < 0x20 || scalar.value == 0x7F
          : scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
        if isControl {
          let hex = String(scalar.value, radix: 16, uppercase: true)
          out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out + "\""
  }

  /// A double that reads back as the same double: `1.0`, `-2.5e-07`, `CAST("inf", "NSNumber")`.
  static func number(_ d: Double) -> String {
    if d.isNaN { return "CAST(\"nan\", \"NSNumber\")" }
    if d.isInfinite { return d < 0 ? "CAST(\"-inf\", \"NSNumber\")" : "CAST(\"inf\", \"NSNumber\")" }
    return d.description
  }

  static func hex(_ data: Data) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(data.count * 2)
    for byte in data {
      bytes.append(digits[Int(byte >> 4)])
      bytes.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  // MARK: CAST

  struct CastError: Error {
    var message: String
    /// Whether the type name (rather than the value) is at fault.
    var isTypeError: Bool
  }

  private static let castTypes: [String: String] = [
    "nsdate": "NSDate", "date": "NSDate", "nsnumber": "NSNumber", "number": "NSNumber",
    "nsdecimalnumber": "NSDecimalNumber", "decimal": "NSDecimalNumber", "nsstring": "NSString",
    "string": "NSString", "uuid": "UUID", "nsuuid": "UUID", "nsurl": "NSURL", "url": "NSURL",
    "nsdata": "NSData", "data": "NSData", "objectid": "ObjectID",
  ]

  /// `CAST(value, "type")`: a constant converted now, or `castObject:toType:` for anything else.
  static func cast(_ expression: QueryExpression, to typeName: String) throws(CastError) -> QueryExpression {
    guard let type = castTypes[typeName.lowercased()] else {
      throw CastError(
        message: "unknown CAST type \(quoted(typeName)) (expected NSDate, NSNumber, NSDecimalNumber, NSString, "
          + "UUID, NSURL, NSData or ObjectID)", isTypeError: true)
    }
    guard case .constant(let value) = expression else {
      return .function("castObject:toType:", [expression, .constant(.string(type))])
    }
    if value.isNull { return .constant(.null) }
    guard let converted = convert(value, to: type) else {
      let shown = value.formatLiteral
      throw CastError(
        message: "cannot CAST \(value.kindName) \(shown.count > 60 ? shown.prefix(60) + "…" : shown) to \(type)",
        isTypeError: false)
    }
    return .constant(converted)
  }

  private static func convert(_ value: Value, to type: String) -> Value? {
    switch (type, value) {
    case ("NSDate", .date): return value
    case ("NSDate", .string(let s)):
      if let seconds = Double(s) { return .date(Date(timeIntervalSinceReferenceDate: seconds)) }
      return iso8601Date(s).map { .date($0) }
    case ("NSDate", _): return value.numericValue.map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
    case ("NSNumber", .int), ("NSNumber", .double), ("NSNumber", .decimal): return value
    case ("NSNumber", .bool(let b)): return .int(b ? 1 : 0)
    case ("NSNumber", .date(let d)): return .double(d.timeIntervalSinceReferenceDate)
    case ("NSNumber", .string(let s)):
      if let i = Int64(s) { return .int(i) }
      return isDecimalText(s) || ["inf", "-inf", "+inf", "nan"].contains(s.lowercased())
        ? Double(s).map(Value.double) : nil
    case ("NSDecimalNumber", .decimal): return value
    case ("NSDecimalNumber", .int(let i)): return .decimal(Decimal(i))
    case ("NSDecimalNumber", .double(let d)): return Decimal.converting(d).map(Value.decimal)
    case ("NSDecimalNumber", .string(let s)): return isDecimalText(s) ? Decimal(string: s).map(Value.decimal) : nil
    case ("NSString", .string): return value
    case ("NSString", .int(let i)): return .string(String(i))
    case ("NSString", .double(let d)): return .string(d.description)
    case ("NSString", .decimal(let d)): return .string(d.description)
    case ("NSString", .uuid(let u)): return .string(u.uuidString)
    case ("NSString", .url(let u)): return .string(u.absoluteString)
    case ("UUID", .uuid): return value
    case ("UUID", .string(let s)): return UUID(uuidString: s).map(Value.uuid)
    case ("NSURL", .url): return value
    case ("NSURL", .string(let s)): return URL(string: s).map(Value.url)
    case ("NSData", .data): return value
    case ("NSData", .string(let s)): return data(fromHex: s).map(Value.data)
    case ("ObjectID", .objectID): return value
    case ("ObjectID", .string(let s)): return objectID(uri: s).map(Value.objectID)
    default: return nil
    }
  }

  /// `[+-]digits[.digits][e[+-]digits]`, the whole string.
  private static func isDecimalText(_ s: String) -> Bool {
    var scalars = Substring(s).unicodeScalars[...]
    func digits() -> Int {
      var n = 0
      while let c = scalars.first, PredicateCharacters.isDigit(c) {
        scalars.removeFirst()
        n += 1
      }
      return n
    }
    if scalars.first == "-" || scalars.first == "+" { scalars.removeFirst() }
    var count = digits()
    if scalars.first == "." {
      scalars.removeFirst()
      count += digits()
    }
    guard count > 0 else { return false }
    if scalars.first == "e" || scalars.first == "E" {
      scalars.removeFirst()
      if scalars.first == "-" || scalars.first == "+" { scalars.removeFirst() }
      guard digits() > 0 else { return false }
    }
    return scalars.isEmpty
  }

  static func data(fromHex s: String) -> Data? {
    let utf8 = Array(s.utf8)
    guard utf8.count.isMultiple(of: 2) else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
      switch c {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
      default: nil
      }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(utf8.count / 2)
    var i = 0
    while i < utf8.count {
      guard let high = nibble(utf8[i]), let low = nibble(utf8[i + 1]) else { return nil }
      bytes.append(high << 4 | low)
      i += 2
    }
    return Data(bytes)
  }

  /// Parses `strata://STORE/Entity/pKEY` and `strata:///Entity/tN` (temporary IDs too, so that every
  /// object ID constant round-trips through its format string).
  static func objectID(uri: String) -> ObjectID? {
    let prefix = "strata://"
    guard uri.hasPrefix(prefix) else { return nil }
    var parts = uri.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count >= 3, let key = parts.popLast(), let entity = parts.popLast(), !entity.isEmpty else {
      return nil
    }
    let store = parts.joined(separator: "/")
    if key.first == "p", let pk = Int64(key.dropFirst()) {
      return ObjectID(entityName: String(entity), storeIdentifier: store, primaryKey: pk)
    }
    guard key.first == "t", store.isEmpty, let n = UInt64(key.dropFirst()) else { return nil }
    // ObjectID has no public initializer for a temporary ID; its Codable form is public.
    let json: [String: Any] = [
      "entityName": String(entity), "storeIdentifier": "", "key": ["temporary": ["_0": n]],
    ]
    guard let data = try? JSONSerialization.data(withJSONObject: json) else { return nil }
    return try? JSONDecoder().decode(ObjectID.self, from: data)
  }
}

/// A date written in ISO 8601 as people type it: `2024-01-01`, `2024-01-01T12:30:00Z`, with fractional
/// seconds or a `+02:00` offset; a day alone is midnight UTC. `nil` for anything else.
func iso8601Date(_ text: String) -> Date? {
  let full = ISO8601DateFormatter()
  if let date = full.date(from: text) { return date }
  full.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
  if let date = full.date(from: text) { return date }
  let day = ISO8601DateFormatter()
  day.formatOptions = [.withFullDate]
  day.timeZone = TimeZone(identifier: "UTC")
  return text.count == 10 ? day.date(from: text) : nil
}
