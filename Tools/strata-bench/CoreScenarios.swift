import Foundation
import Strata

/// Inserts every row as a BenchItem through a background context and saves once; returns the time.
func strataInsert(_ rows: [Row], store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var creation = 0.0
    let total = try milliseconds {
      creation = milliseconds {
        for row in rows { BenchItem.make(row, in: context) }
      }
      try context.save()
    }
    if phasesRequested { printPhase(String(format: "phases: create+set %.1f ms, save %.1f ms", creation, total - creation)) }
    return total
  }
}

/// Fetches every BenchItem of the store through a fresh container and context and reads every field of
/// every object, as the raw scan decodes every field into a struct; returns the time.
func strataFetch(expecting count: Int, store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var fetched = 0
    var checksum = 0
    var fetching = 0.0
    // Kept past the timing, as the raw scan keeps its rows: neither side is timed freeing its results.
    var items: [BenchItem] = []
    let time = try milliseconds {
      fetching = try milliseconds { items = try context.fetch(FetchRequest<BenchItem>()) }
      for item in items { checksum &+= item.checksum }
      fetched = items.count
    }
    guard checksum != 0 else { throw BenchError.store("read nothing") }
    guard fetched == count else { throw BenchError.store("fetched \(fetched) objects, expected \(count)") }
    if phasesRequested { printPhase(String(format: "phases: fetch %.1f ms, read %.1f ms", fetching, time - fetching)) }
    return time
  }
}

/// The IDs of every BenchItem in primary-key order (the order they were inserted in), read untimed.
func strataItemIDs(store: StoreDescription) throws -> [ObjectID] {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait { try context.fetchObjectIDs(FetchRequest<BenchItem>()) }
}

/// A batch insert (upserting on the unique name) of every row through a context, result type status only.
func strataBatchInsert(_ rows: [[String: Strata.Value]], store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var result = BatchResult(count: 0)
    let time = try milliseconds {
      result = try context.execute(BatchInsertRequest<BenchUnique>(objects: rows, resultType: .count))
    }
    guard result.count == rows.count else { throw BenchError.store("batch insert wrote \(result.count) rows") }
    return time
  }
}

/// Runs `body` on a background context of a fresh container on `store` and returns its time.
private func timedOnContext(_ store: StoreDescription, _ body: (ObjectContext) throws -> Void) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait { try milliseconds { try body(context) } }
}

/// `count(for:)` with a two-term predicate, checked against the rows.
func strataCountWhere(_ rows: [Row], store: StoreDescription) throws -> Double {
  let expected = rows.filter { $0.category == "category-3" && $0.amount > 1000 }.count
  var counted = 0
  let time = try timedOnContext(store) { context in
    counted = try context.count(for: FetchRequest<BenchItem>(format: "category == 'category-3' AND amount > 1000"))
  }
  guard counted == expected else { throw BenchError.store("counted \(counted), expected \(expected)") }
  return time
}

/// A dictionary fetch of `sum:(amount)`, checked against the rows.
func strataSum(_ rows: [Row], store: StoreDescription) throws -> Double {
  var request = FetchRequest<BenchItem>()
  request.propertiesToFetch = [try .expression("total", format: "sum:(amount)", resultType: .double)]
  var total: Double?
  let time = try timedOnContext(store) { context in
    total = try context.fetchDictionaries(request).first?["total"]?.numericValue
  }
  guard total == rows.reduce(0, { $0 + $1.amount }) else { throw BenchError.store("sum \(String(describing: total))") }
  return time
}

/// A batch update of `count + 1` on every row.
func strataBatchUpdate(_ rows: [Row], store: StoreDescription) throws -> Double {
  var updated = 0
  let time = try timedOnContext(store) { context in
    updated = try context.execute(
      .update(entityName: "BenchItem", predicate: nil, propertiesToUpdate: ["count": try QueryExpression(format: "count + 1")])
    ).count
  }
  guard updated == rows.count else { throw BenchError.store("updated \(updated)") }
  return time
}
