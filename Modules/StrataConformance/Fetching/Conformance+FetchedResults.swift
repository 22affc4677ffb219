import Foundation
import Strata
import StrataStoreKit
import Testing

/// The fetched-results areas' model: potatoes with a variety (the sort and section key) and a rating.
public final class Tater: ManagedObject {
  /// The variety: the sort and section key.
  @Attribute public var variety: String
  /// A rating from 0 to 5.
  @Attribute public var rating: Int16
  /// The concurrent writer that inserted the potato, in the load area.
  @Attribute public var writer: Int16
}

extension Conformance {
  /// A fetched results controller follows local edits and saves of other contexts merged in, in
  /// sections; its delegate hears will/did around every change; the async snapshots agree.
  public static func fetchedResults(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.container(types: [Tater.self])
    let view = container.newBackgroundContext()
    view.automaticallyMergesChangesFromParent = true
    let recorder = ChangeRecorder()
    let controller = FetchedResultsController(
      fetchRequest: FetchRequest<Tater>(sortDescriptors: [QuerySort("variety", comparator: .localizedStandard)]),
      managedObjectContext: view, sectionName: { Tater.section(of: $0.variety) })
    try view.performAndWait { try expectLocalChangesReported(in: view, by: controller, to: recorder) }

    // Another context's save, merged automatically.
    let stream = controller.snapshots()
    let background = container.newBackgroundContext()
    try await background.perform {
      let extra = Tater(context: background)
      extra.variety = "Charlotte"
      let duke = try #require(try background.fetch(FetchRequest<Tater>(format: "variety == 'duke'")).first)
      background.delete(duke)
      try background.save()
    }
    let expected = ["Agria", "Cara", "Charlotte", "Désirée"]
    let latest = Locked<[ObjectID]>([])
    let listener = Task {
      for await snapshot in stream { latest.withLock { $0 = snapshot.sections.flatMap(\.objectIDs) } }
    }
    defer { listener.cancel() }
    var varieties: [String] = []
    for _ in 0..<400 {
      varieties = view.performAndWait { controller.fetchedObjects?.map(\.variety) ?? [] }
      if varieties == expected { break }
      try await Task.sleep(for: .milliseconds(25))
    }
    #expect(varieties == expected)
    try await Task.sleep(for: .milliseconds(50))
    let streamed = latest.withLock { $0 }
    #expect(view.performAndWait { streamed.map { (view.object(with: $0) as? Tater)?.variety ?? "?" } } == expected)
  }

  /// The view context's own inserts, a save, an edit in place and an edit that moves an object to another
  /// section: the controller's sections, objects and delegate calls follow each.
  private static func expectLocalChangesReported(
    in view: ObjectContext, by controller: FetchedResultsController<Tater>, to recorder: ChangeRecorder
  ) throws {
    controller.delegate = recorder
    try controller.performFetch()
    #expect(controller.sections?.isEmpty == true || controller.fetchedObjects?.isEmpty == true)
    for variety in ["Bintje", "Désirée", "Agria", "duke"] {
      let tater = Tater(context: view)
      tater.variety = variety
    }
    view.processPendingChanges()
    #expect(controller.sections?.map(\.name) == ["A", "B", "D"])
    #expect(controller.fetchedObjects?.map(\.variety) == ["Agria", "Bintje", "Désirée", "duke"])
    #expect(recorder.log.first == "will" && recorder.log.last == "did")
    #expect(recorder.log.filter { $0.hasPrefix("insert") }.count == 4)
    #expect(recorder.log.filter { $0.hasPrefix("section insert") }.count == 3)
    try view.save()
    let bintje = try #require(controller.fetchedObjects?[1])
    #expect(controller.indexPath(for: bintje) == IndexPath(indexes: [1, 0]))
    recorder.log = []
    bintje.rating = 5
    view.processPendingChanges()
    #expect(recorder.log == ["will", "update 1.0→1.0", "did"])
    recorder.log = []
    bintje.variety = "Cara"
    view.processPendingChanges()
    #expect(controller.sections?.map(\.name) == ["A", "C", "D"])
    #expect(recorder.log.contains("section delete 1 B") && recorder.log.contains("section insert 1 C"))
    try view.save()
  }

  /// Under load: four background contexts insert and edit while a controller on a merging context
  /// follows; in the end nothing is lost or duplicated and the controller equals a fresh fetch.
  public static func fetchedResultsUnderLoad(_ backend: ConformanceBackend, operations: Int = 10_000) async throws {
    let (container, _) = try backend.container(types: [Tater.self])
    let view = container.newBackgroundContext()
    view.automaticallyMergesChangesFromParent = true
    let request = FetchRequest<Tater>(sortDescriptors: [QuerySort("variety", comparator: .localizedStandard)])
    let controller = FetchedResultsController(
      fetchRequest: request, managedObjectContext: view, sectionName: { Tater.section(of: $0.variety) })
    let recorder = ChangeRecorder()
    try view.performAndWait {
      controller.delegate = recorder
      try controller.performFetch()
    }
    let inserted = try await insertAndEditConcurrently(in: container, writers: 4, operations: operations)
    let stored = try container.newBackgroundContext().count(for: request)
    #expect(stored == inserted)

    // Merges reach the view context asynchronously: wait until they have all arrived.
    for _ in 0..<600 {
      if view.performAndWait({ controller.fetchedObjects?.count ?? 0 }) == inserted { break }
      try await Task.sleep(for: .milliseconds(50))
    }
    try await Task.sleep(for: .milliseconds(200))
    let (sections, fresh, values, storedValues) = try view.performAndWait {
      let sections = controller.sections?.map { ($0.name, $0.objects.map(\.objectID)) } ?? []
      let fresh = try view.fetch(request).map(\.objectID)
      let values = controller.fetchedObjects?.map { "\($0.variety)|\($0.rating)" } ?? []
      let reader = container.newBackgroundContext()
      let storedValues = try reader.fetch(request).map { "\($0.variety)|\($0.rating)" }
      return (sections, fresh, values, storedValues)
    }
    let ids = sections.flatMap(\.1)
    #expect(ids.count == inserted, "no change lost")
    #expect(Set(ids).count == ids.count, "no object twice")
    #expect(ids == fresh, "the controller equals a fresh fetch")
    #expect(values == storedValues, "and holds the stored values")
    #expect(sections.map(\.0) == Array(Set(sections.map(\.0))).sorted { StringSemantics.compare($0, $1, .localizedStandard) < 0 })
    #expect(recorder.balanced, "every will has its did")
  }

  /// `writers` background contexts at once, `operations` in all: each inserts (6 in 10) or edits one of its
  /// own potatoes' rating or variety, saving every 100. How many potatoes they inserted.
  private static func insertAndEditConcurrently(
    in container: PersistentContainer, writers: Int, operations: Int
  ) async throws -> Int {
    let perWriter = operations / writers
    return try await withThrowingTaskGroup(of: Int.self) { group in
      for writer in 0..<writers {
        group.addTask {
          let context = container.newBackgroundContext()
          return try await context.perform {
            var random = SplitMix64(seed: UInt64(writer + 1))
            func variety(_ n: Int) -> String {
              Tater.varieties[Int(random.next() % UInt64(Tater.varieties.count))] + " \(writer)-\(n)"
            }
            var mine: [Tater] = []
            for n in 0..<perWriter {
              if mine.isEmpty || random.next() % 10 < 6 {
                let tater = Tater(context: context)
                tater.variety = variety(n)
                tater.writer = Int16(writer)
                mine.append(tater)
              } else {
                let tater = mine[Int(random.next() % UInt64(mine.count))]
                if random.next() % 2 == 0 { tater.rating = Int16(random.next() % 6) } else { tater.variety = variety(n) }
              }
              if n % 100 == 99 { try context.save() }
            }
            try context.save()
            return mine.count
          }
        }
      }
      return try await group.reduce(0, +)
    }
  }
}

extension Tater {
  static let varieties = [
    "Agria", "Bintje", "Cara", "Charlotte", "Désirée", "Duke of York", "Estima", "Épicure",
    "King Edward", "Kerr's Pink", "Maris Piper", "Nicola", "Pink Fir Apple", "Ratte", "Russet Burbank", "Yukon Gold",
  ]

  /// The section of a variety: its first letter, uppercased, diacritics folded.
  public static func section(of variety: String) -> String {
    StringSemantics.fold(String(variety.prefix(1)), [.caseInsensitive, .diacriticInsensitive]).uppercased()
  }
}

/// Records what a controller's delegate hears.
final class ChangeRecorder: FetchedResultsControllerDelegate {
  var log: [String] = []
  private var open = 0
  private(set) var balanced = true

  func controllerWillChangeContent(_ controller: any FetchedResultsControlling) {
    if open != 0 { balanced = false }
    open += 1
    log.append("will")
  }
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
    func text(_ path: IndexPath?) -> String { path.map { "\($0[0]).\($0[1])" } ?? "-" }
    log.append(type == .insert ? "insert \(text(newIndexPath))" : "\(type) \(text(indexPath))→\(text(newIndexPath))")
  }
  func controllerDidChangeContent(_ controller: any FetchedResultsControlling) {
    open -= 1
    if open != 0 { balanced = false }
    log.append("did")
  }
}

extension Conformance {
  /// Commits another store instance makes to the same file (as another process would) reach a merging
  /// context and its fetched results controller when the store posts remote change notifications.
  /// Needs ``Conformance/Capabilities/sharedLocation``.
  public static func remoteChanges(_ backend: ConformanceBackend) async throws {
    let url = try #require(try backend.makeLocation(), "a backend with sharedLocation gives its stores a location")
    func container() throws -> PersistentContainer {
      let registry = StoreRegistry([backend.factory])
      let container = PersistentContainer(
        name: "Remote", model: try ObjectModel(types: [Tater.self]), types: [Tater.self], registry: registry)
      container.storeDescriptions = [
        StoreDescription(type: backend.factory.storeType, url: url, options: StoreOptions(postsRemoteChangeNotifications: true))
      ]
      try container.loadPersistentStores()
      return container
    }
    let watching = try container()
    let writing = try container()
    defer {
      watching.close()
      writing.close()
    }
    let view = watching.newBackgroundContext()
    view.automaticallyMergesChangesFromParent = true
    let recorder = ChangeRecorder()
    let controller = FetchedResultsController(
      fetchRequest: FetchRequest<Tater>(sortDescriptors: [QuerySort("variety")]), managedObjectContext: view)
    try view.performAndWait {
      controller.delegate = recorder
      try controller.performFetch()
    }
    func settle(_ expected: [String]) async throws -> [String] {
      var seen: [String] = []
      for _ in 0..<500 {
        seen = view.performAndWait { controller.fetchedObjects?.map { "\($0.variety) \($0.rating)" } ?? [] }
        if seen == expected { break }
        try await Task.sleep(for: .milliseconds(20))
      }
      return seen
    }
    let writer = writing.newBackgroundContext()
    try writer.performAndWait {
      for variety in ["Ratte", "Agria"] {
        let tater = Tater(context: writer)
        tater.variety = variety
      }
      try writer.save()
    }
    #expect(try await settle(["Agria 0", "Ratte 0"]) == ["Agria 0", "Ratte 0"])
    try writer.performAndWait {
      let ratte = try #require(try writer.fetch(FetchRequest<Tater>(format: "variety == 'Ratte'")).first)
      ratte.rating = 4
      try writer.save()
    }
    #expect(try await settle(["Agria 0", "Ratte 4"]) == ["Agria 0", "Ratte 4"])
    #expect(view.performAndWait { recorder.log.contains("update 0.1→0.1") }, "\(view.performAndWait { recorder.log })")
    try writer.performAndWait {
      for tater in try writer.fetch(FetchRequest<Tater>(format: "variety == 'Agria'")) { writer.delete(tater) }
      try writer.save()
    }
    #expect(try await settle(["Ratte 4"]) == ["Ratte 4"])
    #expect(view.performAndWait { recorder.log.contains("delete 0.0→-") })
  }
}
