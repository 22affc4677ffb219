import CLMDB
import Foundation
import StrataConformance
import StrataLMDB
import StrataStoreKit
import Testing

let lmdbBackend = ConformanceBackend(
  factory: LMDBStoreFactory(), capabilities: [.sharedLocation, .multiProcess, .migration, .inheritance, .hierarchyMigration],
  worker: "strata-worker",
  location: { $0.appending(path: "conformance.lmdb") }, integrityCheck: checkLMDBIntegrity)

@Test("LMDB conformance", arguments: Conformance.cases)
func lmdbConformance(_ check: Conformance.Case) async throws { try await Conformance.run(check, on: lmdbBackend) }

/// Walks every entry of every named database of the environment with liblmdb alone, in one read-only
/// transaction: a damaged B-tree page gives an error here.
@Sendable func checkLMDBIntegrity(_ url: URL) throws {
  func check(_ code: Int32, _ what: String) throws {
    guard code == MDB_SUCCESS else {
      throw StoreError(.corrupted, "\(url.path): \(what): \(String(cString: mdb_strerror(code)))")
    }
  }
  var env: OpaquePointer?
  try check(mdb_env_create(&env), "mdb_env_create")
  defer { mdb_env_close(env) }
  try check(mdb_env_set_maxdbs(env, 256), "mdb_env_set_maxdbs")
  try check(mdb_env_open(env, url.path, UInt32(MDB_RDONLY | MDB_NOTLS), 0o644), "mdb_env_open")
  var txn: OpaquePointer?
  try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
  defer { mdb_txn_abort(txn) }
  func walk(_ dbi: MDB_dbi, _ name: String, _ each: (MDB_val) throws -> Void) throws {
    var cursor: OpaquePointer?
    try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open \(name)")
    defer { mdb_cursor_close(cursor) }
    var key = MDB_val()
    var value = MDB_val()
    var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
    while code == MDB_SUCCESS {
      try each(key)
      code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
    }
    guard code == MDB_NOTFOUND else { try check(code, "walking \(name)"); return }
  }
  // The main database holds the named databases' names and keys of Strata's own.
  var main = MDB_dbi()
  try check(mdb_dbi_open(txn, nil, 0, &main), "mdb_dbi_open (the main database)")
  var names: [String] = []
  try walk(main, "the main database") { key in
    let bytes = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
    if !bytes.contains(0), let name = String(validating: bytes, as: UTF8.self) { names.append(name) }
  }
  var databases = 0
  for name in names {
    var dbi = MDB_dbi()
    let opened = mdb_dbi_open(txn, name, 0, &dbi)
    if opened == MDB_INCOMPATIBLE { continue }
    try check(opened, "mdb_dbi_open \(name)")
    try walk(dbi, name) { _ in }
    databases += 1
  }
  guard databases > 0 else { throw StoreError(.corrupted, "\(url.path): no named database found") }
}
