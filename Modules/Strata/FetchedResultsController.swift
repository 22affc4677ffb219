import Foundation
internal import StrataStoreKit

/// Hears how a ``FetchedResultsController``'s results change. Every method has an empty default.
///
/// Between `controllerWillChangeContent` and `controllerDidChangeContent` come the section changes, then
/// the object changes, to be applied as ``FetchedResultsDifference`` describes.
public protocol FetchedResultsControllerDelegate: AnyObject {
  /// Called before the controller reports a batch of changes.
  func controllerWillChangeContent(_ controller: any FetchedResultsControlling)
  /// Called for each section inserted or deleted.
  func controller(
    _ controller: any FetchedResultsControlling, didChange sectionInfo: FetchedResultsSectionInfo,
    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType)
  /// Called for each object inserted, deleted, moved or updated; `indexPath` is the old position,
  /// `newIndexPath` the new one.
  func controller(
    _ controller: any FetchedResultsControlling, didChange object: ManagedObject, at indexPath: IndexPath?,
    for type: FetchedResultsChangeType, newIndexPath: IndexPath?)
  /// Called after the controller reported a batch of changes.
  func controllerDidChangeContent(_ controller: any FetchedResultsControlling)
}

extension FetchedResultsControllerDelegate {
  /// Does nothing.
  public func controllerWillChangeContent(_ controller: any FetchedResultsControlling) {}
  /// Does nothing.
  public func controller(
    _ controller: any FetchedResultsControlling, didChange sectionInfo: FetchedResultsSectionInfo,
    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType
  ) {}
  /// Does nothing.
  public func controller(
    _ controller: any FetchedResultsControlling, didChange object: ManagedObject, at indexPath: IndexPath?,
    for type: FetchedResultsChangeType, newIndexPath: IndexPath?
  ) {}
  /// Does nothing.
  public func controllerDidChangeContent(_ controller: any FetchedResultsControlling) {}
}

/// What a delegate can ask of any fetched results controller, whatever its result type.
public protocol FetchedResultsControlling: AnyObject {
  /// The sections as they stand.
  var sectionInfos: [FetchedResultsSectionInfo] { get }
  /// The object at `indexPath` (section, item), or `nil` when there is none.
  func managedObject(at indexPath: IndexPath) -> ManagedObject?
}

/// A section of a controller's results, as the delegate sees it.
public struct FetchedResultsSectionInfo: Sendable, Hashable {
  /// The section's name: the section key's value as text (empty without sections).
  public var name: String
  /// The name's first character, uppercased: a title for a section index.
  public var indexTitle: String?
  /// How many objects the section holds.
  public var numberOfObjects: Int
}

/// A section of a controller's results with its objects.
public struct FetchedResultsSection<Result: ManagedObject> {
  /// The section's name: the section key's value as text (empty without sections).
  public var name: String
  /// The name's first character, uppercased.
  public var indexTitle: String?
  /// The section's objects, in the request's order.
  public var objects: [Result]
  /// How many objects the section holds.
  public var numberOfObjects: Int { objects.count }

  var info: FetchedResultsSectionInfo {
    FetchedResultsSectionInfo(name: name, indexTitle: indexTitle, numberOfObjects: objects.count)
  }
}

/// A `Sendable` picture of a controller's sections, for Swift-concurrency code.
public struct FetchedResultsSnapshot: Sendable, Hashable {
  /// One section: its name and its objects' IDs, in order.
  public struct Section: Sendable, Hashable {
    /// The section's name.
    public var name: String
    /// The IDs of the section's objects, in order.
    public var objectIDs: [ObjectID]
  }

  /// The sections, in order.
  public var sections: [Section]
  /// How the previous snapshot became this one (empty for the first).
  public var difference: FetchedResultsDifference
}

/// Keeps the results of a fetch request up to date as its context's objects change, in sections, and
/// reports each change — Core Data's `NSFetchedResultsController`.
///
/// Local edits, saves of other contexts merged in and remote changes merged in all reach it: the
/// context announces its object changes (``ObjectContext/processPendingChanges()``), the controller
/// matches the changed objects against the request by their current values, sorts, and reports what
/// moved. Applying the reported changes to the old sections always gives the new sections.
///
/// ```swift
/// let controller = FetchedResultsController(
///   fetchRequest: FetchRequest<Potato>(sortDescriptors: [QuerySort("variety", comparator: .localizedStandard)]),
///   managedObjectContext: context, sectionName: { String($0.variety.prefix(1)) })
/// controller.delegate = self
/// try controller.performFetch()
/// controller.sections?.first?.objects
/// ```
///
/// Use it on its context's queue. Sections must follow the sort: objects of a section are contiguous in
/// the sort order (sort by the section key first). The fetch limit and offset apply to the first fetch only.
public final class FetchedResultsController<Result: ManagedObject>: FetchedResultsControlling {
  /// The request whose results the controller keeps.
  public let fetchRequest: FetchRequest<Result>
  /// The context the controller fetches from and watches.
  public let managedObjectContext: ObjectContext
  /// The model key path whose value names an object's section, if sections come from a key path.
  public let sectionNameKeyPath: String?
  /// Told of each change of the results after ``performFetch()`` (held weakly).
  public weak var delegate: (any FetchedResultsControllerDelegate)?

  private let sectionName: ((Result) -> String)?
  private var state: [FetchedResultsSection<Result>]?
  /// The results in order, with each one's sort values and section name, read when it last changed.
  private var ordered: [Entry] = []
  private var observer: UInt64?
  private var evaluator: PredicateEvaluator?
  private var sorter: SnapshotSorter?
  private var sectionKey: ResolvedKeyPath?
  private let snapshotBroadcaster = Broadcaster<FetchedResultsSnapshot>()

  /// A controller whose sections are named by the value of `sectionNameKeyPath` (an attribute or a
  /// to-one key path), or without sections when it is `nil`.
  public init(fetchRequest: FetchRequest<Result>, managedObjectContext: ObjectContext, sectionNameKeyPath: String? = nil) {
    self.fetchRequest = fetchRequest
    self.managedObjectContext = managedObjectContext
    self.sectionNameKeyPath = sectionNameKeyPath
    self.sectionName = nil
  }

  /// A controller whose sections are named by `sectionName` — for names that are no stored key, such as
  /// a title's first letter with diacritics folded.
  public init(fetchRequest: FetchRequest<Result>, managedObjectContext: ObjectContext, sectionName: @escaping (Result) -> String)
  {
    self.fetchRequest = fetchRequest
    self.managedObjectContext = managedObjectContext
    self.sectionNameKeyPath = nil
    self.sectionName = sectionName
  }

  deinit {
    if let observer { managedObjectContext.removeObjectsObserver(observer) }
  }

  /// Fetches the results and starts following changes.
  /// - Throws: what ``ObjectContext/fetch(_:)-(FetchRequest<T>)`` throws; `.invalidQuery` for an unknown section key path.
  public func performFetch() throws {
    let context = managedObjectContext
    let model = context.coordinator.model
    guard let entity = model.entity(named: fetchRequest.entityName) else {
      throw StoreError(.invalidQuery, "the model has no entity '\(fetchRequest.entityName)'", entity: fetchRequest.entityName)
    }
    evaluator = try fetchRequest.predicate.map { try PredicateEvaluator($0, entity: entity, model: model) }
    sorter = try SnapshotSorter(fetchRequest.sortDescriptors, entity: entity, model: model)
    sectionKey = try sectionNameKeyPath.map {
      try QueryValidator.resolveSortKey(QuerySort($0), entity: entity, model: model)
    }
    ordered = try sortedEntries(try context.fetch(fetchRequest))
    state = sections(of: ordered)
    if observer == nil {
      observer = context.addObjectsObserver { [weak self] changes in self?.contextChanged(changes) }
    }
    emitSnapshot(FetchedResultsDifference())
  }

  /// Every fetched object in order, `nil` before ``performFetch()``.
  public var fetchedObjects: [Result]? { state.map { $0.flatMap(\.objects) } }

  /// The sections, `nil` before ``performFetch()``; one unnamed section without a section key.
  public var sections: [FetchedResultsSection<Result>]? { state }

  /// The sections as the delegate sees them (empty before ``performFetch()``).
  public var sectionInfos: [FetchedResultsSectionInfo] { (state ?? []).map(\.info) }

  /// The index titles of the sections, in order, without repeats.
  public var sectionIndexTitles: [String] {
    var seen = Set<String>()
    return (state ?? []).compactMap(\.indexTitle).filter { seen.insert($0).inserted }
  }

  /// The object at `indexPath` (section, item).
  /// - Precondition: the index path is within the sections.
  public func object(at indexPath: IndexPath) -> Result {
    guard let object = optionalObject(at: indexPath) else {
      preconditionFailure("no object at \(indexPath) in \(sectionInfos.map(\.numberOfObjects)) sections")
    }
    return object
  }

  /// The object at `indexPath`, or `nil` when there is none.
  public func managedObject(at indexPath: IndexPath) -> ManagedObject? { optionalObject(at: indexPath) }

  /// Where `object` is, or `nil` when it is not among the results.
  public func indexPath(for object: Result) -> IndexPath? {
    for (s, section) in (state ?? []).enumerated() {
      if let i = section.objects.firstIndex(where: { $0 === object }) { return IndexPath(indexes: [s, i]) }
    }
    return nil
  }

  /// A stream of the sections after ``performFetch()`` and after every change (the newest 1,024 kept).
  public func snapshots() -> AsyncStream<FetchedResultsSnapshot> {
    let stream = snapshotBroadcaster.stream()
    if let state { snapshotBroadcaster.yield(snapshot(of: state, FetchedResultsDifference())) }
    return stream
  }

  // MARK: Following changes

  private func optionalObject(at indexPath: IndexPath) -> Result? {
    guard indexPath.count == 2, let state, indexPath[0] >= 0, indexPath[0] < state.count else { return nil }
    let objects = state[indexPath[0]].objects
    return indexPath[1] >= 0 && indexPath[1] < objects.count ? objects[indexPath[1]] : nil
  }

  /// A result with what orders and sections it, read when it last changed.
  private struct Entry {
    var object: Result
    var sortValues: [Value]
    var section: String
    /// The stored version the object had, to tell a refetched object that changed.
    var version: Int64
  }

  private func contextChanged(_ changes: ObjectChanges) {
    guard let old = state else { return }
    if changes.invalidatedAll || changes.storeChanged {
      try? refetch(from: old)
      return
    }
    let entities = Set(
      managedObjectContext.coordinator.model.inheritance.fetchedEntities(
        fetchRequest.entityName, includesSubentities: fetchRequest.includesSubentities))
    let relevant = changes.all.filter { object in object.info.map { entities.contains($0.entity.name) } ?? false }
    guard !relevant.isEmpty else {
      if changes.identitiesChanged { emitSnapshot(FetchedResultsDifference()) }
      return
    }
    // Changed objects leave the order and come back, when they still match, at the place their
    // current values give them; the others keep their order.
    let source = ContextEvaluationSource(context: managedObjectContext)
    var changedKeys = Set<ObjectIdentifier>()
    var returning: [Result] = []
    for object in relevant where changedKeys.insert(ObjectIdentifier(object)).inserted {
      let matches =
        !object.isDeleted && object.managedObjectContext === managedObjectContext
        && (try? matchesRequest(object, source)) == true
      if matches, let typed = object as? Result { returning.append(typed) }
    }
    ordered.removeAll { changedKeys.contains(ObjectIdentifier($0.object)) }
    var arriving: [(index: Int, entry: Entry)] = []
    for object in returning {
      guard let entry = try? self.entry(for: object, source) else { continue }
      arriving.append((arriving.count, entry))
    }
    insert(arriving)
    report(from: old, to: sections(of: ordered), changed: changedKeys)
  }

  /// Fetches again and reports the difference; objects whose stored version moved count as changed.
  private func refetch(from old: [FetchedResultsSection<Result>]) throws {
    let versions = Dictionary(ordered.map { (ObjectIdentifier($0.object), $0.version) }, uniquingKeysWith: { a, _ in a })
    ordered = try sortedEntries(try managedObjectContext.fetch(fetchRequest))
    let changed = Set(
      ordered.compactMap { entry -> ObjectIdentifier? in
        let key = ObjectIdentifier(entry.object)
        return versions[key].map { $0 != entry.version } == true ? key : nil
      })
    report(from: old, to: sections(of: ordered), changed: changed)
  }

  private func entry(for object: Result, _ source: ContextEvaluationSource) throws -> Entry {
    let snapshot = managedObjectContext.currentSnapshot(of: object)
    return Entry(
      object: object, sortValues: try sorter?.sortValues(of: snapshot, source: source) ?? [],
      section: try name(of: object, source), version: snapshot.version)
  }

  private func precedes(_ a: Entry, _ b: Entry) -> Bool {
    guard let sorter else { return SnapshotSorter.primaryKeyOrder(a.object.objectID, b.object.objectID) < 0 }
    return sorter.precedes((a.sortValues, a.object.objectID), (b.sortValues, b.object.objectID))
  }

  /// Puts `arriving` into ``ordered`` where ``insertionIndex(of:)`` would put each, inserted one after
  /// another in their order, in one pass over ``ordered`` (one insertion each cost a pass per change):
  /// sorted, with an entry that ties with an earlier arriving one before it, as the later insertion at
  /// the lower bound would go.
  private func insert(_ arriving: [(index: Int, entry: Entry)]) {
    guard arriving.count > 1 else {
      if let entry = arriving.first?.entry { ordered.insert(entry, at: insertionIndex(of: entry)) }
      return
    }
    let sorted = arriving.sorted { a, b in
      if precedes(a.entry, b.entry) { return true }
      if precedes(b.entry, a.entry) { return false }
      return a.index > b.index
    }
    var merged: [Entry] = []
    merged.reserveCapacity(ordered.count + sorted.count)
    var next = 0
    for entry in ordered {
      while next < sorted.count, !precedes(entry, sorted[next].entry) {
        merged.append(sorted[next].entry)
        next += 1
      }
      merged.append(entry)
    }
    for rest in sorted[next...] { merged.append(rest.entry) }
    ordered = merged
  }

  private func insertionIndex(of entry: Entry) -> Int {
    var low = 0
    var high = ordered.count
    while low < high {
      let mid = (low + high) / 2
      if precedes(ordered[mid], entry) { low = mid + 1 } else { high = mid }
    }
    return low
  }

  private func sortedEntries(_ objects: [Result]) throws -> [Entry] {
    let source = ContextEvaluationSource(context: managedObjectContext)
    let entries = try objects.map { try entry(for: $0, source) }
    // The fetch sorted by the same descriptors, so the entries are usually in order already: checking
    // that is one comparison per entry and moves none, where sorting copied every entry.
    var index = 1
    while index < entries.count {
      if precedes(entries[index], entries[index - 1]) { return entries.sorted(by: precedes) }
      index += 1
    }
    return entries
  }

  private func sections(of entries: [Entry]) -> [FetchedResultsSection<Result>] {
    guard sectionName != nil || sectionKey != nil else {
      return [FetchedResultsSection(name: "", indexTitle: nil, objects: entries.map(\.object))]
    }
    var sections: [FetchedResultsSection<Result>] = []
    for entry in entries {
      if sections.last?.name == entry.section {
        sections[sections.count - 1].objects.append(entry.object)
      } else {
        sections.append(
          FetchedResultsSection(
            name: entry.section, indexTitle: entry.section.first.map { String($0).uppercased() }, objects: [entry.object]))
      }
    }
    return sections
  }

  private func matchesRequest(_ object: ManagedObject, _ source: ContextEvaluationSource) throws -> Bool {
    guard let evaluator else { return true }
    return try evaluator.evaluate(managedObjectContext.currentSnapshot(of: object), source: source)
  }

  private func name(of object: Result, _ source: ContextEvaluationSource) throws -> String {
    if let sectionName { return sectionName(object) }
    guard let sectionKey else { return "" }
    let value = try sectionKey.value(in: managedObjectContext.currentSnapshot(of: object), source: source)
    if case .string(let text) = value { return text }
    return value.isNull ? "" : value.description
  }

  private func report(
    from old: [FetchedResultsSection<Result>], to new: [FetchedResultsSection<Result>], changed: Set<ObjectIdentifier>
  ) {
    let diff = SectionDiff.difference(
      from: old.map { SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init)) },
      to: new.map { SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init)) },
      changed: changed)
    var wanted = Set(diff.deleted.map(\.0))
    wanted.formUnion(diff.inserted.map(\.0))
    wanted.formUnion(diff.moved.map(\.0))
    wanted.formUnion(diff.updated.map(\.0))
    var objects: [ObjectIdentifier: Result] = [:]
    if !wanted.isEmpty {
      for section in old + new {
        for object in section.objects where wanted.contains(ObjectIdentifier(object)) {
          objects[ObjectIdentifier(object)] = object
        }
      }
    }
    state = new
    var difference = FetchedResultsDifference()
    for (name, index) in diff.deletedSections {
      difference.sectionChanges.append(FetchedResultsSectionChange(type: .delete, name: name, index: index))
    }
    for (name, index) in diff.insertedSections {
      difference.sectionChanges.append(FetchedResultsSectionChange(type: .insert, name: name, index: index))
    }
    var objectChanges: [(Result, FetchedResultsObjectChange)] = []
    func add(_ key: ObjectIdentifier, _ type: FetchedResultsChangeType, _ from: IndexPath?, _ to: IndexPath?) {
      guard let object = objects[key] else { return }
      objectChanges.append(
        (object, FetchedResultsObjectChange(type: type, objectID: object.objectID, indexPath: from, newIndexPath: to)))
    }
    for (key, path) in diff.deleted { add(key, .delete, path, nil) }
    for (key, path) in diff.inserted { add(key, .insert, nil, path) }
    for (key, from, to) in diff.moved { add(key, .move, from, to) }
    for (key, from, to) in diff.updated { add(key, .update, from, to) }
    difference.objectChanges = objectChanges.map(\.1)
    guard !difference.isEmpty else { return emitSnapshot(difference) }
    if let delegate {
      delegate.controllerWillChangeContent(self)
      for change in difference.sectionChanges {
        let info =
          change.type == .delete
          ? old[change.index].info : new[change.index].info
        delegate.controller(self, didChange: info, atSectionIndex: change.index, for: change.type)
      }
      for (object, change) in objectChanges {
        delegate.controller(self, didChange: object, at: change.indexPath, for: change.type, newIndexPath: change.newIndexPath)
      }
      delegate.controllerDidChangeContent(self)
    }
    emitSnapshot(difference)
  }

  private func emitSnapshot(_ difference: FetchedResultsDifference) {
    guard snapshotBroadcaster.hasSubscribers, let state else { return }
    snapshotBroadcaster.yield(snapshot(of: state, difference))
  }

  private func snapshot(
    of sections: [FetchedResultsSection<Result>], _ difference: FetchedResultsDifference
  ) -> FetchedResultsSnapshot {
    FetchedResultsSnapshot(
      sections: sections.map { FetchedResultsSnapshot.Section(name: $0.name, objectIDs: $0.objects.map(\.objectID)) },
      difference: difference)
  }
}
