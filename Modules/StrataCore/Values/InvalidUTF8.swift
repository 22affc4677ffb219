import Foundation

/// Where bytes that should be UTF-8 text stop being it: the first byte of the first ill-formed sequence,
/// so that an import can refuse a file in one line naming the place instead of storing replacement
/// characters (or failing somewhere deep in a JSON parser).
///
/// ```swift
/// if let bad = InvalidUTF8.first(in: data) {
///   print("seed.json is not UTF-8 text: \(bad)")   // … invalid byte 0xFF at offset 17 (line 2)
/// }
/// ```
public struct InvalidUTF8: Sendable, Hashable, CustomStringConvertible {
  /// The offset of the first byte of the ill-formed sequence, from 0.
  public var offset: Int
  /// The line it is on, from 1 (lines end at each `\n`).
  public var line: Int
  /// The byte at ``offset``.
  public var byte: UInt8

  /// The place `offset` on `line`, where the sequence starts with `byte`.
  public init(offset: Int, line: Int, byte: UInt8) {
    self.offset = offset
    self.line = line
    self.byte = byte
  }

  /// The place in words: `invalid byte 0xFF at offset 17 (line 2)`.
  public var description: String {
    "invalid byte 0x\(String(byte, radix: 16, uppercase: true)) at offset \(offset) (line \(line))"
  }

  /// The first ill-formed sequence of `data` read as UTF-8 (a stray continuation byte, a truncated or
  /// overlong sequence, a surrogate, a code point past U+10FFFF), or `nil` when all of it is UTF-8.
  public static func first(in data: Data) -> InvalidUTF8? {
    if String(validating: data, as: UTF8.self) != nil { return nil }
    return data.withUnsafeBytes { bytes -> InvalidUTF8? in
      var index = 0
      var line = 1
      while index < bytes.count {
        let lead = bytes[index]
        if lead < 0x80 {
          if lead == 0x0A { line += 1 }
          index += 1
          continue
        }
        // The length of the sequence and the range its second byte must fall in (RFC 3629, table 3-7
        // of the Unicode standard): this excludes overlong forms, surrogates and code points past U+10FFFF.
        let (length, second): (Int, ClosedRange<UInt8>) =
          switch lead {
          case 0xC2...0xDF: (2, 0x80...0xBF)
          case 0xE0: (3, 0xA0...0xBF)
          case 0xE1...0xEC, 0xEE...0xEF: (3, 0x80...0xBF)
          case 0xED: (3, 0x80...0x9F)
          case 0xF0: (4, 0x90...0xBF)
          case 0xF1...0xF3: (4, 0x80...0xBF)
          case 0xF4: (4, 0x80...0x8F)
          default: (0, 0x80...0xBF)
          }
        guard length > 0, index + length <= bytes.count, second.contains(bytes[index + 1]),
          (2..<length).allSatisfy({ (0x80...0xBF).contains(bytes[index + $0]) })
        else { return InvalidUTF8(offset: index, line: line, byte: lead) }
        index += length
      }
      return nil
    }
  }
}
