import Foundation

/// Orders snapshots by sort descriptors the way every backend must (docs/QUERY-SEMANTICS.md):
/// nil first ascending and last descending, strings by the descriptor's `StringComparator` through
/// `StringSemantics.compare(_:_:_:)`, numbers by value, and objects equal under every descriptor in
/// primary-key order (ascending, in both directions).
///
/// ```swift
/// let sorter = try SnapshotSorter([QuerySort("title", comparator: .localizedStandard)], entity: movie, model: model)
/// let ordered = try sorter.sorted(movies, source: source)
/// ```
public struct SnapshotSorter: Sendable {
  /// The sort descriptors, in priority order.
  public let sorts: [QuerySort]
  private let keys: [ResolvedKeyPath]
  /// How each descriptor's value is read, aligned with `keys`: an attribute or to-one of the object
  /// itself by its position, without touching the resolved key path (copying one out of `keys` retains
  /// every description it holds: ~1,500 instructions a value read); `nil` through the key path.
  private let reads: [DirectRead?]
  /// Each descriptor's direction and string comparator, aligned with `sorts`, read by every comparison
  /// without copying the descriptor (and retaining its key path string).
  private let orders: [(ascending: Bool, comparator: StringComparator)]

  /// Checks `sorts` with `QueryValidator.check(_:entity:model:)-([QuerySort],_,_)` and prepares them.
  /// - Throws: `StoreError` `.invalidQuery` for an unknown, transient or to-many key.
  public init(_ sorts: [QuerySort], entity: EntityDescription, model: ObjectModel) throws {
    self.sorts = sorts
    let keys = try sorts.map { try QueryValidator.resolveSortKey($0, entity: entity, model: model) }
    self.keys = keys
    reads = keys.map(DirectRead.init)
    orders = sorts.map { ($0.ascending, $0.comparator) }
  }

  /// `snapshots` in sort order. Without descriptors, in primary-key order.
  /// - Throws: what `source` throws while following to-one key paths.
  public func sorted(_ snapshots: [Snapshot], source: some EvaluationSource) throws -> [Snapshot] {
    var sorted = snapshots
    try sort(&sorted, source: source)
    return sorted
  }

  /// Puts `snapshots` in sort order in place (``sorted(_:source:)``), moving each into its place: a
  /// sorted copy retained every snapshot's arrays once more, and releasing the original released them.
  package func sort(_ snapshots: inout [Snapshot], source: some EvaluationSource) throws {
    let order = try sortedPositions(snapshots, source: source)
    // Each cycle of the permutation is followed once, each snapshot swapped into the place it goes to.
    var placed = [Bool](repeating: false, count: order.count)
    snapshots.withUnsafeMutableBufferPointer { snapshots in
      for start in order.indices where !placed[start] {
        var position = start
        while true {
          placed[position] = true
          let next = order[position]
          if next == start { break }
          // The buffer's swap moves the two snapshots; the array's may copy them.
          snapshots.swapAt(position, next)
          position = next
        }
      }
    }
  }

  /// For each place in sort order, the position in `snapshots` of the snapshot that goes there.
  private func sortedPositions(_ snapshots: [Snapshot], source: some EvaluationSource) throws -> [Int] {
    // Every snapshot's sort values in one flat array and the sort on positions: a row of a snapshot and
    // an array of values per object made an allocation each and moved both through every swap.
    let width = keys.count
    var values: [Value] = []
    values.reserveCapacity(snapshots.count * width)
    // Read where they lie: `for snapshot in snapshots` copied each one (a retain of each of its arrays).
    try snapshots.withUnsafeBufferPointer { snapshots in
      for position in snapshots.indices {
        for index in 0..<width { values.append(try value(index, of: snapshots[position], source)) }
      }
    }
    var order = Array(snapshots.indices)
    values.withUnsafeBufferPointer { values in
      orders.withUnsafeBufferPointer { orders in
        snapshots.withUnsafeBufferPointer { snapshots in
          order.sort { a, b in
            for index in 0..<width {
              var order = Self.compare(
                values[a * width + index], values[b * width + index], comparator: orders[index].comparator)
              if !orders[index].ascending { order = -order }
              if order != 0 { return order < 0 }
            }
            return Self.primaryKeyOrder(snapshots[a].objectID, snapshots[b].objectID) < 0
          }
        }
      }
    }
    return order
  }

  /// The values `snapshot` is sorted by, one per descriptor, for ``precedes(_:_:)``: read once, they
  /// order an object among others without reading them again.
  public func sortValues(of snapshot: Snapshot, source: some EvaluationSource) throws -> [Value] {
    var values: [Value] = []
    values.reserveCapacity(reads.count)
    for index in reads.indices { values.append(try value(index, of: snapshot, source)) }
    return values
  }

  /// The value of descriptor `index` for `snapshot`.
  @inline(__always)
  private func value(_ index: Int, of snapshot: Snapshot, _ source: some EvaluationSource) throws -> Value {
    if let direct = reads[index] { return direct.value(of: snapshot) }
    return try KeyPathReader.value(of: keys[index], from: snapshot, source)
  }

  /// Whether the object with sort values `a.values` and ID `a.id` comes before `b`'s, ties broken by
  /// primary-key order — the order of ``sorted(_:source:)``.
  ///
  /// ```swift
  /// let index = list.partitioningIndex { sorter.precedes((new, newID), ($0.values, $0.id)) }
  /// ```
  public func precedes(_ a: (values: [Value], id: ObjectID), _ b: (values: [Value], id: ObjectID)) -> Bool {
    order(a, b) < 0
  }

  /// Three-way order of the object with sort values `a.values` and ID `a.id` and `b`'s: negative when `a`
  /// comes first (``precedes(_:_:)``), positive when `b` does, zero only for the same ID — one pass over the
  /// values where a sort asking `precedes` both ways makes two.
  ///
  /// ```swift
  /// positions.sort { sorter.order(keys[$0], keys[$1]) < 0 }
  /// ```
  public func order(_ a: (values: [Value], id: ObjectID), _ b: (values: [Value], id: ObjectID)) -> Int {
    for index in orders.indices {
      var order = Self.compare(a.values[index], b.values[index], comparator: orders[index].comparator)
      if !orders[index].ascending { order = -order }
      if order != 0 { return order }
    }
    return Self.primaryKeyOrder(a.id, b.id)
  }

  /// Three-way order of two values for an ascending sort: nil first, strings under `comparator`, numbers
  /// by value, dates chronologically, UUIDs by their uppercase string, data bytewise, booleans as 0/1.
  /// Values without an order between them (object IDs, different kinds) compare as equal.
  ///
  /// ```swift
  /// SnapshotSorter.compare("File2", "file10", comparator: .localizedStandard)   // -1
  /// SnapshotSorter.compare(nil, 3, comparator: .default)                         // -1
  /// ```
  public static func compare(_ a: Value, _ b: Value, comparator: StringComparator) -> Int {
    switch (a, b) {
    case (.null, .null): return 0
    case (.null, _): return -1
    case (_, .null): return 1
    case (.string(let x), .string(let y)): return StringSemantics.compare(x, y, comparator).signum()
    default: return ValueComparison.compare(a, b) ?? 0
    }
  }

  /// Primary-key order of two object IDs: permanent keys ascending, then temporary ones by creation.
  public static func primaryKeyOrder(_ a: ObjectID, _ b: ObjectID) -> Int {
    switch (a.key, b.key) {
    case (.permanent(let x), .permanent(let y)): return x < y ? -1 : (x > y ? 1 : 0)
    case (.permanent, .temporary): return -1
    case (.temporary, .permanent): return 1
    case (.temporary(let x), .temporary(let y)): return x < y ? -1 : (x > y ? 1 : 0)
    }
  }
}
