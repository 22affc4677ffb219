import Foundation
import Strata

/// Fires one fault per ID, in the order of `ids`, through a fresh container: `object(with:)` then a read
/// of every field, which loads that object alone. Keeps the objects, as the raw loops keep their rows.
/// The IDs come in the order of the raw loops' keys, read one after the other as those are.
func strataFaults(_ ids: [ObjectID], store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var items: [BenchItem] = []
    items.reserveCapacity(ids.count)
    var checksum = 0
    let time = try milliseconds {
      for id in ids {
        guard let item = context.object(with: id) as? BenchItem else { throw BenchError.store("\(id) is no BenchItem") }
        checksum &+= item.checksum
        items.append(item)
      }
    }
    guard checksum != 0, items.count == ids.count else { throw BenchError.store("read \(items.count) faults") }
    return time
  }
}

/// Walks every BenchItem through `fetch(_:batchSize:)`, reading every field and keeping nothing: the
/// objects of one batch at a time are alive.
func strataBatchedFetch(expecting count: Int, batchSize: Int, store: StoreDescription) throws -> Double {
  let container = try benchContainer(store)
  defer { container.close() }
  let context = container.newBackgroundContext()
  return try context.performAndWait {
    var checksum = 0
    var walked = 0
    let time = try milliseconds {
      for item in try context.fetch(FetchRequest<BenchItem>(), batchSize: batchSize) {
        checksum &+= item.checksum
        walked += 1
      }
    }
    guard checksum != 0, walked == count else { throw BenchError.store("walked \(walked) objects, expected \(count)") }
    return time
  }
}
