import Foundation
import Strata

/// How many times the loaded-reads scenario reads every field of every object.
let loadedReadPasses = 10

/// Every field of every BenchItem read `passes` times through its accessors, the objects fetched and
/// loaded untimed: the attribute getters alone, as an app's code runs them (no tracking records).
func strataLoadedReads(expecting count: Int, passes: Int, store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    let items = try context.fetch(FetchRequest<BenchItem>())
    guard items.count == count else { throw BenchError.store("fetched \(items.count) objects, expected \(count)") }
    var checksum = 0
    for item in items { checksum &+= item.checksum }
    let time = milliseconds {
      for _ in 0..<passes {
        for item in items { checksum &+= item.checksum }
      }
    }
    guard checksum != 0 else { throw BenchError.store("read nothing") }
    return time
  }
}

/// The raw side of the loaded reads: the same fields of structs in an array.
func rawLoadedReads(_ rows: [Row], passes: Int) throws -> Double {
  var checksum = 0
  let time = milliseconds {
    for _ in 0..<passes {
      for row in rows { checksum &+= row.checksum }
    }
  }
  guard checksum != 0 else { throw BenchError.store("read nothing") }
  return time
}

/// One attribute of every saved, loaded BenchItem set through its accessor (the change tracked, not
/// saved), the objects fetched and loaded untimed.
func strataLoadedWrites(expecting count: Int, store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    let items = try context.fetch(FetchRequest<BenchItem>())
    guard items.count == count else { throw BenchError.store("fetched \(items.count) objects, expected \(count)") }
    var checksum = 0
    for item in items { checksum &+= item.checksum }
    let time = milliseconds {
      for item in items { item.count &+= 1 }
    }
    guard context.hasChanges, checksum != 0 else { throw BenchError.store("changed nothing") }
    return time
  }
}

/// The raw side of the loaded writes: the same field of structs in an array.
func rawLoadedWrites(_ rows: [Row]) throws -> Double {
  var rows = rows
  let time = milliseconds {
    for i in rows.indices { rows[i].count &+= 1 }
  }
  guard rows.contains(where: { $0.count != 0 }) else { throw BenchError.store("changed nothing") }
  return time
}
