import CLMDB
import Foundation
import Strata

/// The raw LMDB engine of one run: its environments in the run's directory (`raw.lmdb` for the items,
/// `raw-upsert.lmdb`, `raw-traversal.lmdb`, and for the migration copies of Strata's own environment),
/// Strata's stores beside them.
final class LMDBBaseline: FileBaseline {
  let backend = Backend.lmdb
  let directory: URL

  init(directory: URL) { self.directory = directory }

  private var items: URL { file("raw") }

  func insert(_ rows: [Row]) throws -> Double { try rawLMDBInsert(rows, at: items) }

  func scan(expecting count: Int, keeps: Bool) throws -> Double { try rawLMDBScan(expecting: count, at: items, keeps: keeps) }

  func gets(keys: [Int]) throws -> Double { try rawLMDBGets(keys, at: items) }

  func countWhere(expecting count: Int) throws -> Double { try rawLMDBCountWhere(expecting: count, at: items) }

  func upsert(_ rows: [Row]) throws -> Double { try rawLMDBUpsert(rows, at: file("raw-upsert")) }

  func fetchedResults(expecting count: Int, changes: Int) throws -> (initial: Double, diffs: Double) {
    try rawLMDBFetchedResults(expecting: count, changes: changes, at: items)
  }

  private var traversal: URL { file("raw-traversal") }

  func insertDirectors(movies: Int) throws { try rawLMDBInsertDirectors(movies: movies, at: traversal) }

  /// Per director its movie keys from the index and each movie by `mdb_get` (LMDB has no join).
  func traverse(movies: Int, joining: Bool) throws -> Double { try rawLMDBTraversal(movies: movies, at: traversal) }

  // MARK: Migration

  private var migrationCopies: [URL] { [file("raw-migrate"), file("raw-copy")] }

  /// Copies the environment at `url` twice for the migration's raw loops, on disk before anything is timed
  /// as the store's own file is (else the raw commit's `fdatasync` writes the copy).
  func copyForMigration(_ url: URL) throws {
    for copy in migrationCopies {
      try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
      try FileManager.default.copyItem(at: url.appending(path: "data.mdb"), to: copy.appending(path: "data.mdb"))
      let handle = try FileHandle(forUpdating: copy.appending(path: "data.mdb"))
      try handle.synchronize()
      try handle.close()
    }
  }

  /// Re-encodes every record of the first copy with the added value (`reencodes`), or copies each record of
  /// the second whole with the value appended: the floor.
  func migrate(expecting count: Int, reencodes: Bool) throws -> Double {
    try rawLMDBMigrate(expecting: count, at: migrationCopies[reencodes ? 0 : 1], reencodes: reencodes)
  }

  // MARK: Queries

  /// Opens the environment and walks its records with one cursor: `body` gets each record's bytes until it
  /// returns false.
  private func walk(_ body: (UnsafeRawBufferPointer) -> Bool) throws -> Double {
    let url = items
    return try milliseconds {
      let raw = try RawLMDB(path: url)
      try raw.transaction(readOnly: true) { txn in
        try RawLMDB.forEachRecord(in: txn) { _, value in body(value) }
      }
    }
  }

  /// The names of `taking` records after `skipping` (passed over without decoding).
  func names(skipping: Int, taking: Int, expecting expected: [String]) throws -> Double {
    var found: [String] = []
    var skip = skipping
    let time = try walk { record in
      if skip > 0 {
        skip -= 1
        return true
      }
      found.append(decodeRawRecord(record).name)
      return found.count < taking
    }
    guard found == expected else { throw BenchError.lmdb("\(found.prefix(3)), expected \(expected.prefix(3))") }
    return time
  }

  /// The ten first names in code-point order, kept sorted while every record is decoded.
  func topNames(expecting expected: [String]) throws -> Double {
    var top: [String] = []
    let time = try walk { record in
      let name = decodeRawRecord(record).name
      if top.count < 10 || name.utf8.lexicographicallyPrecedes(top[top.count - 1].utf8) {
        let index = top.firstIndex { name.utf8.lexicographicallyPrecedes($0.utf8) } ?? top.count
        top.insert(name, at: index)
        if top.count > 10 { top.removeLast() }
      }
      return true
    }
    guard top == expected else { throw BenchError.lmdb("\(top.prefix(3)), expected \(expected.prefix(3))") }
    return time
  }

  /// Decodes each record and lowercases its name to search it.
  func countNames(containing needle: String, expecting count: Int) throws -> Double {
    let lowered = needle.lowercased()
    return try countRecords(expecting: count) { $0.name.lowercased().contains(lowered) }
  }

  func countCategory(_ category: String, expecting count: Int) throws -> Double {
    try countRecords(expecting: count) { $0.category == category }
  }

  /// How many records (each decoded) satisfy `test`.
  private func countRecords(expecting expected: Int, _ test: (Row) -> Bool) throws -> Double {
    var counted = 0
    let time = try walk { record in
      if test(decodeRawRecord(record)) { counted += 1 }
      return true
    }
    guard counted == expected else { throw BenchError.lmdb("counted \(counted), expected \(expected)") }
    return time
  }

  // MARK: Concurrent saves

  var workerLocation: String { items.path }

  func storedRows() throws -> Int {
    let raw = try RawLMDB(path: items)
    var entries = 0
    try raw.transaction(readOnly: false) { txn in
      var stat = MDB_stat()
      try RawLMDB.check(mdb_stat(txn, raw.dbi, &stat), "mdb_stat")
      entries = Int(stat.ms_entries)
    }
    return entries
  }

  /// One write transaction per row: the last key read with a cursor, the record appended after it.
  static func saveConcurrently(at location: String, rows: () -> Row, waitForStart: () -> Void, end: Double) throws -> Int {
    var saves = 0
    let raw = try RawLMDB(path: URL(fileURLWithPath: location))
    waitForStart()
    var buffer: [UInt8] = []
    while Date().timeIntervalSince1970 < end {
      try raw.transaction(readOnly: false) { txn in
        var cursor: OpaquePointer?
        try RawLMDB.check(mdb_cursor_open(txn, raw.dbi, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var last = MDB_val()
        var ignored = MDB_val()
        var next: UInt64 = 1
        if mdb_cursor_get(cursor, &last, &ignored, MDB_LAST) == MDB_SUCCESS {
          next = UInt64(bigEndian: last.mv_data.loadUnaligned(as: UInt64.self)) + 1
        }
        encodeRawRecord(rows(), into: &buffer)
        var key = next.bigEndian
        try withUnsafeMutableBytes(of: &key) { k in
          try buffer.withUnsafeMutableBytes { v in
            var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
            var vv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
            try RawLMDB.check(mdb_put(txn, raw.dbi, &kv, &vv, UInt32(MDB_APPEND)), "mdb_put")
          }
        }
      }
      saves += 1
    }
    return saves
  }
}
