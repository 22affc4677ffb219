import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// Custom migration stages in the SQLite store: the stores the stages are handed work inside the
/// migration's one transaction, a failure anywhere leaves the file as it was, the migration is one history
/// transaction, progress advances to 1, and `storageChanges(for:)` reads the plan without writing.
@Suite struct SQLiteMigrationStageTests {
  static let fullName = AttributeDescription(name: "fullName", type: .string)
  static let firstName = AttributeDescription(name: "firstName", type: .string, isOptional: true)
  static let lastName = AttributeDescription(name: "lastName", type: .string, isOptional: true)
  static let email = AttributeDescription(name: "email", type: .string, isOptional: true)
  static let score = AttributeDescription(name: "score", type: .int32, defaultValue: 0)

  /// Person (fullName, email, score) in a Team (name), version 1.
  static func v1(person: [AttributeDescription] = [fullName, email, score], constraints: [[String]] = []) throws -> ObjectModel {
    try model(person: person, constraints: constraints)
  }

  static func model(
    person: [AttributeDescription], name: String = "Person", renamedFrom: String? = nil, constraints: [[String]] = [],
    extra: [EntityDescription] = []
  ) throws -> ObjectModel {
    try ObjectModel(
      entities: [
        EntityDescription(
          name: name, attributes: person,
          relationships: [RelationshipDescription(name: "team", destination: "Team", inverse: "members")],
          uniquenessConstraints: constraints, renamingIdentifier: renamedFrom),
        EntityDescription(
          name: "Team", attributes: [AttributeDescription(name: "name", type: .string)],
          relationships: [RelationshipDescription(name: "members", destination: name, inverse: "team", isToMany: true)]),
      ] + extra)
  }

  /// Version 2: Person gains firstName and lastName.
  static func v2() throws -> ObjectModel { try model(person: [fullName, firstName, lastName, email, score]) }

  /// Version 3: Person is renamed Human and loses fullName.
  static func v3() throws -> ObjectModel {
    try model(person: [firstName, lastName, email, score], name: "Human", renamedFrom: "Person")
  }

  /// Version 1 with `score` widened to a double: the table is rebuilt.
  static func widened() throws -> ObjectModel {
    try v1(person: [fullName, email, AttributeDescription(name: "score", type: .double, defaultValue: 0)])
  }

  static let names = ["Ada Lovelace", "Alan Turing", "Grace Brewster Hopper"]

  /// A store of version 1 holding a team and one person per name (with the given emails), history on.
  static func store(_ url: URL, _ names: [String] = names, emails: [String?]? = nil) throws -> SQLiteStore {
    let store = try SQLiteStore(url: url, model: try v1(), options: StoreOptions(tracksHistory: true))
    let team = ObjectID.makeTemporary(entityName: "Team")
    let people = names.enumerated().map { n, name in
      ObjectChange(
        objectID: .makeTemporary(entityName: "Person"),
        attributes: [.string(name), (emails?[n]).map(Value.string) ?? .null, .int(Int64(n))], toOne: [team])
    }
    _ = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: team, attributes: [.string("Analysts")], toOne: [])] + people))
    return store
  }

  /// The objects of `entity`, by primary key.
  static func rows(_ store: any PersistentStore, _ entity: String = "Person") throws -> [Snapshot] {
    guard case .snapshots(let all) = try store.fetch(FetchDescription(entityName: entity), generation: nil) else {
      Issue.record("expected snapshots")
      return []
    }
    return all.sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
  }

  /// A `didMigrate` stage on version 2: splits each full name into first and last name, reading and
  /// saving through the store it is handed.
  static let splitNames: @Sendable (any PersistentStore) throws -> Void = { store in
    let updates = try rows(store).map { person -> ObjectChange in
      let parts = (person.attributes[0].stringValue ?? "").split(separator: " ").map(String.init)
      var attributes = person.attributes
      attributes[1] = parts.first.map(Value.string) ?? .null
      attributes[2] = parts.last.map(Value.string) ?? .null
      return ObjectChange(
        objectID: person.objectID, attributes: attributes, toOne: person.toOne, expectedVersion: person.version,
        changedKeys: ["firstName", "lastName"])
    }
    _ = try store.save(ChangeSet(updated: updates))
  }

  static func insert(_ attributes: [Value], _ entity: String = "Person") -> ChangeSet {
    ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: entity), attributes: attributes, toOne: [nil])])
  }

  struct StageFailure: Error {}

  // MARK: Stages

  @Test func aDidMigrateStageSplitsFullNames() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try Self.store(url)
    let step = MigrationStep(try ModelMigration(from: try Self.v1(), to: try Self.v2()), didMigrate: Self.splitNames)
    try store.migrated(along: [step], reporting: nil).close()

    let reopened = try SQLiteStore(url: url, model: try Self.v2())
    defer { reopened.close() }
    let people = try Self.rows(reopened)
    #expect(people.map(\.attributes[0]) == Self.names.map(Value.string))
    #expect(people.map(\.attributes[1]) == ["Ada", "Alan", "Grace"].map(Value.string))
    #expect(people.map(\.attributes[2]) == ["Lovelace", "Turing", "Hopper"].map(Value.string))
    #expect(people.map(\.version) == [2, 2, 2], "the stage's save is an update like any other")
    #expect(
      try rawStrings(url, "SELECT firstName || '|' || lastName FROM Person ORDER BY _pk") == [
        "Ada|Lovelace", "Alan|Turing", "Grace|Hopper",
      ])
  }

  @Test func aWillMigrateStageDeletesDuplicatesBeforeAUniquenessConstraint() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let emails: [String?] = ["a@x", "b@x", "a@x", nil, "b@x"]
    let store = try Self.store(url, ["A", "B", "A again", "Nobody", "B again"], emails: emails)
    let unique = try ModelMigration(from: try Self.v1(), to: try Self.v1(constraints: [["email"]]))
    let refused = #expect(throws: StoreError.self) { try store.migrated(along: [MigrationStep(unique)], reporting: nil) }
    #expect(refused?.code == .constraintConflict)

    let deduplicate: @Sendable (any PersistentStore) throws -> Void = { store in
      var seen = Set<Value>()
      var duplicates: [ObjectDeletion] = []
      for person in try Self.rows(store) where person.attributes[1] != .null && !seen.insert(person.attributes[1]).inserted {
        duplicates.append(ObjectDeletion(objectID: person.objectID, expectedVersion: person.version))
      }
      _ = try store.save(ChangeSet(deleted: duplicates))
    }
    let migrated = try store.migrated(along: [MigrationStep(unique, willMigrate: deduplicate)], reporting: nil)
    defer { migrated.close() }
    #expect(try Self.rows(migrated).map(\.attributes[0]) == ["A", "B", "Nobody"].map(Value.string))
    let clash = #expect(throws: StoreError.self) {
      try migrated.save(Self.insert([.string("A twice"), .string("a@x"), .int(0)]))
    }
    #expect(clash?.code == .constraintConflict, "the constraint the stage made room for holds")
  }

  @Test func objectsAStageInsertsTakeNewKeys() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try Self.store(url)
    // The newest key is deleted: a table that reused keys would give it out again.
    let people = try Self.rows(store)
    _ = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: people[2].objectID)]))
    let newest = try #require(people[2].objectID.primaryKey)

    let step = MigrationStep(
      try ModelMigration(from: try Self.v1(), to: try Self.widened()),
      willMigrate: { store in _ = try store.save(Self.insert([.string("Early"), .null, .int(7)])) },
      didMigrate: { store in
        _ = try store.save(Self.insert([.string("Late"), .null, .double(8.5)]))
        #expect(try store.count(FetchDescription(entityName: "Person")) == 4, "a stage reads what the migration wrote")
      })
    let migrated = try store.migrated(along: [step], reporting: nil)
    defer { migrated.close() }
    let all = try Self.rows(migrated)
    #expect(all.map(\.attributes[0]) == ["Ada Lovelace", "Alan Turing", "Early", "Late"].map(Value.string))
    #expect(all.map(\.attributes[2]) == [.double(0), .double(1), .double(7), .double(8.5)])
    let keys = all.compactMap(\.objectID.primaryKey)
    #expect(keys[2] > newest && keys[3] > keys[2], "inserted keys \(keys) come after every key given out (\(newest))")
    let saved = try migrated.save(Self.insert([.string("After"), .null, .double(0)]))
    #expect(saved.permanentIDs.values.compactMap(\.primaryKey).allSatisfy { $0 > keys[3] })
  }

  @Test func aChainOfTwoStepsRunsAStageInEach() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try Self.store(url)
    let steps = [
      MigrationStep(try ModelMigration(from: try Self.v1(), to: try Self.v2()), didMigrate: Self.splitNames),
      MigrationStep(
        try ModelMigration(from: try Self.v2(), to: try Self.v3()),
        willMigrate: { store in
          // Still version 2: the full names are there, and the first step's stage saved the split.
          let people = try Self.rows(store)
          #expect(people.map(\.attributes[1]) == ["Ada", "Alan", "Grace"].map(Value.string))
          let updates = people.map { person in
            var attributes = person.attributes
            attributes[2] = .string((person.attributes[2].stringValue ?? "").uppercased())
            return ObjectChange(objectID: person.objectID, attributes: attributes, toOne: person.toOne, changedKeys: ["lastName"])
          }
          _ = try store.save(ChangeSet(updated: updates))
        },
        didMigrate: { store in
          _ = try store.save(Self.insert([.string("Edsger"), .string("Dijkstra"), .null, .int(9)], "Human"))
        }),
    ]
    try store.migrated(along: steps, reporting: nil).close()

    let reopened = try SQLiteStore(url: url, model: try Self.v3())
    defer { reopened.close() }
    let humans = try Self.rows(reopened, "Human")
    #expect(
      humans.map { "\($0.attributes[0].stringValue ?? "-") \($0.attributes[1].stringValue ?? "-")" } == [
        "Ada LOVELACE", "Alan TURING", "Grace HOPPER", "Edsger Dijkstra",
      ])
    #expect(humans.prefix(3).allSatisfy { $0.toOne.first??.entityName == "Team" }, "links survive both steps")
    #expect(
      try rawStrings(url, "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('Person', 'Human')") == ["Human"])
  }

  @Test func aThrowingStageLeavesTheFileByteIdenticalAndTheStoreUsable() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    try Self.store(url).close()
    let before = try Data(contentsOf: url)
    let store = try SQLiteStore(url: url, model: try Self.v1(), options: StoreOptions(tracksHistory: true))
    let token = try store.currentHistoryToken()
    let people = try Self.rows(store)
    let steps = [
      MigrationStep(
        try ModelMigration(from: try Self.v1(), to: try Self.v2()),
        willMigrate: { store in _ = try store.save(ChangeSet(deleted: [ObjectDeletion(objectID: people[0].objectID)])) },
        didMigrate: Self.splitNames),
      MigrationStep(
        try ModelMigration(from: try Self.v2(), to: try Self.v3()),
        didMigrate: { store in
          _ = try store.save(Self.insert([.string("Edsger"), .string("Dijkstra"), .null, .int(9)], "Human"))
          throw StageFailure()
        }),
    ]
    #expect(throws: StageFailure.self) { try store.migrated(along: steps, reporting: nil) }

    #expect(store.model == (try Self.v1()), "the store stays open with the old model")
    #expect(try Self.rows(store) == people)
    #expect(try store.currentHistoryToken() == token)
    // Nothing was committed: with the WAL checkpointed, the file holds exactly the bytes it held before.
    #expect(try rawStrings(url, "PRAGMA wal_checkpoint(TRUNCATE)") == ["0"])
    #expect(try Data(contentsOf: url) == before)

    let saved = try store.save(Self.insert([.string("Barbara Liskov"), .null, .int(4)]))
    #expect(saved.permanentIDs.count == 1, "the old store still writes")
    store.close()
    let reopened = try SQLiteStore(url: url, model: nil)
    defer { reopened.close() }
    #expect(reopened.model == (try Self.v1()))
    #expect(try Self.rows(reopened).count == 4)
  }

  @Test func theStoreAStageIsHandedWorksInsideTheTransactionOnly() async throws {
    let directory = try TemporaryDirectory()
    let store = try Self.store(directory.file())
    let identifier = store.identifier
    let handed = Locked<(any PersistentStore)?>(nil)
    let step = MigrationStep(
      try ModelMigration(from: try Self.v1(), to: try Self.v2()),
      didMigrate: { stage in
        handed.withLock { $0 = stage }
        #expect(stage.identifier == identifier)
        #expect(stage.model == (try Self.v2()))
        let people = try Self.rows(stage)
        let team = try #require(people.first?.toOne.first ?? nil)

        // Every kind of read goes through the migration's connection.
        #expect(try stage.count(FetchDescription(entityName: "Person")) == 3)
        #expect(try stage.fetch(FetchDescription(entityName: "Person", resultType: .objectIDs), generation: nil).count == 3)
        var names = FetchDescription(entityName: "Person", resultType: .dictionaries)
        names.propertiesToFetch = [.keyPath("fullName")]
        #expect(try stage.fetch(names, generation: nil).count == 3)
        #expect(try stage.snapshots(for: [people[1].objectID], generation: nil).map(\.attributes[0]) == [.string("Alan Turing")])
        #expect(try stage.relatedObjectIDs(of: team, relationship: "members", generation: nil) == people.map(\.objectID))

        // A save that fails undoes only itself; the migration goes on.
        let half = ChangeSet(inserted: [
          ObjectChange(
            objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Kept?"), .null, .null, .null, .int(1)],
            toOne: [nil]),
          ObjectChange(
            objectID: .makeTemporary(entityName: "Person"), attributes: [.null, .null, .null, .null, .int(1)], toOne: [nil]),
        ])
        #expect(throws: StoreError.self) { try stage.save(half) }
        #expect(try stage.count(FetchDescription(entityName: "Person")) == 3)

        // Batch requests, natively or through the kit's general path.
        let update = try stage.execute(
          .update(entityName: "Person", predicate: nil, propertiesToUpdate: ["score": .constant(.int(7))]))
        #expect(update.count == 3)
        #expect(try stage.execute(.deleteObjects([people[2].objectID], resultType: .count)).count == 1)
        #expect(try stage.execute(.insert(entityName: "Person", objects: [["fullName": "Batch"]], resultType: .count)).count == 1)

        // A context on another thread may use the store while the migrating thread waits.
        let done = DispatchSemaphore(value: 0)
        let saved = Locked<Result<SaveResult, any Error>?>(nil)
        let thread = Thread {
          let result = Result { try stage.save(Self.insert([.string("Threaded"), .null, .null, .null, .int(2)])) }
          saved.withLock { $0 = result }
          done.signal()
        }
        thread.start()
        done.wait()
        #expect(try saved.withLock { try $0?.get() }?.permanentIDs.count == 1)

        // The store being migrated is not to be written meanwhile (its writer is the migration's).
        let wrong = #expect(throws: StoreError.self) { try store.save(Self.insert([.string("Wrong"), .null, .int(0)])) }
        #expect(wrong?.code == .misuse)

        // What belongs to the store the migration returns.
        #expect((#expect(throws: StoreError.self) { try stage.fetchHistory(HistoryRequest(after: nil)) })?.code == .unsupported)
        #expect((#expect(throws: StoreError.self) { try stage.currentHistoryToken() })?.code == .unsupported)
        #expect((#expect(throws: StoreError.self) { try stage.pinGeneration() })?.code == .unsupported)
        let nested = #expect(throws: StoreError.self) {
          try stage.migrated(along: [MigrationStep(try ModelMigration(from: try Self.v2(), to: try Self.v3()))], reporting: nil)
        }
        #expect(nested?.code == .misuse)

        // Closing it gives the connection back open: the migration still commits.
        stage.close()
        #expect((#expect(throws: StoreError.self) { try stage.count(FetchDescription(entityName: "Person")) })?.code == .misuse)
      })
    let migrated = try store.migrated(along: [step], reporting: nil)
    defer { migrated.close() }
    let all = try Self.rows(migrated)
    #expect(all.map(\.attributes[0]) == ["Ada Lovelace", "Alan Turing", "Batch", "Threaded"].map(Value.string))
    #expect(all.prefix(2).map(\.attributes[4]) == [.int(7), .int(7)])

    let stale = try #require(handed.withLock { $0 })
    let late = #expect(throws: StoreError.self) { try stale.fetch(FetchDescription(entityName: "Person"), generation: nil) }
    #expect(late?.code == .misuse, "the stage's store stops working when the stage returns")
    var stream = stale.changes().makeAsyncIterator()
    #expect(await stream.next() == nil)
  }

  // MARK: History

  @Test func theMigrationIsOneHistoryTransactionUnderTheFinalNames() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.store(directory.file())
    let token = try #require(try store.currentHistoryToken())
    let people = try Self.rows(store)
    let steps = [
      MigrationStep(
        try ModelMigration(from: try Self.v1(), to: try Self.v2()),
        willMigrate: { store in
          var ada = people[0]
          ada.attributes[1] = .string("ada@example.com")
          _ = try store.save(
            ChangeSet(
              updated: [
                ObjectChange(objectID: ada.objectID, attributes: ada.attributes, toOne: ada.toOne, changedKeys: ["email"])
              ],
              deleted: [ObjectDeletion(objectID: people[2].objectID)]))
        },
        didMigrate: { store in
          try Self.splitNames(store)
          // Inserted and deleted again within the migration: nothing to record.
          let temporary = try store.save(Self.insert([.string("Temp"), .null, .null, .null, .int(0)]))
          _ = try store.save(ChangeSet(deleted: temporary.permanentIDs.values.map { ObjectDeletion(objectID: $0) }))
          _ = try store.save(Self.insert([.string("Kept Person"), .null, .null, .null, .int(0)]))
        }),
      MigrationStep(try ModelMigration(from: try Self.v2(), to: try Self.v3())),
    ]
    let migrated = try store.migrated(along: steps, reporting: nil)
    defer { migrated.close() }

    guard case .transactions(let later) = try migrated.fetchHistory(HistoryRequest(after: .token(token))) else {
      Issue.record("expected transactions")
      return
    }
    #expect(later.map(\.author) == [MigrationStep.historyAuthor], "the token taken before still reads on")
    #expect(try migrated.currentHistoryToken() == later.first?.token)
    let changes = later.first?.changes ?? []
    #expect(changes.allSatisfy { $0.objectID.entityName == "Human" }, "\(changes.map(\.objectID))")
    #expect(changes.filter { $0.changeType == .insert }.count == 1)
    let updated = changes.filter { $0.changeType == .update }
    #expect(updated.map(\.objectID.primaryKey) == [people[0].objectID.primaryKey, people[1].objectID.primaryKey])
    #expect(Set(updated.first?.updatedProperties ?? []) == ["email", "firstName", "lastName"])
    #expect(Set(updated.last?.updatedProperties ?? []) == ["firstName", "lastName"])
    #expect(changes.filter { $0.changeType == .delete }.map(\.objectID.primaryKey) == [people[2].objectID.primaryKey])
    guard case .transactions(let all) = try migrated.fetchHistory(HistoryRequest(after: nil)) else {
      Issue.record("expected transactions")
      return
    }
    #expect(all.map(\.author) == [nil, MigrationStep.historyAuthor])
  }

  @Test func aMigrationWithoutStagesIsAnEmptyHistoryTransaction() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.store(directory.file())
    let token = try #require(try store.currentHistoryToken())
    let migrated = try store.migrated(by: try ModelMigration(from: try Self.v1(), to: try Self.v2()))
    defer { migrated.close() }
    guard case .transactions(let later) = try migrated.fetchHistory(HistoryRequest(after: .token(token))) else {
      Issue.record("expected transactions")
      return
    }
    #expect(later.map(\.author) == [MigrationStep.historyAuthor])
    #expect(later.first?.changes == [])
  }

  // MARK: Progress

  @Test func progressAdvancesThroughEveryStepToOne() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.store(directory.file())
    let reports = Locked<[MigrationProgress]>([])
    let nicknamed = try Self.v1(person: [
      Self.fullName, Self.email, AttributeDescription(name: "score", type: .double, defaultValue: 0),
      AttributeDescription(name: "nickname", type: .string, isOptional: true),
    ])
    let steps = [
      MigrationStep(try ModelMigration(from: try Self.v1(), to: try Self.widened())),
      MigrationStep(try ModelMigration(from: try Self.widened(), to: nicknamed), willMigrate: { _ in }, didMigrate: { _ in }),
    ]
    let migrated = try store.migrated(along: steps, reporting: { report in reports.withLock { $0.append(report) } })
    migrated.close()
    let progress = reports.withLock { $0 }
    let fractions = progress.map(\.fractionCompleted)
    #expect(fractions == fractions.sorted(), "progress only advances: \(fractions)")
    #expect(fractions.first == 0)
    #expect(fractions.last == 1)
    #expect(progress.allSatisfy { $0.stepCount == 2 && $0.completed <= $0.total })
    for step in 0..<2 {
      let ofStep = progress.filter { $0.step == step }
      #expect(ofStep.first?.completed == 0 && ofStep.last?.completed == ofStep.last?.total, "step \(step) starts and ends")
    }
    #expect(progress.contains { $0.phase == "rebuilt the table of Person (3 rows copied)" }, "\(progress.map(\.phase))")
    #expect(fractions.filter { $0 == 1 }.count == 1, "completion is reported once: \(fractions)")
    #expect(
      progress.filter { $0.step == 1 }.count == 2 + 2 + 2,
      "start, two stages, Person, Team, indexes; the end comes at 1.0 with the last stage, reported once")
  }

  // MARK: Dry runs

  @Test func storageChangesComeFromThePlanAlone() throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let store = try Self.store(url)
    defer { store.close() }
    let schema = "SELECT sql FROM sqlite_master ORDER BY name"
    let before = try rawStrings(url, schema)

    let added = try Self.v1(person: [Self.fullName, Self.email, Self.score, Self.firstName])
    #expect(
      try store.storageChanges(for: try ModelMigration(from: store.model, to: added)) == [
        "Person": .alteredInPlace, "Team": .unchanged,
      ])
    let changes = try store.storageChanges(for: try ModelMigration(from: store.model, to: try Self.widened()))
    #expect(changes == ["Person": .rebuilt, "Team": .unchanged])
    let badge = EntityDescription(name: "Badge", attributes: [AttributeDescription(name: "label", type: .string)])
    let created = try Self.model(person: [Self.fullName, Self.email, Self.score], extra: [badge])
    #expect(
      try store.storageChanges(for: try ModelMigration(from: store.model, to: created)) == [
        "Person": .unchanged, "Team": .unchanged, "Badge": .created,
      ])
    let indexed = try Self.v1(person: [
      Self.fullName, AttributeDescription(name: "email", type: .string, isOptional: true, isIndexed: true), Self.score,
    ])
    #expect(try store.storageChanges(for: try ModelMigration(from: store.model, to: indexed))["Person"] == .alteredInPlace)
    let renamed = try Self.v1(person: [
      AttributeDescription(name: "name", type: .string, renamingIdentifier: "fullName"), Self.email, Self.score,
    ])
    #expect(try store.storageChanges(for: try ModelMigration(from: store.model, to: renamed))["Person"] == .alteredInPlace)

    let other = #expect(throws: StoreError.self) {
      try store.storageChanges(for: try ModelMigration(from: try Self.v2(), to: try Self.v3()))
    }
    #expect(other?.code == .misuse)
    #expect(try rawStrings(url, schema) == before, "a dry run writes nothing")
    #expect(store.model == (try Self.v1()))
    #expect(try Self.rows(store).count == 3)
  }
}
