import Foundation

/// One version of an app's model: a name the app gives it and the model. Its checksum is the model's
/// `ObjectModel.fingerprint`, which describes the structure alone.
///
/// ```swift
/// let v2 = ModelVersion("2", try ObjectModel(Movie.self, Watch.self))
/// ```
public struct ModelVersion: Sendable, Hashable {
  /// The version's name, as the app calls it ("1", "2025-03", …).
  public let name: String
  /// The model, carrying ``name`` as its `ObjectModel.versionName` (so stores keep it).
  public let model: ObjectModel
  /// The classes of the version's entities, for the contexts of custom stages that work on this version
  /// (entities without a class there are plain ``ManagedObject``s, read with `value(forKey:)`).
  public let types: [ManagedObject.Type]

  /// A version named `name` of `model`, whose custom stages use the classes `types`.
  public init(_ name: String, _ model: ObjectModel, types: [ManagedObject.Type] = []) {
    var named = model
    named.versionName = name
    self.name = name
    self.model = named
    self.types = types
  }

  public static func == (lhs: ModelVersion, rhs: ModelVersion) -> Bool {
    lhs.name == rhs.name && lhs.model == rhs.model
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(name)
    hasher.combine(model)
  }

  /// The checksum of the model's structure.
  public var checksum: String { model.fingerprint }
}

/// Data work between two versions of a plan: the custom stage of Core Data's mapping models and
/// SwiftData's `MigrationStage.custom`. The structural change between the versions is inferred as for a
/// lightweight step; `willMigrate` runs before it with a context on the `from` version's model, and
/// `didMigrate` after it with a context on the `to` version's model — inside the migration's one
/// transaction, so a stage that throws leaves the store as it was.
///
/// ```swift
/// let split = MigrationStage.custom(from: v1, to: v2, didMigrate: { context in
///   for person in try context.fetch(FetchRequest<Person>()) {
///     let parts = person.fullName.split(separator: " ", maxSplits: 1)
///     person.firstName = parts.first.map(String.init) ?? ""
///     person.lastName = parts.count > 1 ? String(parts[1]) : ""
///   }
///   try context.save()
/// })
/// let plan = try MigrationPlan([v1, v2], stages: [split])
/// ```
///
/// The context is the stage's alone: call its methods directly in the closure (not through `perform`).
/// Its saves stay inside the migration; changes left unsaved when the closure returns are saved then.
/// A stage may span several versions (`from` v1 `to` v3): the structural changes between them are
/// composed into one. A store written with a version strictly inside a stage's span runs only the
/// stage's `didMigrate`, since its data never had the `from` version's shape.
public struct MigrationStage: Sendable {
  /// The version the stage starts from.
  public let from: ModelVersion
  /// The version the stage ends at.
  public let to: ModelVersion
  let willMigrate: (@Sendable (ObjectContext) throws -> Void)?
  let didMigrate: (@Sendable (ObjectContext) throws -> Void)?

  /// A stage that runs `willMigrate` on the store as the `from` version left it and `didMigrate` on the
  /// store as the `to` version shapes it.
  public static func custom(
    from: ModelVersion, to: ModelVersion, willMigrate: (@Sendable (ObjectContext) throws -> Void)? = nil,
    didMigrate: (@Sendable (ObjectContext) throws -> Void)? = nil
  ) -> MigrationStage {
    MigrationStage(from: from, to: to, willMigrate: willMigrate, didMigrate: didMigrate)
  }
}

/// An app's model versions, oldest first, and the custom stages between them: the history along which a
/// container migrates a store written by any version to the newest, in one transaction. Between
/// consecutive versions no stage covers, the change is inferred (lightweight).
///
/// ```swift
/// let plan = try MigrationPlan([v1, v2, v3], stages: [.custom(from: v2, to: v3, didMigrate: fillNames)])
/// let container = PersistentContainer(name: "Movies", plan: plan, types: [Movie.self], registry: registry)
/// ```
///
/// A store written by a version the plan does not know — a newer release's, or one whose structure
/// differs from the version of its name — is never guessed at: opening it fails with `.schemaMismatch`
/// naming both versions, and the store is not touched.
public struct MigrationPlan: Sendable {
  /// The versions, oldest first; the last is the current one.
  public let versions: [ModelVersion]
  /// The custom stages, as given.
  public let stages: [MigrationStage]
  /// The migration between each version and the next.
  let steps: [ModelMigration]

  /// One run of the plan's steps: versions `start` through `end`, with the custom stage that covers them.
  struct Segment: Sendable {
    let start: Int
    let end: Int
    let stage: MigrationStage?
  }

  /// The plan cut into segments: each custom stage's span, and single inferred steps between them.
  let segments: [Segment]

  /// - Throws: `.misuse` for an empty plan; `.invalidModel` naming a version name used twice, two
  ///   versions with the same structure (checksum), a stage whose versions are not in the plan (or not in
  ///   order), or two stages that overlap; `.schemaMismatch` naming the two versions and every difference
  ///   when a step between consecutive versions cannot be inferred.
  public init(_ versions: [ModelVersion], stages: [MigrationStage] = []) throws {
    guard !versions.isEmpty else { throw StoreError(.misuse, "a migration plan needs at least one model version") }
    var names: Set<String> = []
    var checksums: [String: String] = [:]
    for version in versions {
      guard names.insert(version.name).inserted else {
        throw StoreError(.invalidModel, "the migration plan names version '\(version.name)' twice")
      }
      if let other = checksums[version.checksum] {
        throw StoreError(
          .invalidModel,
          "versions '\(other)' and '\(version.name)' of the migration plan have the same structure (checksum \(version.checksum))"
        )
      }
      checksums[version.checksum] = version.name
    }
    var steps: [ModelMigration] = []
    for (old, new) in zip(versions, versions.dropFirst()) {
      do {
        steps.append(try ModelMigration(from: old.model, to: new.model))
      } catch let error as StoreError where error.code == .schemaMismatch {
        throw StoreError(.schemaMismatch, "from version '\(old.name)' to '\(new.name)': \(error.message)")
      }
    }
    self.versions = versions
    self.stages = stages
    self.steps = steps
    self.segments = try Self.segments(of: versions, stages: stages)
  }

  private static func segments(of versions: [ModelVersion], stages: [MigrationStage]) throws -> [Segment] {
    func index(of version: ModelVersion, in stage: MigrationStage) throws -> Int {
      guard let index = versions.firstIndex(of: version) else {
        throw StoreError(
          .invalidModel,
          "the stage from '\(stage.from.name)' to '\(stage.to.name)' names version '\(version.name)', which is not in the migration plan (or has another structure there)"
        )
      }
      return index
    }
    var covered: [Int: MigrationStage] = [:]
    var spans: [Segment] = []
    for stage in stages {
      let start = try index(of: stage.from, in: stage)
      let end = try index(of: stage.to, in: stage)
      guard start < end else {
        throw StoreError(
          .invalidModel, "the stage from '\(stage.from.name)' to '\(stage.to.name)' does not go forward in the migration plan")
      }
      for step in start..<end {
        if let other = covered[step] {
          throw StoreError(
            .invalidModel,
            "the stages from '\(other.from.name)' to '\(other.to.name)' and from '\(stage.from.name)' to '\(stage.to.name)' overlap"
          )
        }
        covered[step] = stage
      }
      spans.append(Segment(start: start, end: end, stage: stage))
    }
    var segments: [Segment] = []
    var position = 0
    for span in spans.sorted(by: { $0.start < $1.start }) {
      while position < span.start {
        segments.append(Segment(start: position, end: position + 1, stage: nil))
        position += 1
      }
      segments.append(span)
      position = span.end
    }
    while position < versions.count - 1 {
      segments.append(Segment(start: position, end: position + 1, stage: nil))
      position += 1
    }
    return segments
  }

  /// The newest version: the model a container of this plan opens stores with.
  public var current: ModelVersion { versions[versions.count - 1] }

  /// The version whose structure `model` has.
  public func version(of model: ObjectModel) -> ModelVersion? {
    versions.first { $0.checksum == model.fingerprint }
  }

  /// The migration that brings a store written with `stored` to the current version — every step after
  /// its version, composed — or `nil` when it has the current version already.
  ///
  /// - Throws: `.schemaMismatch` naming the store's version and the plan's when the plan does not know the
  ///   store's model (a newer version, or a version of the same name with another structure).
  public func migration(from stored: ObjectModel) throws -> ModelMigration? {
    let index = try versionIndex(of: stored)
    guard index < steps.count else { return nil }
    return try ModelMigration(composing: Array(steps[index...]))
  }

  /// The position of the store's version in the plan.
  func versionIndex(of stored: ObjectModel) throws -> Int {
    guard let index = versions.firstIndex(where: { $0.checksum == stored.fingerprint }) else {
      let storedName = stored.versionName.map { "version '\($0)'" } ?? "an unnamed version"
      if let name = stored.versionName, let known = versions.first(where: { $0.name == name }) {
        throw StoreError(
          .schemaMismatch,
          "the store was written with \(storedName) of checksum \(stored.fingerprint), but this app's version '\(name)' has checksum \(known.checksum); the store is left as it is"
        )
      }
      throw StoreError(
        .schemaMismatch,
        "the store was written with \(storedName) (checksum \(stored.fingerprint)) that this app does not know — perhaps a newer release's; this app knows \(versions.map { "'\($0.name)'" }.joined(separator: ", ")), the newest '\(current.name)'; the store is left as it is"
      )
    }
    return index
  }

  /// The runs from the store's version to the current one: consecutive inferred steps composed into one
  /// (so a backend rewrites its data once for them), each custom stage its own run with the stage.
  struct Run: Sendable {
    let from: ModelVersion
    let to: ModelVersion
    let migration: ModelMigration
    let stage: MigrationStage?
    /// Whether the store starts inside the stage's span, so its `willMigrate` does not run.
    let skipsWillMigrate: Bool
  }

  func runs(from stored: ObjectModel) throws -> [Run] {
    let index = try versionIndex(of: stored)
    var runs: [Run] = []
    var pending: (start: Int, end: Int)?
    func flush() throws {
      guard let span = pending else { return }
      runs.append(
        Run(
          from: versions[span.start], to: versions[span.end],
          migration: try ModelMigration(composing: Array(steps[span.start..<span.end])), stage: nil, skipsWillMigrate: false))
      pending = nil
    }
    for segment in segments where segment.end > index {
      let start = max(segment.start, index)
      guard let stage = segment.stage else {
        pending = (pending?.start ?? start, segment.end)
        continue
      }
      try flush()
      runs.append(
        Run(
          from: versions[start], to: versions[segment.end],
          migration: try ModelMigration(composing: Array(steps[start..<segment.end])), stage: stage,
          skipsWillMigrate: start != segment.start))
    }
    try flush()
    return runs
  }
}
