import Foundation
import Strata

/// Follows a store's potatoes as they change — saves of other processes too — and reports each change
/// as one line: `insert 3.4 Yukon Gold`, `delete 2.0 Bintje`, `update 1.7 Charlotte ★★★`,
/// `move 0.1→2.3 Adora`, `section insert 5 K` (index paths are section.item).
///
/// It works on a private-queue context that merges changes automatically, through a fetched results
/// controller in sections by first letter. To hear other processes, open the store with
/// `StoreOptions(postsRemoteChangeNotifications: true)`. Lines are reported on the context's queue.
public final class PotatoWatcher: FetchedResultsControllerDelegate {
  private let context: ObjectContext
  private let controller: FetchedResultsController<Potato>
  private let report: @Sendable (String) -> Void
  /// Each potato's variety as last seen, to name deleted potatoes.
  private var varieties: [ObjectID: String] = [:]

  public init(container: PersistentContainer, report: @escaping @Sendable (String) -> Void) {
    context = container.newBackgroundContext()
    context.automaticallyMergesChangesFromParent = true
    controller = FetchedResultsController(
      fetchRequest: PotatoRater.listRequest, managedObjectContext: context,
      sectionName: { Potato.section(of: $0.variety) })
    self.report = report
  }

  /// Fetches the potatoes and starts following changes; returns the sections as they are now.
  public func start() throws -> [PotatoSection] {
    try context.performAndWait {
      controller.delegate = self
      try controller.performFetch()
      let sections = controller.sections ?? []
      for potato in sections.flatMap(\.objects) { varieties[potato.objectID] = potato.variety }
      return sections.map { PotatoSection(name: $0.name, potatoes: $0.objects.map(PotatoRecord.init)) }
    }
  }

  /// Stops reporting changes.
  public func stop() {
    context.performAndWait { controller.delegate = nil }
  }

  public func controller(
    _ controller: any FetchedResultsControlling, didChange sectionInfo: FetchedResultsSectionInfo,
    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType
  ) {
    report("section \(type) \(sectionIndex) \(sectionInfo.name)")
  }

  public func controller(
    _ controller: any FetchedResultsControlling, didChange object: ManagedObject, at indexPath: IndexPath?,
    for type: FetchedResultsChangeType, newIndexPath: IndexPath?
  ) {
    let description: String
    if type == .delete {
      description = varieties.removeValue(forKey: object.objectID) ?? object.objectID.description
    } else if let potato = object as? Potato {
      varieties[potato.objectID] = potato.variety
      description = Self.describe(PotatoRecord(potato))
    } else {
      return
    }
    switch type {
    case .insert: report("insert \(Self.text(newIndexPath)) \(description)")
    case .delete: report("delete \(Self.text(indexPath)) \(description)")
    case .move: report("move \(Self.text(indexPath))→\(Self.text(newIndexPath)) \(description)")
    case .update: report("update \(Self.text(newIndexPath ?? indexPath)) \(description)")
    }
  }

  /// A potato in a change line: variety, stars when rated, notes in quotes when it has some.
  public static func describe(_ potato: PotatoRecord) -> String {
    [potato.variety, potato.stars, potato.notes.map { "\"\($0.replacingOccurrences(of: "\n", with: "; "))\"" } ?? ""].filter {
      !$0.isEmpty
    }.joined(separator: " ")
  }

  private static func text(_ path: IndexPath?) -> String {
    guard let path, path.count == 2 else { return "-" }
    return "\(path[0]).\(path[1])"
  }
}
