import CLMDB
import Foundation

/// One liblmdb transaction, used by one thread at a time for the length of one store call.
///
/// Values handed to the closures of ``get(_:_:_:)`` and the cursor point into the memory map and are
/// valid only inside the closure.
struct LMDBTransaction {
  let txn: OpaquePointer

  /// Reads the value stored under `key`; `body` gets `nil` when there is none.
  func get<R>(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
    var v = MDB_val()
    let rc = mdb_get(txn, dbi, &k, &v)
    if rc == MDB_NOTFOUND { return try body(nil) }
    try check(rc, "mdb_get")
    return try body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
  }

  func get<R>(_ dbi: MDB_dbi, _ key: [UInt8], _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
    try key.withUnsafeBytes { try get(dbi, $0, body) }
  }

  func get<R>(_ dbi: MDB_dbi, primaryKey: Int64, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
    try withUnsafeBytes(of: KeyCoding.bigEndian(primaryKey)) { try get(dbi, $0, body) }
  }

  /// Stores `value` under `key`. `MDB_MAP_FULL` surfaces as an ``LMDBError`` the environment handles.
  func put(
    _ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, flags: Int32 = 0
  ) throws(LMDBError)
    -> Bool
  {
    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
    var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
    let rc = mdb_put(txn, dbi, &k, &v, UInt32(bitPattern: flags))
    if rc == MDB_KEYEXIST { return false }
    try check(rc, "mdb_put")
    return true
  }

  @discardableResult
  func put(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8], flags: Int32 = 0) throws -> Bool {
    try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try put(dbi, k, v, flags: flags) } }
  }

  @discardableResult
  func put(_ dbi: MDB_dbi, primaryKey: Int64, _ value: [UInt8], flags: Int32 = 0) throws -> Bool {
    try withUnsafeBytes(of: KeyCoding.bigEndian(primaryKey)) { k in
      try value.withUnsafeBytes { v in try put(dbi, k, v, flags: flags) }
    }
  }

  /// Adds `primaryKey` to the duplicates of `key` in an `MDB_DUPSORT` index.
  func putIndex(_ dbi: MDB_dbi, _ key: [UInt8], primaryKey: Int64) throws {
    try key.withUnsafeBytes { k in
      try withUnsafeBytes(of: KeyCoding.bigEndian(primaryKey)) { v in
        _ = try put(dbi, k, v, flags: MDB_NODUPDATA)
      }
    }
  }

  /// Deletes `key` (with `value`, only that duplicate). Returns whether something was deleted.
  @discardableResult
  func delete(_ dbi: MDB_dbi, _ key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer? = nil) throws -> Bool {
    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
    let rc: Int32
    if let value {
      var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
      rc = mdb_del(txn, dbi, &k, &v)
    } else {
      rc = mdb_del(txn, dbi, &k, nil)
    }
    if rc == MDB_NOTFOUND { return false }
    try check(rc, "mdb_del")
    return true
  }

  @discardableResult
  func delete(_ dbi: MDB_dbi, primaryKey: Int64) throws -> Bool {
    try withUnsafeBytes(of: KeyCoding.bigEndian(primaryKey)) { try delete(dbi, $0) }
  }

  /// Removes the duplicate `primaryKey` of `key` from an `MDB_DUPSORT` index.
  func deleteIndex(_ dbi: MDB_dbi, _ key: [UInt8], primaryKey: Int64) throws {
    try key.withUnsafeBytes { k in
      try withUnsafeBytes(of: KeyCoding.bigEndian(primaryKey)) { v in _ = try delete(dbi, k, value: v) }
    }
  }

  /// How many entries (duplicates counted) the database holds, from `mdb_stat`: no record is read.
  func entries(_ dbi: MDB_dbi) throws -> Int {
    var stat = MDB_stat()
    try check(mdb_stat(txn, dbi, &stat), "mdb_stat")
    return stat.ms_entries
  }

  /// How many bytes of pages the database fills (branch, leaf and overflow pages), from `mdb_stat`.
  func bytes(_ dbi: MDB_dbi) throws -> Int {
    var stat = MDB_stat()
    try check(mdb_stat(txn, dbi, &stat), "mdb_stat")
    return (stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages) * Int(stat.ms_psize)
  }

  /// Opens the named database `name` in this transaction (creating it when `create`); `nil` when it
  /// does not exist. A handle opened in a write transaction that aborts is released with it.
  func openDatabase(_ name: String, isDuplicateSorted: Bool, create: Bool) throws -> MDB_dbi? {
    var flags = isDuplicateSorted ? UInt32(MDB_DUPSORT) : 0
    if create { flags |= UInt32(MDB_CREATE) }
    var dbi: MDB_dbi = 0
    let rc = mdb_dbi_open(txn, name, flags, &dbi)
    if rc == MDB_NOTFOUND { return nil }
    try check(rc, "mdb_dbi_open(\(name))")
    return dbi
  }

  /// Empties the database (`mdb_drop`); with `delete`, also removes it from the environment and closes
  /// its handle — at once, in every transaction of the process, whether this one commits or not.
  func drop(_ dbi: MDB_dbi, name: String, delete: Bool) throws {
    try check(mdb_drop(txn, dbi, delete ? 1 : 0), "mdb_drop(\(name))")
  }

  /// Runs `body` in a transaction nested in this write transaction (`mdb_txn_begin` with this one as
  /// parent): what it writes joins this transaction when `body` returns, and is undone alone when `body`
  /// throws. This transaction must not be used until `body` returns.
  func nested<R>(_ body: (LMDBTransaction) throws -> R) throws -> R {
    var child: OpaquePointer?
    try check(mdb_txn_begin(mdb_txn_env(txn), txn, 0, &child), "mdb_txn_begin (nested)")
    guard let child else { throw LMDBError(EINVAL, "mdb_txn_begin (nested)") }
    let result: R
    do {
      result = try body(LMDBTransaction(txn: child))
    } catch {
      mdb_txn_abort(child)
      throw error
    }
    try check(mdb_txn_commit(child), "mdb_txn_commit (nested)")
    return result
  }

  /// Opens a cursor, runs `body` with it and closes it.
  func withCursor<R>(_ dbi: MDB_dbi, _ body: (LMDBCursor) throws -> R) throws -> R {
    var cursor: OpaquePointer?
    try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
    guard let cursor else { throw LMDBError(EINVAL, "mdb_cursor_open") }
    defer { mdb_cursor_close(cursor) }
    return try body(LMDBCursor(cursor: cursor))
  }

  /// The primary keys stored as duplicates of `key` in an `MDB_DUPSORT` index, ascending.
  func primaryKeys(_ dbi: MDB_dbi, _ key: [UInt8]) throws -> [Int64] {
    try withCursor(dbi) { cursor in
      var keys: [Int64] = []
      var found = try cursor.seek(key, exact: true)
      if found != nil, let count = try? cursor.duplicateCount() { keys.reserveCapacity(count) }
      while let entry = found {
        keys.append(try KeyCoding.primaryKey(entry.value))
        found = try cursor.next(.nextDuplicate)
      }
      return keys
    }
  }
}

/// A cursor over one database of an ``LMDBTransaction``.
struct LMDBCursor {
  let cursor: OpaquePointer

  typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

  enum Step {
    case first, next, nextDuplicate, nextKey

    var op: MDB_cursor_op {
      switch self {
      case .first: MDB_FIRST
      case .next: MDB_NEXT
      case .nextDuplicate: MDB_NEXT_DUP
      case .nextKey: MDB_NEXT_NODUP
      }
    }
  }

  private func get(_ op: MDB_cursor_op, _ key: inout MDB_val) throws -> Entry? {
    var value = MDB_val()
    let rc = mdb_cursor_get(cursor, &key, &value, op)
    if rc == MDB_NOTFOUND { return nil }
    try check(rc, "mdb_cursor_get")
    return (
      UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
      UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    )
  }

  /// Moves as `step` says; `nil` at the end.
  func next(_ step: Step) throws -> Entry? {
    var key = MDB_val()
    return try get(step.op, &key)
  }

  /// Moves to `key` (`exact`) or to the first key at or after it.
  func seek(_ key: [UInt8], exact: Bool) throws -> Entry? {
    try key.withUnsafeBytes { try seek($0, exact: exact) }
  }

  /// Moves to `key` (`exact`) or to the first key at or after it. When `key` is on the leaf page the cursor
  /// is on, liblmdb searches that page alone instead of descending from the root.
  func seek(_ key: UnsafeRawBufferPointer, exact: Bool) throws -> Entry? {
    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
    return try get(exact ? MDB_SET_KEY : MDB_SET_RANGE, &k)
  }

  /// Replaces the value of the current entry (`MDB_CURRENT`; `key` must be its key), whatever its size.
  func replaceCurrent(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws {
    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
    var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
    try check(mdb_cursor_put(cursor, &k, &v, UInt32(MDB_CURRENT)), "mdb_cursor_put")
  }

  /// How many duplicates the current key has.
  func duplicateCount() throws -> Int {
    var count: Int = 0
    try check(mdb_cursor_count(cursor, &count), "mdb_cursor_count")
    return count
  }
}
