import Foundation

/// One version of an app's model: a name the app gives it and the model. Its checksum is the model's
/// ``ObjectModel/fingerprint``, which describes the structure alone.
///
/// ```swift
/// let v2 = ModelVersion("2", try ObjectModel(Movie.self, Watch.self))
/// ```
public struct ModelVersion: Sendable, Hashable {
  public let name: String
  /// The model, carrying ``name`` as its ``ObjectModel/versionName`` (so stores keep it).
  public let model: ObjectModel

  public init(_ name: String, _ model: ObjectModel) {
    var named = model
    named.versionName = name
    self.name = name
    self.model = named
  }

  /// The checksum of the model's structure.
  public var checksum: String { model.fingerprint }
}

/// An app's model versions, oldest first: the history along which a container migrates a store written
/// by any of them to the newest, in one transaction, each step inferred from two consecutive versions.
///
/// ```swift
/// let plan = try MigrationPlan([ModelVersion("1", v1), ModelVersion("2", v2), ModelVersion("3", v3)])
/// let container = PersistentContainer(name: "Movies", plan: plan, types: [Movie.self], registry: registry)
/// ```
///
/// A store written by a version the plan does not know — a newer release's, or one whose structure
/// differs from the version of its name — is never guessed at: opening it fails with `.schemaMismatch`
/// naming both versions, and the store is not touched.
public struct MigrationPlan: Sendable {
  public let versions: [ModelVersion]
  /// The migration between each version and the next.
  let steps: [ModelMigration]

  /// - Throws: `.misuse` for an empty plan; `.invalidModel` naming a version name used twice or two
  ///   versions with the same structure (checksum); `.schemaMismatch` naming the two versions and every
  ///   difference when a step between consecutive versions cannot be inferred.
  public init(_ versions: [ModelVersion]) throws {
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
    self.steps = steps
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
    guard index < steps.count else { return nil }
    return try ModelMigration(composing: Array(steps[index...]))
  }
}
