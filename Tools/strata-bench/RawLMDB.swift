import CLMDB
import Foundation

/// The raw LMDB baselines: the rows as compact records (lengths as varints, numbers fixed-width) under
/// 8-byte big-endian keys, in one environment opened with the store's flags (NOTLS, NOMETASYNC).
final class RawLMDB {
  let env: OpaquePointer
  var dbi: MDB_dbi = 0

  init(path: URL) throws {
    try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
    var env: OpaquePointer?
    try Self.check(mdb_env_create(&env), "mdb_env_create")
    guard let env else { throw BenchError.lmdb("mdb_env_create") }
    self.env = env
    try Self.check(mdb_env_set_maxdbs(env, 4), "mdb_env_set_maxdbs")
    try Self.check(mdb_env_set_mapsize(env, 1 << 30), "mdb_env_set_mapsize")
    try Self.check(mdb_env_open(env, path.path, UInt32(MDB_NOTLS | MDB_NOMETASYNC), 0o644), "mdb_env_open")
  }

  deinit { mdb_env_close(env) }

  static func check(_ rc: Int32, _ what: String) throws {
    guard rc == MDB_SUCCESS else { throw BenchError.lmdb("\(what): \(String(cString: mdb_strerror(rc)))") }
  }

  func transaction(readOnly: Bool, _ body: (OpaquePointer) throws -> Void) throws {
    var txn: OpaquePointer?
    try Self.check(mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn), "mdb_txn_begin")
    guard let txn else { throw BenchError.lmdb("mdb_txn_begin") }
    if !readOnly { try Self.check(mdb_dbi_open(txn, "BenchItem", UInt32(MDB_CREATE), &dbi), "mdb_dbi_open") }
    do {
      try body(txn)
    } catch {
      mdb_txn_abort(txn)
      throw error
    }
    try Self.check(mdb_txn_commit(txn), "mdb_txn_commit")
  }

  /// Walks every BenchItem record of `txn` with one cursor, in key order: `body` gets each key and value
  /// until it returns false.
  @inline(__always)
  static func forEachRecord(
    in txn: OpaquePointer, _ body: (_ key: MDB_val, _ value: UnsafeRawBufferPointer) throws -> Bool
  ) throws {
    var dbi: MDB_dbi = 0
    try check(mdb_dbi_open(txn, "BenchItem", 0, &dbi), "mdb_dbi_open")
    var cursor: OpaquePointer?
    try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
    defer { mdb_cursor_close(cursor) }
    var key = MDB_val()
    var value = MDB_val()
    var op = MDB_FIRST
    while mdb_cursor_get(cursor, &key, &value, op) == MDB_SUCCESS {
      op = MDB_NEXT
      guard try body(key, UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)) else { return }
    }
  }
}

private func appendVarint(_ value: Int, to buffer: inout [UInt8]) {
  var v = UInt(bitPattern: value)
  while v >= 0x80 {
    buffer.append(UInt8(truncatingIfNeeded: v) | 0x80)
    v >>= 7
  }
  buffer.append(UInt8(v))
}

private func appendFixed(_ value: UInt64, to buffer: inout [UInt8]) {
  withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
}

private func appendString(_ string: String, to buffer: inout [UInt8]) {
  var string = string
  string.withUTF8 { bytes in
    appendVarint(bytes.count, to: &buffer)
    buffer.append(contentsOf: bytes)
  }
}

/// `row` as the raw loops store it.
private func encode(_ row: Row, into buffer: inout [UInt8]) {
  buffer.removeAll(keepingCapacity: true)
  appendString(row.name, to: &buffer)
  appendString(row.category, to: &buffer)
  appendFixed(UInt64(bitPattern: row.count), to: &buffer)
  appendFixed(row.amount.bitPattern, to: &buffer)
  buffer.append(row.flag ? 1 : 0)
  appendFixed(row.created.timeIntervalSinceReferenceDate.bitPattern, to: &buffer)
  appendFixed(UInt64(UInt32(bitPattern: row.code)), to: &buffer)
  appendFixed(Double(row.score).bitPattern, to: &buffer)
  if let note = row.note {
    buffer.append(1)
    appendString(note, to: &buffer)
  } else {
    buffer.append(0)
  }
}

func rawLMDBInsert(_ rows: [Row], at url: URL) throws -> Double {
  let raw = try RawLMDB(path: url)
  return try milliseconds {
    try raw.transaction(readOnly: false) { txn in
      var buffer: [UInt8] = []
      for (i, row) in rows.enumerated() {
        encode(row, into: &buffer)
        var key = UInt64(i + 1).bigEndian
        try withUnsafeMutableBytes(of: &key) { k in
          try buffer.withUnsafeMutableBytes { v in
            var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
            var vv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
            try RawLMDB.check(mdb_put(txn, raw.dbi, &kv, &vv, UInt32(MDB_APPEND)), "mdb_put")
          }
        }
      }
    }
  }
}

/// Reads fields written by ``rawLMDBInsert(_:at:)`` back into rows with one cursor.
private struct RawReader {
  let bytes: UnsafeRawBufferPointer
  var offset = 0

  mutating func varint() -> Int {
    var result = 0
    var shift = 0
    while offset < bytes.count {
      let b = bytes[offset]
      offset += 1
      result |= Int(b & 0x7F) << shift
      if b < 0x80 { break }
      shift += 7
    }
    return result
  }

  mutating func fixed() -> UInt64 {
    defer { offset += 8 }
    return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
  }

  mutating func byte() -> UInt8 {
    defer { offset += 1 }
    return bytes[offset]
  }

  mutating func string() -> String {
    let length = varint()
    defer { offset += length }
    return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
  }
}

/// A record written by ``rawLMDBInsert(_:at:)`` decoded back into a row.
func decodeRawRecord(_ bytes: UnsafeRawBufferPointer) -> Row {
  var reader = RawReader(bytes: bytes)
  let name = reader.string()
  let category = reader.string()
  let count = Int64(bitPattern: reader.fixed())
  let amount = Double(bitPattern: reader.fixed())
  let flag = reader.byte() != 0
  let created = Date(timeIntervalSinceReferenceDate: Double(bitPattern: reader.fixed()))
  let code = Int32(bitPattern: UInt32(truncatingIfNeeded: reader.fixed()))
  let score = Float(Double(bitPattern: reader.fixed()))
  let note = reader.byte() == 1 ? reader.string() : nil
  return Row(
    name: name, category: category, count: count, amount: amount, flag: flag, created: created, code: code, score: score,
    note: note)
}

/// A row as ``rawLMDBInsert(_:at:)`` stores it.
func encodeRawRecord(_ row: Row, into buffer: inout [UInt8]) { encode(row, into: &buffer) }

/// Reads every record of the raw environment with one cursor, decoding every field into rows; keeps the
/// rows past the timing with `keeps` (as a fetch does), else only sums them (as a batched walk does).
func rawLMDBScan(expecting count: Int, at url: URL, keeps: Bool = true) throws -> Double {
  var rows: [Row] = []
  var scanned = 0
  var checksum = 0
  let time = try rawLMDBForEachRow(at: url) { row in
    if keeps { rows.append(row) } else { checksum &+= row.checksum }
    scanned += 1
  }
  guard scanned == count else { throw BenchError.lmdb("scanned \(scanned) rows, expected \(count)") }
  guard keeps || checksum != 0 else { throw BenchError.lmdb("read nothing") }
  return time
}

/// Counts the rows whose category is "category-3" and amount over 1000 — strata-bench's `count_where`
/// predicate — with a cursor scan decoding every record, as a store without an index on them must.
func rawLMDBCountWhere(expecting count: Int, at url: URL) throws -> Double {
  var counted = 0
  let time = try rawLMDBForEachRow(at: url) { row in
    if row.category == "category-3" && row.amount > 1000 { counted += 1 }
  }
  guard counted == count else { throw BenchError.lmdb("counted \(counted) rows, expected \(count)") }
  return time
}

/// Times a cursor scan of every BenchItem record in one read transaction, each decoded into a `Row`.
private func rawLMDBForEachRow(at url: URL, _ body: (Row) -> Void) throws -> Double {
  let raw = try RawLMDB(path: url)
  return try milliseconds {
    try raw.transaction(readOnly: true) { txn in
      try RawLMDB.forEachRecord(in: txn) { _, value in
        body(decodeRawRecord(value))
        return true
      }
    }
  }
}

/// Reads the records at `keys` (1-based, as ``rawLMDBInsert(_:at:)`` numbers them) one `mdb_get` each in
/// one read transaction, decoding every field; keeps the rows.
func rawLMDBGets(_ keys: [Int], at url: URL) throws -> Double {
  let raw = try RawLMDB(path: url)
  var rows: [Row] = []
  rows.reserveCapacity(keys.count)
  let time = try milliseconds {
    try raw.transaction(readOnly: true) { txn in
      var dbi: MDB_dbi = 0
      try RawLMDB.check(mdb_dbi_open(txn, "BenchItem", 0, &dbi), "mdb_dbi_open")
      for key in keys {
        var k = UInt64(key).bigEndian
        try withUnsafeMutableBytes(of: &k) { bytes in
          var kv = MDB_val(mv_size: bytes.count, mv_data: bytes.baseAddress)
          var value = MDB_val()
          try RawLMDB.check(mdb_get(txn, dbi, &kv, &value), "mdb_get")
          rows.append(decodeRawRecord(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)))
        }
      }
    }
  }
  guard rows.count == keys.count else { throw BenchError.lmdb("read \(rows.count) rows, expected \(keys.count)") }
  return time
}

/// The raw baseline of a batch upsert: one write transaction; per row a lookup of the name in a unique
/// index (name → key), then the record put under the found key or a new one (appended) and the index entry.
func rawLMDBUpsert(_ rows: [Row], at url: URL) throws -> Double {
  let raw = try RawLMDB(path: url)
  return try milliseconds {
    try raw.transaction(readOnly: false) { txn in
      var index: MDB_dbi = 0
      try RawLMDB.check(mdb_dbi_open(txn, "BenchUniqueName", UInt32(MDB_CREATE), &index), "mdb_dbi_open")
      var buffer: [UInt8] = []
      var next: UInt64 = 0
      for row in rows {
        encode(row, into: &buffer)
        var name = row.name
        try name.withUTF8 { nameBytes in
          var nk = MDB_val(mv_size: nameBytes.count, mv_data: UnsafeMutableRawPointer(mutating: nameBytes.baseAddress))
          var found = MDB_val()
          var key: UInt64
          var flags = UInt32(0)
          let rc = mdb_get(txn, index, &nk, &found)
          if rc == MDB_SUCCESS, found.mv_size == 8, let data = found.mv_data {
            key = data.loadUnaligned(as: UInt64.self)
          } else {
            try RawLMDB.check(rc == MDB_NOTFOUND ? MDB_SUCCESS : rc, "mdb_get")
            next += 1
            key = next.bigEndian
            flags = UInt32(MDB_APPEND)
            try withUnsafeMutableBytes(of: &key) { k in
              var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
              try RawLMDB.check(mdb_put(txn, index, &nk, &kv, 0), "mdb_put index")
            }
          }
          try withUnsafeMutableBytes(of: &key) { k in
            try buffer.withUnsafeMutableBytes { v in
              var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
              var vv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
              try RawLMDB.check(mdb_put(txn, raw.dbi, &kv, &vv, flags), "mdb_put")
            }
          }
        }
      }
    }
  }
}

/// Re-encodes a BenchItem record of the LMDB store (format byte, version varint, then one tagged value per
/// attribute: 0 nil, 1 zigzag varint, 2 and 7 eight bytes, 4 varint length and UTF-8, 5 and 6 booleans)
/// value by value into `bytes`, then appends an integer: what a hand-written migration of that format does,
/// into a buffer allocated once.
struct RawRecordWriter: ~Copyable {
  private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
  private var count = 0

  deinit { buffer.deallocate() }

  /// The record last re-encoded.
  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<count]) }

  private static func varint(_ source: UnsafeRawBufferPointer, _ offset: inout Int) throws -> UInt64 {
    var result: UInt64 = 0
    var shift: UInt64 = 0
    while offset < source.count {
      let byte = source[offset]
      offset += 1
      result |= UInt64(byte & 0x7F) << shift
      if byte < 0x80 { return result }
      shift += 7
    }
    throw BenchError.lmdb("a truncated varint")
  }

  private mutating func append(_ byte: UInt8) {
    buffer[count] = byte
    count += 1
  }

  private mutating func append(varint value: UInt64) {
    var v = value
    while v >= 0x80 {
      append(UInt8(truncatingIfNeeded: v) | 0x80)
      v >>= 7
    }
    append(UInt8(v))
  }

  private mutating func append(_ source: UnsafeRawBufferPointer, _ range: Range<Int>) throws {
    guard range.upperBound <= source.count else { throw BenchError.lmdb("a truncated value") }
    guard count + range.count + 10 < buffer.count else { throw BenchError.lmdb("a record over 4 KiB") }
    UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + range.count]).copyMemory(
      from: UnsafeRawBufferPointer(rebasing: source[range]))
    count += range.count
  }

  /// `source` as it is, then the integer `extra`.
  mutating func copy(_ source: UnsafeRawBufferPointer, adding extra: Int64) throws {
    count = 0
    try append(source, 0..<source.count)
    append(1)
    append(varint: UInt64(bitPattern: (extra << 1) ^ (extra >> 63)))
  }

  mutating func reencode(_ source: UnsafeRawBufferPointer, adding extra: Int64) throws {
    count = 0
    guard source.count > 1, source.count + 32 < buffer.count else { throw BenchError.lmdb("a record of \(source.count) bytes") }
    append(source[0])
    var offset = 1
    append(varint: try Self.varint(source, &offset))
    while offset < source.count {
      let tag = source[offset]
      offset += 1
      append(tag)
      switch tag {
      case 0, 5, 6: break
      case 1: append(varint: try Self.varint(source, &offset))
      case 2, 7:
        try append(source, offset..<offset + 8)
        offset += 8
      case 4:
        let length = Int(try Self.varint(source, &offset))
        append(varint: UInt64(length))
        try append(source, offset..<offset + length)
        offset += length
      default: throw BenchError.lmdb("an unexpected tag \(tag)")
      }
    }
    append(1)
    append(varint: UInt64(bitPattern: (extra << 1) ^ (extra >> 63)))
  }
}
