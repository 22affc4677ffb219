import Foundation
internal import StrataStoreKit

/// A fetched results controller's results in order, with what orders and sections each: kept in order
/// as objects change by moving only the changed ones, each found by a search on the sort values it was
/// placed by (``sortValuesByObject``), never by a pass that hashes every result. Not generic, so its
/// loops compile once, specialised, whatever the controller's result type.
struct FetchedResultsOrder {
  /// A result with what orders and sections it, read when it last changed.
  struct Entry {
    /// The result (of the controller's result type).
    var object: ManagedObject
    var sortValues: [Value]
    var section: String
    /// The stored version the object had, to tell a refetched object that changed.
    var version: Int64
  }

  /// The results in order.
  private(set) var entries: [Entry] = []
  /// The sort values each result has in ``entries``: where to find a changed one by a search.
  private var sortValuesByObject: [ObjectIdentifier: [Value]] = [:]
  /// What orders the results, `nil` for primary-key order.
  let sorter: SnapshotSorter?

  init(sorter: SnapshotSorter?) { self.sorter = sorter }

  /// Makes `fetched` the results, sorted.
  mutating func replace(with fetched: [Entry]) {
    var fetched = fetched
    // The fetch sorted by the same descriptors, so the entries are usually in order already: checking
    // that is one comparison per entry and moves none, where sorting copied every entry.
    var index = 1
    while index < fetched.count {
      if precedes(fetched[index], fetched[index - 1]) {
        fetched.sort(by: precedes)
        break
      }
      index += 1
    }
    entries = fetched
    sortValuesByObject = [:]
    sortValuesByObject.reserveCapacity(entries.count)
    for entry in entries { sortValuesByObject[ObjectIdentifier(entry.object)] = entry.sortValues }
  }

  func precedes(_ a: Entry, _ b: Entry) -> Bool {
    guard let sorter else { return SnapshotSorter.primaryKeyOrder(a.object.objectID, b.object.objectID) < 0 }
    return sorter.precedes((a.sortValues, a.object.objectID), (b.sortValues, b.object.objectID))
  }

  /// Puts `arriving` into ``entries`` and ``sortValuesByObject`` where ``insertionIndex(of:)`` would
  /// put each, inserted one after another in their order: sorted, with an entry that ties with an
  /// earlier arriving one before it, as the later insertion at the lower bound would go. A binary search
  /// each, then one pass from the back that moves each later result once (one insertion each cost a
  /// pass per change). Returns where they went (ascending) and who they are.
  mutating func insert(_ arriving: [(index: Int, entry: Entry)]) -> [(flat: Int, key: ObjectIdentifier)] {
    for (_, entry) in arriving { sortValuesByObject[ObjectIdentifier(entry.object)] = entry.sortValues }
    guard arriving.count > 1 else {
      guard let entry = arriving.first?.entry else { return [] }
      let index = insertionIndex(of: entry)
      entries.insert(entry, at: index)
      return [(index, ObjectIdentifier(entry.object))]
    }
    let sorted = arriving.sorted { a, b in
      if precedes(a.entry, b.entry) { return true }
      if precedes(b.entry, a.entry) { return false }
      return a.index > b.index
    }.map(\.entry)
    // Where each goes among the results already there; ascending, since `sorted` is.
    var targets: [Int] = []
    targets.reserveCapacity(sorted.count)
    var low = 0
    for entry in sorted {
      low = insertionIndex(of: entry, from: low)
      targets.append(low)
    }
    entries.append(contentsOf: sorted)
    entries.withUnsafeMutableBufferPointer { Self.spread(sorted, at: targets, in: $0) }
    return sorted.indices.map { (targets[$0] + $0, ObjectIdentifier(sorted[$0].object)) }
  }

  /// Where `entry` goes in ``entries``: before the first result it does not follow, searched from
  /// `start` (the results before it must precede the entry) by probes at doubling distances, then
  /// halving — a few comparisons when the place is near `start`.
  func insertionIndex(of entry: Entry, from start: Int = 0) -> Int {
    var low = start
    var high = entries.count
    var step = 1
    while low + step - 1 < high {
      let probe = low + step - 1
      guard precedes(entries[probe], entry) else {
        high = probe
        break
      }
      low = probe + 1
      step *= 2
    }
    while low < high {
      let mid = (low + high) / 2
      if precedes(entries[mid], entry) { low = mid + 1 } else { high = mid }
    }
    return low
  }

  /// Takes `objects` out of ``entries`` and ``sortValuesByObject``; returns where they were (ascending)
  /// and who they are. Each is found by a search on the sort values it was placed by, in their order,
  /// each search starting where the last one ended; one a search misses (its ID became permanent among
  /// equal sort values) is found in a pass over the rest.
  mutating func remove(_ objects: [ManagedObject]) -> [(flat: Int, key: ObjectIdentifier)] {
    var probes: [Entry] = []
    for object in objects {
      guard let values = sortValuesByObject.removeValue(forKey: ObjectIdentifier(object)) else { continue }
      probes.append(Entry(object: object, sortValues: values, section: "", version: 0))
    }
    probes.sort(by: precedes)
    var found: [(flat: Int, key: ObjectIdentifier)] = []
    var missed = Set<ObjectIdentifier>()
    var start = 0
    for probe in probes {
      let index = insertionIndex(of: probe, from: start)
      if index < entries.count, entries[index].object === probe.object {
        found.append((index, ObjectIdentifier(probe.object)))
        start = index + 1
      } else {
        missed.insert(ObjectIdentifier(probe.object))
      }
    }
    if !missed.isEmpty {
      for (index, entry) in entries.enumerated() where missed.contains(ObjectIdentifier(entry.object)) {
        found.append((index, ObjectIdentifier(entry.object)))
      }
    }
    found.sort { $0.flat < $1.flat }
    guard !found.isEmpty else { return found }
    entries.withUnsafeMutableBufferPointer { Self.compact($0, removing: found.map(\.flat)) }
    entries.removeLast(found.count)
    return found
  }

  /// Moves the elements not at `positions` (ascending) to the front of `buffer`, in order, in one pass
  /// that moves each at most once; the others end up at the back, for the caller to remove.
  static func compact<T>(_ buffer: UnsafeMutableBufferPointer<T>, removing positions: [Int]) {
    guard let first = positions.first else { return }
    var write = first
    var next = 0
    for read in first..<buffer.count {
      if next < positions.count, positions[next] == read {
        next += 1
      } else {
        buffer.swapAt(read, write)
        write += 1
      }
    }
  }

  /// Puts `arriving[i]` before the element that was at `targets[i]` (ascending) among the first
  /// `buffer.count - arriving.count` elements, the ones before it keeping their place: the back of
  /// `buffer` holds copies of `arriving` (appended) on entry. One pass from the back moves each later
  /// element once; the slots between `read` and `write` hold copies of the arriving elements not yet
  /// placed, each overwritten with the one that goes there.
  static func spread<T>(_ arriving: [T], at targets: [Int], in buffer: UnsafeMutableBufferPointer<T>) {
    var read = buffer.count - arriving.count - 1
    var write = buffer.count - 1
    for next in arriving.indices.reversed() {
      while read >= targets[next] {
        buffer.swapAt(read, write)
        read -= 1
        write -= 1
      }
      buffer[write] = arriving[next]
      write -= 1
    }
  }
}
