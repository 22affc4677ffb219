import CLMDB
import Foundation
import Strata
import StrataLMDB
import StrataSQLite

/// The raw baseline of the LMDB migration, on a copy of the store's environment (the same records): in
/// one write transaction, a cursor reads every BenchItem record, re-encodes it field by
/// field in the store's record format (``RawRecordWriter``) with the added `rating` (3) at the end, and
/// puts it back in place (`MDB_CURRENT`). With `reencodes` false, the floor: each record is copied whole
/// with the two bytes of the added value after it.
func rawLMDBMigrate(expecting count: Int, at copy: URL, reencodes: Bool = true) throws -> Double {
  let raw = try RawLMDB(path: copy)
  // An empty write first, as the store runs one while it opens: the environment's first write sets up
  // liblmdb's write buffers.
  try raw.transaction(readOnly: false) { _ in }
  var rewritten = 0
  let time = try milliseconds {
    try raw.transaction(readOnly: false) { txn in
      var cursor: OpaquePointer?
      try RawLMDB.check(mdb_cursor_open(txn, raw.dbi, &cursor), "mdb_cursor_open")
      defer { mdb_cursor_close(cursor) }
      var key = MDB_val()
      var value = MDB_val()
      var op = MDB_FIRST
      var writer = RawRecordWriter()
      while mdb_cursor_get(cursor, &key, &value, op) == MDB_SUCCESS {
        op = MDB_NEXT
        let record = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
        if reencodes { try writer.reencode(record, adding: 3) } else { try writer.copy(record, adding: 3) }
        let bytes = writer.bytes
        var vv = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
        try RawLMDB.check(mdb_cursor_put(cursor, &key, &vv, UInt32(MDB_CURRENT)), "mdb_cursor_put")
        rewritten += 1
      }
    }
  }
  guard rewritten == count else { throw BenchError.lmdb("rewrote \(rewritten) records, expected \(count)") }
  return time
}

/// Migrates the LMDB store at `url`: BenchItem gains `rating` (default 3) and `note` becomes `memo`.
func strataMigrate(expecting count: Int, at url: URL) throws -> Double {
  let store = try LMDBStore(url: url, model: nil)
  let entities = store.model.entities.map { entity -> EntityDescription in
    guard entity.name == "BenchItem" else { return entity }
    let attributes = entity.attributes.map { attribute in
      attribute.name == "note"
        ? AttributeDescription(name: "memo", type: attribute.type, isOptional: true, renamingIdentifier: "note") : attribute
    }
    return EntityDescription(
      name: entity.name, attributes: attributes + [AttributeDescription(name: "rating", type: .int16, defaultValue: 3)],
      relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
  }
  let migration = try ModelMigration(from: store.model, to: try ObjectModel(entities: entities))
  var migrated: LMDBStore?
  let phases = ProcessInfo.processInfo.environment["STRATA_BENCH_PHASES"] != nil
  if phases { resetPeakMemory() }
  let start = residentMemory()
  let time = try milliseconds { migrated = try store.migrated(by: migration) as? LMDBStore }
  defer { migrated?.close() }
  if phases, let start, let end = residentMemory() {
    FileHandle.standardError.write(
      Data(
        String(
          format: "  migration: peak resident memory %.1f MiB (%.1f MiB above its start)\n", end.peak, end.peak - start.current
        ).utf8))
  }
  let rated = try migrated?.count(FetchDescription(entityName: "BenchItem", predicate: try QueryPredicate(format: "rating == 3")))
  guard rated == count else { throw BenchError.store("migrated \(rated ?? 0) rows, expected \(count)") }
  return time
}

/// Migrates a SQLite store of `rows` BenchItems to a model that renames `count` to `total` and adds
/// `rating` with a default; returns the time of `migrated(by:)` (the migration and the reopening).
func strataMigration(_ rows: [Row], store: StoreDescription) throws -> Double {
  _ = try strataInsert(rows, store: store)
  guard let url = store.url else { throw BenchError.store("no location") }
  let sqlite = try SQLiteStore(url: url, model: nil)
  let entities = sqlite.model.entities.map { entity -> EntityDescription in
    guard entity.name == "BenchItem" else { return entity }
    let attributes = entity.attributes.map { attribute in
      attribute.name == "count"
        ? AttributeDescription(name: "total", type: attribute.type, renamingIdentifier: "count") : attribute
    }
    return EntityDescription(
      name: entity.name, attributes: attributes + [AttributeDescription(name: "rating", type: .int16, defaultValue: 3)],
      relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
  }
  let migration = try ModelMigration(from: sqlite.model, to: try ObjectModel(entities: entities))
  var closeMigrated: () -> Void = {}
  let time = try milliseconds { closeMigrated = try sqlite.migrated(by: migration).close }
  closeMigrated()
  return time
}
