internal import StrataStoreKit

/// The position of each of a list of IDs, found without hashing an ID per lookup: a prefetch sorts
/// every target to its source by the owner ID the target holds, a lookup per target.
///
/// IDs of one entity in one store (a hop's sources, always) are looked up by primary key: in a table
/// indexed by key when the keys are dense (as a store hands them out), else by binary search in the
/// sorted keys. Other lists use a dictionary. A repeated ID has the position of its first occurrence.
struct IDPositions {
  /// An ID of the entity and store of every ID, when they share one and are all permanent.
  private let scope: ObjectID?
  /// Dense keys: `slots[pk - base]` is the position plus one, 0 where no ID has that key.
  private let base: Int64
  private let slots: [Int32]
  /// Sparse keys: in ascending order (each once), with the position of each.
  private let keys: [Int64]
  private let positions: [Int32]
  /// IDs of several entities or stores, or temporary ones.
  private let hashed: [ObjectID: Int]

  init(_ ids: [ObjectID]) {
    var base: Int64 = 0
    var slots: [Int32] = []
    var keys: [Int64] = []
    var positions: [Int32] = []
    var hashed: [ObjectID: Int] = [:]
    let scope = Self.sharedScope(ids)
    if scope != nil, let (low, high) = Self.keyRange(ids) {
      let (span, overflow) = high.subtractingReportingOverflow(low)
      if !overflow, span < 4 * Int64(ids.count) + 64 {
        base = low
        slots = [Int32](repeating: 0, count: Int(span) + 1)
        for (position, id) in ids.enumerated() {
          let slot = Int((id.primaryKey ?? low) - low)
          if slots[slot] == 0 { slots[slot] = Int32(position + 1) }
        }
      } else {
        var pairs = ids.enumerated().map { (key: $0.element.primaryKey ?? 0, position: Int32($0.offset)) }
        pairs.sort { $0.key != $1.key ? $0.key < $1.key : $0.position < $1.position }
        keys.reserveCapacity(pairs.count)
        positions.reserveCapacity(pairs.count)
        for pair in pairs where keys.last != pair.key {
          keys.append(pair.key)
          positions.append(pair.position)
        }
      }
    } else {
      hashed = Dictionary(zip(ids, ids.indices), uniquingKeysWith: { first, _ in first })
    }
    self.scope = scope
    self.base = base
    self.slots = slots
    self.keys = keys
    self.positions = positions
    self.hashed = hashed
  }

  /// The first ID, when every ID is permanent and of its entity and store (and there are fewer than
  /// `Int32.max`).
  private static func sharedScope(_ ids: [ObjectID]) -> ObjectID? {
    guard let first = ids.first, ids.count < Int(Int32.max) else { return nil }
    for id in ids where id.isTemporary || !id.hasSameEntityAndStore(as: first) { return nil }
    return first
  }

  private static func keyRange(_ ids: [ObjectID]) -> (low: Int64, high: Int64)? {
    guard var low = ids.first?.primaryKey else { return nil }
    var high = low
    for id in ids {
      guard let pk = id.primaryKey else { return nil }
      low = min(low, pk)
      high = max(high, pk)
    }
    return (low, high)
  }

  /// The position of the first occurrence of `id`, `nil` when the list does not hold it.
  func position(of id: ObjectID) -> Int? {
    guard let scope else { return hashed[id] }
    guard id.hasSameEntityAndStore(as: scope), let pk = id.primaryKey else { return nil }
    if !slots.isEmpty {
      let (offset, overflow) = pk.subtractingReportingOverflow(base)
      guard !overflow, offset >= 0, offset < Int64(slots.count) else { return nil }
      let slot = slots[Int(offset)]
      return slot == 0 ? nil : Int(slot) - 1
    }
    var low = 0
    var high = keys.count
    while low < high {
      let middle = (low + high) / 2
      if keys[middle] < pk { low = middle + 1 } else { high = middle }
    }
    return low < keys.count && keys[low] == pk ? Int(positions[low]) : nil
  }
}
