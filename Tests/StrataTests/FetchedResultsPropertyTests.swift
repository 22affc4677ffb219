import Foundation
import Strata
import StrataConformance
import StrataMemory
import Testing

/// Applies what a controller's delegate hears to a copy of the old sections, the way a table view does.
private final class SectionMirror: FetchedResultsControllerDelegate {
  var sections: [(name: String, items: [ObjectIdentifier])] = []
  private var removals: [IndexPath] = []
  private var insertions: [(IndexPath, ObjectIdentifier)] = []
  private var sectionDeletes: [Int] = []
  private var sectionInserts: [(Int, String)] = []
  var reports = 0

  func controllerWillChangeContent(_ controller: any FetchedResultsControlling) {
    removals = []
    insertions = []
    sectionDeletes = []
    sectionInserts = []
  }

  func controller(
    _ controller: any FetchedResultsControlling, didChange sectionInfo: FetchedResultsSectionInfo,
    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType
  ) {
    if type == .delete { sectionDeletes.append(sectionIndex) } else { sectionInserts.append((sectionIndex, sectionInfo.name)) }
  }

  func controller(
    _ controller: any FetchedResultsControlling, didChange object: ManagedObject, at indexPath: IndexPath?,
    for type: FetchedResultsChangeType, newIndexPath: IndexPath?
  ) {
    switch type {
    case .delete: if let indexPath { removals.append(indexPath) }
    case .insert: if let newIndexPath { insertions.append((newIndexPath, ObjectIdentifier(object))) }
    case .move:
      if let indexPath, let newIndexPath {
        removals.append(indexPath)
        insertions.append((newIndexPath, ObjectIdentifier(object)))
      }
    case .update:
      if let indexPath { #expect(sections[indexPath[0]].items[indexPath[1]] == ObjectIdentifier(object)) }
    }
  }

  func controllerDidChangeContent(_ controller: any FetchedResultsControlling) {
    reports += 1
    for path in removals.sorted(by: { ($0[0], $0[1]) > ($1[0], $1[1]) }) { sections[path[0]].items.remove(at: path[1]) }
    for index in sectionDeletes.sorted(by: >) {
      #expect(sections[index].items.isEmpty, "a deleted section is empty once its objects are gone")
      sections.remove(at: index)
    }
    for (index, name) in sectionInserts.sorted(by: { $0.0 < $1.0 }) { sections.insert((name, []), at: index) }
    for (path, item) in insertions.sorted(by: { ($0.0[0], $0.0[1]) < ($1.0[0], $1.0[1]) }) {
      sections[path[0]].items.insert(item, at: path[1])
    }
  }
}

@Suite("Fetched results controller")
struct FetchedResultsPropertyTests {
  /// Thousands of random edits — inserts, deletes, renames that move objects within and across sections,
  /// edits that move nothing, saves and rollbacks — in random batches: after every batch, applying the
  /// reported changes to the old sections gives exactly the controller's new sections, which equal a
  /// fresh fetch.
  @Test func reportedChangesTurnTheOldSectionsIntoTheNew() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    var edits = 0
    for seed in 1...120 {
      let container = PersistentContainer(
        name: "Taters", model: try ObjectModel(Tater.self), types: [Tater.self], registry: registry)
      container.storeDescriptions = [StoreDescription(type: .memory)]
      try container.loadPersistentStores()
      let context = container.newBackgroundContext()
      try context.performAndWait {
        var random = SplitMix64(seed: UInt64(seed))
        let names = [
          "Agria", "Bintje", "Cara", "Charlotte", "Désirée", "duke", "Estima", "Épicure", "Kerr's Pink",
          "Ratte", "ratte", "Russet 10", "Russet 9", "Yukon",
        ]
        func pick() -> String { names[Int(random.next() % UInt64(names.count))] }
        var request = FetchRequest<Tater>(sortDescriptors: [QuerySort("variety", comparator: .localizedStandard)])
        if seed % 3 == 0 { request.predicate = try QueryPredicate(format: "rating >= 2") }
        let controller = FetchedResultsController(
          fetchRequest: request, managedObjectContext: context, sectionName: { Tater.section(of: $0.variety) })
        let mirror = SectionMirror()
        controller.delegate = mirror
        try controller.performFetch()
        var live: [Tater] = []
        for _ in 0..<25 {
          mirror.sections = (controller.sections ?? []).map { ($0.name, $0.objects.map(ObjectIdentifier.init)) }
          for _ in 0..<(1 + Int(random.next() % 4)) {
            edits += 1
            switch random.next() % 10 {
            case 0...2:
              let tater = Tater(context: context)
              tater.variety = pick()
              tater.rating = Int16(random.next() % 6)
              live.append(tater)
            case 3 where !live.isEmpty:
              context.delete(live.remove(at: Int(random.next() % UInt64(live.count))))
            case 4...6 where !live.isEmpty:
              live[Int(random.next() % UInt64(live.count))].variety = pick()
            case 7...8 where !live.isEmpty:
              live[Int(random.next() % UInt64(live.count))].rating = Int16(random.next() % 6)
            case 9:
              if random.next() % 4 == 0 {
                context.rollback()
                live = try context.fetch(FetchRequest<Tater>())
              } else {
                try context.save()
              }
            default:
              break
            }
          }
          context.processPendingChanges()
          let now = (controller.sections ?? []).map { ($0.name, $0.objects.map(ObjectIdentifier.init)) }
          #expect(mirror.sections.map(\.name) == now.map(\.0), "seed \(seed): section names")
          #expect(mirror.sections.map(\.items) == now.map(\.1), "seed \(seed): applying the changes gives the new sections")
          let fresh = try context.fetch(request)
          #expect(controller.fetchedObjects?.map(ObjectIdentifier.init) == fresh.map(ObjectIdentifier.init), "seed \(seed)")
          #expect(now.allSatisfy { !$0.1.isEmpty }, "no empty section")
        }
      }
    }
    #expect(edits > 3_000)
  }
}
