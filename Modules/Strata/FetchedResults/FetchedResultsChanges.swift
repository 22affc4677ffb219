import Foundation
internal import StrataStoreKit

/// What happened to an object or a section between two states of a ``FetchedResultsController``.
public enum FetchedResultsChangeType: Sendable, Hashable {
  /// An object or section that appeared.
  case insert
  /// An object or section that is gone.
  case delete
  /// An object that changed place (its values may have changed too).
  case move
  /// An object that stayed in place with changed values.
  case update
}

/// One object change between two states of a controller's sections.
public struct FetchedResultsObjectChange: Sendable, Hashable {
  /// What happened to the object.
  public var type: FetchedResultsChangeType
  /// The object's ID in the new state (its old ID too, unless a save made it permanent meanwhile).
  public var objectID: ObjectID
  /// Where the object was: for deletes, moves and updates.
  public var indexPath: IndexPath?
  /// Where the object is now: for inserts, moves and updates.
  public var newIndexPath: IndexPath?
}

/// One section change between two states of a controller's sections.
public struct FetchedResultsSectionChange: Sendable, Hashable {
  /// What happened to the section.
  public var type: FetchedResultsChangeType
  /// The section's name.
  public var name: String
  /// The old index for a delete, the new index for an insert.
  public var index: Int
}

/// The change from one state of a controller's sections to the next, in the form table and collection
/// views apply: remove deleted and moved objects at their old index paths (from the last backwards),
/// remove deleted sections, insert new sections, insert inserted and moved objects at their new index
/// paths (from the first forwards); updates change no position. ``apply(to:)`` does exactly that.
public struct FetchedResultsDifference: Sendable, Hashable {
  /// The section changes, in the order they are to be applied.
  public var sectionChanges: [FetchedResultsSectionChange] = []
  /// The object changes, in the order they are to be applied.
  public var objectChanges: [FetchedResultsObjectChange] = []

  /// Whether nothing changed.
  public var isEmpty: Bool { sectionChanges.isEmpty && objectChanges.isEmpty }

  /// `sections` (section names and the items of each) with the changes applied; `identify` maps an old
  /// item to the ID its change names.
  ///
  /// ```swift
  /// let updated = difference.apply(to: before.sections.map { ($0.name, $0.objectIDs) })
  /// ```
  public func apply(to sections: [(name: String, objectIDs: [ObjectID])]) -> [(name: String, objectIDs: [ObjectID])] {
    var result = sections
    var removals = objectChanges.filter { $0.type == .delete || $0.type == .move }.compactMap(\.indexPath)
    removals.sort { ($0[0], $0[1]) > ($1[0], $1[1]) }
    for path in removals where path[0] < result.count && path[1] < result[path[0]].objectIDs.count {
      result[path[0]].objectIDs.remove(at: path[1])
    }
    for change in sectionChanges.filter({ $0.type == .delete }).sorted(by: { $0.index > $1.index })
    where change.index < result.count {
      result.remove(at: change.index)
    }
    for change in sectionChanges.filter({ $0.type == .insert }).sorted(by: { $0.index < $1.index }) {
      result.insert((change.name, []), at: min(change.index, result.count))
    }
    let insertions = objectChanges.filter { $0.type == .insert || $0.type == .move }
      .compactMap { change in change.newIndexPath.map { ($0, change.objectID) } }
      .sorted { ($0.0[0], $0.0[1]) < ($1.0[0], $1.0[1]) }
    for (path, id) in insertions where path[0] < result.count {
      result[path[0]].objectIDs.insert(id, at: min(path[1], result[path[0]].objectIDs.count))
    }
    return result
  }
}

/// Works out the changes between two states of sections whose items are identified by `Key`.
///
/// Items in both states keep their place when their section survives (the other state has a section of
/// its name — the nth of that name paired with the nth — and the surviving sections keep their relative
/// order), they stay in it, and they belong to a longest run of items whose relative order did not
/// change; every other item in both is a move. Items in `changed` that keep their place are updates.
///
/// Among equally long runs the one kept is patience sorting's over the items in old order: it ends with
/// the last item (in old order) that ends a longest run, and before each item comes the last one before
/// it that ends a run one shorter. Both ways of working the difference out keep that same run, so they
/// report the same changes.
enum SectionDiff {
  struct Section<Key: Hashable> {
    var name: String
    var items: [Key]
  }

  struct Result<Key: Hashable> {
    var deletedSections: [(name: String, index: Int)] = []
    var insertedSections: [(name: String, index: Int)] = []
    var deleted: [(Key, IndexPath)] = []
    var inserted: [(Key, IndexPath)] = []
    var moved: [(Key, from: IndexPath, to: IndexPath)] = []
    var updated: [(Key, from: IndexPath, to: IndexPath)] = []
  }

  static func difference<Key: Hashable>(from old: [Section<Key>], to new: [Section<Key>], changed: Set<Key>) -> Result<Key> {
    var result = Result<Key>()
    let keptAs = sectionChanges(from: old.map(\.name), to: new.map(\.name), into: &result)

    // Positions as (section, item) pairs: an IndexPath allocates, so only reported changes get one.
    var oldPaths: [Key: (section: Int, item: Int)] = [:]
    oldPaths.reserveCapacity(old.reduce(0) { $0 + $1.items.count })
    var oldOrder: [Key] = []
    oldOrder.reserveCapacity(oldPaths.capacity)
    for (s, section) in old.enumerated() {
      for (i, key) in section.items.enumerated() {
        oldPaths[key] = (s, i)
        oldOrder.append(key)
      }
    }
    var newPaths: [Key: (section: Int, item: Int, flat: Int)] = [:]
    newPaths.reserveCapacity(new.reduce(0) { $0 + $1.items.count })
    for (s, section) in new.enumerated() {
      for (i, key) in section.items.enumerated() {
        newPaths[key] = (s, i, newPaths.count)
      }
    }
    // Candidates to stay: in both states, in a kept section of the same name.
    var candidates: [Key] = []
    var candidateFlats: [Int] = []
    for key in oldOrder {
      guard let from = oldPaths[key], let to = newPaths[key] else { continue }
      if keptAs[from.section] == to.section {
        candidates.append(key)
        candidateFlats.append(to.flat)
      }
    }
    let staying = Set(longestIncreasingRun(candidateFlats).map { candidates[$0] })
    for key in oldOrder {
      guard let from = oldPaths[key] else { continue }
      guard let to = newPaths[key] else {
        result.deleted.append((key, path(from.section, from.item)))
        continue
      }
      if !staying.contains(key) {
        result.moved.append((key, path(from.section, from.item), path(to.section, to.item)))
      } else if changed.contains(key) {
        result.updated.append((key, path(from.section, from.item), path(to.section, to.item)))
      }
    }
    for section in new {
      for key in section.items where oldPaths[key] == nil {
        if let to = newPaths[key] { result.inserted.append((key, path(to.section, to.item))) }
      }
    }
    return result
  }

  /// What ``difference(from:to:changed:)`` gives when the only changed items are `removed` (taken out
  /// of the old state at those flat positions, in ascending order) and `arrived` (put into the new state
  /// at those flat positions, ascending), and every other item keeps its relative order — in time that
  /// follows the changes and the sections, not the items: no unchanged item is hashed, indexed or
  /// visited unless the result names it, and `oldKey` (the key at an old section and item) is asked
  /// only for those.
  ///
  /// The unchanged items between two changed positions or section starts (of either state) form a
  /// *piece*: contiguous in both states, in one section of each. Every other item comes before or after
  /// all of a piece in both states, so an increasing run that holds one of its items can hold all of
  /// them, and the longest run ``difference(from:to:changed:)`` picks holds a piece whole or not at all
  /// (``longestWeightedRunMarks(_:weights:)``). The run is worked out over the pieces, each weighted by
  /// its length, and the changed items that come back: about 2k + sections elements for k changes.
  ///
  /// The sections are given by name and size; an item is changed when it is in `removed` or `arrived`.
  static func difference<Key: Hashable>(
    from old: [(name: String, count: Int)], to new: [(name: String, count: Int)],
    removed: [(flat: Int, key: Key)], arrived: [(flat: Int, key: Key)],
    oldKey: (_ section: Int, _ item: Int) -> Key
  ) -> Result<Key> {
    var result = Result<Key>()
    let keptAs = sectionChanges(from: old.map(\.name), to: new.map(\.name), into: &result)
    var arrivedFlats: [Key: Int] = [:]
    arrivedFlats.reserveCapacity(arrived.count)
    for (flat, key) in arrived { arrivedFlats[key] = flat }
    var removedKeys = Set<Key>()
    removedKeys.reserveCapacity(removed.count)
    for (_, key) in removed { removedKeys.insert(key) }
    let oldStarts = starts(of: old.map(\.count))
    let newStarts = starts(of: new.map(\.count))
    let oldTotal = old.reduce(0) { $0 + $1.count }
    /// The section holding new flat position `flat` (the last of the empty ones starting there).
    func newSection(of flat: Int) -> Int { newStarts.upperBound(of: flat) - 1 }
    /// Whether an item may stay when it goes from old section `from` to new section `to`.
    func isCandidate(_ from: Int, _ to: Int) -> Bool {
      to >= 0 && keptAs[from] == to
    }

    // The pieces in old order, and each removed item as a piece of one (at `to` -1 when it is gone).
    var pieces: [Piece] = []
    pieces.reserveCapacity(2 * removed.count + arrived.count + old.count + new.count + 1)
    var read = 0  // the next old position
    var write = 0  // the next new position an unchanged item can take
    var nextRemoved = 0
    var nextArrived = 0
    var oldSection = 0
    var unchangedSection = 0  // the new section of `write`
    while read < oldTotal {
      while oldSection + 1 < oldStarts.count, oldStarts[oldSection + 1] <= read { oldSection += 1 }
      if nextRemoved < removed.count, removed[nextRemoved].flat == read {
        let to = arrivedFlats[removed[nextRemoved].key] ?? -1
        let toSection = to >= 0 ? newSection(of: to) : -1
        pieces.append(
          Piece(from: read, section: oldSection, count: 1, to: to, toSection: toSection, removed: nextRemoved))
        nextRemoved += 1
        read += 1
        continue
      }
      while nextArrived < arrived.count, arrived[nextArrived].flat == write {
        nextArrived += 1
        write += 1
      }
      while unchangedSection + 1 < newStarts.count, newStarts[unchangedSection + 1] <= write { unchangedSection += 1 }
      var end = oldTotal
      if nextRemoved < removed.count { end = min(end, removed[nextRemoved].flat) }
      if nextArrived < arrived.count { end = min(end, read + arrived[nextArrived].flat - write) }
      if oldSection + 1 < oldStarts.count { end = min(end, oldStarts[oldSection + 1]) }
      if unchangedSection + 1 < newStarts.count { end = min(end, read + newStarts[unchangedSection + 1] - write) }
      pieces.append(
        Piece(from: read, section: oldSection, count: end - read, to: write, toSection: unchangedSection, removed: -1))
      write += end - read
      read = end
    }
    let staying = longestWeightedRunMarks(
      pieces.map { isCandidate($0.section, $0.toSection) ? $0.to : -1 }, weights: pieces.map(\.count))

    for (index, piece) in pieces.enumerated() {
      let s = piece.section
      let item = piece.from - oldStarts[s]
      if piece.removed >= 0 {
        let key = removed[piece.removed].key
        guard piece.to >= 0 else {
          result.deleted.append((key, path(s, item)))
          continue
        }
        let toPath = path(piece.toSection, piece.to - newStarts[piece.toSection])
        if staying[index] {
          result.updated.append((key, path(s, item), toPath))
        } else {
          result.moved.append((key, path(s, item), toPath))
        }
      } else if !staying[index] {
        let toItem = piece.to - newStarts[piece.toSection]
        for offset in 0..<piece.count {
          result.moved.append((oldKey(s, item + offset), path(s, item + offset), path(piece.toSection, toItem + offset)))
        }
      }
    }
    for (to, key) in arrived where !removedKeys.contains(key) {
      let toSection = newSection(of: to)
      result.inserted.append((key, path(toSection, to - newStarts[toSection])))
    }
    return result
  }

  /// Unchanged items contiguous in both states and in one section of each, or one removed item.
  private struct Piece {
    /// The old flat position of the first item, and its old section.
    var from: Int
    var section: Int
    var count: Int
    /// The new flat position of the first item (-1 for a removed item that did not come back), and its
    /// new section.
    var to: Int
    var toSection: Int
    /// The index in `removed` of a removed item, -1 for unchanged items.
    var removed: Int
  }

  /// The flat position at which each section of `counts` items starts.
  private static func starts(of counts: [Int]) -> [Int] {
    var starts: [Int] = []
    starts.reserveCapacity(counts.count)
    var total = 0
    for count in counts {
      starts.append(total)
      total += count
    }
    return starts
  }

  private static func path(_ section: Int, _ item: Int) -> IndexPath { IndexPath(indexes: [section, item]) }

  /// Records the deleted and inserted sections in `result`: a section survives when the other state has
  /// one of its name (the nth of a name in one state paired with the nth in the other, as sections whose
  /// sort does not group them can repeat a name); surviving sections must keep their relative order, the
  /// others are deleted and inserted again. Returns, for each old section, the new section it is kept
  /// as, -1 when it is deleted.
  private static func sectionChanges<Key>(from old: [String], to new: [String], into result: inout Result<Key>) -> [Int] {
    // For each name, the next new section of that name not yet paired (-1 when none is left).
    var nextOfName: [String: Int] = [:]
    var nextSameName = [Int](repeating: -1, count: new.count)
    for (j, name) in new.enumerated().reversed() {
      if let following = nextOfName[name] { nextSameName[j] = following }
      nextOfName[name] = j
    }
    var surviving: [(Int, Int)] = []
    for (i, name) in old.enumerated() {
      guard let j = nextOfName[name], j >= 0 else { continue }
      surviving.append((i, j))
      nextOfName[name] = nextSameName[j]
    }
    var keptAs = [Int](repeating: -1, count: old.count)
    var isKept = [Bool](repeating: false, count: new.count)
    for position in longestIncreasingRun(surviving.map(\.1)) {
      let (i, j) = surviving[position]
      keptAs[i] = j
      isKept[j] = true
    }
    for (i, name) in old.enumerated() where keptAs[i] < 0 {
      result.deletedSections.append((name, i))
    }
    for (j, name) in new.enumerated() where !isKept[j] {
      result.insertedSections.append((name, j))
    }
    return keptAs
  }

  /// For each position in `values`, whether it belongs to the heaviest strictly increasing subsequence of
  /// the non-negative values (negative ones are left out), where each value weighs `weights` at its
  /// position — the one ``longestIncreasingRun(_:)`` picks when each value stands for a run of that many
  /// consecutive values. Among equally heavy runs that is the one whose last value comes last, and
  /// before each value the last one (in `values`) that ends a run one lighter: patience sorting's
  /// choice. A Fenwick tree over the values' ranks holds, for each prefix of ranks, the heaviest run
  /// ending there and its last position: n log n for n values, whatever the weights.
  static func longestWeightedRunMarks(_ values: [Int], weights: [Int]) -> [Bool] {
    let ordered = values.indices.filter { values[$0] >= 0 }.sorted { values[$0] < values[$1] }
    var rank = [Int](repeating: -1, count: values.count)
    for (r, position) in ordered.enumerated() { rank[position] = r + 1 }
    // 1-based; an entry covers the ranks its lowest set bit spans, holding (weight, last position).
    var tree = [(weight: Int, position: Int)](repeating: (0, -1), count: ordered.count + 1)
    var previous = [Int](repeating: -1, count: values.count)
    var best = (weight: 0, position: -1)
    for position in values.indices where rank[position] > 0 {
      var before = (weight: 0, position: -1)
      var r = rank[position] - 1
      while r > 0 {
        if tree[r] > before { before = tree[r] }
        r &= r - 1
      }
      previous[position] = before.position
      let run = (weight: before.weight + weights[position], position: position)
      if run > best { best = run }
      r = rank[position]
      while r < tree.count {
        if run > tree[r] { tree[r] = run }
        r += r & -r
      }
    }
    var marks = [Bool](repeating: false, count: values.count)
    var current = best.position
    while current >= 0 {
      marks[current] = true
      current = previous[current]
    }
    return marks
  }

  /// The positions in `values` of one longest strictly increasing subsequence (patience sorting).
  static func longestIncreasingRun(_ values: [Int]) -> [Int] {
    let (previous, last) = patienceChain(values)
    var run: [Int] = []
    var current = last
    while current >= 0 {
      run.append(current)
      current = previous[current]
    }
    return run.reversed()
  }

  /// Patience sorting of `values`: the position of the last value of one longest strictly increasing
  /// subsequence (-1 for none) and, for each position, the one before it in that subsequence.
  ///
  /// Each value goes to the first pile whose top is not below it. The pile after the previous value's
  /// is tried first, which is where a run of increasing values goes: on mostly ordered values (a
  /// controller's results after a few changes) that takes two comparisons instead of a binary search.
  private static func patienceChain(_ values: [Int]) -> (previous: [Int], last: Int) {
    // Through buffers: the arrays' bounds and uniqueness checks were a third of the loop. `tails` is
    // allocated whole and its pages touched as it grows.
    let tails = UnsafeMutableBufferPointer<Int>.allocate(capacity: values.count)  // positions in `values`
    defer { tails.deallocate() }
    var count = 0
    var previous = [Int](repeating: -1, count: values.count)
    previous.withUnsafeMutableBufferPointer { previous in
      values.withUnsafeBufferPointer { values in
        var hint = 0
        for (i, value) in values.enumerated() {
          var low = 0
          var high = count
          if hint <= count, hint == 0 || values[tails[hint - 1]] < value, hint == count || values[tails[hint]] >= value {
            low = hint
            high = hint
          }
          while low < high {
            let mid = (low + high) / 2
            if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
          }
          hint = low + 1
          if low > 0 { previous[i] = tails[low - 1] }
          tails[low] = i
          if low == count { count += 1 }
        }
      }
    }
    return (previous, count > 0 ? tails[count - 1] : -1)
  }
}

extension Array where Element == Int {
  /// In an ascending array, how many elements are not above `value` (the index of the first one above
  /// it): a binary search.
  ///
  /// ```swift
  /// [0, 3, 3, 7].upperBound(of: 3)  // 3
  /// ```
  func upperBound(of value: Int) -> Int {
    var low = 0
    var high = count
    while low < high {
      let mid = (low + high) / 2
      if self[mid] <= value { low = mid + 1 } else { high = mid }
    }
    return low
  }
}
