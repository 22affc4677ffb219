import Foundation

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
/// Reads are not lazy: a snapshot carries its bytes, so faulting an object reads its external values.
/// A predicate or sort on such an attribute compares what the row holds (a value kept in the row, or the
/// reference of one kept out of it), never the external bytes.
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

  /// `store` wrapped so that its large external-storage values live in `storage`, with values that no row
  /// names removed first (unless the store is read-only). When that fails, `store` is closed.
  ///
  /// ```swift
  /// let wrapped = try ExternalDataStore.wrapping(store, storage: ExternalDataDirectory(beside: url))
  /// wrapped.close()
  /// ```
  public static func wrapping(_ store: any PersistentStore, storage: any ExternalDataStorage) throws -> ExternalDataStore {
    do {
      let wrapped = try ExternalDataStore(store, storage: storage)
      if !store.options.isReadOnly { try wrapped.removeOrphans() }
      return wrapped
    } catch {
      store.close()
      throw error
    }
  }

  private init(_ inner: any PersistentStore, storage: any ExternalDataStorage) throws {
    self.inner = inner
    self.storage = storage
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
    let hasStoredValues = try !storage.names().isEmpty
    resolvedAttributes = !external.isEmpty || hasStoredValues ? data : [:]
  }

  public var storeType: StoreType { inner.storeType }
  public var identifier: String { inner.identifier }
  public var url: URL? { inner.url }
  public var model: ObjectModel { inner.model }
  public var options: StoreOptions { inner.options }

  // MARK: Reads

  private func resolve(_ snapshot: inout Snapshot) throws {
    guard let positions = resolvedAttributes[snapshot.objectID.entityName] else { return }
    for position in positions where position < snapshot.attributes.count {
      guard case .data(let data) = snapshot.attributes[position], let name = ExternalDataReference.decode(data) else {
        continue
      }
      snapshot.attributes[position] = .data(try bytes(of: name, entity: snapshot.objectID.entityName, position: position))
    }
  }

  private func bytes(of name: UUID, entity: String, position: Int) throws -> Data {
    if let bytes = try storage.read(name) { return bytes }
    let key = model.entity(named: entity).map { $0.attributes[position].name }
    throw StoreError(
      .corrupted, "the value of \(entity).\(key ?? "?") kept in external storage (\(name.uuidString)) is missing",
      entity: entity, key: key)
  }

  public func fetch(_ request: FetchDescription, generation: QueryGeneration?) throws -> FetchResult {
    let result = try inner.fetch(request, generation: generation)
    guard !resolvedAttributes.isEmpty else { return result }
    switch result {
    case .snapshots(var snapshots):
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
          guard let bytes = try storage.read(name) else {
            throw StoreError(
              .corrupted, "the value of \(request.entityName).\(key) kept in external storage is missing",
              entity: request.entityName, key: key)
          }
          rows[index][key] = .data(bytes)
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
    guard !resolvedAttributes.isEmpty else { return try inner.fetchSnapshots(request, generation: generation, body) }
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
    guard !resolvedAttributes.isEmpty else { return snapshots }
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
    func externalize(_ value: inout Value) {
      guard case .data(let bytes) = value, bytes.count >= threshold else { return }
      let name = UUID()
      written.append((name, bytes))
      value = .data(ExternalDataReference.encode(name))
    }
    func reference(_ value: Value?) -> UUID? {
      guard case .data(let data)? = value else { return nil }
      return ExternalDataReference.decode(data)
    }
    let touched =
      changes.updated.map(\.objectID).filter { resolvedAttributes[$0.entityName] != nil }
      + changes.deleted.map(\.objectID).filter { resolvedAttributes[$0.entityName] != nil }
    var stored: [ObjectID: Snapshot] = [:]
    if !touched.isEmpty {
      for snapshot in try inner.snapshots(for: touched, generation: nil) { stored[snapshot.objectID] = snapshot }
    }
    for index in changes.inserted.indices {
      for position in externalAttributes[changes.inserted[index].objectID.entityName] ?? [] {
        externalize(&changes.inserted[index].attributes[position])
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
        if !isChanged, let storedValue, reference(storedValue) != nil {
          // Unchanged: the row keeps its reference rather than the bytes the context read through it.
          changes.updated[index].attributes[position] = storedValue
          continue
        }
        if let name = reference(storedValue) { replaced.append(name) }
        if flagged.contains(position) { externalize(&changes.updated[index].attributes[position]) }
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
    try? storage.remove(replaced)
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
    try? storage.remove(before.values.flatMap { $0 }.filter { !named.contains($0) })
    return result
  }

  private func references(in snapshot: Snapshot) -> [UUID] {
    (resolvedAttributes[snapshot.objectID.entityName] ?? []).compactMap { position in
      guard position < snapshot.attributes.count, case .data(let data) = snapshot.attributes[position] else { return nil }
      return ExternalDataReference.decode(data)
    }
  }

  /// Removes the stored values that no row names and that are older than ``orphanAge``.
  func removeOrphans() throws {
    let names = try storage.names()
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
  public func pinGeneration() throws -> QueryGeneration { try inner.pinGeneration() }
  public func unpin(_ generation: QueryGeneration) { inner.unpin(generation) }
  public func changes() -> AsyncStream<StoreChange> { inner.changes() }
  public func close() { inner.close() }
  public func explain(_ request: FetchDescription) throws -> QueryPlan { try inner.explain(request) }
  public func storageChanges(for migration: ModelMigration) throws -> [String: StorageChange] {
    try inner.storageChanges(for: migration)
  }

  /// The wrapped store's migration, its result wrapped over the same storage. Values kept out of line stay
  /// where they are; a value of an attribute that now allows external storage moves out of its row the
  /// next time it is saved.
  public func migrated(
    along steps: [MigrationStep], reporting progress: (@Sendable (MigrationProgress) -> Void)?
  ) throws -> any PersistentStore {
    let migrated = try inner.migrated(along: steps, reporting: progress)
    return try ExternalDataStore(migrated, storage: storage.serving(migrated))
  }
}
