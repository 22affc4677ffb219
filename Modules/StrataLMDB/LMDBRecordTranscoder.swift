import Foundation
import StrataStoreKit

/// Rewrites stored records of an old entity into the layout of the entity a migration makes of it,
/// byte by byte (``RecordCodec``): no snapshot is decoded. The bytes of a value whose stored form does not
/// change (a renamed attribute, one widened within its kind: integer 16 → 64, float → double) are copied
/// as they are, runs of them at once; an added attribute's value is encoded once and copied into every
/// record; only a value whose kind changes (an integer made a double, a string or a decimal) is decoded,
/// converted through ``AttributeMapping/convert(_:)`` and encoded again. The version and the to-one
/// targets (primary keys) are copied.
struct RecordTranscoder {
  /// One part of the new record, in order.
  enum Piece {
    /// The old stored values in `positions`, as they are.
    case values(Range<Int>)
    /// The old stored value at `position`, as it is unless it is nil: then `nilBytes` (the encoded value
    /// nil becomes).
    case value(Int, nilBytes: [UInt8])
    /// The same encoded value in every record.
    case constant([UInt8])
    /// The old stored value at `position` (stored as `field`), converted by `mapping`.
    case converted(Int, field: RecordField, mapping: AttributeMapping)
    /// The old to-one targets in `positions`, as they are.
    case targets(Range<Int>)
  }

  /// How each stored value of the old entity is stored, in record order.
  let oldFields: [RecordField]
  let oldToOneCount: Int
  let pieces: [Piece]
  /// Whether every new record equals its old one (same values in the same places, same targets).
  let isIdentity: Bool
  /// When the new record is the old one followed by the same bytes in every record (values added after
  /// the old ones, of an entity without to-one relationships): those bytes. The old record is then
  /// copied whole, not taken apart (the decoder checks it when it is read).
  let appended: [UInt8]?
  /// Where each old value (then each old target) starts in the record being read, and where the last ends.
  private var offsets: [Int]
  private var scratch: [Value] = []

  /// The transcoder for the records of `old` into those of `mapping.entity`.
  init(from old: EntityDescription, to mapping: EntityMapping) {
    let oldStored = old.attributes.filter { !$0.isTransient }
    oldFields = oldStored.map { RecordField($0.type) }
    oldToOneCount = old.toOneRelationships.count
    let oldPositions = Dictionary(
      oldStored.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
    let mappings = Dictionary(mapping.attributes.map { ($0.attribute.name, $0) }, uniquingKeysWith: { first, _ in first })
    var pieces: [Piece] = []
    func add(_ piece: Piece) {
      // Consecutive copies merge into one run.
      switch (pieces.last, piece) {
      case (.values(let run)?, .values(let next)) where run.upperBound == next.lowerBound:
        pieces[pieces.count - 1] = .values(run.lowerBound..<next.upperBound)
      case (.targets(let run)?, .targets(let next)) where run.upperBound == next.lowerBound:
        pieces[pieces.count - 1] = .targets(run.lowerBound..<next.upperBound)
      default:
        pieces.append(piece)
      }
    }
    for attribute in mapping.entity.attributes where !attribute.isTransient {
      guard let attributeMapping = mappings[attribute.name] else {
        add(.constant(Self.encoded(.null)))
        continue
      }
      guard let source = attributeMapping.source, let position = oldPositions[source] else {
        add(.constant(Self.encoded(attributeMapping.convert(.null))))
        continue
      }
      let field = oldFields[position]
      // Widening within a kind keeps every value (and its bytes). Nil becomes a default where the attribute
      // was optional and is made required; an attribute required before holds no nil (a store given one
      // against its model keeps it: nothing about the attribute changes).
      // A string that becomes a Codable attribute is the same kind of field but a new value (`"x"` → `["x"]`).
      if field == RecordField(attribute.type) && (oldStored[position].type == .json) == (attribute.type == .json) {
        let nilValue = attributeMapping.convert(.null)
        let keepsNil = nilValue.isNull || !oldStored[position].isOptional
        add(keepsNil ? .values(position..<position + 1) : .value(position, nilBytes: Self.encoded(nilValue)))
      } else {
        add(.converted(position, field: field, mapping: attributeMapping))
      }
    }
    for relationship in mapping.entity.toOneRelationships {
      if let source = mapping.relationshipSources[relationship.name], let position = old.toOneIndex(named: source) {
        add(.targets(position..<position + 1))
      } else {
        add(.constant([0]))
      }
    }
    var identity: [Piece] = []
    if !oldFields.isEmpty { identity.append(.values(0..<oldFields.count)) }
    if oldToOneCount > 0 { identity.append(.targets(0..<oldToOneCount)) }
    isIdentity = Self.sameRuns(pieces, identity)
    appended = Self.appendedBytes(pieces, oldFieldCount: oldFields.count, oldToOneCount: oldToOneCount)
    self.pieces = pieces
    offsets = [Int](repeating: 0, count: oldFields.count + oldToOneCount + 1)
  }

  private static func sameRuns(_ a: [Piece], _ b: [Piece]) -> Bool {
    guard a.count == b.count else { return false }
    for (x, y) in zip(a, b) {
      switch (x, y) {
      case (.values(let r), .values(let s)) where r == s: continue
      case (.targets(let r), .targets(let s)) where r == s: continue
      default: return false
      }
    }
    return true
  }

  /// The bytes every new record adds after the whole old one, when that is all the pieces do.
  private static func appendedBytes(_ pieces: [Piece], oldFieldCount: Int, oldToOneCount: Int) -> [UInt8]? {
    guard oldToOneCount == 0 else { return nil }
    var rest = pieces[...]
    if oldFieldCount > 0 {
      guard case .values(let run)? = rest.first, run == 0..<oldFieldCount else { return nil }
      rest = rest.dropFirst()
    }
    var bytes: [UInt8] = []
    for piece in rest {
      guard case .constant(let encoded) = piece else { return nil }
      bytes += encoded
    }
    return bytes
  }

  /// `value` as a record stores it.
  private static func encoded(_ value: Value) -> [UInt8] {
    let buffer = RecordBuffer(capacity: 32)
    RecordCodec.append(value, to: buffer)
    return buffer.withUnsafeBytes { Array($0) }
  }

  /// Writes the new record for the old record `bytes` into `buffer` (replacing what it held).
  /// - Returns: false when `bytes` is not a record of the old entity.
  mutating func transcode(_ bytes: UnsafeRawBufferPointer, into buffer: RecordBuffer) -> Bool {
    if let appended {
      guard bytes.first == RecordCodec.format else { return false }
      buffer.count = 0
      buffer.reserve(bytes.count + appended.count)
      buffer.appendUnchecked(bytes)
      appended.withUnsafeBytes { buffer.appendUnchecked($0) }
      return true
    }
    var reader = RecordReader(bytes: bytes)
    guard (try? reader.header()) != nil else { return false }
    let header = reader.offset
    let fieldCount = oldFields.count
    let parsed = offsets.withUnsafeMutableBufferPointer { offsets -> Bool in
      oldFields.withUnsafeBufferPointer { fields in
        for i in 0..<fieldCount {
          offsets[i] = reader.offset
          guard reader.skipValue(fields[i]) else { return false }
        }
        for i in 0..<oldToOneCount {
          offsets[fieldCount + i] = reader.offset
          switch reader.byte() {
          case 0: continue
          case 1: guard reader.varint() != nil else { return false }
          default: return false
          }
        }
        offsets[fieldCount + oldToOneCount] = reader.offset
        return reader.isAtEnd
      }
    }
    guard parsed else { return false }
    buffer.count = 0
    buffer.reserve(bytes.count + 16)
    buffer.appendUnchecked(UnsafeRawBufferPointer(rebasing: bytes[0..<header]))
    for piece in pieces {
      switch piece {
      case .values(let positions):
        copy(bytes, from: positions.lowerBound, to: positions.upperBound, into: buffer)
      case .targets(let positions):
        copy(bytes, from: fieldCount + positions.lowerBound, to: fieldCount + positions.upperBound, into: buffer)
      case .value(let position, let nilBytes):
        if bytes[offsets[position]] == 0 {
          append(nilBytes, to: buffer)
        } else {
          copy(bytes, from: position, to: position + 1, into: buffer)
        }
      case .constant(let encoded):
        append(encoded, to: buffer)
      case .converted(let position, let field, let mapping):
        var valueReader = RecordReader(bytes: bytes, offset: offsets[position])
        scratch.removeAll(keepingCapacity: true)
        guard valueReader.appendValue(field, to: &scratch), let value = scratch.first else { return false }
        RecordCodec.append(mapping.convert(value), to: buffer)
      }
    }
    return true
  }

  /// Copies the bytes of the old values (or targets) from `start` up to `end` (offset indices).
  @inline(__always)
  private func copy(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, into buffer: RecordBuffer) {
    let range = offsets[start]..<offsets[end]
    buffer.reserve(range.count)
    buffer.appendUnchecked(UnsafeRawBufferPointer(rebasing: bytes[range]))
  }

  @inline(__always)
  private func append(_ encoded: [UInt8], to buffer: RecordBuffer) {
    buffer.reserve(encoded.count)
    encoded.withUnsafeBytes { buffer.appendUnchecked($0) }
  }
}
