import Foundation
internal import StrataStoreKit

/// A fetched results controller's results in order, with what orders and sections each: kept in order
/// as objects change by moving only the changed ones, found by a pass that tests each result's reference
/// against a bit filter of the changed ones (``IdentityFilter``), never by hashing every result. Not
/// generic, so its loops compile once, specialised, whatever the controller's result type.
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
  }

  func precedes(_ a: Entry, _ b: Entry) -> Bool {
    guard let sorter else { return SnapshotSorter.primaryKeyOrder(a.object.objectID, b.object.objectID) < 0 }
    return sorter.precedes((a.sortValues, a.object.objectID), (b.sortValues, b.object.objectID))
  }

  /// The entries of `arriving` in order, an entry that ties with another after it (by `index`) first.
  /// Positions are sorted, not entries, over each entry's sort values and ID read once: moving an entry
  /// retained and released its fields, and each comparison copied the sorter and read the object's ID.
  private static func sorted(_ arriving: [(index: Int, entry: Entry)], by sorter: SnapshotSorter?) -> [Entry] {
    let keys = arriving.map { (values: $0.entry.sortValues, id: $0.entry.object.objectID, index: $0.index) }
    var order = Array(keys.indices)
    keys.withUnsafeBufferPointer { keys in
      guard let sorter else {
        return order.sort { a, b in
          let key = SnapshotSorter.primaryKeyOrder(keys[a].id, keys[b].id)
          return key != 0 ? key < 0 : keys[a].index > keys[b].index
        }
      }
      order.sort { a, b in
        if sorter.precedes((keys[a].values, keys[a].id), (keys[b].values, keys[b].id)) { return true }
        if sorter.precedes((keys[b].values, keys[b].id), (keys[a].values, keys[a].id)) { return false }
        return keys[a].index > keys[b].index
      }
    }
    return order.map { arriving[$0].entry }
  }

  /// Puts `arriving` into ``entries`` where ``insertionIndex(of:)`` would
  /// put each, inserted one after another in their order: sorted, with an entry that ties with an
  /// earlier arriving one before it, as the later insertion at the lower bound would go. A binary search
  /// each, then one pass from the back that moves each later result once (one insertion each cost a
  /// pass per change). Returns where they went (ascending) and who they are.
  mutating func insert(_ arriving: [(index: Int, entry: Entry)]) -> [(flat: Int, key: ObjectIdentifier)] {
    guard arriving.count > 1 else {
      guard let entry = arriving.first?.entry else { return [] }
      let index = insertionIndex(of: entry)
      entries.insert(entry, at: index)
      return [(index, ObjectIdentifier(entry.object))]
    }
    let sorted = Self.sorted(arriving, by: sorter)
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

  /// Takes `objects` out of ``entries``; returns where they were (ascending) and who they are. One
  /// pass reads each result's reference and tests it against a bit filter of the objects' (a multiply,
  /// a shift and a bit test); only the few that pass are looked up in the set. No result is hashed or
  /// compared by its sort values, and none has to be where its sort values say (an object whose ID
  /// became permanent among equal sort values is found all the same).
  mutating func remove(_ objects: [ManagedObject]) -> [(flat: Int, key: ObjectIdentifier)] {
    guard !objects.isEmpty, !entries.isEmpty else { return [] }
    let keys = Set(objects.map(ObjectIdentifier.init))
    let filter = IdentityFilter(keys)
    var found: [(flat: Int, key: ObjectIdentifier)] = []
    found.reserveCapacity(keys.count)
    entries.withUnsafeBufferPointer { buffer in
      for index in buffer.indices {
        let key = ObjectIdentifier(buffer[index].object)
        if filter.mayContain(key), keys.contains(key) { found.append((index, key)) }
      }
    }
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

/// A bit for each of a set of objects, at a slot their identity picks: a quick "no" for almost every
/// other object (64 bits per object, so about one in 64 others shares a set bit).
struct IdentityFilter {
  private var bits: [UInt64]
  private let shift: UInt64

  init(_ keys: Set<ObjectIdentifier>) {
    var count = 64
    while count < keys.count * 64 { count *= 2 }
    bits = [UInt64](repeating: 0, count: count / 64)
    shift = UInt64(64 - count.trailingZeroBitCount)
    for key in keys {
      let slot = self.slot(key)
      bits[slot >> 6] |= 1 << UInt64(slot & 63)
    }
  }

  /// Fibonacci hashing of the reference's address: its top bits, after a multiply, name the slot.
  @inline(__always)
  private func slot(_ key: ObjectIdentifier) -> Int {
    Int(truncatingIfNeeded: (UInt64(UInt(bitPattern: key)) &* 0x9E37_79B9_7F4A_7C15) >> shift)
  }

  /// Whether `key` may be one of the set's; `false` means it is not.
  @inline(__always)
  func mayContain(_ key: ObjectIdentifier) -> Bool {
    let slot = self.slot(key)
    return bits[slot >> 6] & (1 << UInt64(slot & 63)) != 0
  }
}
