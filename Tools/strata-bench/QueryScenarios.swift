import Foundation
import Strata

// The queries a user types first (issue 42), each timed as a whole — Strata through a container it opens,
// the raw side through a connection or environment it opens (``Baseline/names(skipping:taking:expecting:)``
// and the rest) — against the raw library doing the same matching on the same rows:
// - `query_first`: open, then the first object (`LIMIT 1`);
// - `query_page`: the five objects at offset n − 10, in primary-key order;
// - `query_top10`: the first ten by name (`ORDER BY name LIMIT 10`; no index);
// - `query_search`: how many names contain "ITEM 99" ignoring case and diacritics (`CONTAINS[cd]`; raw
//   SQLite's `LIKE '%ITEM 99%'` and PostgreSQL's `ILIKE '%ITEM 99%'`, case-insensitive, give the same answer
//   on these ASCII names; raw LMDB lowercases each name and searches it);
// - `query_count`: how many are in "category-3" (no index).
// On PostgreSQL each run loads fresh schemas (raw libpq table and Strata store, both vacuumed and analysed
// before timing) and drops them afterwards.

/// Opens a container on `store` and fetches `request`, whose names must be `expected`; the time includes the
/// opening.
func strataNames(_ request: FetchRequest<BenchItem>, expecting expected: [String], store: StoreDescription) throws -> Double {
  var found: [String] = []
  let time = try milliseconds {
    let container = try benchContainer(store)
    defer { container.close() }
    let context = container.newBackgroundContext()
    found = try context.performAndWait { try context.fetch(request).map(\.name) }
  }
  guard found == expected else { throw BenchError.store("\(found.prefix(3)), expected \(expected.prefix(3))") }
  return time
}

/// Opens a container on `store` and counts the objects matching `format`, which must be `expected`; the
/// time includes the opening.
func strataCount(_ format: String, expecting expected: Int, store: StoreDescription) throws -> Double {
  var counted = 0
  let time = try milliseconds {
    let container = try benchContainer(store)
    defer { container.close() }
    let context = container.newBackgroundContext()
    counted = try context.performAndWait { try context.count(for: FetchRequest<BenchItem>(format: format)) }
  }
  guard counted == expected else { throw BenchError.store("\(format): \(counted), expected \(expected)") }
  return time
}
