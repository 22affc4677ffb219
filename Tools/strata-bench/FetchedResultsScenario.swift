import CLMDB
import CSQLite
import Foundation
import Strata

/// Counts what a fetched results controller reports.
final class ChangeCounter: FetchedResultsControllerDelegate {
  var objectChanges = 0
  var batches = 0

  func controller(
    _ controller: any FetchedResultsControlling, didChange object: ManagedObject, at indexPath: IndexPath?,
    for type: FetchedResultsChangeType, newIndexPath: IndexPath?
  ) {
    objectChanges += 1
  }

  func controllerDidChangeContent(_ controller: any FetchedResultsControlling) { batches += 1 }
}

/// The positions (in `count` ordered results) of the `changes` objects the scenario changes: spread evenly.
func changedPositions(count: Int, changes: Int) -> [Int] {
  let step = max(1, count / max(1, changes))
  return Array(stride(from: 0, to: count, by: step).prefix(changes))
}

/// A fetched results controller over every BenchItem sorted by `count`: the time of its first fetch, then
/// of changing `count` on `changes` of its objects (moving each to the front), saving and receiving the
/// controller's diff.
func strataFetchedResults(
  expecting count: Int, changes: Int, store: StoreDescription
) throws -> (
  initial: Double, diffs: Double
) {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    let controller = FetchedResultsController(
      fetchRequest: FetchRequest<BenchItem>(sortDescriptors: [QuerySort("count")]), managedObjectContext: context)
    let initial = try milliseconds { try controller.performFetch() }
    let objects = controller.fetchedObjects ?? []
    guard objects.count == count else { throw BenchError.store("the controller holds \(objects.count) objects") }
    let counter = ChangeCounter()
    controller.delegate = counter
    let positions = changedPositions(count: count, changes: changes)
    let diffs = try milliseconds {
      for position in positions { objects[position].count = -objects[position].count - 1 }
      try context.save()
    }
    guard counter.objectChanges == positions.count, counter.batches >= 1 else {
      throw BenchError.store("the controller reported \(counter.objectChanges) changes in \(counter.batches) batches")
    }
    return (initial, diffs)
  }
}

/// An ordered result as a raw loop keeps it: the key and the row.
struct KeyedRow {
  var key: Int
  var row: Row
}

/// The raw side of a controller's diff: takes the changed rows out of the ordered array, sorts them, and
/// merges them back where their new `count` sorts (one pass over the array); returns how many moved.
func applyMoves(_ changed: [KeyedRow], to ordered: inout [KeyedRow]) -> Int {
  func precedes(_ a: KeyedRow, _ b: KeyedRow) -> Bool {
    a.row.count < b.row.count || (a.row.count == b.row.count && a.key < b.key)
  }
  let keys = Set(changed.map(\.key))
  let sortedChanges = changed.sorted(by: precedes)
  var merged: [KeyedRow] = []
  merged.reserveCapacity(ordered.count)
  var next = 0
  for entry in ordered where !keys.contains(entry.key) {
    while next < sortedChanges.count, precedes(sortedChanges[next], entry) {
      merged.append(sortedChanges[next])
      next += 1
    }
    merged.append(entry)
  }
  merged.append(contentsOf: sortedChanges[next...])
  ordered = merged
  return changed.count
}

/// The raw SQLite counterpart: `SELECT … ORDER BY count` into keyed rows; then one transaction of
/// prepared `UPDATE`s for the changed rows, re-reading them, and moving them in the array.
func rawSQLiteFetchedResults(expecting count: Int, changes: Int, at url: URL) throws -> (initial: Double, diffs: Double) {
  let raw = try RawSQLite(url)
  try raw.exec("PRAGMA synchronous=NORMAL")
  var ordered: [KeyedRow] = []
  let initial = try milliseconds {
    try raw.withStatement("SELECT _pk, \(sqliteItemColumns) FROM BenchItem ORDER BY count, _pk") { statement in
      while sqlite3_step(statement) == SQLITE_ROW {
        ordered.append(KeyedRow(key: Int(sqlite3_column_int64(statement, 0)), row: sqliteRow(statement, from: 1)))
      }
    }
  }
  guard ordered.count == count else { throw BenchError.sqlite("read \(ordered.count) rows") }
  let positions = changedPositions(count: count, changes: changes)
  var moved = 0
  let diffs = try milliseconds {
    var changed: [KeyedRow] = []
    try raw.exec("BEGIN IMMEDIATE")
    try raw.withStatement("UPDATE BenchItem SET count = ?, _version = _version + 1 WHERE _pk = ?") { statement in
      for position in positions {
        sqlite3_bind_int64(statement, 1, -ordered[position].row.count - 1)
        sqlite3_bind_int64(statement, 2, Int64(ordered[position].key))
        guard sqlite3_step(statement) == SQLITE_DONE else { throw raw.error() }
        sqlite3_reset(statement)
      }
    }
    try raw.exec("COMMIT")
    try raw.withStatement("SELECT \(sqliteItemColumns) FROM BenchItem WHERE _pk = ?") { statement in
      for position in positions {
        sqlite3_bind_int64(statement, 1, Int64(ordered[position].key))
        guard sqlite3_step(statement) == SQLITE_ROW else { throw raw.error() }
        changed.append(KeyedRow(key: ordered[position].key, row: sqliteRow(statement)))
        sqlite3_reset(statement)
      }
    }
    moved = applyMoves(changed, to: &ordered)
  }
  guard moved == positions.count else { throw BenchError.sqlite("moved \(moved) rows") }
  return (initial, diffs)
}

/// The raw LMDB counterpart: a cursor scan into keyed rows sorted by `count`; then one write transaction
/// re-encoding and putting the changed records, and moving them in the array.
func rawLMDBFetchedResults(expecting count: Int, changes: Int, at url: URL) throws -> (initial: Double, diffs: Double) {
  let raw = try RawLMDB(path: url)
  var ordered: [KeyedRow] = []
  let initial = try milliseconds {
    try raw.transaction(readOnly: true) { txn in
      try RawLMDB.forEachRecord(in: txn) { key, value in
        let k = Int(UInt64(bigEndian: key.mv_data.loadUnaligned(as: UInt64.self)))
        ordered.append(KeyedRow(key: k, row: decodeRawRecord(value)))
        return true
      }
    }
    ordered.sort { $0.row.count < $1.row.count || ($0.row.count == $1.row.count && $0.key < $1.key) }
  }
  guard ordered.count == count else { throw BenchError.lmdb("read \(ordered.count) rows") }
  let positions = changedPositions(count: count, changes: changes)
  var moved = 0
  let diffs = try milliseconds {
    var changed: [KeyedRow] = []
    try raw.transaction(readOnly: false) { txn in
      var buffer: [UInt8] = []
      for position in positions {
        var entry = ordered[position]
        entry.row.count = -entry.row.count - 1
        encodeRawRecord(entry.row, into: &buffer)
        var key = UInt64(entry.key).bigEndian
        try withUnsafeMutableBytes(of: &key) { k in
          try buffer.withUnsafeMutableBytes { v in
            var kv = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
            var vv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
            try RawLMDB.check(mdb_put(txn, raw.dbi, &kv, &vv, 0), "mdb_put")
          }
        }
        changed.append(entry)
      }
    }
    moved = applyMoves(changed, to: &ordered)
  }
  guard moved == positions.count else { throw BenchError.lmdb("moved \(moved) rows") }
  return (initial, diffs)
}
