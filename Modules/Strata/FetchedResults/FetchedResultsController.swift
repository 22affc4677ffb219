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
/// controller.delegate = delegate            // your FetchedResultsControllerDelegate
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
  private var order = FetchedResultsOrder(sorter: nil)
  private var observer: UInt64?
  private var evaluator: PredicateEvaluator?
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
    order = FetchedResultsOrder(sorter: try SnapshotSorter(fetchRequest.sortDescriptors, entity: entity, model: model))
    sectionKey = try sectionNameKeyPath.map {
      try QueryValidator.resolveSortKey(QuerySort($0), entity: entity, model: model)
    }
    order.replace(with: try entries(for: try context.fetch(fetchRequest)))
    state = sections(of: order.entries)
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

  private typealias Entry = FetchedResultsOrder.Entry

  private func contextChanged(_ changes: ObjectChanges) {
    guard let current = state else { return }
    if changes.invalidatedAll || changes.storeChanged {
      try? refetch(from: current)
      return
    }
    _ = consume current  // the one-section path below changes the sections in place
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
    var arriving: [(index: Int, entry: Entry)] = []
    for object in returning {
      guard let entry = try? self.entry(for: object, source) else { continue }
      arriving.append((arriving.count, entry))
    }
    let (removed, arrived) = order.update(removing: relevant, arriving: arriving)
    guard sectionName == nil, sectionKey == nil, state?.count == 1, var objects = state?[0].objects else {
      guard let old = state else { return }
      let new = sections(after: old, removed: removed.map(\.flat), arrived: arrived.map(\.flat))
      let diff = SectionDiff.difference(
        from: old.map { ($0.name, $0.objects.count) }, to: new.map { ($0.name, $0.objects.count) },
        removed: removed, arrived: arrived, oldKey: { ObjectIdentifier(old[$0].objects[$1]) })
      return report(diff, from: old, to: new)
    }
    // One section: its objects change in place, as the entries did, so that only the changed objects'
    // references are touched (rebuilding the list retained every result and released every old one).
    state?[0].objects = []
    let oldCount = objects.count
    let diff = SectionDiff.difference(
      from: [("", oldCount)], to: [("", order.entries.count)], removed: removed, arrived: arrived,
      oldKey: { ObjectIdentifier(objects[$1]) })
    let objectChanges = self.objectChanges(
      diff, old: { objects[$0[1]] }, new: { unsafeDowncast(self.order.entries[$0[1]].object, to: Result.self) })
    // As the entries moved.
    let arrivals = arrived.map { unsafeDowncast(order.entries[$0.flat].object, to: Result.self) }
    FetchedResultsOrder.rearrange(&objects, removing: removed.map(\.flat), inserting: arrivals, at: arrived.map(\.flat))
    let newCount = objects.count
    state?[0].objects = objects
    announce(
      diff, objectChanges, oldInfo: { _ in FetchedResultsSectionInfo(name: "", indexTitle: nil, numberOfObjects: oldCount) },
      newInfo: { _ in FetchedResultsSectionInfo(name: "", indexTitle: nil, numberOfObjects: newCount) })
  }

  /// Fetches again and reports the difference; objects whose stored version moved count as changed.
  private func refetch(from old: [FetchedResultsSection<Result>]) throws {
    let versions = Dictionary(
      order.entries.map { (ObjectIdentifier($0.object), $0.version) }, uniquingKeysWith: { a, _ in a })
    order.replace(with: try entries(for: try managedObjectContext.fetch(fetchRequest)))
    let changed = Set(
      order.entries.compactMap { entry -> ObjectIdentifier? in
        let key = ObjectIdentifier(entry.object)
        return versions[key].map { $0 != entry.version } == true ? key : nil
      })
    let new = sections(of: order.entries)
    let diff = SectionDiff.difference(
      from: old.map { SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init)) },
      to: new.map { SectionDiff.Section(name: $0.name, items: $0.objects.map(ObjectIdentifier.init)) },
      changed: changed)
    report(diff, from: old, to: new)
  }

  private func entry(for object: Result, _ source: ContextEvaluationSource) throws -> Entry {
    let snapshot = managedObjectContext.currentSnapshot(of: object)
    return Entry(
      object: object, sortValues: try order.sorter?.sortValues(of: snapshot, source: source) ?? [],
      section: try name(of: object, source), version: snapshot.version)
  }

  private func entries(for objects: [Result]) throws -> [Entry] {
    let source = ContextEvaluationSource(context: managedObjectContext)
    return try objects.map { try entry(for: $0, source) }
  }

  /// The sections of `entries`, each a run of one section name. Every entry holds a `Result`: the
  /// controller puts no other in.
  private func sections(of entries: [Entry]) -> [FetchedResultsSection<Result>] {
    guard sectionName != nil || sectionKey != nil else {
      var objects: [Result] = []
      objects.reserveCapacity(entries.count)
      for entry in entries { objects.append(unsafeDowncast(entry.object, to: Result.self)) }
      return [FetchedResultsSection(name: "", indexTitle: nil, objects: objects)]
    }
    var sections: [FetchedResultsSection<Result>] = []
    var start = 0
    while start < entries.count {
      let name = entries[start].section
      var objects: [Result] = []
      var end = start
      while end < entries.count, end == start || entries[end].section == name {
        objects.append(unsafeDowncast(entries[end].object, to: Result.self))
        end += 1
      }
      sections.append(
        FetchedResultsSection(name: name, indexTitle: name.first.map { String($0).uppercased() }, objects: objects))
      start = end
    }
    return sections
  }

  /// What ``sections(of:)`` gives for the entries after ``FetchedResultsOrder/update(removing:arriving:)``
  /// took the results at `removed` out of `old` (old flat positions, ascending) and put others in at
  /// `arrived` (new flat positions, ascending), in time that follows the changes and the sections: two
  /// neighbouring results that stayed were neighbours before or had only taken-out results between them,
  /// so a section can start only at the first result that stays from an old section's start on, at a
  /// result put in or just after one; names are compared only there. An old section that no change
  /// touched is kept as it is; only the sections that changed are built from the entries.
  private func sections(
    after old: [FetchedResultsSection<Result>], removed: [Int], arrived: [Int]
  ) -> [FetchedResultsSection<Result>] {
    guard sectionName != nil || sectionKey != nil else { return sections(of: order.entries) }
    let entries = order.entries
    let total = entries.count
    // The results that stay keep their order: the `j`th of them goes after the arrived ones with at
    // most `j` of them before.
    let stayingBefore = arrived.indices.map { arrived[$0] - $0 }
    let oldTotal = old.reduce(0) { $0 + $1.objects.count }
    /// Where the first result that stays from old flat position `flat` on is now (`total` for none).
    func newPosition(from flat: Int) -> Int {
      let staying = flat - removed.upperBound(of: flat - 1)
      return staying >= oldTotal - removed.count ? total : staying + stayingBefore.upperBound(of: staying)
    }
    var oldStarts: [Int] = []
    oldStarts.reserveCapacity(old.count)
    var candidates: [Int] = []
    candidates.reserveCapacity(old.count + 2 * arrived.count)
    var start = 0
    for section in old {
      oldStarts.append(start)
      candidates.append(newPosition(from: start))
      start += section.objects.count
    }
    for flat in arrived { candidates += [flat, flat + 1] }
    candidates.sort()
    var starts = total > 0 ? [0] : []
    var checked = 0
    for position in candidates where position > checked && position < total {
      checked = position
      if entries[position].section != entries[position - 1].section { starts.append(position) }
    }
    // Old sections no change touched, by where they start now.
    var untouched: [Int: Int] = [:]
    for (s, start) in oldStarts.enumerated() where !old[s].objects.isEmpty {
      let end = start + old[s].objects.count
      guard removed.upperBound(of: end - 1) == removed.upperBound(of: start - 1) else { continue }
      let position = newPosition(from: start)
      if arrived.upperBound(of: position + old[s].objects.count - 1) == arrived.upperBound(of: position - 1) {
        untouched[position] = s
      }
    }
    var sections: [FetchedResultsSection<Result>] = []
    sections.reserveCapacity(starts.count)
    for (index, start) in starts.enumerated() {
      let end = index + 1 < starts.count ? starts[index + 1] : total
      if let s = untouched[start], old[s].objects.count == end - start {
        sections.append(old[s])
        continue
      }
      let name = entries[start].section
      var objects: [Result] = []
      objects.reserveCapacity(end - start)
      for index in start..<end { objects.append(unsafeDowncast(entries[index].object, to: Result.self)) }
      sections.append(
        FetchedResultsSection(name: name, indexTitle: name.first.map { String($0).uppercased() }, objects: objects))
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
    let objectChanges = self.objectChanges(
      diff, old: { old[$0[0]].objects[$0[1]] }, new: { new[$0[0]].objects[$0[1]] })
    state = new
    announce(diff, objectChanges, oldInfo: { old[$0].info }, newInfo: { new[$0].info })
  }

  /// The object changes `diff` names, in the order they are reported, each object read at its old
  /// path (or, for an insert, its new one).
  private func objectChanges(
    _ diff: SectionDiff.Result<ObjectIdentifier>, old: (IndexPath) -> Result, new: (IndexPath) -> Result
  ) -> [(Result, FetchedResultsObjectChange)] {
    var objectChanges: [(Result, FetchedResultsObjectChange)] = []
    func add(_ object: Result, _ type: FetchedResultsChangeType, _ from: IndexPath?, _ to: IndexPath?) {
      objectChanges.append(
        (object, FetchedResultsObjectChange(type: type, objectID: object.objectID, indexPath: from, newIndexPath: to)))
    }
    for (_, path) in diff.deleted { add(old(path), .delete, path, nil) }
    for (_, path) in diff.inserted { add(new(path), .insert, nil, path) }
    for (_, from, to) in diff.moved { add(old(from), .move, from, to) }
    for (_, from, to) in diff.updated { add(old(from), .update, from, to) }
    return objectChanges
  }

  /// Tells the delegate and the snapshot streams of a change, once ``state`` holds the new sections.
  private func announce(
    _ diff: SectionDiff.Result<ObjectIdentifier>, _ objectChanges: [(Result, FetchedResultsObjectChange)],
    oldInfo: (Int) -> FetchedResultsSectionInfo, newInfo: (Int) -> FetchedResultsSectionInfo
  ) {
    var difference = FetchedResultsDifference()
    for (name, index) in diff.deletedSections {
      difference.sectionChanges.append(FetchedResultsSectionChange(type: .delete, name: name, index: index))
    }
    for (name, index) in diff.insertedSections {
      difference.sectionChanges.append(FetchedResultsSectionChange(type: .insert, name: name, index: index))
    }
    difference.objectChanges = objectChanges.map(\.1)
    guard !difference.isEmpty else { return emitSnapshot(difference) }
    if let delegate {
      delegate.controllerWillChangeContent(self)
      for change in difference.sectionChanges {
        let info = change.type == .delete ? oldInfo(change.index) : newInfo(change.index)
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
