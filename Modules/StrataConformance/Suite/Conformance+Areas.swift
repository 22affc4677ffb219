import Foundation
import StrataStoreKit
import Testing

extension Conformance {
  /// What a backend offers beyond the contract every backend fulfils. An area that needs a capability
  /// the backend lacks is reported as skipped (cancelled, with the reason) when it runs.
  public struct Capabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Two stores opened at one location in one process (two containers) share their data and are
    /// told of each other's commits, as stores of two processes would be.
    public static let sharedLocation = Capabilities(rawValue: 1 << 0)
    /// Stores of other processes may open the same location at once, and their commits reach this
    /// process's remote-change notifications and history. Needs a ``ConformanceBackend/worker``.
    public static let multiProcess = Capabilities(rawValue: 1 << 1)

    /// The store migrates its data to another model (`PersistentStore.migrated(by:)`) — every backend
    /// is to; one that does not yet leaves the migration area skipped.
    public static let migration = Capabilities(rawValue: 1 << 2)

    /// The store holds models with entity hierarchies (sub-entities, abstract entities). Every backend is
    /// to (this package's four do); one that does not yet refuses such a model with `.unsupported` and
    /// leaves the inheritance area skipped.
    public static let inheritance = Capabilities(rawValue: 1 << 3)

    /// The store migrates models that already have entity hierarchies: attributes and relationships of
    /// roots and sub-entities added, removed, renamed or converted, sub-entities added or removed (the
    /// references to a removed one's objects cleared), an entity moving under a new parent or leaving a
    /// hierarchy. A backend without it must refuse such a
    /// migration with `.unsupported` naming the entity and leave the store unchanged (the inheritance area
    /// checks that instead).
    ///
    /// ```swift
    /// ConformanceBackend(factory: MyStoreFactory(), capabilities: [.migration, .inheritance, .hierarchyMigration])
    /// ```
    public static let hierarchyMigration = Capabilities(rawValue: 1 << 4)

    static let names: [(Capabilities, String)] = [
      (.sharedLocation, "sharedLocation"), (.multiProcess, "multiProcess"), (.migration, "migration"),
      (.inheritance, "inheritance"), (.hierarchyMigration, "hierarchyMigration"),
    ]

    public var description: String {
      Self.names.filter { contains($0.0) }.map(\.1).joined(separator: ", ")
    }
  }

  /// One area of the suite. `allCases` is every area, so a new area runs on every backend at once.
  public enum Area: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Objects, relationships, delete rules, uniqueness constraints, fetches, concurrent contexts, errors,
    /// expression functions and predicates.
    case crud, relationships, deleteRules, uniqueness, fetching, concurrency, errors, expressions, predicates
    /// Dictionary results, batch requests, faulting, walking large results in bounded memory, one object per
    /// ID, fetches with unsaved changes, asynchronous fetches.
    case dictionaries, batch, faulting, boundedWalk, identityMap, pendingChanges, asynchronousFetch
    /// Merge policies, transient attributes, lifecycle hooks and validation, undo, derived attributes, fetched
    /// results controllers.
    case mergePolicies, transientAttributes, lifecycle, undo, derivedAttributes, fetchedResults
    /// Fetched results controllers under concurrent saves, changes from another store, persistent history, its
    /// notifications, and history seen by a second store at the same location.
    case fetchedResultsUnderLoad, remoteChanges, history, historyNotifications, historyBetweenStores
    /// History written by another process, child contexts, batch inserts, query generations, migration,
    /// query size limits, creation of one store by several processes at once, copying a store.
    case historyFromAnotherProcess, childContexts, batchInsert, queryGenerations, migration, queryLimits, creation, copy
    /// A migration interrupted by killing the worker process at many moments: the store always opens whole.
    case migrationCrash
    /// Saves and batch inserts interrupted by killing the worker process at random moments: every write is
    /// whole or absent, and none acknowledged is lost.
    case writeCrash
    /// Codable attributes (arrays, sets, dictionaries, structs): storage, predicates, values that no longer
    /// decode.
    case compositeAttributes
    /// Enum attributes (`String` and `Int` raw values): predicates against cases and raw values, sorting by
    /// raw value, unknown raw values (an error or the fallback), migrating a plain attribute into an enum.
    case enumAttributes
    /// Entity inheritance: abstract entities, sub-entities fetched through their parents as their own
    /// classes, relationships to a parent, constraints across a hierarchy, optimistic locking of its objects.
    case inheritance
    /// Ordered to-many relationships: order kept through saves, faults, merges, child contexts and undo.
    case orderedRelationships
    /// Batch-insert upserts that change no value: nothing written, no version bump, no history, reported
    /// as unchanged.
    case unchangedUpserts
    /// Observation of objects: a tracking hears of another context's merged save to the property it read,
    /// and of nothing else.
    case observation
    /// Attributes that allow external storage: large values round trip and leave the rows, small ones stay;
    /// replaced, deleted and orphaned values are removed; copies and migrations carry them.
    case externalStorage
    /// Mirroring: the backend's stores as replicas of one in-memory hub, through the scenario matrix of
    /// docs/MIRRORING.md (update/update, delete/update, delete/relate, create/create of one unique key,
    /// Deny versus a new child, an ordered relationship reordered and a many-to-many changed on both sides).
    /// The store must track persistent history.
    case mirroring

    /// The capabilities a backend needs for this area to apply.
    public var requirements: Capabilities {
      switch self {
      case .remoteChanges, .historyBetweenStores: .sharedLocation
      case .historyFromAnotherProcess, .creation, .writeCrash: .multiProcess
      case .migration: .migration
      case .inheritance: .inheritance
      case .migrationCrash: [.multiProcess, .migration]
      default: []
      }
    }

    public var testDescription: String { rawValue }
  }

  /// Runs one case on `backend`, or skips it when the backend does not declare what the case's area
  /// needs: the test case is cancelled (`Test.cancel`, a skip in the event stream and xUnit output) and a
  /// warning naming the missing capabilities is recorded, so the console says why. It never passes
  /// silently. A failure names the case (`area/case`, the test's argument) and the backend (the test).
  ///
  /// ```swift
  /// @Test("My store conformance", arguments: Conformance.cases)
  /// func conformance(_ check: Conformance.Case) async throws { try await Conformance.run(check, on: backend) }
  /// ```
  public static func run(_ check: Case, on backend: ConformanceBackend) async throws {
    let area = check.area
    let missing = area.requirements.subtracting(backend.capabilities)
    if !missing.isEmpty {
      // The case is cancelled (a skip to event-stream and xUnit readers); the warning carries the reason
      // to the console, which shows nothing of a cancelled test case.
      let reason =
        "skipped: the \(backend.factory.storeType) backend does not declare \(missing), which \(area) needs (\(check))"
      Issue.record(Comment(rawValue: reason), severity: .warning)
      try Test.cancel(Comment(rawValue: reason))
    }
    if area.requirements.contains(.multiProcess) && backend.worker == nil {
      Issue.record("the \(backend.factory.storeType) backend declares multiProcess but names no worker executable")
      return
    }
    try await check.body(backend)
  }

  /// Runs every case of `area` on `backend`, one after another; a test over ``cases`` instead names the
  /// case that fails and runs the cases in parallel.
  ///
  /// ```swift
  /// @Test(arguments: Conformance.Area.allCases)
  /// func conformance(_ area: Conformance.Area) async throws { try await Conformance.run(area, on: backend) }
  /// ```
  public static func run(_ area: Area, on backend: ConformanceBackend) async throws {
    for check in area.cases { try await run(check, on: backend) }
  }
}
