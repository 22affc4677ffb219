import Foundation
import StrataStoreKit

/// Keys that sort the way their values do, compared bytewise by liblmdb's default comparator.
enum KeyCoding {
  /// A primary key as 8 big-endian bytes with the sign bit flipped: byte order is numeric order.
  @inline(__always)
  static func bigEndian(_ key: Int64) -> UInt64 {
    (UInt64(bitPattern: key) ^ (1 << 63)).bigEndian
  }

  /// The primary key stored by ``bigEndian(_:)``.
  static func primaryKey(_ bytes: UnsafeRawBufferPointer) throws -> Int64 {
    guard bytes.count == 8 else {
      throw StoreError(.corrupted, "an LMDB key of \(bytes.count) bytes is not a primary key")
    }
    return Int64(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)) ^ (1 << 63))
  }

  static func primaryKeyBytes(_ key: Int64) -> [UInt8] {
    withUnsafeBytes(of: bigEndian(key)) { Array($0) }
  }
}

/// The key of a value in a secondary index: ordered like the evaluator orders values of one attribute
/// type (docs/QUERY-SEMANTICS.md), so equality and ranges become key lookups and range scans.
///
/// Each value is a marker byte (0 nil, 1 present) and a payload: integers as big-endian with the sign bit
/// flipped, doubles and dates in IEEE order (`-0` as `0`), booleans as 0/1, UUIDs as their 16 bytes,
/// strings, URLs, decimals and data as bytes with `00` escaped to `00 FF` and ended by `00 01`.
/// Decimals are keyed by their exact text: good for equality (uniqueness) only, so queries never range
/// over them. A key longer than liblmdb's limit is truncated, which keeps order but not exactness.
struct IndexKey {
  var bytes: [UInt8] = []
  /// Whether the key identifies the value exactly (not truncated, not NaN).
  var isExact = true

  init() {
    bytes.reserveCapacity(32)
  }

  init(_ value: Value) {
    append(value)
  }

  mutating func append(_ value: Value) {
    switch value {
    case .null, .array:
      bytes.append(0)
      return
    default:
      bytes.append(1)
    }
    switch value {
    case .int(let i): appendBigEndian(UInt64(bitPattern: i) ^ (1 << 63))
    case .double(let d): appendDouble(d)
    case .date(let d): appendDouble(d.timeIntervalSinceReferenceDate)
    case .bool(let b): bytes.append(b ? 1 : 0)
    case .uuid(let u): withUnsafeBytes(of: u.uuid) { bytes.append(contentsOf: $0) }
    case .string(let s): appendEscaped(s)
    case .url(let u): appendEscaped(u.absoluteString)
    case .decimal(let d): appendEscaped("\(d)")
    case .data(let d): d.withUnsafeBytes { appendEscaped($0) }
    case .objectID(let id): appendBigEndian(UInt64(bitPattern: id.primaryKey ?? 0) ^ (1 << 63))
    case .null, .array: break
    }
  }

  private mutating func appendBigEndian(_ x: UInt64) {
    withUnsafeBytes(of: x.bigEndian) { bytes.append(contentsOf: $0) }
  }

  private mutating func appendDouble(_ d: Double) {
    if d.isNaN { isExact = false }
    let bits = (d == 0 ? 0.0 : d).bitPattern
    appendBigEndian(bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63))
  }

  private mutating func appendEscaped(_ string: String) {
    string.withUTF8Contents { appendEscaped(UnsafeRawBufferPointer($0)) }
  }

  /// The bytes with each 0 written as 0 0xFF, then the terminator 0 1 (so that a value sorts before its
  /// extensions).
  private mutating func appendEscaped(_ source: UnsafeRawBufferPointer) {
    bytes.reserveCapacity(bytes.count + source.count + 2)
    if source.contains(0) {
      for byte in source {
        bytes.append(byte)
        if byte == 0 { bytes.append(0xFF) }
      }
    } else {
      bytes.append(contentsOf: source)
    }
    bytes.append(0)
    bytes.append(1)
  }

  /// The key cut to `maxSize` bytes (liblmdb's key limit); a cut key is no longer exact.
  func limited(to maxSize: Int) -> IndexKey {
    guard bytes.count >= maxSize else { return self }
    var cut = self
    cut.bytes.removeLast(bytes.count - maxSize)
    cut.isExact = false
    return cut
  }
}

/// The compact binary form of a stored object.
///
/// `[format 1][version: zigzag varint]` then one tagged value per stored (non-transient) attribute in
/// model order, then one per to-one relationship (`0` nil, or `1` and the target's primary key).
/// Value tags: 0 nil, 1 integer (zigzag varint), 2 double (8 bytes), 3 decimal (exact text), 4 string
/// (varint length + UTF-8), 5 false, 6 true, 7 date (seconds since 2001 as a double), 8 data,
/// 9 UUID (16 bytes), 10 URL (its absolute string).
enum RecordCodec {
  static let format: UInt8 = 1

  /// Encodes a record of `table` into `buffer` (replacing what it held).
  static func encode(
    version: Int64, attributes: AttributeValues, toOne: [ObjectID?], table: LMDBSchema.Table, into buffer: RecordBuffer
  ) {
    beginRecord(version: version, reserving: 11 * toOne.count, into: buffer)
    for index in table.storedPositions { append(attributes[index], to: buffer) }
    appendToOne(toOne, to: buffer)
  }

  /// The start of ``encode(version:attributes:toOne:table:into:)`` — the version and the attributes —
  /// when every value of `attributes` is stored as it is (each in its attribute's canonical form,
  /// transient ones nil): checked while encoding, so the usual insert makes no pass over its values of
  /// its own. Returns `false` at the first value that is not, leaving `buffer` partly written.
  /// ``appendToOne(_:to:)`` completes the record.
  static func encodeAttributesIfStoredAsSent(
    version: Int64, attributes: AttributeValues, table: LMDBSchema.Table, into buffer: RecordBuffer
  ) -> Bool {
    beginRecord(version: version, into: buffer)
    // Through buffers: each value is checked and encoded where it lies.
    let values = attributes
    return table.types.withUnsafeBufferPointer { types in
      table.isTransient.withUnsafeBufferPointer { isTransient in
        guard values.count == types.count, values.count == isTransient.count else { return false }
        for index in values.indices {
          if isTransient[index] {
            guard values.isNull(at: index) else { return false }
            continue
          }
          let value = values[index]
          guard types[index].isCanonical(value) else { return false }
          append(value, to: buffer)
        }
        return true
      }
    }
  }

  /// Empties `buffer` and writes a record's header — the format byte and the zigzag version — with room
  /// for `extra` more bytes: the one start of every encoded record, so the encoders cannot drift.
  @inline(__always)
  static func beginRecord(version: Int64, reserving extra: Int = 0, into buffer: RecordBuffer) {
    buffer.count = 0
    buffer.reserve(1 + 10 + extra)
    buffer.appendUnchecked(format)
    buffer.appendVarintUnchecked(zigzag(version))
  }

  /// Appends a record's to-one targets (the end of ``encode(version:attributes:toOne:table:into:)``).
  static func appendToOne(_ toOne: [ObjectID?], to buffer: RecordBuffer) {
    buffer.reserve(11 * toOne.count)
    for target in toOne {
      if let pk = target?.primaryKey {
        buffer.appendUnchecked(1)
        buffer.appendVarintUnchecked(zigzag(pk))
      } else {
        buffer.appendUnchecked(0)
      }
    }
  }

  @inline(__always)
  static func append(_ value: Value, to buffer: RecordBuffer) {
    buffer.reserve(17)
    switch value {
    case .null, .array, .objectID: buffer.appendUnchecked(0)
    case .int(let i):
      buffer.appendUnchecked(RecordField.integer.rawValue)
      buffer.appendVarintUnchecked(zigzag(i))
    case .double(let d): appendFixed(RecordField.double.rawValue, d.bitPattern, to: buffer)
    case .decimal(let d):
      "\(d)".withUTF8Contents { appendBytes(RecordField.decimal.rawValue, UnsafeRawBufferPointer($0), to: buffer) }
    case .string(let s):
      s.withUTF8Contents { appendBytes(RecordField.string.rawValue, UnsafeRawBufferPointer($0), to: buffer) }
    case .bool(let b): buffer.appendUnchecked(b ? RecordField.trueTag : RecordField.bool.rawValue)
    case .date(let d): appendFixed(RecordField.date.rawValue, d.timeIntervalSinceReferenceDate.bitPattern, to: buffer)
    case .data(let d): d.withUnsafeBytes { appendBytes(RecordField.data.rawValue, $0, to: buffer) }
    case .uuid(let u):
      buffer.appendUnchecked(RecordField.uuid.rawValue)
      withUnsafeBytes(of: u.uuid) { buffer.appendUnchecked($0) }
    case .url(let u):
      u.absoluteString.withUTF8Contents { appendBytes(RecordField.url.rawValue, UnsafeRawBufferPointer($0), to: buffer) }
    }
  }

  @inline(__always)
  static func zigzag(_ i: Int64) -> UInt64 { UInt64(bitPattern: (i << 1) ^ (i >> 63)) }

  @inline(__always)
  static func unzigzag(_ u: UInt64) -> Int64 { Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1) }

  @inline(__always)
  static func appendVarint(_ value: UInt64, to buffer: inout [UInt8]) {
    var v = value
    while v >= 0x80 {
      buffer.append(UInt8(truncatingIfNeeded: v) | 0x80)
      v >>= 7
    }
    buffer.append(UInt8(v))
  }

  @inline(__always)
  private static func appendFixed(_ tag: UInt8, _ bits: UInt64, to buffer: RecordBuffer) {
    buffer.appendUnchecked(tag)
    withUnsafeBytes(of: bits.littleEndian) { buffer.appendUnchecked($0) }
  }

  @inline(__always)
  private static func appendBytes(_ tag: UInt8, _ bytes: UnsafeRawBufferPointer, to buffer: RecordBuffer) {
    buffer.appendLengthPrefixed(tag, bytes)
  }

  /// Decodes a record of `entity` stored under `primaryKey`.
  /// - Throws: `.corrupted` naming the entity, key and attribute when the bytes are not such a record.
  static func decode(
    _ bytes: UnsafeRawBufferPointer, primaryKey: Int64, entity: EntityDescription, storeIdentifier: String
  ) throws -> Snapshot {
    try RecordDecoder(entity: entity, storeIdentifier: storeIdentifier).decode(bytes, primaryKey: primaryKey)
  }
}

/// Decodes the records of one entity: what every record needs (how to read each attribute, ID templates
/// for the object and its to-one targets) is worked out once, not per record.
struct RecordDecoder: Sendable {
  let entity: EntityDescription
  /// Per attribute, in model order: how its value is stored (transient attributes are not).
  private let fields: [RecordField]
  /// An ID of the entity in the store (key 0), from which every record's ID is made.
  let idTemplate: ObjectID
  private let targetTemplates: [ObjectID]

  init(entity: EntityDescription, storeIdentifier: String) {
    self.entity = entity
    fields = entity.attributes.map { $0.isTransient ? .transient : RecordField($0.type) }
    idTemplate = ObjectID(entityName: entity.name, storeIdentifier: storeIdentifier, primaryKey: 0)
    targetTemplates = entity.toOneRelationships.map {
      ObjectID(entityName: $0.destination, storeIdentifier: storeIdentifier, primaryKey: 0)
    }
  }

  /// The version in a stored record's header, the rest of the record left unread.
  /// - Throws: `.corrupted` as ``decode(_:primaryKey:)`` does for a damaged header.
  func version(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64) throws -> Int64 {
    var reader = RecordReader(bytes: bytes)
    do throws(RecordHeaderDamage) {
      return try reader.header()
    } catch {
      throw damaged(idTemplate.withPrimaryKey(primaryKey), error.description)
    }
  }

  func decode(_ bytes: UnsafeRawBufferPointer, primaryKey: Int64) throws -> Snapshot {
    var reader = RecordReader(bytes: bytes)
    let id = idTemplate.withPrimaryKey(primaryKey)
    func corrupted(_ what: String, key: String? = nil) -> StoreError { damaged(id, what, key: key) }
    let version: Int64
    do throws(RecordHeaderDamage) {
      version = try reader.header()
    } catch {
      throw corrupted(error.description)
    }
    // Reserved, not made uninitialized: `Array(unsafeUninitializedCapacity:)` looks the storage class's
    // generic metadata up in the runtime on every call.
    var sink = AttributeValues.Sink(layout: entity.valueLayout)
    for (index, field) in fields.enumerated() {
      guard reader.read(field, into: &sink, at: index) else {
        let attribute = entity.attributes[index]
        throw corrupted("\(attribute.name) is not a readable \(attribute.type.rawValue)", key: attribute.name)
      }
    }
    let attributes = sink.finish()
    var toOne: [ObjectID?] = []
    // Reserving room for none would still allocate.
    if !targetTemplates.isEmpty { toOne.reserveCapacity(targetTemplates.count) }
    for (index, template) in targetTemplates.enumerated() {
      switch reader.byte() {
      case 0: toOne.append(nil)
      case 1:
        guard let pk = reader.varint() else {
          let name = entity.toOneRelationships[index].name
          throw corrupted("\(name) is truncated", key: name)
        }
        toOne.append(template.withPrimaryKey(RecordCodec.unzigzag(pk)))
      default:
        let name = entity.toOneRelationships[index].name
        throw corrupted("\(name) is not a reference", key: name)
      }
    }
    guard reader.isAtEnd else { throw corrupted("\(reader.remaining) unexpected trailing bytes") }
    return Snapshot(objectID: id, version: version, attributes: attributes, toOne: toOne)
  }

  /// The error of a stored record that is not a record of the entity: `what` says what is wrong.
  private func damaged(_ id: ObjectID, _ what: String, key: String? = nil) -> StoreError {
    StoreError(.corrupted, "the stored record of \(id) is damaged (\(what))", entity: entity.name, key: key)
  }
}

/// What is wrong with a record's header (``RecordReader/header()``).
enum RecordHeaderDamage: Error, CustomStringConvertible {
  /// The first byte is not ``RecordCodec/format``.
  case unknownFormat
  /// The version's varint is missing or runs past the end.
  case noVersion

  /// How the decoder's `.corrupted` error names the damage.
  var description: String {
    switch self {
    case .unknownFormat: "unknown record format"
    case .noVersion: "no version"
    }
  }
}

/// How one attribute is stored in a record: the tag its values carry (``RecordCodec``; `false` for
/// booleans, whose `true` is tagged ``trueTag``), or not at all.
enum RecordField: UInt8 {
  case transient = 0
  case integer = 1
  case double = 2
  case decimal = 3
  case string = 4
  case bool = 5
  case date = 7
  case data = 8
  case uuid = 9
  case url = 10

  static let trueTag: UInt8 = 6

  init(_ type: AttributeType) {
    switch type {
    case .int16, .int32, .int64: self = .integer
    case .double, .float: self = .double
    case .decimal: self = .decimal
    case .string, .json: self = .string
    case .bool: self = .bool
    case .date: self = .date
    case .data: self = .data
    case .uuid: self = .uuid
    case .url: self = .url
    }
  }
}

/// Reads a record's bytes front to back; every read returns `nil` rather than running past the end.
struct RecordReader {
  // Every read is inlined into the record decoder's loop, which runs once per attribute of every object
  // a fetch reads; the rare kinds of value are read out of line.
  let bytes: UnsafeRawBufferPointer
  var offset = 0

  var isAtEnd: Bool { offset == bytes.count }
  var remaining: Int { bytes.count - offset }

  /// Reads a record's header — the format byte, then the zigzag version — and returns the version,
  /// leaving the reader at the record's first value: the one reader of the header every decoder starts
  /// with (``RecordCodec/beginRecord(version:reserving:into:)`` writes it).
  @inline(__always)
  mutating func header() throws(RecordHeaderDamage) -> Int64 {
    guard byte() == RecordCodec.format else { throw .unknownFormat }
    guard let version = varint() else { throw .noVersion }
    return RecordCodec.unzigzag(version)
  }

  @inline(__always)
  mutating func byte() -> UInt8? {
    guard offset < bytes.count else { return nil }
    defer { offset &+= 1 }
    return bytes.load(fromByteOffset: offset, as: UInt8.self)
  }

  @inline(__always)
  mutating func varint() -> UInt64? {
    // Most varints (lengths of short strings, small integers) are one byte, and most others two.
    if offset < bytes.count {
      let first = bytes.load(fromByteOffset: offset, as: UInt8.self)
      if first < 0x80 {
        offset &+= 1
        return UInt64(first)
      }
      if offset &+ 1 < bytes.count {
        let second = bytes.load(fromByteOffset: offset &+ 1, as: UInt8.self)
        if second < 0x80 {
          offset &+= 2
          return UInt64(first & 0x7F) | UInt64(second) << 7
        }
      }
    }
    return longVarint()
  }

  @inline(never)
  private mutating func longVarint() -> UInt64? {
    var result: UInt64 = 0
    var shift: UInt64 = 0
    while let b = byte() {
      guard shift < 64 else { return nil }
      result |= UInt64(b & 0x7F) << shift
      if b < 0x80 { return result }
      shift += 7
    }
    return nil
  }

  @inline(__always)
  mutating func fixed64() -> UInt64? {
    guard remaining >= 8 else { return nil }
    defer { offset &+= 8 }
    return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
  }

  @inline(__always)
  mutating func slice() -> UnsafeRawBufferPointer? {
    guard let length = varint(), length <= UInt64(remaining) else { return nil }
    let start = offset
    offset &+= Int(length)
    return UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
  }

  @inline(__always)
  mutating func string() -> String? {
    slice().map { String(decoding: $0, as: UTF8.self) }
  }

  /// The next value, which must be nil or a value of `field`'s type (a transient field reads nothing and is
  /// nil); `nil` when the bytes are no such value.
  @inline(__always)
  mutating func value(_ field: RecordField) -> Value? {
    if field == .transient { return .null }
    guard let tag = byte() else { return nil }
    if tag == 0 { return .null }
    // The field's raw value is its tag; `true` is the one value with a tag of its own.
    guard tag == field.rawValue || (field == .bool && tag == RecordField.trueTag) else { return nil }
    switch field {
    case .integer: return varint().map { .int(RecordCodec.unzigzag($0)) }
    case .double: return fixed64().map { .double(Double(bitPattern: $0)) }
    case .string: return string().map(Value.string)
    case .bool: return .bool(tag == RecordField.trueTag)
    case .date: return fixed64().map { .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: $0))) }
    default: return rareValue(field)
    }
  }

  /// Gives the next value (``value(_:)``) to `sink` as slot `index`; false when the bytes are no such value.
  @inline(__always)
  mutating func read(_ field: RecordField, into sink: inout AttributeValues.Sink, at index: Int) -> Bool {
    guard let value = value(field) else { return false }
    sink.initialize(value, at: index)
    return true
  }

  /// Appends the next value to `values` (``value(_:)``); false when the bytes are no such value.
  @inline(__always)
  mutating func appendValue(_ field: RecordField, to values: inout [Value]) -> Bool {
    guard let value = value(field) else { return false }
    values.append(value)
    return true
  }

  /// Moves past the next value, which must be nil or a value of `field`'s type, without decoding it
  /// (a transient field reads nothing); false when the bytes are no such value.
  @inline(__always)
  mutating func skipValue(_ field: RecordField) -> Bool {
    if field == .transient { return true }
    guard let tag = byte() else { return false }
    if tag == 0 { return true }
    guard tag == field.rawValue || (field == .bool && tag == RecordField.trueTag) else { return false }
    switch field {
    case .integer: return varint() != nil
    case .double, .date: return skip(8)
    case .string, .decimal, .data, .url: return slice() != nil
    case .uuid: return skip(16)
    case .bool, .transient: return true
    }
  }

  @inline(__always)
  private mutating func skip(_ count: Int) -> Bool {
    guard remaining >= count else { return false }
    offset &+= count
    return true
  }

  /// A decimal, data, UUID or URL value after its tag.
  @inline(never)
  private mutating func rareValue(_ field: RecordField) -> Value? {
    switch field {
    case .decimal: return string().flatMap { Decimal(string: $0) }.map(Value.decimal)
    case .data: return slice().map { .data(Data($0)) }
    case .uuid:
      guard remaining >= 16 else { return nil }
      var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
      withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 16])) }
      offset += 16
      return .uuid(UUID(uuid: uuid))
    case .url: return string().flatMap { URL(string: $0) }.map(Value.url)
    case .transient, .integer, .double, .string, .bool, .date: return nil
    }
  }
}

extension AttributeType {
  /// ``isCanonical(_:)`` of the value at `value`, without copying it: the check's `switch`, given the
  /// value, copied each string value (a retain and a release) for nothing.
  @inline(never)
  func isCanonical(at value: UnsafePointer<Value>) -> Bool {
    // The cases holding a reference are matched without binding their payload.
    if case .string = value.pointee { return self == .string }
    if case .data = value.pointee { return self == .data }
    if case .url = value.pointee { return self == .url }
    return isCanonical(value.pointee)
  }
}
