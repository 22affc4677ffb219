import Foundation
internal import StrataStoreKit

/// What opening a container's store would migrate, step by step: for each run of the migration plan
/// (or the one inferred migration), the changes, the objects they touch, and what happens to each
/// entity's storage.
///
/// ```swift
/// if let preview = try container.previewMigration() {
///   preview.lines.forEach { print($0) }   // "Movie.rating: added, filled with 0 (3 objects)"
/// }
/// ```
public struct MigrationPreview: Sendable {
  /// One step of the migration: between two versions of the plan (names `nil` without a plan).
  public struct Step: Sendable {
    /// The version the step starts from.
    public let fromVersion: String?
    /// The version the step ends at.
    public let toVersion: String?
    /// What the step changes.
    public let migration: ModelMigration
    /// Whether the step runs a custom stage of the app's around its structural change.
    public let isCustom: Bool
    /// What the step does to each entity's storage (altered in place, rebuilt, rewritten, created), by
    /// entity name of the step's destination model; empty when the backend does not say.
    public let storage: [String: StorageChange]
  }

  /// The steps, in the order they would run.
  public let steps: [Step]
  /// The number of objects of each entity of the stored model.
  public let objectCounts: [String: Int]

  /// The whole migration, every step composed.
  public var migration: ModelMigration? { try? ModelMigration(composing: steps.map(\.migration)) }

  /// One line per change; a change that rewrites stored data says how many objects it touches; a line
  /// per entity whose storage changes; for several steps, a heading per step.
  public var lines: [String] {
    steps.flatMap { step -> [String] in
      var lines: [String] = []
      if steps.count > 1 || step.fromVersion != nil {
        let from = step.fromVersion.map { "'\($0)'" } ?? "the stored model"
        let to = step.toVersion.map { "'\($0)'" } ?? "the app's model"
        lines.append("from version \(from) to \(to)\(step.isCustom ? " (custom stage)" : ""):")
      }
      let indent = lines.isEmpty ? "" : "  "
      let sources = Dictionary(
        step.migration.entities.compactMap { mapping in mapping.source.map { (mapping.entity.name, $0) } },
        uniquingKeysWith: { first, _ in first })
      for change in step.migration.changes {
        guard change.rewritesData else {
          lines.append(indent + change.description)
          continue
        }
        let count = objectCounts[sources[change.entity] ?? change.entity] ?? 0
        lines.append(indent + "\(change.description) (\(count) object\(count == 1 ? "" : "s"))")
      }
      for (entity, storage) in step.storage.sorted(by: { $0.key < $1.key }) where storage != .unchanged {
        lines.append(indent + "\(entity): storage \(storage.rawValue)")
      }
      return lines
    }
  }
}

extension PersistentContainer {
  /// The steps that bring a store written with `stored` to the container's model: the migration plan's
  /// runs (each custom stage's with its work), or the one migration inferred from the two models.
  func migrationSteps(from stored: ObjectModel) throws -> [MigrationStep] {
    try refuseAnotherAppsModel(stored)
    guard let migrationPlan else { return [MigrationStep(try ModelMigration(from: stored, to: model))] }
    let runs = try migrationPlan.runs(from: stored)
    guard !runs.isEmpty else { return [MigrationStep(try ModelMigration(from: stored, to: model))] }
    return runs.map { run -> MigrationStep in
      guard let stage = run.stage else { return MigrationStep(run.migration) }
      var willMigrate: (@Sendable (any PersistentStore) throws -> Void)?
      if let work = stage.willMigrate, !run.skipsWillMigrate {
        let version = run.from
        willMigrate = { store in try self.runStage(work, of: stage, phase: "willMigrate", version: version, on: store) }
      }
      var didMigrate: (@Sendable (any PersistentStore) throws -> Void)?
      if let work = stage.didMigrate {
        let version = run.to
        didMigrate = { store in try self.runStage(work, of: stage, phase: "didMigrate", version: version, on: store) }
      }
      return MigrationStep(run.migration, willMigrate: willMigrate, didMigrate: didMigrate)
    }
  }

  /// Refuses a store whose model shares no entity with any model this app knows: another app's store (two
  /// apps given one location), not an older or newer version of this one.
  ///
  /// - Throws: `.schemaMismatch` naming the store's entities and the app's.
  private func refuseAnotherAppsModel(_ stored: ObjectModel) throws {
    let storedNames = Set(stored.entities.map(\.name))
    var known = Set(model.entities.map(\.name))
    for version in migrationPlan?.versions ?? [] { known.formUnion(version.model.entities.map(\.name)) }
    guard !storedNames.isEmpty, storedNames.isDisjoint(with: known) else { return }
    throw StoreError(
      .schemaMismatch,
      "the store holds another app's model (entities \(storedNames.sorted().joined(separator: ", "))), not \(name)'s (\(model.entities.map(\.name).sorted().joined(separator: ", "))); the store is left as it is"
    )
  }

  /// Runs one closure of a custom stage with a context of its own on `store` (bound to the migration's
  /// transaction), saving what it left unsaved; a store error it throws names the stage.
  private func runStage(
    _ work: @Sendable (ObjectContext) throws -> Void, of stage: MigrationStage, phase: String, version: ModelVersion,
    on store: any PersistentStore
  ) throws {
    let types = version.types.isEmpty && store.model == model ? coordinator.types : version.types
    let coordinator = StoreCoordinator(model: store.model, types: types)
    coordinator.setStore(store)
    defer { coordinator.setStore(nil) }
    let context = ObjectContext(coordinator: coordinator, concurrencyType: .privateQueue)
    context.name = "\(phase) from '\(stage.from.name)' to '\(stage.to.name)'"
    context.transactionAuthor = MigrationStep.historyAuthor
    do {
      // On the context's queue, where its objects belong (the concurrency debug mode checks it).
      try context.performAndWait {
        try work(context)
        if context.hasChanges { try context.save() }
      }
    } catch var error as StoreError {
      error.message = "\(phase) of the stage from '\(stage.from.name)' to '\(stage.to.name)': \(error.message)"
      throw error
    }
  }

  /// What ``loadPersistentStores()-1ehcw`` would migrate, found without opening the store for writing: `nil`
  /// when no store exists yet at the description's location, when it has the container's model, or when
  /// its backend keeps nothing between opens.
  ///
  /// - Throws: `.schemaMismatch` naming every difference a migration cannot infer, or naming the store's
  ///   version when the migration plan does not know it; the errors of opening the store read-only
  ///   (`.corrupted`, `.io`, `.unknownStoreType`).
  public func previewMigration() throws -> MigrationPreview? {
    guard let description = storeDescriptions.first else {
      throw StoreError(.misuse, "the container \(name) has no store description")
    }
    let factory = try registry.storeFactory(for: description.type)
    guard factory.requiresLocation, let url = description.url else { return nil }
    if url.isFileURL && !FileManager.default.fileExists(atPath: url.path) { return nil }
    let store: any PersistentStore
    do {
      store = try factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true))
    } catch let error as StoreError where error.code == .notFound && !url.isFileURL {
      // A server location with no store there yet.
      return nil
    }
    defer { store.close() }
    guard store.model != model else { return nil }
    let steps: [MigrationPreview.Step]
    if let migrationPlan, case let runs = try migrationPlan.runs(from: store.model), !runs.isEmpty {
      steps = try runs.map { run in
        MigrationPreview.Step(
          fromVersion: run.from.name, toVersion: run.to.name, migration: run.migration, isCustom: run.stage != nil,
          storage: try store.storageChanges(for: run.migration))
      }
    } else {
      let migration = try ModelMigration(from: store.model, to: model)
      steps = [
        MigrationPreview.Step(
          fromVersion: store.model.versionName, toVersion: model.versionName, migration: migration, isCustom: false,
          storage: try store.storageChanges(for: migration))
      ]
    }
    var counts: [String: Int] = [:]
    for entity in store.model.entities {
      counts[entity.name] = try store.count(FetchDescription(entityName: entity.name))
    }
    return MigrationPreview(steps: steps, objectCounts: counts)
  }
}
