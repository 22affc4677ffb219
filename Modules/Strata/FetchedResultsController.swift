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
  /// The sort values each result has in ``ordered``: where to find a changed object there by binary
  /// search, without a pass over every result.
  private var sortValuesByObject: [ObjectIdentifier: [Value]] = [:]
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
    indexOrdered()
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
    let removed = remove(relevant)
    var arriving: [(index: Int, entry: Entry)] = []
    for object in returning {
      guard let entry = try? self.entry(for: object, source) else { continue }
      arriving.append((arriving.count, entry))
    }
    let arrived = insert(arriving)
    let new = sections(of: ordered)
    let diff = SectionDiff.difference(
      from: old.map { ($0.name, $0.objects.count) }, to: new.map { ($0.name, $0.objects.count) },
      removed: removed, arrived: arrived, oldKey: { ObjectIdentifier(old[$0].objects[$1]) })
    report(diff, from: old, to: new)
  }

  /// Takes `objects` out of ``ordered`` and ``sortValuesByObject``; returns where they were (ascending)
  /// and who they are. Each is found by a search on the sort values it was placed by, in their order,
  /// each search starting where the last one ended; one a search misses (its ID became permanent among
  /// equal sort values) is found in a pass over the rest.
  private func remove(_ objects: [ManagedObject]) -> [(flat: Int, key: ObjectIdentifier)] {
    var probes: [Entry] = []
    for object in objects {
      guard let result = object as? Result,
        let values = sortValuesByObject.removeValue(forKey: ObjectIdentifier(object))
      else { continue }
      probes.append(Entry(object: result, sortValues: values, section: "", version: 0))
    }
    probes.sort(by: precedes)
    var found: [(flat: Int, key: ObjectIdentifier)] = []
    var missed = Set<ObjectIdentifier>()
    var start = 0
    for probe in probes {
      let index = insertionIndex(of: probe, from: start)
      if index < ordered.count, ordered[index].object === probe.object {
        found.append((index, ObjectIdentifier(probe.object)))
        start = index + 1
      } else {
        missed.insert(ObjectIdentifier(probe.object))
      }
    }
    if !missed.isEmpty {
      for (index, entry) in ordered.enumerated() where missed.contains(ObjectIdentifier(entry.object)) {
        found.append((index, ObjectIdentifier(entry.object)))
      }
    }
    found.sort { $0.flat < $1.flat }
    guard !found.isEmpty else { return found }
    // Compacts the survivors towards the front, in one pass that moves each at most once.
    ordered.withUnsafeMutableBufferPointer { buffer in
      var write = found[0].flat
      var next = 0
      for read in found[0].flat..<buffer.count {
        if next < found.count, found[next].flat == read {
          next += 1
        } else {
          buffer.swapAt(read, write)
          write += 1
        }
      }
    }
    ordered.removeLast(found.count)
    return found
  }

  private func indexOrdered() {
    sortValuesByObject = [:]
    sortValuesByObject.reserveCapacity(ordered.count)
    for entry in ordered { sortValuesByObject[ObjectIdentifier(entry.object)] = entry.sortValues }
  }

  /// Fetches again and reports the difference; objects whose stored version moved count as changed.
  private func refetch(from old: [FetchedResultsSection<Result>]) throws {
    let versions = Dictionary(ordered.map { (ObjectIdentifier($0.object), $0.version) }, uniquingKeysWith: { a, _ in a })
    ordered = try sortedEntries(try managedObjectContext.fetch(fetchRequest))
    indexOrdered()
    let changed = Set(
      ordered.compactMap { entry -> ObjectIdentifier? in
        let key = ObjectIdentifier(entry.object)
        return versions[key].map { $0 != entry.version } == true ? key : nil
      })
    let new = sections(of: ordered)
    let diff = SectionDiff.difference(
      from: old.map { SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init)) },
      to: new.map { SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init)) },
      changed: changed)
    report(diff, from: old, to: new)
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

  /// Puts `arriving` into ``ordered`` and ``sortValuesByObject`` where ``insertionIndex(of:)`` would
  /// put each, inserted one after another in their order: sorted, with an entry that ties with an
  /// earlier arriving one before it, as the later insertion at the lower bound would go. A binary search
  /// each, then one pass from the back that moves each later result once (one insertion each cost a
  /// pass per change). Returns where they went (ascending) and who they are.
  private func insert(_ arriving: [(index: Int, entry: Entry)]) -> [(flat: Int, key: ObjectIdentifier)] {
    for (_, entry) in arriving { sortValuesByObject[ObjectIdentifier(entry.object)] = entry.sortValues }
    guard arriving.count > 1 else {
      guard let entry = arriving.first?.entry else { return [] }
      let index = insertionIndex(of: entry)
      ordered.insert(entry, at: index)
      return [(index, ObjectIdentifier(entry.object))]
    }
    let sorted = arriving.sorted { a, b in
      if precedes(a.entry, b.entry) { return true }
      if precedes(b.entry, a.entry) { return false }
      return a.index > b.index
    }.map(\.entry)
    // Where each goes among the results already there; ascending, since `sorted` is.
    var targets: [Int] = []
    targets.reserveCapacity(sorted.count)
    var low = 0
    for entry in sorted {
      low = insertionIndex(of: entry, from: low)
      targets.append(low)
    }
    let count = ordered.count
    ordered.append(contentsOf: sorted)
    ordered.withUnsafeMutableBufferPointer { buffer in
      // The slots between `read` and `write` hold copies of the arriving entries not yet placed: each
      // is overwritten with the one that goes there.
      var read = count - 1
      var write = buffer.count - 1
      for next in sorted.indices.reversed() {
        while read >= targets[next] {
          buffer.swapAt(read, write)
          read -= 1
          write -= 1
        }
        buffer[write] = sorted[next]
        write -= 1
      }
    }
    return sorted.indices.map { (targets[$0] + $0, ObjectIdentifier(sorted[$0].object)) }
  }

  /// Where `entry` goes in ``ordered``: before the first result it does not follow, searched from
  /// `start` (the results before it must precede the entry) by probes at doubling distances, then
  /// halving — a few comparisons when the place is near `start`.
  private func insertionIndex(of entry: Entry, from start: Int = 0) -> Int {
    var low = start
    var high = ordered.count
    var step = 1
    while low + step - 1 < high {
      let probe = low + step - 1
      guard precedes(ordered[probe], entry) else {
        high = probe
        break
      }
      low = probe + 1
      step *= 2
    }
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

  /// Makes `new` the sections and tells the delegate and the snapshot streams of `diff`.
  private func report(
    _ diff: SectionDiff.Result<ObjectIdentifier>, from old: [FetchedResultsSection<Result>],
    to new: [FetchedResultsSection<Result>]
  ) {
    state = new
    var difference = FetchedResultsDifference()
    for (name, index) in diff.deletedSections {
      difference.sectionChanges.append(FetchedResultsSectionChange(type: .delete, name: name, index: index))
    }
    for (name, index) in diff.insertedSections {
      difference.sectionChanges.append(FetchedResultsSectionChange(type: .insert, name: name, index: index))
    }
    var objectChanges: [(Result, FetchedResultsObjectChange)] = []
    // Each object is where its old path (or, for an insert, its new one) says.
    func add(_ object: Result, _ type: FetchedResultsChangeType, _ from: IndexPath?, _ to: IndexPath?) {
      objectChanges.append(
        (object, FetchedResultsObjectChange(type: type, objectID: object.objectID, indexPath: from, newIndexPath: to)))
    }
    for (_, path) in diff.deleted { add(old[path[0]].objects[path[1]], .delete, path, nil) }
    for (_, path) in diff.inserted { add(new[path[0]].objects[path[1]], .insert, nil, path) }
    for (_, from, to) in diff.moved { add(old[from[0]].objects[from[1]], .move, from, to) }
    for (_, from, to) in diff.updated { add(old[from[0]].objects[from[1]], .update, from, to) }
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
