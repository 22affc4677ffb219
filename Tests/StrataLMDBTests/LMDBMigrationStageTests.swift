import Foundation
import StrataLMDB
import StrataStoreKit
import Synchronization
import Testing

/// The people models: v1 Person (fullName, age int16) with Pets (name, owner → Person); v2 adds
/// firstName and lastName to Person and widens age; v3 drops fullName, renames lastName surname and Pet
/// Animal.
private enum People {
  static func person(
    _ attributes: [AttributeDescription], constraints: [[String]] = [], pets: String = "Pet"
  )
    -> EntityDescription
  {
    EntityDescription(
      name: "Person", attributes: attributes,
      relationships: [RelationshipDescription(name: "pets", destination: pets, inverse: "owner", isToMany: true)],
      uniquenessConstraints: constraints)
  }

  static func pet(_ name: String = "Pet", renamedFrom: String? = nil) -> EntityDescription {
    EntityDescription(
      name: name, attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "owner", destination: "Person", inverse: "pets")],
      renamingIdentifier: renamedFrom)
  }

  static let fullName = AttributeDescription(name: "fullName", type: .string)
  static let firstName = AttributeDescription(name: "firstName", type: .string, isOptional: true)
  static let lastName = AttributeDescription(name: "lastName", type: .string, isOptional: true)

  static func v1(constraints: [[String]] = []) throws -> ObjectModel {
    try ObjectModel(entities: [
      person([fullName, AttributeDescription(name: "age", type: .int16, isOptional: true)], constraints: constraints), pet(),
    ])
  }

  static func v2(constraints: [[String]] = []) throws -> ObjectModel {
    try ObjectModel(entities: [
      person(
        [fullName, AttributeDescription(name: "age", type: .int64, isOptional: true), firstName, lastName],
        constraints: constraints),
      pet(),
    ])
  }

  static func v3() throws -> ObjectModel {
    try ObjectModel(entities: [
      person(
        [
          AttributeDescription(name: "age", type: .int64, isOptional: true), firstName,
          AttributeDescription(name: "surname", type: .string, isOptional: true, renamingIdentifier: "lastName"),
        ], pets: "Animal"),
      pet("Animal", renamedFrom: "Pet"),
    ])
  }

  /// A v1 store holding Ada Lovelace (36, with the pet Rex), Alan Turing (41) and Grace Hopper (nil).
  static func store(
    _ dir: TemporaryDirectory, options: StoreOptions = StoreOptions(), mapSize: Int = LMDBStore.defaultMapSize
  ) throws
    -> LMDBStore
  {
    let store = try LMDBStore(url: dir.store, model: try v1(), options: options, mapSize: mapSize)
    let ada = ObjectID.makeTemporary(entityName: "Person")
    _ = try store.save(
      ChangeSet(inserted: [
        ObjectChange(objectID: ada, attributes: [.string("Ada Lovelace"), .int(36)], toOne: []),
        ObjectChange(objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Alan Turing"), .int(41)], toOne: []),
        ObjectChange(objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Grace Hopper"), .null], toOne: []),
        ObjectChange(objectID: .makeTemporary(entityName: "Pet"), attributes: [.string("Rex")], toOne: [ada]),
      ]))
    return store
  }
}

/// Every snapshot of `entity`, in primary-key order.
private func rows(_ store: any PersistentStore, _ entity: String, _ format: String? = nil) throws -> [Snapshot] {
  var request = FetchDescription(entityName: entity)
  if let format { request.predicate = try QueryPredicate(format: format) }
  guard case .snapshots(let rows) = try store.fetch(request, generation: nil) else { return [] }
  return rows.sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
}

/// Every snapshot of every entity of the store's model.
private func everything(_ store: any PersistentStore) throws -> [String: [Snapshot]] {
  var all: [String: [Snapshot]] = [:]
  for entity in store.model.entities { all[entity.name] = try rows(store, entity.name) }
  return all
}

/// A didMigrate stage that splits each person's fullName into firstName and lastName.
private let splitNames: @Sendable (any PersistentStore) throws -> Void = { store in
  let entity = try #require(store.model.entity(named: "Person"))
  let full = try #require(entity.attributeIndex(named: "fullName"))
  let first = try #require(entity.attributeIndex(named: "firstName"))
  let last = try #require(entity.attributeIndex(named: "lastName"))
  var updates: [ObjectChange] = []
  for person in try rows(store, "Person") {
    let parts = (person.attributes[full].stringValue ?? "").split(separator: " ", maxSplits: 1).map(String.init)
    var attributes = person.attributes
    attributes[first] = parts.first.map(Value.string) ?? .null
    attributes[last] = parts.count > 1 ? .string(parts[1]) : .null
    updates.append(
      ObjectChange(
        objectID: person.objectID, attributes: attributes, toOne: person.toOne, expectedVersion: person.version,
        changedKeys: ["firstName", "lastName"]))
  }
  _ = try store.save(ChangeSet(updated: updates))
}

/// A stage on v3 that inserts the animal Tom.
private let insertTom: @Sendable (any PersistentStore) throws -> Void = { store in
  _ = try store.save(
    ChangeSet(inserted: [
      ObjectChange(objectID: .makeTemporary(entityName: "Animal"), attributes: [.string("Tom")], toOne: [nil])
    ]))
}

/// The values of one attribute of `entity`, in primary-key order.
private func column(_ store: any PersistentStore, _ entity: String, _ name: String) throws -> [Value] {
  let index = try #require(store.model.entity(named: entity)?.attributeIndex(named: name))
  return try rows(store, entity).map { $0.attributes[index] }
}

@Suite("LMDB migration stages")
struct LMDBMigrationStageTests {
  @Test func aDidMigrateStageSplitsFullNames() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir)
    let step = MigrationStep(try ModelMigration(from: store.model, to: try People.v2()), didMigrate: splitNames)
    let migrated = try store.migrated(along: [step], reporting: nil)
    defer { migrated.close() }
    #expect(try column(migrated, "Person", "firstName") == [.string("Ada"), .string("Alan"), .string("Grace")])
    #expect(try column(migrated, "Person", "lastName") == [.string("Lovelace"), .string("Turing"), .string("Hopper")])
    #expect(try column(migrated, "Person", "age") == [.int(36), .int(41), .null])
    #expect(try rows(migrated, "Person", "lastName == 'Turing'").count == 1)
    // The pet keeps its owner, in both directions.
    let ada = try #require(try rows(migrated, "Person").first?.objectID)
    #expect(try migrated.relatedObjectIDs(of: ada, relationship: "pets", generation: nil).count == 1)
  }

  @Test func aWillMigrateStageDeletesDuplicatesBeforeAUniquenessConstraint() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir)
    _ = try store.save(
      ChangeSet(inserted: [
        ObjectChange(objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Ada Lovelace"), .int(1)], toOne: [])
      ]))
    let unique = try ModelMigration(from: store.model, to: try People.v1(constraints: [["fullName"]]))
    let refused = storeError { _ = try store.migrated(along: [MigrationStep(unique)], reporting: nil) }
    #expect(refused?.code == .constraintConflict)
    #expect(refused?.conflicts.first?.values == [.string("Ada Lovelace")])

    let dedupe = MigrationStep(
      unique,
      willMigrate: { store in
        var seen = Set<String>()
        var duplicates: [ObjectDeletion] = []
        for person in try rows(store, "Person") {
          let name = person.attributes[0].stringValue ?? ""
          if !seen.insert(name).inserted { duplicates.append(ObjectDeletion(objectID: person.objectID)) }
        }
        _ = try store.save(ChangeSet(deleted: duplicates))
      })
    let migrated = try store.migrated(along: [dedupe], reporting: nil)
    defer { migrated.close() }
    #expect(try column(migrated, "Person", "fullName").count == 3)
    let again = storeError {
      _ = try migrated.save(
        ChangeSet(inserted: [
          ObjectChange(objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Alan Turing"), .null], toOne: [])
        ]))
    }
    #expect(again?.code == .constraintConflict, "the uniqueness index was built")
  }

  @Test func aStageInsertsObjectsUnderNewKeys() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir)
    let before = try rows(store, "Person").compactMap(\.objectID.primaryKey)
    let step = MigrationStep(
      try ModelMigration(from: store.model, to: try People.v2()),
      didMigrate: { store in
        let saved = try store.save(
          ChangeSet(
            inserted: ["Edsger Dijkstra", "Barbara Liskov"].map { name in
              ObjectChange(
                objectID: .makeTemporary(entityName: "Person"), attributes: [.string(name), .null, .null, .null], toOne: [])
            }))
        #expect(saved.permanentIDs.count == 2)
      })
    let migrated = try store.migrated(along: [step], reporting: nil)
    defer { migrated.close() }
    let keys = try rows(migrated, "Person").compactMap(\.objectID.primaryKey)
    #expect(keys.count == 5 && Set(keys).count == 5)
    #expect(Array(keys.prefix(3)) == before)
    #expect(keys.dropFirst(3).allSatisfy { $0 > (before.max() ?? 0) })
    // Keys go on after the stage's inserts.
    let next = try migrated.save(
      ChangeSet(inserted: [
        ObjectChange(
          objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Ken Thompson"), .null, .null, .null], toOne: [])
      ]))
    #expect((next.permanentIDs.values.first?.primaryKey ?? 0) > (keys.max() ?? 0))
  }

  @Test func twoStepsEachWithAStage() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir)
    let v2 = try People.v2()
    let first = MigrationStep(try ModelMigration(from: store.model, to: v2), didMigrate: splitNames)
    let second = MigrationStep(
      try ModelMigration(from: v2, to: try People.v3()),
      willMigrate: { store in
        // Still on v2: fullName is there, and the first step's split is visible.
        let people = try rows(store, "Person")
        #expect(people.map { $0.attributes[3] } == [.string("Lovelace"), .string("Turing"), .string("Hopper")])
        let updates = people.map { person in
          var attributes = person.attributes
          attributes[3] = .string((person.attributes[3].stringValue ?? "").uppercased())
          return ObjectChange(objectID: person.objectID, attributes: attributes, toOne: person.toOne, changedKeys: ["lastName"])
        }
        _ = try store.save(ChangeSet(updated: updates))
      })
    let migrated = try store.migrated(along: [first, second], reporting: nil)
    defer { migrated.close() }
    #expect(migrated.model == (try People.v3()))
    #expect(try column(migrated, "Person", "surname") == [.string("LOVELACE"), .string("TURING"), .string("HOPPER")])
    #expect(try column(migrated, "Person", "firstName") == [.string("Ada"), .string("Alan"), .string("Grace")])
    let rex = try #require(try rows(migrated, "Animal").first)
    #expect(rex.toOne.first??.primaryKey == (try rows(migrated, "Person").first?.objectID.primaryKey))
    migrated.close()
    let reopened = try LMDBStore(url: dir.store, model: nil)
    defer { reopened.close() }
    #expect(reopened.model == (try People.v3()))
    #expect(try column(reopened, "Person", "surname").count == 3)
  }

  @Test func aThrowingStageLeavesTheOldModelAndIdenticalData() throws {
    struct Refused: Error {}
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir)
    let before = try everything(store)
    let v2 = try People.v2()
    // The second step fails after the first one deleted databases (Pet becomes Animal in step two).
    let steps = [
      MigrationStep(try ModelMigration(from: store.model, to: v2), didMigrate: splitNames),
      MigrationStep(
        try ModelMigration(from: v2, to: try People.v3()),
        didMigrate: { store in
          try insertTom(store)
          throw Refused()
        }),
    ]
    #expect(throws: Refused.self) { _ = try store.migrated(along: steps, reporting: nil) }
    #expect(try everything(store) == before, "this instance still reads the old model's data")
    do {
      // The environment as another store opens it: the old model, every record as it was.
      let reopened = try LMDBStore(url: dir.store, model: nil)
      defer { reopened.close() }
      #expect(reopened.model == (try People.v1()))
      #expect(try everything(reopened) == before)
    }
    let saved = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Pet"), attributes: [.string("Fido")], toOne: [nil])]
      ))
    #expect(saved.permanentIDs.count == 1, "and writes it")
    #expect(try column(store, "Pet", "name") == [.string("Rex"), .string("Fido")])
    store.close()
  }

  @Test func theMigrationIsOneHistoryTransactionUnderTheFinalNames() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir, options: StoreOptions(tracksHistory: true))
    let token = try #require(try store.currentHistoryToken())
    let people = try rows(store, "Person")
    let rex = try #require(try rows(store, "Pet").first)
    let v2 = try People.v2()
    let steps = [
      MigrationStep(
        try ModelMigration(from: store.model, to: v2),
        willMigrate: { store in
          // On v1: a pet added and deleted again (nothing to list), Grace deleted, Rex renamed.
          let added = try store.save(
            ChangeSet(inserted: [
              ObjectChange(objectID: .makeTemporary(entityName: "Pet"), attributes: [.string("Tmp")], toOne: [nil])
            ]))
          let temporary = try #require(added.permanentIDs.values.first)
          _ = try store.save(
            ChangeSet(deleted: [ObjectDeletion(objectID: temporary), ObjectDeletion(objectID: people[2].objectID)]))
          _ = try store.save(
            ChangeSet(updated: [
              ObjectChange(objectID: rex.objectID, attributes: [.string("Rexy")], toOne: rex.toOne, changedKeys: ["name"])
            ]))
        }, didMigrate: splitNames),
      MigrationStep(
        try ModelMigration(from: v2, to: try People.v3()),
        didMigrate: insertTom),
    ]
    let migrated = try store.migrated(along: steps, reporting: nil)
    defer { migrated.close() }
    guard case .transactions(let transactions) = try migrated.fetchHistory(HistoryRequest(after: .token(token))) else {
      Issue.record("expected transactions")
      return
    }
    #expect(transactions.count == 1)
    let transaction = try #require(transactions.first)
    #expect(transaction.author == MigrationStep.historyAuthor)
    #expect(try migrated.currentHistoryToken() == transaction.token)
    let changes = Dictionary(
      transaction.changes.map { ("\($0.objectID.entityName)/p\($0.objectID.primaryKey ?? 0)", $0) },
      uniquingKeysWith: { a, _ in a })
    let key = { (entity: String, id: ObjectID) in "\(entity)/p\(id.primaryKey ?? 0)" }
    #expect(changes[key("Person", people[2].objectID)]?.changeType == .delete)
    #expect(changes[key("Animal", rex.objectID)]?.changeType == .update)
    #expect(changes[key("Animal", rex.objectID)]?.updatedProperties == ["name"])
    // The split's keys follow the rename of lastName to surname.
    #expect(changes[key("Person", people[0].objectID)]?.updatedProperties == ["firstName", "surname"])
    #expect(transaction.changes.filter { $0.changeType == .insert }.map(\.objectID.entityName) == ["Animal"])
    #expect(transaction.changes.count == 5, "\(transaction.changes)")
    #expect(transaction.changes.allSatisfy { $0.objectID.entityName == "Person" || $0.objectID.entityName == "Animal" })

    // A migration whose stages write nothing still records its transaction.
    let plain = try migrated.migrated(
      along: [MigrationStep(try ModelMigration(from: migrated.model, to: try People.v3()))], reporting: nil)
    defer { plain.close() }
    guard case .transactions(let later) = try plain.fetchHistory(HistoryRequest(after: .token(transaction.token))) else {
      Issue.record("expected transactions")
      return
    }
    #expect(later.count == 1 && later.first?.changes.isEmpty == true && later.first?.author == MigrationStep.historyAuthor)
  }

  @Test func progressIsMonotonicAndEndsAtOne() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir)
    _ = try store.save(
      ChangeSet(
        inserted: (0..<10_000).map { i in
          ObjectChange(
            objectID: .makeTemporary(entityName: "Person"), attributes: [.string("P \(i)"), .int(Int64(i % 100))], toOne: [])
        }))
    let v2 = try People.v2()
    let reports = Locked<[MigrationProgress]>([])
    let migrated = try store.migrated(
      along: [
        MigrationStep(try ModelMigration(from: store.model, to: v2), didMigrate: splitNames),
        MigrationStep(try ModelMigration(from: v2, to: try People.v3())),
      ],
      reporting: { progress in reports.withLock { $0.append(progress) } })
    defer { migrated.close() }
    let seen = reports.withLock { $0 }
    let fractions = seen.map(\.fractionCompleted)
    #expect(fractions.count > 6, "start and end of each step, and every few thousand records: \(seen)")
    #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "\(fractions)")
    #expect(fractions.last == 1)
    #expect(fractions.contains { $0 > 0 && $0 < 0.5 } && fractions.contains { $0 > 0.5 && $0 < 1 })
    #expect(seen.allSatisfy { $0.stepCount == 2 && !$0.phase.isEmpty })
    #expect(Set(seen.map(\.step)) == [0, 1])
  }

  @Test func storageChangesSayWhatIsWritten() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir)
    defer { store.close() }
    let lastTransaction = try mdbStat(["-e", dir.store.path]).split(separator: "\n").first { $0.contains("Last transaction") }
    #expect(
      try store.storageChanges(for: try ModelMigration(from: store.model, to: try People.v2())) == [
        "Person": .rewritten, "Pet": .unchanged,
      ])
    let renamed = try ModelMigration(
      from: store.model,
      to: try ObjectModel(entities: [
        People.person(
          [People.fullName, AttributeDescription(name: "age", type: .int16, isOptional: true)], pets: "Animal"),
        People.pet("Animal", renamedFrom: "Pet"),
        EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
      ]))
    #expect(try store.storageChanges(for: renamed) == ["Person": .unchanged, "Animal": .rewritten, "Note": .created])
    var indexed = try People.v1().entities
    indexed[0] = People.person(
      [
        AttributeDescription(name: "fullName", type: .string, isIndexed: true),
        AttributeDescription(name: "age", type: .int16, isOptional: true),
      ])
    let index = try ModelMigration(from: store.model, to: try ObjectModel(entities: indexed))
    #expect(try store.storageChanges(for: index) == ["Person": .alteredInPlace, "Pet": .unchanged])
    var rules = try People.v1().entities
    rules[0] = EntityDescription(
      name: "Person", attributes: rules[0].attributes,
      relationships: [
        RelationshipDescription(name: "pets", destination: "Pet", inverse: "owner", isToMany: true, deleteRule: .cascade)
      ])
    let deleteRule = try ModelMigration(from: store.model, to: try ObjectModel(entities: rules))
    #expect(try store.storageChanges(for: deleteRule) == ["Person": .unchanged, "Pet": .unchanged])
    #expect(
      try mdbStat(["-e", dir.store.path]).split(separator: "\n").first { $0.contains("Last transaction") } == lastTransaction,
      "a dry run writes nothing")
    #expect(
      storeError { _ = try store.storageChanges(for: try ModelMigration(from: try People.v2(), to: try People.v3())) }?.code
        == .misuse)

    // The plans hold: the index is built, the delete rule migrates without touching the records.
    let migrated = try store.migrated(by: index)
    #expect(try rows(migrated, "Person", "fullName == 'Alan Turing'").count == 1)
    let cascading = try migrated.migrated(by: try ModelMigration(from: migrated.model, to: try ObjectModel(entities: rules)))
    defer { cascading.close() }
    #expect(try rows(cascading, "Person", "fullName == 'Alan Turing'").count == 1)
    #expect(try column(cascading, "Person", "age") == [.int(36), .int(41), .null])
  }

  @Test func theStageStoreIsBoundToTheMigration() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir, options: StoreOptions(tracksHistory: true))
    let kept = Locked<(any PersistentStore)?>(nil)
    let identifier = store.identifier
    let step = MigrationStep(
      try ModelMigration(from: store.model, to: try People.v1(constraints: [["fullName"]])),
      didMigrate: { bound in
        kept.withLock { $0 = bound }
        #expect(bound.identifier == identifier)
        #expect(storeError { _ = try bound.currentHistoryToken() }?.code == .unsupported)
        #expect(storeError { _ = try bound.fetchHistory(HistoryRequest()) }?.code == .unsupported)
        #expect(storeError { _ = try bound.pinGeneration() }?.code == .unsupported)
        #expect(storeError { _ = try bound.migrated(along: [], reporting: nil) }?.code == .misuse)
        bound.close()
        // A save that fails undoes itself alone; the stage goes on.
        let clash = storeError {
          _ = try bound.save(
            ChangeSet(inserted: [
              ObjectChange(objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Bob"), .null], toOne: []),
              ObjectChange(
                objectID: .makeTemporary(entityName: "Person"), attributes: [.string("Ada Lovelace"), .null], toOne: []),
            ]))
        }
        #expect(clash?.code == .constraintConflict)
        #expect(try bound.count(FetchDescription(entityName: "Person")) == 3)
        // Batch requests run in the transaction too.
        let batch = try bound.execute(
          .insert(
            BatchInsertDescription(
              entityName: "Pet", objects: [["name": .string("Tom")], ["name": .string("Kit")]], resultType: .count)))
        #expect(batch.count == 2)
        let deleted = try bound.execute(.delete(entityName: "Pet", predicate: try QueryPredicate(format: "name == 'Kit'")))
        #expect(deleted.count == 1)
        // A context on another thread calls the store while the stage waits for it.
        let done = DispatchSemaphore(value: 0)
        let counted = Locked<Int?>(nil)
        Thread {
          counted.withLock { $0 = try? bound.count(FetchDescription(entityName: "Pet")) }
          done.signal()
        }.start()
        done.wait()
        #expect(counted.withLock { $0 } == 2)
        #expect(
          storeError { _ = try store.count(FetchDescription(entityName: "Pet")) }?.code == .misuse, "not the migrating store")
        store.close()  // ignored: the migration closes it when it commits
      })
    let migrated = try store.migrated(along: [step], reporting: nil)
    defer { migrated.close() }
    #expect(try column(migrated, "Pet", "name") == [.string("Rex"), .string("Tom")])
    #expect(try column(migrated, "Person", "fullName").count == 3)
    let later = try #require(kept.withLock { $0 })
    #expect(storeError { _ = try later.count(FetchDescription(entityName: "Pet")) }?.code == .misuse, "after the stage")
  }

  @Test func aStageThatFillsTheMapRunsAgainOnALargerOne() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = try People.store(dir, mapSize: 65_536)
    let runs = Atomic<Int>(0)
    let payload = String(repeating: "x", count: 400)
    let step = MigrationStep(
      try ModelMigration(from: store.model, to: try People.v2()),
      didMigrate: { store in
        runs.add(1, ordering: .relaxed)
        for chunk in 0..<10 {
          // A stage that swallows the error does not keep the migration from running again.
          _ = try? store.save(
            ChangeSet(
              inserted: (0..<100).map { i in
                ObjectChange(
                  objectID: .makeTemporary(entityName: "Person"),
                  attributes: [.string("\(chunk)-\(i) \(payload)"), .null, .null, .null], toOne: [])
              }))
        }
      })
    let migrated = try store.migrated(along: [step], reporting: nil)
    defer { migrated.close() }
    #expect(runs.load(ordering: .relaxed) >= 2)
    #expect(try migrated.count(FetchDescription(entityName: "Person")) == 1_003)
  }

  @Test func anEntityCopiedFromOneRewrittenInPlaceReadsTheOldRecords() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let text = AttributeDescription(name: "text", type: .string, isIndexed: true)
    let v1 = try ObjectModel(entities: [EntityDescription(name: "A", attributes: [text])])
    // A gains an attribute (its records are re-encoded in place); C takes a copy of A's objects.
    let v2 = try ObjectModel(entities: [
      EntityDescription(name: "A", attributes: [text, AttributeDescription(name: "n", type: .int64, defaultValue: .int(7))]),
      EntityDescription(name: "C", attributes: [text], uniquenessConstraints: [["text"]], renamingIdentifier: "A"),
    ])
    let store = try LMDBStore(url: dir.store, model: v1)
    _ = try store.save(
      ChangeSet(
        inserted: ["one", "two"].map {
          ObjectChange(objectID: .makeTemporary(entityName: "A"), attributes: [.string($0)], toOne: [])
        }))
    let migrated = try store.migrated(by: try ModelMigration(from: v1, to: v2))
    defer { migrated.close() }
    #expect(try rows(migrated, "A").map(\.attributes) == [[.string("one"), .int(7)], [.string("two"), .int(7)]])
    #expect(try column(migrated, "C", "text") == [.string("one"), .string("two")])
    #expect(try rows(migrated, "C", "text == 'two'").count == 1)
    #expect(try rows(migrated, "A", "text == 'two'").count == 1)
  }
}
