import Foundation
import Synchronization

/// A store that keeps the large values of attributes allowing external storage
/// (`AttributeDescription.allowsExternalBinaryDataStorage`) in an ``ExternalDataStorage`` and the rest in
/// the store it wraps: what an SQLite, LMDB or PostgreSQL factory opens. The wrapped store's rows hold an
/// ``ExternalDataReference`` in place of each value of `AttributeDescription.externalStorageThreshold`
/// bytes or more; everything read through this store carries the bytes again.
///
/// A save writes its new values to the storage first (durably), then saves the rows: a crash never leaves
/// a row naming a value that is not there. After the rows commit, the values they replaced or whose
/// objects were deleted are removed; when a crash comes between the two, or a delete rule cascades in the
/// store, what is left is a value no row names, which opening the store removes (once it is older than
/// ``orphanAge``, so that a value another process has written for a save still under way is kept).
///
/// What this store's reads return carries the bytes; contexts read through ``deferringExternalValues``,
/// whose snapshots keep the reference of a value of an attribute that allows external storage, so that
/// faulting an object reads no external value: the object loads it with ``externalValue(_:entity:key:)``
/// the first time the attribute is read. A predicate or sort on such an attribute compares what the row
/// holds (a value kept in the row, or the reference of one kept out of it), never the external bytes.
///
/// ```swift
/// let wrapped = try ExternalDataStore.wrapping(store, storage: ExternalDataDirectory(beside: url))
/// ```
public final class ExternalDataStore: PersistentStore {
  /// The store holding the rows.
  public let inner: any PersistentStore
  /// Where the values kept out of the rows are.
  public let storage: any ExternalDataStorage
  /// How old a value no row names must be before opening a store removes it: 10 minutes, far longer
  /// than the moment between a save writing its values and its rows committing.
  public static let orphanAge: TimeInterval = 600

  /// Per entity name, the positions of its attributes that allow external storage.
  private let externalAttributes: [String: [Int]]
  /// Per entity name, the positions of its `Data` attributes whose stored values may be references
  /// (every `Data` attribute when the model or the storage has external values, so that a model that
  /// turned the option off still reads the values kept out of line before).
  private let resolvedAttributes: [String: [Int]]
  /// Per entity name, the positions whose references reads replace by their bytes: `resolvedAttributes`,
  /// less `externalAttributes` in the view that defers them (``deferringExternalValues``).
  private let eagerAttributes: [String: [Int]]
  /// Whether this is the view whose reads keep the references of attributes allowing external storage.
  private let defers: Bool
  /// What this store shares with its view: the count of values read from the storage, and the pinned
  /// generations with the values whose removal waits for them.
  private let shared: SharedState

  private final class SharedState: Sendable {
    let count = Atomic<Int>(0)
    /// How many generations are pinned through the store, and the values replaced or deleted meanwhile:
    /// an object read at a pinned generation may still load them.
    let pins = Locked<(count: Int, deferred: [UUID])>((0, []))
  }

  /// The store the wrapper's factory should hand out for `store`, opened with `requestedModel`: `store`
  /// itself when nothing needs the wrapper (no attribute of its model allows external storage and
  /// `storage` holds no value), otherwise `store` wrapped (see ``wrapping(_:storage:)``). A store opened
  /// without a model (`requestedModel` `nil`: for a migration or a tool) is always wrapped, so that a
  /// migration to a model allowing external storage returns a wrapped store.
  ///
  /// ```swift
  /// let opened = try ExternalDataStore.wrappingIfNeeded(store, storage: ExternalDataDirectory(beside: url), requestedModel: model)
  /// ```
  public static func wrappingIfNeeded(
    _ store: any PersistentStore, storage: any ExternalDataStorage, requestedModel: ObjectModel?
  ) throws -> any PersistentStore {
    let names: [UUID: Date]
    do {
      names = try storage.names()
    } catch {
      store.close()
      throw error
    }
    let needed = requestedModel == nil || !names.isEmpty || allowsExternalStorage(store.model)
    return needed ? try wrapping(store, storage: storage, names: names) : store
  }

  /// Whether an attribute of `model` allows external storage.
  static func allowsExternalStorage(_ model: ObjectModel) -> Bool {
    model.entities.contains { $0.attributes.contains(where: \.allowsExternalBinaryDataStorage) }
  }

  /// `store` wrapped so that its large external-storage values live in `storage`, with values that no row
  /// names removed first (unless the store is read-only). When that fails, `store` is closed.
  ///
  /// ```swift
  /// let wrapped = try ExternalDataStore.wrapping(store, storage: ExternalDataDirectory(beside: url))
  /// wrapped.close()
  /// ```
  public static func wrapping(_ store: any PersistentStore, storage: any ExternalDataStorage) throws -> ExternalDataStore {
    let names: [UUID: Date]
    do {
      names = try storage.names()
    } catch {
      store.close()
      throw error
    }
    return try wrapping(store, storage: storage, names: names)
  }

  /// As ``wrapping(_:storage:)``, with `names` the storage's values as listed once by the caller.
  private static func wrapping(
    _ store: any PersistentStore, storage: any ExternalDataStorage, names: [UUID: Date]
  ) throws -> ExternalDataStore {
    do {
      let wrapped = ExternalDataStore(store, storage: storage, holdsValues: !names.isEmpty)
      if !store.options.isReadOnly { try wrapped.removeOrphans(among: names) }
      return wrapped
    } catch {
      store.close()
      throw error
    }
  }

  private init(_ inner: any PersistentStore, storage: any ExternalDataStorage, holdsValues: Bool) {
    self.inner = inner
    self.storage = storage
    defers = false
    shared = SharedState()
    var external: [String: [Int]] = [:]
    var data: [String: [Int]] = [:]
    for entity in inner.model.entities {
      let flagged = entity.attributes.indices.filter { entity.attributes[$0].allowsExternalBinaryDataStorage }
      if !flagged.isEmpty { external[entity.name] = flagged }
      let binary = entity.attributes.indices.filter {
        entity.attributes[$0].type == .data && entity.attributes[$0].isPersistent
      }
      if !binary.isEmpty { data[entity.name] = binary }
    }
    externalAttributes = external
    resolvedAttributes = !external.isEmpty || holdsValues ? data : [:]
    eagerAttributes = resolvedAttributes
  }

  private init(deferring store: ExternalDataStore) {
    inner = store.inner
    storage = store.storage
    externalAttributes = store.externalAttributes
    resolvedAttributes = store.resolvedAttributes
    var eager: [String: [Int]] = [:]
    for (entity, positions) in store.resolvedAttributes {
      let deferred = store.externalAttributes[entity] ?? []
      let left = positions.filter { !deferred.contains($0) }
      if !left.isEmpty { eager[entity] = left }
    }
    eagerAttributes = eager
    defers = true
    shared = store.shared
  }

  /// This store, except that the snapshots its reads return keep the reference of each value of an
  /// attribute that allows external storage instead of its bytes (what contexts read through, so that a
  /// fault reads no large value until the attribute is read): ``externalValue(_:entity:key:)`` reads
  /// one. Dictionary results still carry the bytes. Both share the wrapped store: closing one closes it.
  ///
  /// ```swift
  /// let wrapped = try ExternalDataStore.wrapping(store, storage: ExternalDataDirectory(beside: url))
  /// let lazy = wrapped.deferringExternalValues
  /// let movies = try lazy.fetch(FetchDescription(entityName: "Movie"), generation: nil)   // posters as references
  /// ```
  public var deferringExternalValues: ExternalDataStore {
    defers ? self : ExternalDataStore(deferring: self)
  }

  /// How many values this store and its ``deferringExternalValues`` view have read from ``storage``
  /// since it opened (what tests count to tell a lazy read from an eager one).
  ///
  /// ```swift
  /// let wrapped = try ExternalDataStore.wrapping(store, storage: ExternalDataDirectory(beside: url))
  /// let before = wrapped.externalValuesRead
  /// _ = try wrapped.fetch(FetchDescription(entityName: "Movie"), generation: nil)
  /// print(wrapped.externalValuesRead - before)   // one per value kept out of the rows
  /// ```
  public var externalValuesRead: Int { shared.count.load(ordering: .relaxed) }

  /// The bytes of the value `stored` refers to when it is a reference (``ExternalDataReference``) of the
  /// attribute `key` of `entity` that allows external storage; `nil` when `stored` is a value kept in the row
  /// or the attribute does not allow external storage.
  /// - Throws: `.corrupted` naming the entity and key when the value is missing from the storage, `.io`
  ///   when the storage cannot be read.
  ///
  /// ```swift
  /// let wrapped = try ExternalDataStore.wrapping(store, storage: ExternalDataDirectory(beside: url))
  /// let reference = ExternalDataReference.encode(UUID())   // what a row holds
  /// let bytes = try wrapped.externalValue(reference, entity: "Movie", key: "poster")   // nil: Movie keeps none
  /// ```
  public func externalValue(_ stored: Data, entity: String, key: String) throws -> Data? {
    guard let name = ExternalDataReference.decode(stored), let positions = externalAttributes[entity],
      let attributes = model.entity(named: entity)?.attributes,
      positions.contains(where: { attributes[$0].name == key })
    else { return nil }
    return try bytes(of: name, entity: entity, key: key)
  }

  public var storeType: StoreType { inner.storeType }
  public var identifier: String { inner.identifier }
  public var url: URL? { inner.url }
  public var model: ObjectModel { inner.model }
  public var options: StoreOptions { inner.options }

  // MARK: Reads

  private func resolve(_ snapshot: inout Snapshot) throws {
    guard let positions = eagerAttributes[snapshot.objectID.entityName] else { return }
    for position in positions where position < snapshot.attributes.count {
      guard case .data(let data) = snapshot.attributes[position], let name = ExternalDataReference.decode(data) else {
        continue
      }
      let entity = snapshot.objectID.entityName
      snapshot.attributes[position] = .data(
        try bytes(of: name, entity: entity, key: self.model.entity(named: entity)?.attributes[position].name))
    }
  }

  /// The bytes of the value `name`; `key` (only for the error) is looked up when the value is missing.
  private func bytes(of name: UUID, entity: String, key: @autoclosure () -> String?) throws -> Data {
    let read = try storage.read(name)
    shared.count.add(1, ordering: .relaxed)
    if let read { return read }
    let key = key()
    throw StoreError(
      .corrupted, "the value of \(entity).\(key ?? "?") kept in external storage (\(name.uuidString)) is missing",
      entity: entity, key: key)
  }

  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let result = try inner.fetch(request, generation: generation)
    guard !resolvedAttributes.isEmpty else { return result }
    switch result {
    case .snapshots(var snapshots):
      guard !eagerAttributes.isEmpty else { return result }
      for index in snapshots.indices { try resolve(&snapshots[index]) }
      return .snapshots(snapshots)
    case .dictionaries(var rows):
      let names = Set(
        model.entities.filter { model.isEntity($0.name, kindOf: request.entityName) }.flatMap { entity in
          (resolvedAttributes[entity.name] ?? []).map { entity.attributes[$0].name }
        })
      guard !names.isEmpty else { return result }
      for index in rows.indices {
        for (key, value) in rows[index] where names.contains(key) {
          guard case .data(let data) = value, let name = ExternalDataReference.decode(data) else { continue }
          rows[index][key] = .data(try bytes(of: name, entity: request.entityName, key: key))
        }
      }
      return .dictionaries(rows)
    case .objectIDs, .count:
      return result
    }
  }

  public func fetchSnapshots(
    _ request: FetchDescription, generation: QueryGeneration?,
    _ body: (_ snapshot: consuming Snapshot, _ remaining: Int) throws -> Void
  ) throws {
    guard !eagerAttributes.isEmpty else { return try inner.fetchSnapshots(request, generation: generation, body) }
    // The bytes are read after the store's read is over: `body` may not call the store, nor should a
    // file read run inside a read transaction.
    var collected: [Snapshot] = []
    try inner.fetchSnapshots(request, generation: generation) { snapshot, _ in collected.append(snapshot) }
    for index in collected.indices { try resolve(&collected[index]) }
    let count = collected.count
    for (index, snapshot) in collected.enumerated() { try body(snapshot, count - index - 1) }
  }

  public func snapshots(for ids: [ObjectID], generation: QueryGeneration?) throws -> [Snapshot] {
    var snapshots = try inner.snapshots(for: ids, generation: generation)
    guard !eagerAttributes.isEmpty else { return snapshots }
    for index in snapshots.indices { try resolve(&snapshots[index]) }
    return snapshots
  }

  public func snapshot(for id: ObjectID, generation: QueryGeneration?) throws -> Snapshot? {
    guard var snapshot = try inner.snapshot(for: id, generation: generation) else { return nil }
    try resolve(&snapshot)
    return snapshot
  }

  public func relatedObjectIDs(of id: ObjectID, relationship: String, generation: QueryGeneration?) throws -> [ObjectID] {
    try inner.relatedObjectIDs(of: id, relationship: relationship, generation: generation)
  }

  // MARK: Writes

  public func save(_ changes: ChangeSet) throws -> SaveResult {
    guard !resolvedAttributes.isEmpty else { return try inner.save(changes) }
    var changes = changes
    let threshold = AttributeDescription.externalStorageThreshold
    var written: [(name: UUID, bytes: Data)] = []
    var replaced: [UUID] = []
    func reference(_ value: Value?) -> UUID? {
      guard case .data(let data)? = value else { return nil }
      return ExternalDataReference.decode(data)
    }
    func externalize(_ value: inout Value, entity: String, position: Int) throws {
      var bytes: Data
      if let name = reference(value) {
        // A reference a context read and did not load, handed back as a new value (an undone change, a
        // value copied between objects): its bytes go under a name of their own, so that no two rows
        // share one value and the removal of the one this row replaces cannot take it.
        bytes = try self.bytes(of: name, entity: entity, key: model.entity(named: entity)?.attributes[position].name)
      } else if case .data(let data) = value {
        bytes = data
      } else {
        return
      }
      guard bytes.count >= threshold else {
        value = .data(bytes)
        return
      }
      let name = UUID()
      written.append((name, bytes))
      value = .data(ExternalDataReference.encode(name))
    }
    let touched =
      changes.updated.map(\.objectID).filter { resolvedAttributes[$0.entityName] != nil }
      + changes.deleted.map(\.objectID).filter { resolvedAttributes[$0.entityName] != nil }
    var stored: [ObjectID: Snapshot] = [:]
    if !touched.isEmpty {
      for snapshot in try inner.snapshots(for: touched, generation: nil) { stored[snapshot.objectID] = snapshot }
    }
    for index in changes.inserted.indices {
      let entity = changes.inserted[index].objectID.entityName
      for position in externalAttributes[entity] ?? [] where position < changes.inserted[index].attributes.count {
        try externalize(&changes.inserted[index].attributes[position], entity: entity, position: position)
      }
    }
    for index in changes.updated.indices {
      let change = changes.updated[index]
      guard let positions = resolvedAttributes[change.objectID.entityName],
        let entity = model.entity(named: change.objectID.entityName)
      else { continue }
      let flagged = Set(externalAttributes[change.objectID.entityName] ?? [])
      let old = stored[change.objectID]
      for position in positions where position < change.attributes.count {
        let storedValue = old.flatMap { position < $0.attributes.count ? $0.attributes[position] : nil }
        let isChanged = change.changedKeys.isEmpty || change.changedKeys.contains(entity.attributes[position].name)
        let storedName = reference(storedValue)
        if let storedValue, let storedName, !isChanged || reference(change.attributes[position]) == storedName {
          // Unchanged (or set back to the reference it holds): the row keeps its reference rather than the
          // bytes the context may have read through it.
          changes.updated[index].attributes[position] = storedValue
          continue
        }
        if let storedName { replaced.append(storedName) }
        if flagged.contains(position) || reference(change.attributes[position]) != nil {
          try externalize(&changes.updated[index].attributes[position], entity: entity.name, position: position)
        }
      }
    }
    for deletion in changes.deleted {
      guard let positions = resolvedAttributes[deletion.objectID.entityName], let old = stored[deletion.objectID] else {
        continue
      }
      replaced += positions.compactMap { $0 < old.attributes.count ? reference(old.attributes[$0]) : nil }
    }
    try storage.write(written)
    let result: SaveResult
    do {
      result = try inner.save(changes)
    } catch {
      try? storage.remove(written.map(\.name))
      throw error
    }
    // Committed: what the rows no longer name goes (a failure here leaves values that opening removes).
    removeReplaced(replaced)
    return result
  }

  /// The wrapped store's batch request. The values kept out of line by the objects a batch update or
  /// delete matches are read first; those that no row of theirs names afterwards are removed (the values of
  /// objects that delete rules cascade to are left to the sweep at open). A batch insert keeps its values
  /// in the rows.
  public func execute(_ request: BatchRequest, author: String?, contextName: String?) throws -> BatchResult {
    guard !resolvedAttributes.isEmpty else { return try inner.execute(request, author: author, contextName: contextName) }
    var before: [ObjectID: [UUID]] = [:]
    func collect(_ snapshot: Snapshot) {
      let names = references(in: snapshot)
      if !names.isEmpty { before[snapshot.objectID] = names }
    }
    switch request {
    case .update(let entityName, let predicate, _, _), .delete(let entityName, let predicate, _):
      if model.entities.contains(where: { resolvedAttributes[$0.name] != nil && model.isEntity($0.name, kindOf: entityName) }) {
        try inner.fetchSnapshots(FetchDescription(entityName: entityName, predicate: predicate), generation: nil) { snapshot, _ in
          collect(snapshot)
        }
      }
    case .deleteObjects(let ids, _):
      let touched = ids.filter { resolvedAttributes[$0.entityName] != nil }
      if !touched.isEmpty { for snapshot in try inner.snapshots(for: touched, generation: nil) { collect(snapshot) } }
    case .insert:
      break
    }
    let result = try inner.execute(request, author: author, contextName: contextName)
    guard !before.isEmpty else { return result }
    var named = Set<UUID>()
    for snapshot in try inner.snapshots(for: Array(before.keys), generation: nil) {
      named.formUnion(references(in: snapshot))
    }
    removeReplaced(before.values.flatMap { $0 }.filter { !named.contains($0) })
    return result
  }

  /// Removes values no row names any more, once no generation pinned through this store may read them
  /// (a failure leaves them to the sweep at open).
  private func removeReplaced(_ names: [UUID]) {
    guard !names.isEmpty else { return }
    let now = shared.pins.withLock { pins -> [UUID] in
      guard pins.count > 0 else { return names }
      pins.deferred += names
      return []
    }
    if !now.isEmpty { try? storage.remove(now) }
  }

  private func references(in snapshot: Snapshot) -> [UUID] {
    (resolvedAttributes[snapshot.objectID.entityName] ?? []).compactMap { position in
      guard position < snapshot.attributes.count, case .data(let data) = snapshot.attributes[position] else { return nil }
      return ExternalDataReference.decode(data)
    }
  }

  /// Removes the stored values among `names` (the storage's listing) that no row names and that are older
  /// than ``orphanAge``.
  func removeOrphans(among names: [UUID: Date]) throws {
    guard !names.isEmpty else { return }
    var referenced = Set<UUID>()
    for entity in model.entities where resolvedAttributes[entity.name] != nil {
      var request = FetchDescription(entityName: entity.name)
      request.includesSubentities = false
      let positions = resolvedAttributes[entity.name] ?? []
      try inner.fetchSnapshots(request, generation: nil) { snapshot, _ in
        for position in positions where position < snapshot.attributes.count {
          if case .data(let data) = snapshot.attributes[position], let name = ExternalDataReference.decode(data) {
            referenced.insert(name)
          }
        }
      }
    }
    let cutoff = Date().addingTimeInterval(-Self.orphanAge)
    let orphans = names.filter { !referenced.contains($0.key) && $0.value < cutoff }.map(\.key)
    if !orphans.isEmpty { try storage.remove(orphans) }
  }

  // MARK: Everything else is the wrapped store's

  public func fetchHistory(_ request: HistoryRequest) throws -> HistoryResult { try inner.fetchHistory(request) }
  public func deleteHistory(before cutoff: HistoryCutoff) throws -> Int { try inner.deleteHistory(before: cutoff) }
  public func currentHistoryToken() throws -> HistoryToken? { try inner.currentHistoryToken() }
  /// The wrapped store's pin; until it is released, values that saves replace or delete stay in the
  /// storage, so that objects read at the generation can still load them.
  public func pinGeneration() throws -> QueryGeneration {
    let generation = try inner.pinGeneration()
    shared.pins.withLock { $0.count += 1 }
    return generation
  }
  public func unpin(_ generation: QueryGeneration) {
    inner.unpin(generation)
    let released = shared.pins.withLock { pins -> [UUID] in
      pins.count = max(0, pins.count - 1)
      guard pins.count == 0 else { return [] }
      defer { pins.deferred = [] }
      return pins.deferred
    }
    removeReplaced(released)
  }
  public func changes() -> AsyncStream<StoreChange> { inner.changes() }
  public func close() { inner.close() }
  public func explain(_ request: FetchDescription) throws -> QueryPlan { try inner.explain(request) }
  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    try inner.storageChanges(for: migration)
  }

  /// The wrapped store's migration, its result wrapped over the same storage when it still needs the
  /// wrapper (its model has an attribute allowing external storage, or the storage holds values), the
  /// migrated store itself otherwise. Values kept out of line stay where they are; a value of an attribute
  /// that now allows external storage moves out of its row the next time it is saved.
  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    let migrated = try inner.migrated(along: steps, reporting: progress)
    do {
      let storage = storage.serving(migrated)
      let holdsValues = try !storage.names().isEmpty
      guard holdsValues || Self.allowsExternalStorage(migrated.model) else { return migrated }
      return ExternalDataStore(migrated, storage: storage, holdsValues: holdsValues)
    } catch {
      migrated.close()
      throw error
    }
  }
}
