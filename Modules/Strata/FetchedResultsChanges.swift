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
    let oldSectionIndex = Dictionary(old.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
    let newSectionIndex = Dictionary(new.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
    // Surviving sections must keep their relative order; the others are deleted and inserted again.
    let surviving = old.enumerated().compactMap { i, section in newSectionIndex[section.name].map { (i, $0) } }
    let keptSections = Set(longestIncreasingRun(surviving.map(\.1)).map { surviving[$0].0 })
    for (i, section) in old.enumerated() where !keptSections.contains(i) {
      result.deletedSections.append((section.name, i))
    }
    for (j, section) in new.enumerated() {
      guard let i = oldSectionIndex[section.name], keptSections.contains(i) else {
        result.insertedSections.append((section.name, j))
        continue
      }
    }

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
    func path(_ p: (section: Int, item: Int)) -> IndexPath { IndexPath(indexes: [p.section, p.item]) }
    // Candidates to stay: in both states, in a kept section of the same name.
    var candidates: [Key] = []
    var candidateFlats: [Int] = []
    for key in oldOrder {
      guard let from = oldPaths[key], let to = newPaths[key] else { continue }
      if keptSections.contains(from.section) && old[from.section].name == new[to.section].name {
        candidates.append(key)
        candidateFlats.append(to.flat)
      }
    }
    let staying = Set(longestIncreasingRun(candidateFlats).map { candidates[$0] })
    for key in oldOrder {
      guard let from = oldPaths[key] else { continue }
      guard let to = newPaths[key] else {
        result.deleted.append((key, path(from)))
        continue
      }
      if !staying.contains(key) {
        result.moved.append((key, path(from), path((to.section, to.item))))
      } else if changed.contains(key) {
        result.updated.append((key, path(from), path((to.section, to.item))))
      }
    }
    for section in new {
      for key in section.items where oldPaths[key] == nil {
        if let to = newPaths[key] { result.inserted.append((key, path((to.section, to.item)))) }
      }
    }
    return result
  }

  /// The positions in `values` of one longest strictly increasing subsequence (patience sorting).
  static func longestIncreasingRun(_ values: [Int]) -> [Int] {
    var tails: [Int] = []  // positions in `values`
    var previous = [Int](repeating: -1, count: values.count)
    for (i, value) in values.enumerated() {
      var low = 0
      var high = tails.count
      while low < high {
        let mid = (low + high) / 2
        if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
      }
      if low > 0 { previous[i] = tails[low - 1] }
      if low == tails.count { tails.append(i) } else { tails[low] = i }
    }
    var run: [Int] = []
    var current = tails.last ?? -1
    while current >= 0 {
      run.append(current)
      current = previous[current]
    }
    return run.reversed()
  }
}
