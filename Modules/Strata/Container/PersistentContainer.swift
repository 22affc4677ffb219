import Foundation
package import StrataStoreKit
import Synchronization

/// Where and how a container's store is opened.
///
/// ```swift
/// let sqlite = StoreDescription(type: .sqlite, url: directory.appending(path: "Movies.sqlite"))
/// let memory = StoreDescription(type: .memory)
/// ```
public struct StoreDescription: Sendable, Hashable {
  /// The store type, looked up in the container's `StoreRegistry`.
  public var type: StoreType
  /// The store's file or directory; `nil` for stores without one.
  public var url: URL?
  /// The options the store is opened with (read-only, history, remote notifications, migration).
  public var options: StoreOptions
  /// Whether ``PersistentContainer/loadPersistentStores(completionHandler:)`` opens the store on a
  /// background queue and returns at once (opening a large or remote file can take a while).
  public var shouldAddStoreAsynchronously: Bool
  /// The hub this store mirrors with, as Core Data's `cloudKitContainerOptions`: the container itself
  /// ignores it; StrataMirroring's `PersistentContainer.startMirroring(hubs:)` reads it.
  public var mirroring: MirroringOptions?

  /// A store of `type` at `url`.
  public init(
    type: StoreType, url: URL? = nil, options: StoreOptions = StoreOptions(), shouldAddStoreAsynchronously: Bool = false,
    mirroring: MirroringOptions? = nil
  ) {
    self.type = type
    self.url = url
    self.options = options
    self.shouldAddStoreAsynchronously = shouldAddStoreAsynchronously
    self.mirroring = mirroring
  }
}

/// How a store mirrors with a shared hub (StrataMirroring): where the hub is, and whether the mirror syncs
/// by itself. Set on a ``StoreDescription``, as Core Data's `NSPersistentCloudKitContainerOptions`.
///
/// ```swift
/// var local = StoreDescription(type: .sqlite, url: url, options: StoreOptions(tracksHistory: true))
/// local.mirroring = MirroringOptions(hub: "postgresql://db.example.com/potatoes/hub")
/// ```
public struct MirroringOptions: Sendable, Hashable {
  /// The hub's location, read by the hub factory that accepts it (a PostgreSQL URI naming the database and
  /// the schema for StrataPostgresHub).
  public var hub: String
  /// Whether the mirror syncs by itself after local saves and on the hub's news (default `true`);
  /// otherwise the app calls `sync()`.
  public var automaticallySyncs: Bool
  /// How long local saves must be quiet before an automatic push.
  public var debounce: Duration

  /// Mirroring with the hub at `hub`.
  public init(hub: String, automaticallySyncs: Bool = true, debounce: Duration = .milliseconds(50)) {
    self.hub = hub
    self.automaticallySyncs = automaticallySyncs
    self.debounce = debounce
  }
}

/// Sets up the whole stack — model, store, contexts — in one object.
///
/// ```swift
/// let registry = StoreRegistry([SQLiteStoreFactory()])     // in the app's composition root
///
/// let container = try PersistentContainer(name: "FaveFlicks", types: Movie.self, registry: registry)
/// container.storeDescriptions = [StoreDescription(type: .sqlite, url: url)]
/// try container.loadPersistentStores()
/// let movies = try container.viewContext.fetch(FetchRequest<Movie>())
/// ```
// Safe because its stored properties are constants of `Sendable` types but for `settings`, a mutex.
public final class PersistentContainer: @unchecked Sendable {
  /// The container's name: the default store file is named after it (`NAME.sqlite`).
  public let name: String
  /// The model every context of the container uses.
  public let model: ObjectModel
  /// The store to load. One description is supported; it defaults to an SQLite file named after the
  /// container in ``defaultDirectoryURL()``.
  public var storeDescriptions: [StoreDescription] {
    get { settings.withLock { $0.storeDescriptions } }
    set { settings.withLock { $0.storeDescriptions = newValue } }
  }
  /// The backends the container may open, by store type.
  public let registry: StoreRegistry
  /// The app's model versions, when it declared them: a store of an older one migrates along them.
  public let migrationPlan: MigrationPlan?
  /// Called as a migration on ``loadPersistentStores()-1ehcw`` advances, on the thread that loads the store:
  /// what a tool needs to draw a progress bar over a large store.
  public var migrationProgressHandler: (@Sendable (MigrationProgress) -> Void)? {
    get { settings.withLock { $0.migrationProgressHandler } }
    set { settings.withLock { $0.migrationProgressHandler = newValue } }
  }

  let coordinator: StoreCoordinator

  /// What may change after the container is made, and the view context once made.
  private struct Settings: Sendable {
    var storeDescriptions: [StoreDescription]
    var migrationProgressHandler: (@Sendable (MigrationProgress) -> Void)?
    var view: ObjectContext?
  }
  // A mutex, not `Locked`: `Settings` holds a closure type, and the container's few reads of it are not hot.
  private let settings: Mutex<Settings>

  /// A container for a model written out as a value; `types` names the classes of its entities
  /// (entities without a class are handled as plain ``ManagedObject``s).
  public convenience init(name: String, model: ObjectModel, types: [ManagedObject.Type] = [], registry: StoreRegistry) {
    self.init(name: name, model: model, plan: nil, types: types, registry: registry)
  }

  /// A container for the newest version of `plan`: a store written with an older version migrates to it
  /// when it opens, along every version after its own, in one transaction.
  ///
  /// ```swift
  /// let plan = try MigrationPlan([ModelVersion("1", v1), ModelVersion("2", v2)])
  /// let container = PersistentContainer(name: "Movies", plan: plan, types: [Movie.self, Watch.self], registry: registry)
  /// ```
  public convenience init(name: String, plan: MigrationPlan, types: [ManagedObject.Type] = [], registry: StoreRegistry) {
    self.init(name: name, model: plan.current.model, plan: plan, types: types, registry: registry)
  }

  private init(name: String, model: ObjectModel, plan: MigrationPlan?, types: [ManagedObject.Type], registry: StoreRegistry) {
    self.name = name
    self.model = model
    self.migrationPlan = plan
    self.registry = registry
    coordinator = StoreCoordinator(model: model, types: types)
    settings = Mutex(
      Settings(storeDescriptions: [
        StoreDescription(
          type: .sqlite, url: PersistentContainer.defaultDirectoryURL().appending(path: "\(name).sqlite"))
      ]))
  }

  /// A container whose model is derived from `ManagedObject` subclasses.
  /// - Throws: `.invalidModel` when the classes do not form a consistent model.
  public convenience init(name: String, types: ManagedObject.Type..., registry: StoreRegistry) throws {
    self.init(name: name, model: try ObjectModel(types: types), types: types, registry: registry)
  }

  /// A container for the model of `types` with the store `store` loaded: what an app's composition root
  /// usually wants in one call.
  ///
  /// ```swift
  /// let container = try PersistentContainer.loaded(
  ///   name: "FaveFlicks", model: try ObjectModel(Movie.self), types: [Movie.self],
  ///   store: StoreDescription(type: .sqlite, url: url), registry: registry)
  /// ```
  /// - Throws: the errors of ``loadPersistentStores()-1ehcw``.
  public static func loaded(
    name: String, model: ObjectModel, types: [ManagedObject.Type], store: StoreDescription, registry: StoreRegistry
  ) throws -> PersistentContainer {
    let container = PersistentContainer(name: name, model: model, types: types, registry: registry)
    container.storeDescriptions = [store]
    try container.loadPersistentStores()
    return container
  }

  /// The directory for stores of apps that do not choose one: `$XDG_DATA_HOME`, else `~/.local/share`.
  public static func defaultDirectoryURL() -> URL {
    if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
      return URL(fileURLWithPath: xdg, isDirectory: true)
    }
    return FileManager.default.homeDirectoryForCurrentUser.appending(path: ".local/share", directoryHint: .isDirectory)
  }

  /// The loaded store, once ``loadPersistentStores()`` succeeded (for the conformance suite and tests of
  /// this package; apps use the container's and contexts' API).
  package var persistentStore: (any PersistentStore)? { coordinator.store }

  /// The loaded store's file or directory; `nil` before ``loadPersistentStores()-1ehcw`` and for stores
  /// without one.
  public var storeURL: URL? { coordinator.store?.url }

  /// The loaded store's identifier, fixed when the store was created (part of every permanent
  /// `ObjectID`); `nil` before ``loadPersistentStores()-1ehcw``.
  public var storeIdentifier: String? { coordinator.store?.identifier }

  /// The token of the newest transaction in the store's persistent history, as Core Data's
  /// `currentPersistentHistoryToken(fromStores:)`: `nil` when nothing was recorded, the store does not
  /// track history, or no store is loaded. Keep it to fetch only what came after it later.
  ///
  /// ```swift
  /// let mark = try container.currentPersistentHistoryToken()
  /// // … later
  /// let missed = try context.execute(.fetchHistory(after: mark))
  /// ```
  public func currentPersistentHistoryToken() throws -> HistoryToken? {
    try coordinator.store?.currentHistoryToken()
  }

  /// Opens the store the description names, creating it when it does not exist. A store written with
  /// another model is migrated to the container's model when its description's options allow it
  /// (`StoreOptions.migratesAutomatically`, the default) and a migration can be inferred (see
  /// `ModelMigration`), in one transaction.
  ///
  /// - Throws: `.unknownStoreType`, `.corrupted` (not a Strata store), `.schemaMismatch` (naming what
  ///   cannot be migrated), `.constraintConflict` (a uniqueness constraint added over clashing values),
  ///   `.io`.
  public func loadPersistentStores() throws {
    guard let description = storeDescriptions.first else {
      throw StoreError(.misuse, "the container \(name) has no store description")
    }
    guard storeDescriptions.count == 1 else {
      throw StoreError(.unsupported, "a container loads one store; \(storeDescriptions.count) were described")
    }
    let factory = try registry.storeFactory(for: description.type)
    if factory.requiresLocation && description.url == nil {
      throw StoreError(.misuse, "a \(description.type) store needs a URL")
    }
    coordinator.store?.close()
    let store: any PersistentStore
    do {
      store = try factory.openStore(at: description.url, model: model, options: description.options)
    } catch let mismatch as StoreError
      where mismatch.code == .schemaMismatch && description.options.migratesAutomatically && !description.options.isReadOnly
    {
      store = try migrateStore(at: description, with: factory, after: mismatch)
    }
    coordinator.setStore(store)
  }

  /// Opens the store `description` names with the model stored in it and migrates it to the container's
  /// model along the migration plan's runs, or the migration inferred from the two models.
  /// - Throws: the inference's `.schemaMismatch` naming every difference it cannot infer; `mismatch`,
  ///   completed, when the backend cannot migrate; what the migration or a stage throws (the store is
  ///   unchanged).
  private func migrateStore(
    at description: StoreDescription, with factory: any PersistentStoreFactory, after mismatch: StoreError
  ) throws -> any PersistentStore {
    let existing = try factory.openStore(at: description.url, model: nil, options: description.options)
    do {
      return try existing.migrated(along: try migrationSteps(from: existing.model), reporting: migrationProgressHandler)
    } catch let error as StoreError where error.code == .unsupported {
      existing.close()
      throw StoreError(.schemaMismatch, "\(mismatch.message); \(error.message)")
    } catch {
      existing.close()
      throw error
    }
  }

  /// Opens the store and calls `completionHandler` with its description and the error, if any — Core
  /// Data's form. With ``StoreDescription/shouldAddStoreAsynchronously`` the store opens on a background
  /// queue and this returns at once; the handler runs on that queue. Otherwise the store opens now and the
  /// handler runs before this returns.
  ///
  /// ```swift
  /// container.storeDescriptions[0].shouldAddStoreAsynchronously = true
  /// container.loadPersistentStores { description, error in
  ///   if let error { print("cannot open \(description.url?.path ?? ""): \(error)") }
  /// }
  /// ```
  public func loadPersistentStores(
    completionHandler: @escaping @Sendable (StoreDescription, (any Error)?) -> Void
  ) {
    let description = storeDescriptions.first ?? StoreDescription(type: StoreType("none"))
    let load: @Sendable () -> Void = { [self] in
      do {
        try self.loadPersistentStores()
        completionHandler(description, nil)
      } catch {
        completionHandler(description, error)
      }
    }
    if description.shouldAddStoreAsynchronously {
      DispatchQueue.global(qos: .userInitiated).async(execute: load)
    } else {
      load()
    }
  }

  /// Opens the store without blocking the caller.
  public func loadPersistentStores() async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
      DispatchQueue.global().async {
        continuation.resume(with: Result { try self.loadPersistentStores() })
      }
    }
  }

  /// The context for the main thread: use it, and its objects, on the main queue — from `@MainActor`
  /// code (see ``mainContext``), or inside ``ObjectContext/perform(_:)``.
  public var viewContext: ObjectContext {
    settings.withLock { settings in
      if let view = settings.view { return view }
      let context = ObjectContext(coordinator: coordinator, concurrencyType: .mainQueue)
      context.name = "view"
      coordinator.register(context)
      settings.view = context
      return context
    }
  }

  /// The view context, for `@MainActor` code: SwiftData's `mainContext`. The main actor runs on the
  /// main queue, the view context's queue, so `@MainActor` code uses the context and its objects
  /// directly — before and after an `await`.
  ///
  /// ```swift
  /// @MainActor func showMovies(of container: PersistentContainer) async throws {
  ///   let movies = try container.mainContext.fetch(FetchRequest<Movie>())
  ///   try await container.newBackgroundActor().perform { context in try context.save() }
  ///   movies.first?.title = "Heat"  // still on the main actor, still on the context's queue
  /// }
  /// ```
  @MainActor public var mainContext: ObjectContext { viewContext }

  /// A new context with a private queue, for work off the main thread.
  public func newBackgroundContext() -> ObjectContext {
    let context = ObjectContext(coordinator: coordinator, concurrencyType: .privateQueue)
    coordinator.register(context)
    return context
  }

  /// Runs `body` with a new background context on its queue.
  ///
  /// ```swift
  /// try await container.performBackgroundTask { context in
  ///   let movie = Movie(context: context)
  ///   movie.title = "Heat"
  ///   try context.save()
  /// }
  /// ```
  public func performBackgroundTask<T: Sendable>(_ body: @escaping @Sendable (ObjectContext) throws -> T) async throws -> T {
    let context = newBackgroundContext()
    return try await context.perform { try body(context) }
  }

  /// Closes the store. Contexts of the container can no longer fetch or save.
  public func close() {
    coordinator.store?.close()
    coordinator.setStore(nil)
  }
}
