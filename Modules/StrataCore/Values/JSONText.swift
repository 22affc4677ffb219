import Foundation

/// The JSON a ``AttributeType/json`` attribute stores, read as a tree for predicates.
///
/// A Codable attribute is stored as JSON text: keys sorted, no insignificant white space, a set's
/// elements sorted by their own JSON text, so equal values store equal bytes and `sqlite3` shows them
/// plainly. Predicates read the text as a ``Node`` (docs/QUERY-SEMANTICS.md, "Codable attributes").
///
/// ```swift
/// let node = JSONText.parse(#"{"city":"Paris","zip":75001}"#)
/// node?.member("city")                        // .scalar(.string("Paris"))
/// JSONText.text(of: .array([.scalar(1)]))     // "[1]"
/// ```
public enum JSONText {
  /// One JSON value: a scalar (`.string`, `.int`, `.double`, `.bool` or `.null`), an array or an object.
  public indirect enum Node: Sendable, Hashable {
    /// A string, number, Boolean or `null`. A number without fraction or exponent that fits an `Int64`
    /// is an `.int`, any other number a `.double`.
    case scalar(Value)
    /// An array.
    case array([Node])
    /// An object.
    case object([String: Node])

    /// The value of `key` when this is an object holding it; `nil` (JSON `null`) otherwise.
    public func member(_ key: String) -> Node {
      if case .object(let members) = self { return members[key] ?? .scalar(.null) }
      return .scalar(.null)
    }

    /// The scalar value, or `nil` for an array or object.
    public var scalar: Value? {
      if case .scalar(let value) = self { return value }
      return nil
    }

    /// What `ANY`, `ALL` and `NONE` range over: an array's elements, nothing for `null`, the value
    /// itself otherwise.
    public var elements: [Node] {
      switch self {
      case .array(let items): items
      case .scalar(.null): []
      default: [self]
      }
    }
  }

  /// Parses JSON text (RFC 8259, any value at top level); `nil` when it is not JSON.
  public static func parse(_ text: String) -> Node? {
    var parser = Parser(bytes: Array(text.utf8))
    guard let node = parser.value(depth: 0) else { return nil }
    parser.skipSpace()
    return parser.position == parser.bytes.count ? node : nil
  }

  /// The canonical text of `node`: sorted keys, no white space.
  public static func text(of node: Node) -> String {
    var out = ""
    write(node, to: &out)
    return out
  }

  /// A value as a JSON node: arrays as arrays, dates as seconds since 2001 (as `JSONEncoder` writes them
  /// by default), UUIDs, URLs and object IDs as strings, data as Base64, decimals as numbers.
  public static func node(from value: Value) -> Node {
    switch value {
    case .null, .int, .string, .bool: return .scalar(value)
    case .double(let d): return d.isFinite ? .scalar(value) : .scalar(.null)
    case .decimal: return .scalar(value.numericValue.map(Value.double) ?? .null)
    case .date(let date): return node(from: .double(date.timeIntervalSinceReferenceDate))
    case .data(let data): return .scalar(.string(data.base64EncodedString()))
    case .uuid(let uuid): return .scalar(.string(uuid.uuidString))
    case .url(let url): return .scalar(.string(url.absoluteString))
    case .objectID(let id): return .scalar(.string(id.uriRepresentation))
    case .array(let items): return .array(items.map(node(from:)))
    }
  }

  /// A constant as predicates compare it with JSON values: what ``node(from:)`` makes of it, arrays
  /// element by element.
  public static func comparable(_ value: Value) -> Value {
    if case .array(let items) = value { return .array(items.map(comparable)) }
    return node(from: value).scalar ?? .null
  }

  /// Canonical JSON text for any JSON text: keys sorted, white space dropped; `nil` when not JSON.
  public static func canonical(_ text: String) -> String? {
    parse(text).map(Self.text(of:))
  }

  private static func write(_ node: Node, to out: inout String) {
    switch node {
    case .scalar(let value):
      switch value {
      case .string(let s): writeString(s, to: &out)
      case .int(let i): out += String(i)
      case .double(let d):
        if d.isFinite {
          out += d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)"
        } else {
          out += "null"
        }
      case .bool(let b): out += b ? "true" : "false"
      default: out += "null"
      }
    case .array(let items):
      out += "["
      for (i, item) in items.enumerated() {
        if i > 0 { out += "," }
        write(item, to: &out)
      }
      out += "]"
    case .object(let members):
      out += "{"
      for (i, key) in members.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        .enumerated()
      {
        if i > 0 { out += "," }
        writeString(key, to: &out)
        out += ":"
        write(members[key] ?? .scalar(.null), to: &out)
      }
      out += "}"
    }
  }

  private static func writeString(_ s: String, to out: inout String) {
    out += "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default:
        if scalar.value < 0x20 {
          out += String(format: "\\u%04x", scalar.value)
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    out += "\""
  }

  private struct Parser {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func skipSpace() {
      while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    mutating func value(depth: Int) -> Node? {
      guard depth < 512 else { return nil }
      skipSpace()
      guard position < bytes.count else { return nil }
      switch bytes[position] {
      case UInt8(ascii: "{"):
        position += 1
        var members: [String: Node] = [:]
        skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
          position += 1
          return .object(members)
        }
        while true {
          skipSpace()
          guard let key = string() else { return nil }
          skipSpace()
          guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
          position += 1
          guard let member = value(depth: depth + 1) else { return nil }
          members[key] = member
          skipSpace()
          guard position < bytes.count else { return nil }
          if bytes[position] == UInt8(ascii: ",") {
            position += 1
            continue
          }
          guard bytes[position] == UInt8(ascii: "}") else { return nil }
          position += 1
          return .object(members)
        }
      case UInt8(ascii: "["):
        position += 1
        var items: [Node] = []
        skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
          position += 1
          return .array(items)
        }
        while true {
          guard let item = value(depth: depth + 1) else { return nil }
          items.append(item)
          skipSpace()
          guard position < bytes.count else { return nil }
          if bytes[position] == UInt8(ascii: ",") {
            position += 1
            continue
          }
          guard bytes[position] == UInt8(ascii: "]") else { return nil }
          position += 1
          return .array(items)
        }
      case UInt8(ascii: "\""):
        return string().map { .scalar(.string($0)) }
      case UInt8(ascii: "t"): return literal("true", .bool(true))
      case UInt8(ascii: "f"): return literal("false", .bool(false))
      case UInt8(ascii: "n"): return literal("null", .null)
      default: return number()
      }
    }

    mutating func literal(_ word: String, _ value: Value) -> Node? {
      let word = Array(word.utf8)
      guard position + word.count <= bytes.count, Array(bytes[position..<position + word.count]) == word else {
        return nil
      }
      position += word.count
      return .scalar(value)
    }

    mutating func number() -> Node? {
      let start = position
      var isInteger = true
      if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
      let digitsStart = position
      while position < bytes.count {
        let byte = bytes[position]
        if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
          position += 1
        } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
          || ((byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")) && position > digitsStart)
        {
          isInteger = false
          position += 1
        } else {
          break
        }
      }
      guard position > digitsStart, let text = String(bytes: bytes[start..<position], encoding: .utf8) else {
        return nil
      }
      if isInteger, let i = Int64(text) { return .scalar(.int(i)) }
      guard let d = Double(text), d.isFinite else { return nil }
      return .scalar(.double(d))
    }

    mutating func string() -> String? {
      guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
      position += 1
      var scalars = String.UnicodeScalarView()
      var run: [UInt8] = []
      func flush() -> Bool {
        guard !run.isEmpty else { return true }
        guard let text = String(bytes: run, encoding: .utf8) else { return false }
        scalars.append(contentsOf: text.unicodeScalars)
        run.removeAll()
        return true
      }
      while position < bytes.count {
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""):
          guard flush() else { return nil }
          return String(scalars)
        case UInt8(ascii: "\\"):
          guard flush(), position < bytes.count else { return nil }
          let escape = bytes[position]
          position += 1
          switch escape {
          case UInt8(ascii: "\""): scalars.append("\"")
          case UInt8(ascii: "\\"): scalars.append("\\")
          case UInt8(ascii: "/"): scalars.append("/")
          case UInt8(ascii: "b"): scalars.append("\u{8}")
          case UInt8(ascii: "f"): scalars.append("\u{C}")
          case UInt8(ascii: "n"): scalars.append("\n")
          case UInt8(ascii: "r"): scalars.append("\r")
          case UInt8(ascii: "t"): scalars.append("\t")
          case UInt8(ascii: "u"):
            guard var code = hex4() else { return nil }
            if (0xD800..<0xDC00).contains(code) {
              guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                bytes[position + 1] == UInt8(ascii: "u")
              else { return nil }
              position += 2
              guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(code) else { return nil }
            scalars.append(scalar)
          default: return nil
          }
        default:
          guard byte >= 0x20 else { return nil }
          run.append(byte)
        }
      }
      return nil
    }

    mutating func hex4() -> UInt32? {
      guard position + 4 <= bytes.count,
        let text = String(bytes: bytes[position..<position + 4], encoding: .ascii),
        let code = UInt32(text, radix: 16)
      else { return nil }
      position += 4
      return code
    }
  }
}
