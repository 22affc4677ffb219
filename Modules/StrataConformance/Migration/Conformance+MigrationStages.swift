import Foundation
import Strata
import StrataStoreKit
import Testing

/// The models of the custom-stage cases: people whose full name is split in two, and tags that gain a
/// uniqueness constraint over duplicates.
enum StageModels {
  static let fullName = AttributeDescription(name: "fullName", type: .string)
  static let firstName = AttributeDescription(name: "firstName", type: .string, isOptional: true)
  static let lastName = AttributeDescription(name: "lastName", type: .string, isOptional: true)
  static let email = AttributeDescription(name: "email", type: .string, isOptional: true)
  static let tagName = AttributeDescription(name: "name", type: .string)

  /// Person (fullName, email) and Tag (name).
  static func v1() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(name: "Person", attributes: [fullName, email]),
      EntityDescription(name: "Tag", attributes: [tagName]),
    ])
  }

  /// Person gains firstName and lastName; tag names become unique.
  static func v2() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(name: "Person", attributes: [fullName, firstName, lastName, email]),
      EntityDescription(name: "Tag", attributes: [tagName], uniquenessConstraints: [["name"]]),
    ])
  }

  /// Person is renamed Human and loses fullName.
  static func v3() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(name: "Human", attributes: [firstName, lastName, email], renamingIdentifier: "Person"),
      EntityDescription(name: "Tag", attributes: [tagName], uniquenessConstraints: [["name"]]),
    ])
  }
}

/// An error a custom stage throws on purpose.
struct StageFailure: Error, Equatable {}

extension Conformance {
  /// Custom stages (`PersistentStore.migrated(along:reporting:)`): work before and after each structural
  /// change inside the one transaction, recorded as one history transaction, reported as progress; a
  /// stage that throws, or saves what the new model refuses, leaves the store as it was.
  /// A store of the stage models' version 1: three people and four tags, two of them named "swift".
  private static func peopleStore(_ backend: ConformanceBackend) throws -> (store: any PersistentStore, url: URL?) {
    let url = try backend.makeLocation()
    let store = try backend.factory.openStore(at: url, model: try StageModels.v1(), options: StoreOptions(tracksHistory: true))
    let people = ["Ada Lovelace", "Alan Turing", "Grace Brewster Hopper"].map { name in
      ObjectChange(objectID: .makeTemporary(entityName: "Person"), attributes: [.string(name), .null], toOne: [])
    }
    let tags = ["swift", "linux", "swift", "sqlite"].map { name in
      ObjectChange(objectID: .makeTemporary(entityName: "Tag"), attributes: [.string(name)], toOne: [])
    }
    _ = try store.save(ChangeSet(inserted: people + tags))
    return (store, url)
  }

  private static func snapshots(_ store: any PersistentStore, _ entity: String) throws -> [Snapshot] {
    guard case .snapshots(let all) = try store.fetch(FetchDescription(entityName: entity), generation: nil) else {
      Issue.record("expected snapshots of \(entity)")
      return []
    }
    return all.sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
  }

  /// Deletes every tag whose name an earlier tag has (a stage on version 1).
  private static let deduplicateTags: @Sendable (any PersistentStore) throws -> Void = { store in
    var seen: Set<Value> = []
    var duplicates: [ObjectDeletion] = []
    for tag in try snapshots(store, "Tag") where !seen.insert(tag.attributes[0]).inserted {
      duplicates.append(ObjectDeletion(objectID: tag.objectID))
    }
    _ = try store.save(ChangeSet(deleted: duplicates))
  }

  /// Splits each person's full name into first and last name, and adds a tag (a stage on version 2).
  private static let splitNames: @Sendable (any PersistentStore) throws -> Void = { store in
    let updates = try snapshots(store, "Person").map { person -> ObjectChange in
      guard case .string(let full) = person.attributes[0] else {
        return ObjectChange(objectID: person.objectID, attributes: person.attributes, toOne: [])
      }
      let first = full.split(separator: " ").first.map(String.init) ?? ""
      let last = full.split(separator: " ").last.map(String.init) ?? ""
      return ObjectChange(
        objectID: person.objectID, attributes: [.string(full), .string(first), .string(last), person.attributes[3]],
        toOne: [], changedKeys: ["firstName", "lastName"])
    }
    let tag = ObjectChange(objectID: .makeTemporary(entityName: "Tag"), attributes: [.string("history")], toOne: [])
    _ = try store.save(ChangeSet(inserted: [tag], updated: updates))
    let reread = try snapshots(store, "Person")
    #expect(
      reread.map { $0.attributes[1] } == [.string("Ada"), .string("Alan"), .string("Grace")], "a stage reads its own saves")
  }

  static func stagesSplitDeduplicateAndInsert(_ backend: ConformanceBackend) throws {
    let (store, _) = try peopleStore(backend)
    let before = try snapshots(store, "Tag")
    let peopleBefore = try snapshots(store, "Person")
    let token = try store.currentHistoryToken()
    let reports = Locked<[MigrationProgress]>([])
    let steps = [
      MigrationStep(
        try ModelMigration(from: try StageModels.v1(), to: try StageModels.v2()), willMigrate: deduplicateTags,
        didMigrate: splitNames),
      MigrationStep(
        try ModelMigration(from: try StageModels.v2(), to: try StageModels.v3()),
        didMigrate: { store in
          let ada = try snapshots(store, "Human").first
          #expect(ada?.objectID.entityName == "Human" && ada?.attributes.first == .string("Ada"))
          _ = try store.save(
            ChangeSet(inserted: [
              ObjectChange(
                objectID: .makeTemporary(entityName: "Human"), attributes: [.string("Edsger"), .string("Dijkstra"), .null],
                toOne: [])
            ]))
        }),
    ]
    let migrated = try store.migrated(along: steps, reporting: { report in reports.withLock { $0.append(report) } })
    defer { migrated.close() }
    #expect(migrated.model == (try StageModels.v3()))

    let humans = try snapshots(migrated, "Human")
    #expect(
      humans.map(\.attributes) == [
        [.string("Ada"), .string("Lovelace"), .null], [.string("Alan"), .string("Turing"), .null],
        [.string("Grace"), .string("Hopper"), .null], [.string("Edsger"), .string("Dijkstra"), .null],
      ])
    #expect(Array(humans.prefix(3).map(\.objectID.primaryKey)) == peopleBefore.map(\.objectID.primaryKey))
    let tags = try snapshots(migrated, "Tag")
    #expect(tags.map { $0.attributes[0] } == [.string("swift"), .string("linux"), .string("sqlite"), .string("history")])
    let oldKeys = before.compactMap(\.objectID.primaryKey)
    #expect((tags.last?.objectID.primaryKey ?? 0) > (oldKeys.max() ?? 0), "a stage's inserts take new keys")
    expectStoreError(.constraintConflict, "the constraint the stage made room for holds") {
      try migrated.save(
        ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Tag"), attributes: [.string("swift")], toOne: [])]
        ))
    }

    expectSteadyProgress(reports.withLock { $0 }, steps: 2)
    try expectOneMigrationTransaction(in: migrated, after: token, deletedTag: before[2].objectID)
  }

  /// Progress reports only advance, end at 1, and each names the step count.
  private static func expectSteadyProgress(_ progress: [MigrationProgress], steps: Int) {
    #expect(!progress.isEmpty, "a migration reports its progress")
    let fractions = progress.map(\.fractionCompleted)
    #expect(fractions == fractions.sorted(), "progress only advances: \(fractions)")
    #expect(fractions.last == 1)
    #expect(progress.allSatisfy { $0.stepCount == steps })
  }

  /// One transaction by "migration", after the token taken before, listing what the stages changed under
  /// the final model's names.
  private static func expectOneMigrationTransaction(
    in migrated: any PersistentStore, after token: HistoryToken?, deletedTag: ObjectID
  ) throws {
    guard case .transactions(let later) = try migrated.fetchHistory(HistoryRequest(after: token.map { .token($0) })) else {
      Issue.record("expected transactions")
      return
    }
    #expect(later.map(\.author) == [MigrationStep.historyAuthor])
    let changes = later.first?.changes ?? []
    #expect(changes.filter { $0.changeType == .delete }.map(\.objectID.primaryKey) == [deletedTag.primaryKey])
    let updated = changes.filter { $0.changeType == .update }
    #expect(updated.map(\.objectID.entityName) == ["Human", "Human", "Human"])
    #expect(updated.first?.updatedProperties == ["firstName", "lastName"])
    #expect(Set(changes.filter { $0.changeType == .insert }.map(\.objectID.entityName)) == ["Tag", "Human"])
  }

  static func aFailingStageChangesNothing(_ backend: ConformanceBackend) throws {
    let (store, url) = try peopleStore(backend)
    let people = try snapshots(store, "Person")
    let tags = try snapshots(store, "Tag")
    let token = try store.currentHistoryToken()
    func expectUnchanged(_ store: any PersistentStore, _ comment: Comment) throws {
      #expect(store.model == (try StageModels.v1()), comment)
      #expect(try snapshots(store, "Person") == people, comment)
      #expect(try snapshots(store, "Tag") == tags, comment)
      #expect(try store.currentHistoryToken() == token, comment)
    }

    // The second step's stage throws after the first step's stages saved.
    let throwing = [
      MigrationStep(
        try ModelMigration(from: try StageModels.v1(), to: try StageModels.v2()), willMigrate: deduplicateTags,
        didMigrate: splitNames),
      MigrationStep(
        try ModelMigration(from: try StageModels.v2(), to: try StageModels.v3()), didMigrate: { _ in throw StageFailure() }),
    ]
    #expect(throws: StageFailure.self) { try store.migrated(along: throwing, reporting: nil) }
    try expectUnchanged(store, "a throwing stage leaves the store as it was, still open")

    // Without the deduplication the constraint cannot be added; a stage saving a clash fails the same way.
    expectStoreError(.constraintConflict) {
      try store.migrated(
        along: [MigrationStep(try ModelMigration(from: try StageModels.v1(), to: try StageModels.v2()))], reporting: nil)
    }
    let clashing = MigrationStep(
      try ModelMigration(from: try StageModels.v1(), to: try StageModels.v2()), willMigrate: deduplicateTags,
      didMigrate: { store in
        _ = try store.save(
          ChangeSet(inserted: [
            ObjectChange(objectID: .makeTemporary(entityName: "Tag"), attributes: [.string("linux")], toOne: [])
          ]))
      })
    expectStoreError(.constraintConflict) { try store.migrated(along: [clashing], reporting: nil) }
    try expectUnchanged(store, "a stage's refused save leaves the store as it was")
    store.close()

    if let url {
      let reopened = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(tracksHistory: true))
      defer { reopened.close() }
      try expectUnchanged(reopened, "reopened after the failed migrations")
    }
  }

  static func storageChangesChangeNothing(_ backend: ConformanceBackend) throws {
    let (store, _) = try peopleStore(backend)
    defer { store.close() }
    let v2 = try ObjectModel(entities: [
      EntityDescription(name: "Person", attributes: [StageModels.fullName, StageModels.email]),
      EntityDescription(name: "Tag", attributes: [StageModels.tagName]),
      EntityDescription(name: "Badge", attributes: [StageModels.tagName]),
    ])
    let changes = try store.storageChanges(for: try ModelMigration(from: store.model, to: v2))
    if !changes.isEmpty {
      #expect(Set(changes.keys) == ["Person", "Tag", "Badge"])
      #expect(changes["Badge"] == .created)
    }
    #expect(store.model == (try StageModels.v1()))
    #expect(try store.count(FetchDescription(entityName: "Tag")) == 4)
  }

  /// A container with a migration plan whose custom stage works through an `ObjectContext`; a stage that
  /// throws fails `loadPersistentStores()` and leaves the store as it was.
  static func containersRunCustomStages(_ backend: ConformanceBackend) throws {
    let (store, location) = try peopleStore(backend)
    store.close()
    let url = try #require(location)
    let registry = StoreRegistry([backend.factory])
    let v1 = ModelVersion("1", try StageModels.v1())
    let v2 = ModelVersion("2", try StageModels.v2())
    let v3 = ModelVersion("3", try StageModels.v3())

    let failing = try MigrationPlan(
      [v1, v2, v3], stages: [.custom(from: v1, to: v2, willMigrate: { _ in throw StageFailure() })])
    let refused = PersistentContainer(name: "Stages", plan: failing, registry: registry)
    refused.storeDescriptions = [StoreDescription(type: backend.factory.storeType, url: url)]
    #expect(throws: StageFailure.self) { try refused.loadPersistentStores() }
    let untouched = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true))
    let original = try StageModels.v1()
    #expect(untouched.model.versionName == nil && untouched.model == original)
    untouched.close()

    let plan = try MigrationPlan(
      [v1, v2, v3],
      stages: [
        .custom(
          from: v1, to: v2,
          willMigrate: { context in
            var seen: Set<String> = []
            for tag in try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag", sortDescriptors: [])) {
              if !seen.insert(tag.value(forKey: "name") as? String ?? "").inserted { context.delete(tag) }
            }
          },
          didMigrate: { context in
            for person in try context.fetch(FetchRequest<ManagedObject>(entityName: "Person", sortDescriptors: [])) {
              let parts = (person.value(forKey: "fullName") as? String ?? "").split(separator: " ")
              try person.setValue(parts.first.map(String.init), forKey: "firstName")
              try person.setValue(parts.last.map(String.init), forKey: "lastName")
            }
            try context.save()
          })
      ])
    let container = PersistentContainer(name: "Stages", plan: plan, registry: registry)
    container.storeDescriptions = [StoreDescription(type: backend.factory.storeType, url: url)]
    let reports = Locked<[MigrationProgress]>([])
    container.migrationProgressHandler = { report in reports.withLock { $0.append(report) } }
    try container.loadPersistentStores()
    defer { container.close() }
    let humans = try container.viewContext.fetch(
      FetchRequest<ManagedObject>(entityName: "Human", sortDescriptors: [QuerySort("firstName")]))
    #expect(humans.map { $0.value(forKey: "lastName") as? String } == ["Lovelace", "Turing", "Hopper"])
    #expect(try container.viewContext.count(for: FetchRequest<ManagedObject>(entityName: "Tag", sortDescriptors: [])) == 3)
    #expect(reports.withLock { $0.last?.fractionCompleted } == 1)
    #expect(reports.withLock { $0.filter { $0.fractionCompleted == 1 }.count } == 1, "completion is reported once")
    #expect(container.persistentStore?.model.versionName == "3")
  }
}
