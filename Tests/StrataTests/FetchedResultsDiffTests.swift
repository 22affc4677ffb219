import Foundation
import StrataConformance
import StrataMemory
import Testing

@testable import Strata

/// Records every call the delegate hears, in order, naming objects by identity.
private final class ReportRecorder: FetchedResultsControllerDelegate {
  var log: [String] = []

  func controller(
    _ controller: any FetchedResultsControlling, didChange sectionInfo: FetchedResultsSectionInfo,
    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType
  ) {
    log.append("section \(type) \(sectionIndex) \(sectionInfo.name)")
  }

  func controller(
    _ controller: any FetchedResultsControlling, didChange object: ManagedObject, at indexPath: IndexPath?,
    for type: FetchedResultsChangeType, newIndexPath: IndexPath?
  ) {
    log.append(entry(type, ObjectIdentifier(object), indexPath, newIndexPath))
  }
}

private func entry(_ type: FetchedResultsChangeType, _ key: ObjectIdentifier, _ from: IndexPath?, _ to: IndexPath?) -> String {
  "\(type) \(key.hashValue) \(from.map { "\($0)" } ?? "-") \(to.map { "\($0)" } ?? "-")"
}

/// What the delegate should hear for `diff`, in the order the controller reports.
private func expectedLog(_ diff: SectionDiff.Result<ObjectIdentifier>) -> [String] {
  diff.deletedSections.map { "section delete \($0.index) \($0.name)" }
    + diff.insertedSections.map { "section insert \($0.index) \($0.name)" }
    + diff.deleted.map { entry(.delete, $0.0, $0.1, nil) } + diff.inserted.map { entry(.insert, $0.0, nil, $0.1) }
    + diff.moved.map { entry(.move, $0.0, $0.from, $0.to) } + diff.updated.map { entry(.update, $0.0, $0.from, $0.to) }
}

private func describe<Key>(_ result: SectionDiff.Result<Key>) -> [String] {
  result.deletedSections.map { "section delete \($0.index) \($0.name)" }
    + result.insertedSections.map { "section insert \($0.index) \($0.name)" }
    + result.deleted.map { "delete \($0.0) \($0.1)" } + result.inserted.map { "insert \($0.0) \($0.1)" }
    + result.moved.map { "move \($0.0) \($0.from) \($0.to)" } + result.updated.map { "update \($0.0) \($0.from) \($0.to)" }
}

@Suite("Fetched results differences")
struct FetchedResultsDiffTests {
  /// The difference worked out from the changed items' positions alone equals the one worked out from
  /// every item of both states, over random states: sections whose names repeat or come back in another
  /// order, changed items taken out and put back anywhere, deleted and inserted ones.
  @Test func positionalDifferenceEqualsTheFullOne() {
    for seed in 1...400 {
      var random = SplitMix64(seed: UInt64(seed))
      func below(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
      let names = ["A", "B", "C", "D", "E"].prefix(1 + below(5))
      // The old state: items 0..<count with a section name each, sections being runs of one name.
      let count = below(60)
      var nextKey = 0
      var old: [(key: Int, name: String)] = []
      for _ in 0..<count {
        old.append((nextKey, names.randomElement(using: &random) ?? "A"))
        nextKey += 1
      }
      // Changed items leave; some come back, with a name of their own, among new ones.
      let changedCount = below(count / 3 + 2)
      var changed = Set<Int>()
      for _ in 0..<changedCount where count > 0 { changed.insert(old[below(count)].key) }
      var removed: [(flat: Int, key: Int)] = []
      var survivors: [(key: Int, name: String)] = []
      for (flat, item) in old.enumerated() {
        if changed.contains(item.key) { removed.append((flat, item.key)) } else { survivors.append(item) }
      }
      var arriving = changed.filter { _ in below(4) != 0 }.map { $0 }
      for _ in 0..<below(6) {
        arriving.append(nextKey)
        nextKey += 1
      }
      arriving.shuffle(using: &random)
      var new = survivors
      for key in arriving {
        new.insert((key, names.randomElement(using: &random) ?? "A"), at: below(new.count + 1))
      }
      let arrivingSet = Set(arriving)
      let arrived = new.enumerated().filter { arrivingSet.contains($0.element.key) }.map {
        (flat: $0.offset, key: $0.element.key)
      }

      func sections(_ items: [(key: Int, name: String)]) -> [SectionDiff.Section<Int>] {
        var result: [SectionDiff.Section<Int>] = []
        for item in items {
          if result.last?.name == item.name {
            result[result.count - 1].items.append(item.key)
          } else {
            result.append(SectionDiff.Section(name: item.name, items: [item.key]))
          }
        }
        return result
      }
      let oldSections = sections(old)
      let newSections = sections(new)
      let full = SectionDiff.difference(from: oldSections, to: newSections, changed: changed.union(arrivingSet))
      let positional = SectionDiff.difference(
        from: oldSections.map { ($0.name, $0.items.count) }, to: newSections.map { ($0.name, $0.items.count) },
        removed: removed, arrived: arrived, oldKey: { oldSections[$0].items[$1] })
      #expect(describe(positional) == describe(full), "seed \(seed)")
    }
  }

  /// The positional difference equals the one from every item, applying it to the old sections gives the
  /// new ones, and it keeps as many items in place as a longest run does (worked out here by quadratic
  /// dynamic programming): over random states with empty sections, names that repeat or go, sections cut
  /// anywhere in the new order (so unchanged items cross from one to another), nothing or everything
  /// changed, arrivals at both ends, and large states with few changes.
  @Test(arguments: ["random", "none changed", "all changed", "arrivals at the ends", "large, few changes"])
  func positionalDifferenceIsValidMinimalAndEqualsTheFullOne(_ shape: String) {
    for seed in 1...(shape.hasPrefix("large") ? 12 : 300) {
      var random = SplitMix64(seed: UInt64(seed) &* 7_919 &+ UInt64(shape.count))
      func below(_ n: Int) -> Int { n > 0 ? Int(random.next() % UInt64(n)) : 0 }
      let pool = ["A", "B", "C", "D", "E", "F"]
      /// Names for `count` sections (repeats allowed) and cuts of `total` items among them (empty ones too).
      func sections(_ items: [Int], names: Int) -> [SectionDiff.Section<Int>] {
        let count = items.isEmpty && below(3) == 0 ? 0 : 1 + below(names)
        let cuts = ([0] + (1..<max(count, 1)).map { _ in below(items.count + 1) }.sorted() + [items.count])
        return (0..<count).map { i in
          SectionDiff.Section(name: pool[below(pool.count)], items: Array(items[cuts[i]..<cuts[i + 1]]))
        }
      }
      let large = shape.hasPrefix("large")
      let count = large ? 2_000 + below(3_000) : below(50)
      let oldItems = Array(0..<count)
      let old = sections(oldItems, names: large ? 8 : 5)
      var changed = Set<Int>()
      switch shape {
      case "none changed": break
      case "all changed": changed = Set(oldItems)
      case "large, few changes": for _ in 0..<(1 + below(12)) { changed.insert(below(count)) }
      default: for _ in 0..<below(count / 3 + 2) where count > 0 { changed.insert(below(count)) }
      }
      var nextKey = count
      var arriving = changed.filter { _ in below(4) != 0 }.sorted()
      for _ in 0..<(shape == "none changed" ? 0 : below(5)) {
        arriving.append(nextKey)
        nextKey += 1
      }
      arriving.shuffle(using: &random)
      var newItems = oldItems.filter { !changed.contains($0) }
      for key in arriving {
        let position = shape == "arrivals at the ends" ? (below(2) == 0 ? 0 : newItems.count) : below(newItems.count + 1)
        newItems.insert(key, at: position)
      }
      let new = sections(newItems, names: large ? 8 : 5)
      let arrivingSet = Set(arriving)
      let removed = oldItems.enumerated().filter { changed.contains($0.element) }.map { (flat: $0.offset, key: $0.element) }
      let arrived = newItems.enumerated().filter { arrivingSet.contains($0.element) }.map {
        (flat: $0.offset, key: $0.element)
      }

      let full = SectionDiff.difference(from: old, to: new, changed: changed.union(arrivingSet))
      let positional = SectionDiff.difference(
        from: old.map { ($0.name, $0.items.count) }, to: new.map { ($0.name, $0.items.count) },
        removed: removed, arrived: arrived, oldKey: { old[$0].items[$1] })
      #expect(describe(positional) == describe(full), "equal to the full one: \(shape), seed \(seed)")

      func objectID(_ key: Int) -> ObjectID { ObjectID(entityName: "Item", storeIdentifier: "S", primaryKey: Int64(key)) }
      var difference = FetchedResultsDifference()
      difference.sectionChanges =
        positional.deletedSections.map { FetchedResultsSectionChange(type: .delete, name: $0.name, index: $0.index) }
        + positional.insertedSections.map { FetchedResultsSectionChange(type: .insert, name: $0.name, index: $0.index) }
      difference.objectChanges =
        positional.deleted.map { FetchedResultsObjectChange(type: .delete, objectID: objectID($0.0), indexPath: $0.1) }
        + positional.inserted.map { FetchedResultsObjectChange(type: .insert, objectID: objectID($0.0), newIndexPath: $0.1) }
        + positional.moved.map {
          FetchedResultsObjectChange(type: .move, objectID: objectID($0.0), indexPath: $0.from, newIndexPath: $0.to)
        }
        + positional.updated.map {
          FetchedResultsObjectChange(type: .update, objectID: objectID($0.0), indexPath: $0.from, newIndexPath: $0.to)
        }
      let applied = difference.apply(to: old.map { ($0.name, $0.items.map(objectID)) })
      let valid = applied.map(\.name) == new.map(\.name) && applied.map(\.objectIDs) == new.map { $0.items.map(objectID) }
      #expect(valid, "valid: \(shape), seed \(seed)")

      // Minimal: the items kept in place are as many as the longest run of candidates (in both states,
      // in a kept section of the same name) whose new positions increase.
      if !large {
        // The surviving sections, in order, are the old ones not deleted and the new ones not inserted.
        let deletedSections = Set(positional.deletedSections.map(\.index))
        let insertedSections = Set(positional.insertedSections.map(\.index))
        let pairs = Dictionary(
          uniqueKeysWithValues: zip(
            old.indices.filter { !deletedSections.contains($0) }, new.indices.filter { !insertedSections.contains($0) }))
        var newPlace: [Int: (flat: Int, section: Int)] = [:]
        for (flat, item) in new.enumerated().flatMap({ s, section in section.items.map { (key: $0, section: s) } }).enumerated() {
          newPlace[item.key] = (flat, item.section)
        }
        let candidates = old.enumerated().flatMap { s, section in
          section.items.compactMap { key -> Int? in
            guard let place = newPlace[key], pairs[s] == place.section else { return nil }
            return place.flat
          }
        }
        var longest = [Int](repeating: 1, count: candidates.count)
        for i in candidates.indices {
          for j in 0..<i where candidates[j] < candidates[i] { longest[i] = max(longest[i], longest[j] + 1) }
        }
        let inBoth = old.flatMap(\.items).filter { newPlace[$0] != nil }.count
        #expect(inBoth - positional.moved.count == (longest.max() ?? 0), "minimal: \(shape), seed \(seed)")
      }
    }
  }

  /// Rearranging in place (the removed taken out, the arriving put at their final positions, each other
  /// element moved at most once) gives what building the new array one element at a time gives, and
  /// releases exactly the removed elements, over random removals and arrivals anywhere.
  @Test func rearrangingInPlaceEqualsRebuilding() {
    final class Item {
      let value: Int
      init(_ value: Int) { self.value = value }
    }
    for seed in 1...500 {
      var random = SplitMix64(seed: UInt64(seed))
      func below(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
      let count = below(40)
      var array = (0..<count).map { Item($0) }
      let removed = (0..<count).filter { _ in below(4) == 0 }
      let arrivingCount = below(12)
      let newCount = count - removed.count + arrivingCount
      var finals = Array(0..<newCount)
      finals.shuffle(using: &random)
      finals = Array(finals.prefix(arrivingCount)).sorted()
      let arriving = (0..<arrivingCount).map { Item(1_000 + $0) }
      var expected: [Int] = []
      var survivors = (0..<count).filter { !removed.contains($0) }.makeIterator()
      var nextArrival = 0
      for position in 0..<newCount {
        if nextArrival < finals.count, finals[nextArrival] == position {
          expected.append(1_000 + nextArrival)
          nextArrival += 1
        } else if let survivor = survivors.next() {
          expected.append(survivor)
        }
      }
      weak let firstRemoved = removed.first.map { array[$0] }
      FetchedResultsOrder.rearrange(&array, removing: removed, inserting: arriving, at: finals)
      #expect(array.map(\.value) == expected, "seed \(seed)")
      #expect(firstRemoved == nil, "seed \(seed)")
      var objects = (0..<count).map { Item($0) }
      if newCount > count, let first = arriving.first {
        objects.append(contentsOf: repeatElement(first, count: newCount - count))
      }
      objects.withUnsafeMutableBufferPointer { buffer in
        buffer.withMemoryRebound(to: UnsafeMutableRawPointer?.self) {
          FetchedResultsOrder.moveStretches($0, oldCount: count, removing: removed, finals: finals)
        }
      }
      for (i, final) in finals.enumerated() { objects[final] = arriving[i] }
      if newCount < count { objects.removeLast(count - newCount) }
      #expect(objects.map(\.value) == expected, "seed \(seed)")
    }
  }

  /// A controller sorted by two keys with many ties (rating descending, then variety), in sections by
  /// rating, by variety (sections the sort does not group, so names repeat) or in one section (which the
  /// controller changes in place), after random batches of inserts, deletes and edits of either key: the delegate hears
  /// exactly, in the same order, what the difference worked out from scratch between the sections before
  /// and after gives, and the sections equal a fresh fetch. 60 seeds; `STRATA_FRC_SEEDS` sets another count
  /// (at least 12, the period of the seed-chosen sectioning, saving and filtering).
  @Test func reportsEqualTheDifferenceFromScratch() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    var reports = 0
    let seeds = ProcessInfo.processInfo.environment["STRATA_FRC_SEEDS"].flatMap { Int($0) }.map { max(12, $0) } ?? 60
    for seed in 1...seeds {
      let container = PersistentContainer(
        name: "Taters", model: try ObjectModel(Tater.self), types: [Tater.self], registry: registry)
      container.storeDescriptions = [StoreDescription(type: .memory)]
      try container.loadPersistentStores()
      let context = container.newBackgroundContext()
      try context.performAndWait {
        var random = SplitMix64(seed: UInt64(seed))
        func below(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        let names = ["Agria", "Bintje", "Cara", "Désirée", "duke", "Ratte", "ratte"]
        var live: [Tater] = []
        for _ in 0..<(20 + below(60)) {
          let tater = Tater(context: context)
          tater.variety = names[below(names.count)]
          tater.rating = Int16(below(4))
          live.append(tater)
        }
        if seed % 2 == 0 { try context.save() }
        var request = FetchRequest<Tater>(sortDescriptors: [
          QuerySort("rating", ascending: false), QuerySort("variety", comparator: .localizedStandard),
        ])
        if seed % 3 == 0 { request.predicate = try QueryPredicate(format: "rating >= 1") }
        let controller = FetchedResultsController(
          fetchRequest: request, managedObjectContext: context,
          sectionNameKeyPath: seed % 2 == 1 ? nil : seed % 4 == 0 ? "rating" : "variety")
        let recorder = ReportRecorder()
        controller.delegate = recorder
        try controller.performFetch()
        for _ in 0..<30 {
          let before = (controller.sections ?? []).map {
            SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init))
          }
          var touched = Set<ObjectIdentifier>()
          for _ in 0..<(1 + below(8)) {
            switch below(10) {
            case 0...1:
              let tater = Tater(context: context)
              tater.variety = names[below(names.count)]
              tater.rating = Int16(below(4))
              live.append(tater)
              touched.insert(ObjectIdentifier(tater))
            case 2 where !live.isEmpty:
              let tater = live.remove(at: below(live.count))
              context.delete(tater)
              touched.insert(ObjectIdentifier(tater))
            case 3...5 where !live.isEmpty:
              let tater = live[below(live.count)]
              guard !touched.contains(ObjectIdentifier(tater)) else { break }
              tater.variety = names.filter { $0 != tater.variety }[below(names.count - 1)]
              touched.insert(ObjectIdentifier(tater))
            case 6...8 where !live.isEmpty:
              let tater = live[below(live.count)]
              guard !touched.contains(ObjectIdentifier(tater)) else { break }
              tater.rating = (tater.rating + Int16(1 + below(3))) % 4
              touched.insert(ObjectIdentifier(tater))
            default:
              break
            }
          }
          recorder.log = []
          context.processPendingChanges()
          let after = (controller.sections ?? []).map {
            SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init))
          }
          let expected = expectedLog(SectionDiff.difference(from: before, to: after, changed: touched))
          #expect(recorder.log == expected, "seed \(seed)")
          let fresh = try context.fetch(request)
          #expect(controller.fetchedObjects?.map(ObjectIdentifier.init) == fresh.map(ObjectIdentifier.init), "seed \(seed)")
          let refetched = FetchedResultsController(
            fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: controller.sectionNameKeyPath)
          try refetched.performFetch()
          let sectionsNow = (controller.sections ?? []).map { ($0.name, $0.indexTitle, $0.objects.map(ObjectIdentifier.init)) }
          let sectionsFresh = (refetched.sections ?? []).map { ($0.name, $0.indexTitle, $0.objects.map(ObjectIdentifier.init)) }
          #expect(sectionsNow.elementsEqual(sectionsFresh, by: ==), "seed \(seed)")
          if !expected.isEmpty { reports += 1 }
          if below(4) == 0 { try context.save() }
        }
      }
    }
    #expect(reports > seeds * 50 / 3, "most of the \(seeds * 30) batches change the results")
  }
}
