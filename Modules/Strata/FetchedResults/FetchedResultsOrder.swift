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
    // that is one comparison per entry and moves none, where sorting copied every entry. The entries are
    // compared where they lie: `fetched[index]` copied two entries (their object, values and section)
    // per comparison.
    let inOrder = fetched.withUnsafeBufferPointer { entries in
      var index = 1
      while index < entries.count {
        if precedes(entries[index], entries[index - 1]) { return false }
        index += 1
      }
      return true
    }
    if !inOrder { fetched.sort(by: precedes) }
    entries = fetched
  }

  func precedes(_ a: Entry, _ b: Entry) -> Bool {
    guard let sorter else { return SnapshotSorter.primaryKeyOrder(a.object.objectID, b.object.objectID) < 0 }
    return sorter.precedes((a.sortValues, a.object.objectID), (b.sortValues, b.object.objectID))
  }

  /// The entries of `arriving` in order, an entry that ties with another after it (by `index`) first.
  /// Positions are sorted, not entries, over each entry's sort values and ID read once and compared in
  /// place, one three-way comparison each: moving an entry retained and released its fields, and each
  /// comparison copied the sorter, read the object's ID and ran `precedes` both ways.
  private static func sorted(_ arriving: [(index: Int, entry: Entry)], by sorter: SnapshotSorter?) -> [Entry] {
    let keys = arriving.map { (values: $0.entry.sortValues, id: $0.entry.object.objectID) }
    var order = Array(keys.indices)
    keys.withUnsafeBufferPointer { keys in
      arriving.withUnsafeBufferPointer { arriving in
        guard let sorter else {
          return order.sort { a, b in
            let key = SnapshotSorter.primaryKeyOrder(keys[a].id, keys[b].id)
            return key != 0 ? key < 0 : arriving[a].index > arriving[b].index
          }
        }
        order.sort { a, b in
          let key = sorter.order(keys[a], keys[b])
          return key != 0 ? key < 0 : arriving[a].index > arriving[b].index
        }
      }
    }
    return order.map { arriving[$0].entry }
  }

  /// Takes `objects` out of ``entries`` and puts `arriving` in where ``insertionIndex(of:from:among:)``
  /// puts each among the results that stay, inserted one after another in their order: sorted, with an
  /// entry that ties with an earlier arriving one before it, as the later insertion at the lower bound
  /// would go. One pass over the references finds the objects (``locate(_:)``), a search each places the
  /// arriving ones, and one pass moves each result that stays at most once (``rearrange(_:removing:inserting:at:)``).
  /// Returns where the objects were (ascending) and where the arriving ones went (ascending), with who
  /// they are.
  mutating func update(
    removing objects: [ManagedObject], arriving: [(index: Int, entry: Entry)]
  ) -> (
    removed: [(flat: Int, key: ObjectIdentifier)], arrived: [(flat: Int, key: ObjectIdentifier)]
  ) {
    let removed = locate(objects)
    let sorted = arriving.count > 1 ? Self.sorted(arriving, by: sorter) : arriving.map(\.entry)
    let removedFlats = removed.map(\.flat)
    let among = Survivors(removed: removedFlats, count: entries.count)
    // Where each goes: its index among the results that stay, plus the arriving ones before it.
    var finals: [Int] = []
    finals.reserveCapacity(sorted.count)
    var low = 0
    for (i, entry) in sorted.enumerated() {
      low = insertionIndex(of: entry, from: low, among: among)
      finals.append(low + i)
    }
    Self.rearrange(&entries, removing: removedFlats, inserting: sorted, at: finals)
    return (removed, sorted.indices.map { (finals[$0], ObjectIdentifier(sorted[$0].object)) })
  }

  /// The results that stay while some are taken out: the `i`th of them is at ``position(_:)`` in
  /// ``entries``, found by a binary search over the ones taken out.
  struct Survivors {
    /// For each result taken out, how many stay before it (ascending).
    private let before: [Int]
    /// How many stay.
    let count: Int

    init(removed: [Int], count: Int) {
      before = removed.indices.map { removed[$0] - $0 }
      self.count = count - removed.count
    }

    /// Where the `index`th result that stays is in ``entries``.
    func position(_ index: Int) -> Int { index + before.upperBound(of: index) }
  }

  /// Where `entry` goes among the results that stay: before the first one it does not follow, searched
  /// from `start` (the results before it must precede the entry) by probes at doubling distances, then
  /// halving — a few comparisons when the place is near `start`.
  func insertionIndex(of entry: Entry, from start: Int = 0, among survivors: Survivors) -> Int {
    func precedesEntry(_ index: Int) -> Bool { precedes(entries[survivors.position(index)], entry) }
    var low = start
    var high = survivors.count
    var step = 1
    while low + step - 1 < high {
      let probe = low + step - 1
      guard precedesEntry(probe) else {
        high = probe
        break
      }
      low = probe + 1
      step *= 2
    }
    while low < high {
      let mid = (low + high) / 2
      if precedesEntry(mid) { low = mid + 1 } else { high = mid }
    }
    return low
  }

  /// Where `objects` are in ``entries`` (ascending), and who they are. One pass reads each result's
  /// reference and tests it against a bit filter of the objects' (a multiply, a shift and a bit test);
  /// only the few that pass are looked up in the set. No result is hashed or compared by its sort values,
  /// and none has to be where its sort values say (an object whose ID became permanent among equal sort
  /// values is found all the same).
  func locate(_ objects: [ManagedObject]) -> [(flat: Int, key: ObjectIdentifier)] {
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
    return found
  }

  /// Takes the elements at `removed` (ascending) out of `array` and puts `arriving[i]` at `finals[i]`
  /// (ascending) of the result, the others keeping their order, each moved at most once
  /// (``moveStretches(_:oldCount:removing:finals:)``).
  static func rearrange<T>(_ array: inout [T], removing removed: [Int], inserting arriving: [T], at finals: [Int]) {
    let oldCount = array.count
    let newCount = oldCount - removed.count + arriving.count
    // Placeholders give the array its new size when more arrive than leave; each arriving element
    // overwrites one.
    if newCount > oldCount, let first = arriving.first {
      array.append(contentsOf: repeatElement(first, count: newCount - oldCount))
    }
    array.withUnsafeMutableBufferPointer { moveStretches($0, oldCount: oldCount, removing: removed, finals: finals) }
    for (i, final) in finals.enumerated() { array[final] = arriving[i] }
    if newCount < oldCount { array.removeLast(oldCount - newCount) }
  }

  /// Moves the elements of the first `oldCount` of `buffer` that are not at `removed` (ascending) to the
  /// positions not in `finals` (ascending), in order, each at most once: one `memmove` per stretch between
  /// changed positions (taking out, then putting in, moved most elements twice, one swap at a time). The
  /// removed elements and those past `oldCount` are set aside first and put back afterwards at `finals`
  /// and past the new count, for the caller to overwrite or remove.
  static func moveStretches<T>(_ buffer: UnsafeMutableBufferPointer<T>, oldCount: Int, removing removed: [Int], finals: [Int]) {
    guard let base = buffer.baseAddress, !removed.isEmpty || !finals.isEmpty else { return }
    // Stretches of elements that stay, contiguous before and after.
    var stretches: [(from: Int, to: Int, count: Int)] = []
    stretches.reserveCapacity(removed.count + finals.count + 1)
    var read = 0  // the next old position
    var write = 0  // the next new position
    var nextRemoved = 0
    var nextFinal = 0
    while read < oldCount {
      while nextRemoved < removed.count, removed[nextRemoved] == read {
        nextRemoved += 1
        read += 1
      }
      while nextFinal < finals.count, finals[nextFinal] == write {
        nextFinal += 1
        write += 1
      }
      guard read < oldCount else { break }
      var end = oldCount
      if nextRemoved < removed.count { end = removed[nextRemoved] }
      if nextFinal < finals.count { end = min(end, read + finals[nextFinal] - write) }
      stretches.append((read, write, end - read))
      write += end - read
      read = end
    }
    let newCount = write + (finals.count - nextFinal)
    // The free slots' elements, set aside: their slots are uninitialized until they come back.
    let spare = buffer.count - oldCount
    let aside = UnsafeMutablePointer<T>.allocate(capacity: removed.count + spare)
    defer { aside.deallocate() }
    for (i, position) in removed.enumerated() { (aside + i).moveInitialize(from: base + position, count: 1) }
    (aside + removed.count).moveInitialize(from: base + oldCount, count: spare)
    // A stretch moving left goes after those before it; runs of stretches moving right go last to first.
    // Each then moves into uninitialized slots (or over its own start: `moveInitialize` copies in the
    // direction that allows it), as destinations keep the order of sources.
    var index = 0
    while index < stretches.count {
      let stretch = stretches[index]
      guard stretch.to > stretch.from else {
        if stretch.to < stretch.from { (base + stretch.to).moveInitialize(from: base + stretch.from, count: stretch.count) }
        index += 1
        continue
      }
      var end = index + 1
      while end < stretches.count, stretches[end].to > stretches[end].from { end += 1 }
      for rightward in stretches[index..<end].reversed() {
        (base + rightward.to).moveInitialize(from: base + rightward.from, count: rightward.count)
      }
      index = end
    }
    // The uninitialized slots are now `finals` and those from the new count on: as many as were set aside.
    var next = 0
    for final in finals {
      (base + final).moveInitialize(from: aside + next, count: 1)
      next += 1
    }
    (base + newCount).moveInitialize(from: aside + next, count: removed.count + spare - next)
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
