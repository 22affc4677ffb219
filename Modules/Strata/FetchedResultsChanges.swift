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
/// Items in both states keep their place when their section has the same name, its relative order
/// among the surviving sections holds, and they belong to a longest run of items whose relative order
/// did not change; every other item in both is a move. Items in `changed` that keep their place are
/// updates.
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
    let keptSections = sectionChanges(from: old.map(\.name), to: new.map(\.name), into: &result)

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
      if keptSections[from.section] && old[from.section].name == new[to.section].name {
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
  /// at those flat positions, ascending), and every other item keeps its relative order — without
  /// hashing or indexing the unchanged items: one pass over the positions, and `oldKey`/`newKey` (the
  /// key at a section and item) asked only for items the result names.
  ///
  /// The sections are given by name and size; an item is changed when it is in `removed` or `arrived`.
  static func difference<Key: Hashable>(
    from old: [(name: String, count: Int)], to new: [(name: String, count: Int)],
    removed: [(flat: Int, key: Key)], arrived: [(flat: Int, key: Key)],
    oldKey: (_ section: Int, _ item: Int) -> Key
  ) -> Result<Key> {
    var result = Result<Key>()
    let keptSections = sectionChanges(from: old.map(\.name), to: new.map(\.name), into: &result)
    var arrivedFlats: [Key: Int] = [:]
    arrivedFlats.reserveCapacity(arrived.count)
    for (flat, key) in arrived { arrivedFlats[key] = flat }
    var removedKeys = Set<Key>()
    removedKeys.reserveCapacity(removed.count)
    for (_, key) in removed { removedKeys.insert(key) }
    var newStarts: [Int] = []
    newStarts.reserveCapacity(new.count)
    var total = 0
    for section in new {
      newStarts.append(total)
      total += section.count
    }
    /// The section holding new flat position `flat`.
    func newSection(of flat: Int) -> Int {
      var low = 0
      var high = newStarts.count
      while low < high {
        let mid = (low + high) / 2
        if newStarts[mid] <= flat { low = mid + 1 } else { high = mid }
      }
      return low - 1
    }

    // Where each old item is in the new state: its new flat position when it is a candidate to stay,
    // -2 minus it when it is not, -1 when it is gone. One array, as fresh memory for every item costs
    // page faults that a million-result diff notices.
    let oldTotal = old.reduce(0) { $0 + $1.count }
    var destinations = [Int](repeating: -1, count: oldTotal)
    var nextRemoved = 0
    var nextArrived = 0
    var nextNew = 0  // the next new position an unchanged item can take
    var unchangedSection = 0  // the new section of `nextNew`, advanced as it grows
    var flat = 0
    var pair = (from: -1, to: -1, candidate: false)  // the last section pair checked
    // Written through a buffer: the array's checks (bounds, uniqueness) were a third of the loop.
    destinations.withUnsafeMutableBufferPointer { destinations in
      for (s, section) in old.enumerated() {
        for _ in 0..<section.count {
          defer { flat += 1 }
          var to: Int
          var toSection: Int
          if nextRemoved < removed.count, removed[nextRemoved].flat == flat {
            defer { nextRemoved += 1 }
            guard let destination = arrivedFlats[removed[nextRemoved].key] else { continue }
            to = destination
            toSection = newSection(of: to)
          } else {
            while nextArrived < arrived.count, arrived[nextArrived].flat == nextNew {
              nextArrived += 1
              nextNew += 1
            }
            to = nextNew
            nextNew += 1
            while unchangedSection + 1 < newStarts.count, newStarts[unchangedSection + 1] <= to { unchangedSection += 1 }
            toSection = unchangedSection
          }
          if pair.from != s || pair.to != toSection {
            pair = (s, toSection, keptSections[s] && section.name == new[toSection].name)
          }
          destinations[flat] = pair.candidate ? to : -2 - to
        }
      }
    }
    let staying = longestIncreasingRunMarks(destinations)

    nextRemoved = 0
    flat = 0
    for (s, section) in old.enumerated() {
      for item in 0..<section.count {
        defer { flat += 1 }
        let isRemoved = nextRemoved < removed.count && removed[nextRemoved].flat == flat
        if isRemoved { nextRemoved += 1 }
        let destination = destinations[flat]
        if destination == -1 {
          result.deleted.append((removed[nextRemoved - 1].key, path(s, item)))
          continue
        }
        let to = destination >= 0 ? destination : -2 - destination
        guard !staying[flat] || isRemoved else { continue }
        let key = isRemoved ? removed[nextRemoved - 1].key : oldKey(s, item)
        let toSection = newSection(of: to)
        let toPath = path(toSection, to - newStarts[toSection])
        if staying[flat] {
          result.updated.append((key, path(s, item), toPath))
        } else {
          result.moved.append((key, path(s, item), toPath))
        }
      }
    }
    for (to, key) in arrived where !removedKeys.contains(key) {
      let toSection = newSection(of: to)
      result.inserted.append((key, path(toSection, to - newStarts[toSection])))
    }
    return result
  }

  private static func path(_ section: Int, _ item: Int) -> IndexPath { IndexPath(indexes: [section, item]) }

  /// Records the deleted and inserted sections in `result`: surviving sections (a name in both) must
  /// keep their relative order, the others are deleted and inserted again. Returns, for each old
  /// section, whether it is kept.
  private static func sectionChanges<Key>(from old: [String], to new: [String], into result: inout Result<Key>) -> [Bool] {
    let oldSectionIndex = Dictionary(old.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
    let newSectionIndex = Dictionary(new.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
    let surviving = old.enumerated().compactMap { i, name in newSectionIndex[name].map { (i, $0) } }
    var kept = [Bool](repeating: false, count: old.count)
    for position in longestIncreasingRun(surviving.map(\.1)) { kept[surviving[position].0] = true }
    for (i, name) in old.enumerated() where !kept[i] {
      result.deletedSections.append((name, i))
    }
    for (j, name) in new.enumerated() {
      guard let i = oldSectionIndex[name], kept[i] else {
        result.insertedSections.append((name, j))
        continue
      }
    }
    return kept
  }

  /// For each position in `values`, whether it belongs to the longest strictly increasing subsequence
  /// of the non-negative values that ``longestIncreasingRun(_:)`` picks from them (negative values are
  /// left out) — without an array of the values kept.
  static func longestIncreasingRunMarks(_ values: [Int]) -> [Bool] {
    let (previous, last) = patienceChain(values, skippingNegative: true)
    var marks = [Bool](repeating: false, count: values.count)
    var current = last
    while current >= 0 {
      marks[current] = true
      current = previous[current]
    }
    return marks
  }

  /// The positions in `values` of one longest strictly increasing subsequence (patience sorting).
  static func longestIncreasingRun(_ values: [Int]) -> [Int] {
    let (previous, last) = patienceChain(values, skippingNegative: false)
    var run: [Int] = []
    var current = last
    while current >= 0 {
      run.append(current)
      current = previous[current]
    }
    return run.reversed()
  }

  /// Patience sorting of `values` (without the negative ones when `skippingNegative`): the position of the
  /// last value of one longest strictly increasing subsequence (-1 for none) and, for each position, the
  /// one before it in that subsequence.
  ///
  /// Each value goes to the first pile whose top is not below it. The pile after the previous value's
  /// is tried first, which is where a run of increasing values goes: on mostly ordered values (a
  /// controller's results after a few changes) that takes two comparisons instead of a binary search.
  private static func patienceChain(_ values: [Int], skippingNegative: Bool) -> (previous: [Int], last: Int) {
    // Through buffers: the arrays' bounds and uniqueness checks were a third of the loop. `tails` is
    // allocated whole and its pages touched as it grows.
    let tails = UnsafeMutableBufferPointer<Int>.allocate(capacity: values.count)  // positions in `values`
    defer { tails.deallocate() }
    var count = 0
    var previous = [Int](repeating: -1, count: values.count)
    previous.withUnsafeMutableBufferPointer { previous in
      values.withUnsafeBufferPointer { values in
        var hint = 0
        for (i, value) in values.enumerated() where value >= 0 || !skippingNegative {
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
