import Foundation
import StrataConformance
import StrataMemory
import StrataStoreKit
import Testing

// Author 1—n Book (inverse to-one `author`), Book n—m Genre (join table owned by Book.genres).
private func libraryModel() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Author",
      attributes: [
        AttributeDescription(name: "name", type: .string),
        AttributeDescription(name: "email", type: .string, isOptional: true),
      ],
      relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)],
      uniquenessConstraints: [["name"]]),
    EntityDescription(
      name: "Book",
      attributes: [
        AttributeDescription(name: "title", type: .string),
        AttributeDescription(name: "isbn", type: .string, isOptional: true),
        AttributeDescription(name: "pages", type: .int32),
        AttributeDescription(name: "price", type: .decimal, isOptional: true),
        AttributeDescription(name: "rating", type: .double, isOptional: true),
        AttributeDescription(name: "selected", type: .bool, isTransient: true),
      ],
      relationships: [
        RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
        RelationshipDescription(name: "genres", destination: "Genre", inverse: "books", isToMany: true),
      ],
      uniquenessConstraints: [["isbn"]]),
    EntityDescription(
      name: "Genre", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "genres", isToMany: true)]),
  ])
}

private func temp(_ entity: String) -> ObjectID { ObjectID.makeTemporary(entityName: entity) }

private func author(_ id: ObjectID, _ name: String, email: String? = nil, expectedVersion: Int64? = nil) -> ObjectChange {
  ObjectChange(
    objectID: id, attributes: [.string(name), email.map(Value.string) ?? .null], toOne: [],
    expectedVersion: expectedVersion, changedKeys: ["name"])
}

private func book(
  _ id: ObjectID, _ title: String, isbn: String? = nil, pages: Value = 100, price: Decimal? = nil,
  rating: Double? = nil, selected: Bool = false, author: ObjectID? = nil, expectedVersion: Int64? = nil
) -> ObjectChange {
  ObjectChange(
    objectID: id,
    attributes: [
      .string(title), isbn.map(Value.string) ?? .null, pages, price.map(Value.decimal) ?? .null,
      rating.map(Value.double) ?? .null, .bool(selected),
    ],
    toOne: [author], expectedVersion: expectedVersion, changedKeys: ["title"])
}

private func genre(_ id: ObjectID, _ name: String) -> ObjectChange {
  ObjectChange(objectID: id, attributes: [.string(name)], toOne: [])
}

private func cmp(
  _ key: String, _ op: ComparisonOperator, _ value: Value, _ modifier: ComparisonModifier = .direct
) -> QueryPredicate {
  .comparison(Comparison(.keyPath(key), op, .constant(value), modifier: modifier))
}

private struct Library {
  let store: MemoryStore

  init(options: StoreOptions = .init()) throws {
    store = MemoryStore(model: try libraryModel(), options: options, identifier: "LIB")
  }

  func names(
    _ predicate: QueryPredicate? = nil, entity: String = "Book", sort: [QuerySort] = [], limit: Int? = nil,
    offset: Int = 0, generation: QueryGeneration? = nil
  ) throws -> [String] {
    let request = FetchDescription(
      entityName: entity, predicate: predicate, sortDescriptors: sort, fetchLimit: limit, fetchOffset: offset)
    guard case .snapshots(let rows) = try store.fetch(request, generation: generation) else { return [] }
    return rows.map { $0.attributes[0].stringValue ?? "?" }
  }

  func snapshot(_ id: ObjectID) throws -> Snapshot? { try store.snapshots(for: [id], generation: nil).first }

  func count(_ entity: String, _ predicate: QueryPredicate? = nil) throws -> Int {
    try store.count(FetchDescription(entityName: entity, predicate: predicate))
  }

  func error(_ body: () throws -> Void) -> StoreError? {
    do {
      try body()
    } catch let error as StoreError {
      return error
    } catch {
      Issue.record("expected a StoreError, got \(error)")
    }
    return nil
  }
}

@Suite struct MemoryStoreSaveTests {
  @Test func insertsGetPermanentIDsAndTemporaryReferencesAreReplaced() throws {
    let lib = try Library()
    let (ann, b1, b2) = (temp("Author"), temp("Book"), temp("Book"))
    let result = try lib.store.save(
      ChangeSet(inserted: [author(ann, "Ann"), book(b1, "One", author: ann), book(b2, "Two", author: ann)]))
    let annID = try #require(result.permanentIDs[ann])
    let b1ID = try #require(result.permanentIDs[b1])
    let b2ID = try #require(result.permanentIDs[b2])
    #expect(annID == ObjectID(entityName: "Author", storeIdentifier: "LIB", primaryKey: 1))
    #expect(b1ID == ObjectID(entityName: "Book", storeIdentifier: "LIB", primaryKey: 1))
    #expect(b2ID == ObjectID(entityName: "Book", storeIdentifier: "LIB", primaryKey: 2))
    #expect(result.versions == [annID: 1, b1ID: 1, b2ID: 1])
    #expect(try lib.snapshot(b2ID)?.toOne == [annID])
    #expect(try lib.store.relatedObjectIDs(of: annID, relationship: "books", generation: nil) == [b1ID, b2ID])

    let next = try lib.store.save(ChangeSet(inserted: [author(temp("Author"), "Bea")]))
    #expect(next.permanentIDs.values.first?.primaryKey == 2)
  }

  @Test func transientsAreStoredAsNilAndValuesConverted() throws {
    let lib = try Library()
    let b = temp("Book")
    let result = try lib.store.save(ChangeSet(inserted: [book(b, "One", pages: .double(120), selected: true)]))
    let id = try #require(result.permanentIDs[b])
    let stored = try #require(try lib.snapshot(id))
    #expect(stored.attributes[2] == .int(120))
    #expect(stored.attributes[5] == .null)
    #expect(result.storedSnapshots[id] == stored)

    let error = lib.error { _ = try lib.store.save(ChangeSet(inserted: [book(temp("Book"), "Two", pages: "many")])) }
    #expect(error?.code == .validation)
    #expect(error?.key == "pages")
    #expect(try lib.count("Book") == 1)
  }

  @Test func updatesIncrementVersionsAndStaleVersionsConflict() throws {
    let lib = try Library()
    let (t1, t2) = (temp("Book"), temp("Book"))
    let ids = try lib.store.save(ChangeSet(inserted: [book(t1, "One"), book(t2, "Two")])).permanentIDs
    let (b1, b2) = (try #require(ids[t1]), try #require(ids[t2]))
    #expect(try lib.store.save(ChangeSet(updated: [book(b1, "One v2", expectedVersion: 1)])).versions[b1] == 2)
    #expect(try lib.store.save(ChangeSet(updated: [book(b1, "One v3", expectedVersion: 2)])).versions[b1] == 3)
    #expect(try lib.store.save(ChangeSet(updated: [book(b1, "One v4")])).versions[b1] == 4)

    let error = lib.error {
      _ = try lib.store.save(
        ChangeSet(
          inserted: [book(temp("Book"), "Three")],
          updated: [book(b1, "stale", expectedVersion: 1), book(b2, "stale too", expectedVersion: 5)]))
    }
    #expect(error?.code == .optimisticLockConflict)
    #expect(Set(error?.conflicts.compactMap(\.objectID) ?? []) == [b1, b2])
    #expect(try lib.names() == ["One v4", "Two"])
    #expect(try lib.snapshot(b1)?.version == 4)
    let afterFailure = try lib.store.save(ChangeSet(inserted: [book(temp("Book"), "Three")]))
    #expect(afterFailure.permanentIDs.values.first?.primaryKey == 3, "a failed save assigns no primary keys")

    let staleDelete = lib.error { _ = try lib.store.save(ChangeSet(deleted: [ObjectDeletion(objectID: b2, expectedVersion: 2)])) }
    #expect(staleDelete?.code == .optimisticLockConflict)
    _ = try lib.store.save(ChangeSet(deleted: [ObjectDeletion(objectID: b2, expectedVersion: 1)]))
    let gone = lib.error { _ = try lib.store.save(ChangeSet(updated: [book(b2, "ghost", expectedVersion: 1)])) }
    #expect(gone?.code == .optimisticLockConflict)
    #expect(try lib.names() == ["One v4", "Three"])
  }

  @Test func uniquenessConflictsAreAllReportedAndNothingIsWritten() throws {
    let lib = try Library()
    let ann = temp("Author")
    let annID = try #require(try lib.store.save(ChangeSet(inserted: [author(ann, "Ann")])).permanentIDs[ann])
    let (dup, bob1, bob2, fine) = (temp("Author"), temp("Author"), temp("Author"), temp("Author"))
    let error = lib.error {
      _ = try lib.store.save(
        ChangeSet(inserted: [author(dup, "Ann"), author(bob1, "Bob"), author(bob2, "Bob"), author(fine, "Cy")]))
    }
    #expect(error?.code == .constraintConflict)
    #expect(error?.conflicts.count == 2)
    let annConflict = error?.conflicts.first { $0.objectID == dup }
    #expect(annConflict?.conflictingObjectID == annID)
    #expect(annConflict?.keys == ["name"])
    #expect(annConflict?.values == ["Ann"])
    #expect(annConflict?.storedValues == ["Ann"])
    let bobConflict = error?.conflicts.first { $0.objectID == bob1 || $0.objectID == bob2 }
    #expect(Set([bobConflict?.objectID, bobConflict?.conflictingObjectID]) == Set([bob1, bob2]))
    #expect(error?.message.contains("name") == true)
    #expect(error?.message.contains("Author") == true)
    #expect(try lib.names(entity: "Author") == ["Ann"])
  }

  @Test func uniquenessIsCheckedOnTheFinalState() throws {
    let lib = try Library()
    let (t1, t2, t3, t4) = (temp("Book"), temp("Book"), temp("Book"), temp("Book"))
    let ids = try lib.store.save(
      ChangeSet(inserted: [book(t1, "A", isbn: "X"), book(t2, "B", isbn: "Y"), book(t3, "C"), book(t4, "D")])
    )
    .permanentIDs
    #expect(try lib.count("Book", cmp("isbn", .equalTo, nil)) == 2, "nil never clashes")
    let (a, b) = (try #require(ids[t1]), try #require(ids[t2]))
    _ = try lib.store.save(ChangeSet(updated: [book(a, "A", isbn: "Y"), book(b, "B", isbn: "X")]))
    #expect(try lib.names(cmp("isbn", .equalTo, "X")) == ["B"])
    _ = try lib.store.save(ChangeSet(inserted: [book(temp("Book"), "B2", isbn: "X")], deleted: [ObjectDeletion(objectID: b)]))
    #expect(try lib.names(cmp("isbn", .equalTo, "X")) == ["B2"])
    let clash = lib.error { _ = try lib.store.save(ChangeSet(updated: [book(a, "A", isbn: "X")])) }
    #expect(clash?.code == .constraintConflict)
    #expect(try lib.names(cmp("isbn", .equalTo, "Y")) == ["A"])
  }
}

@Suite struct MemoryStoreRelationshipTests {
  @Test func joinTableLinksInBothDirectionsAndDeleteCleanup() throws {
    let lib = try Library()
    let (ann, b1, b2, noir, pulp) = (temp("Author"), temp("Book"), temp("Book"), temp("Genre"), temp("Genre"))
    let ids = try lib.store.save(
      ChangeSet(
        inserted: [
          author(ann, "Ann"), book(b1, "One", author: ann), book(b2, "Two", author: ann), genre(noir, "Noir"),
          genre(pulp, "Pulp"),
        ],
        linkChanges: [
          LinkChange(entityName: "Book", relationship: "genres", source: b1, target: noir, isInsertion: true),
          LinkChange(entityName: "Genre", relationship: "books", source: noir, target: b2, isInsertion: true),
          LinkChange(entityName: "Genre", relationship: "books", source: pulp, target: b2, isInsertion: true),
        ])
    ).permanentIDs
    let (annID, b1ID, b2ID, noirID, pulpID) = (ids[ann]!, ids[b1]!, ids[b2]!, ids[noir]!, ids[pulp]!)
    let related = { (id: ObjectID, rel: String) in try lib.store.relatedObjectIDs(of: id, relationship: rel, generation: nil) }
    #expect(try related(noirID, "books") == [b1ID, b2ID])
    #expect(try related(b2ID, "genres") == [noirID, pulpID])
    #expect(try lib.names(cmp("genres.name", .equalTo, "Pulp", .any)) == ["Two"])
    #expect(try lib.names(cmp("books.@count", .equalTo, 2), entity: "Genre") == ["Noir"])

    _ = try lib.store.save(
      ChangeSet(linkChanges: [
        LinkChange(entityName: "Book", relationship: "genres", source: b2ID, target: pulpID, isInsertion: false)
      ]))
    #expect(try related(pulpID, "books") == [])

    _ = try lib.store.save(ChangeSet(deleted: [ObjectDeletion(objectID: annID), ObjectDeletion(objectID: b1ID)]))
    #expect(try lib.snapshot(b2ID)?.toOne == [nil], "a deleted target's references are cleared")
    #expect(try related(noirID, "books") == [b2ID])
    #expect(try lib.names(cmp("author", .equalTo, nil)) == ["Two"])
    expectStoreError(.notFound) { try related(b2ID, "nope") }
  }

  @Test func toOneKeyPathsAndCounts() throws {
    let lib = try Library()
    let (ann, bea) = (temp("Author"), temp("Author"))
    _ = try lib.store.save(
      ChangeSet(inserted: [
        author(ann, "Ann"), author(bea, "Bea"), book(temp("Book"), "One", author: ann),
        book(temp("Book"), "Two", author: ann), book(temp("Book"), "Three", author: bea), book(temp("Book"), "Four"),
      ]))
    #expect(try lib.names(cmp("author.name", .equalTo, "Ann")) == ["One", "Two"])
    #expect(try lib.names(cmp("author.name", .notEqualTo, "Ann")) == ["Three", "Four"])
    #expect(try lib.names(cmp("author.books.@count", .greaterThan, 1)) == ["One", "Two"])
    #expect(try lib.names(cmp("books.title", .beginsWith, "T", .all), entity: "Author") == ["Bea"])
    #expect(try lib.names(cmp("books.title", .equalTo, "Two"), entity: "Author") == ["Ann"])
  }
}

@Suite struct MemoryStoreFetchTests {
  private func shelf() throws -> Library {
    let lib = try Library()
    _ = try lib.store.save(
      ChangeSet(inserted: [
        book(temp("Book"), "file10", price: 12), book(temp("Book"), "File2", rating: 3),
        book(temp("Book"), "alpha", price: Decimal(string: "9.99"), rating: 5), book(temp("Book"), "Beta"),
      ]))
    return lib
  }

  @Test func sortingWithNilAndComparators() throws {
    let lib = try shelf()
    #expect(try lib.names(sort: [QuerySort("title", comparator: .localizedStandard)]) == ["alpha", "Beta", "File2", "file10"])
    #expect(try lib.names(sort: [QuerySort("title")]) == ["Beta", "File2", "alpha", "file10"])
    #expect(try lib.names(sort: [QuerySort("title", comparator: .caseInsensitive)]) == ["alpha", "Beta", "file10", "File2"])
    #expect(try lib.names(sort: [QuerySort("rating")]) == ["file10", "Beta", "File2", "alpha"])
    #expect(try lib.names(sort: [QuerySort("rating", ascending: false)]) == ["alpha", "File2", "file10", "Beta"])
    #expect(try lib.names() == ["file10", "File2", "alpha", "Beta"])
  }

  @Test func offsetsLimitsAndResultTypes() throws {
    let lib = try shelf()
    let order = [QuerySort("title", comparator: .localizedStandard)]
    #expect(try lib.names(sort: order, limit: 2, offset: 1) == ["Beta", "File2"])
    #expect(try lib.names(sort: order, limit: 0) == ["alpha", "Beta", "File2", "file10"])
    #expect(try lib.names(sort: order, offset: 10) == [])
    #expect(try lib.names(sort: order, limit: Int.max, offset: 3) == ["file10"])
    var request = FetchDescription(entityName: "Book", sortDescriptors: order, fetchLimit: 3, fetchOffset: 2)
    request.resultType = .count
    #expect(try lib.store.fetch(request, generation: nil) == .count(2))
    request.resultType = .objectIDs
    #expect(
      try lib.store.fetch(request, generation: nil)
        == .objectIDs([
          ObjectID(entityName: "Book", storeIdentifier: "LIB", primaryKey: 2),
          ObjectID(entityName: "Book", storeIdentifier: "LIB", primaryKey: 1),
        ]))
    request.resultType = .dictionaries
    request.propertiesToFetch = [.keyPath("genres")]
    #expect(lib.error { _ = try lib.store.fetch(request, generation: nil) }?.code == .invalidQuery)
  }

  @Test func nilSemantics() throws {
    let lib = try shelf()
    #expect(try lib.names(cmp("rating", .equalTo, nil)) == ["file10", "Beta"])
    #expect(try lib.names(cmp("rating", .notEqualTo, 3)) == ["file10", "alpha", "Beta"])
    #expect(try lib.names(cmp("rating", .lessThan, 10)) == ["File2", "alpha"])
    #expect(try lib.names(.not(cmp("rating", .lessThan, 10))) == ["file10", "Beta"])
    #expect(try lib.names(.not(cmp("isbn", .contains, "1"))) == ["file10", "File2", "alpha", "Beta"])
    #expect(try lib.names(cmp("price", .greaterThan, 10)) == ["file10"])
    #expect(try lib.names(cmp("price", .lessThan, 10.5)) == ["alpha"])
    #expect(try lib.count("Book", cmp("price", .between, [9, 12])) == 2)
  }

  @Test func invalidQueriesNameEntityAndKey() throws {
    let lib = try shelf()
    let unknown = lib.error { _ = try lib.names(cmp("titel", .equalTo, "x")) }
    #expect(unknown?.code == .invalidQuery)
    #expect(unknown?.entity == "Book")
    #expect(unknown?.key == "titel")
    #expect(lib.error { _ = try lib.names(cmp("selected", .equalTo, true)) }?.code == .invalidQuery)
    #expect(lib.error { _ = try lib.names(sort: [QuerySort("selected")]) }?.code == .invalidQuery)
    #expect(lib.error { _ = try lib.names(cmp("pages", .equalTo, "many")) }?.value == "many")
    #expect(lib.error { _ = try lib.names(entity: "Nope") }?.code == .invalidQuery)
  }
}

@Suite struct MemoryStoreLifecycleTests {
  @Test func pinnedGenerationsKeepTheirState() throws {
    let lib = try Library()
    let t = temp("Book")
    let id = try #require(try lib.store.save(ChangeSet(inserted: [book(t, "One")])).permanentIDs[t])
    let generation = try lib.store.pinGeneration()
    _ = try lib.store.save(ChangeSet(inserted: [book(temp("Book"), "Two")], updated: [book(id, "One v2")]))
    #expect(try lib.names(generation: generation) == ["One"])
    #expect(try lib.names() == ["One v2", "Two"])
    #expect(try lib.store.snapshots(for: [id], generation: generation).first?.version == 1)
    lib.store.unpin(generation)
    #expect(lib.error { _ = try lib.names(generation: generation) }?.code == .misuse)
  }

  @Test func changesAreAnnouncedAfterEachSave() async throws {
    let lib = try Library()
    var changes = lib.store.changes().makeAsyncIterator()
    let t = temp("Author")
    let id = try #require(try lib.store.save(ChangeSet(inserted: [author(t, "Ann")])).permanentIDs[t])
    let inserted = await changes.next()
    #expect(inserted?.inserted == [id])
    #expect(inserted?.storeIdentifier == "LIB")
    _ = try lib.store.save(ChangeSet(deleted: [ObjectDeletion(objectID: id)]))
    #expect(await changes.next()?.deleted == [id])
    lib.store.close()
    #expect(await changes.next() == nil)
  }

  @Test func concurrentSavesAndReadsSeeWholeSaves() async throws {
    let store = try Library().store
    try await withThrowingTaskGroup(of: Void.self) { group in
      for writer in 0..<4 {
        group.addTask {
          for batch in 0..<25 {
            let authors = (0..<2).map { author(temp("Author"), "w\(writer)-\(batch)-\($0)") }
            _ = try store.save(ChangeSet(inserted: authors))
          }
        }
      }
      group.addTask {
        for _ in 0..<50 {
          let count = try store.count(FetchDescription(entityName: "Author"))
          #expect(count % 2 == 0, "a reader sees whole saves, never part of one")
        }
      }
      try await group.waitForAll()
    }
    guard
      case .objectIDs(let ids) = try store.fetch(FetchDescription(entityName: "Author", resultType: .objectIDs), generation: nil)
    else { return }
    #expect(ids.compactMap(\.primaryKey) == Array(1...200))
  }

  @Test func readOnlyAndClosedStoresRefuseWork() throws {
    let readOnly = try Library(options: StoreOptions(isReadOnly: true))
    #expect(
      readOnly.error { _ = try readOnly.store.save(ChangeSet(inserted: [author(temp("Author"), "Ann")])) }?.code == .readOnly)
    #expect(try readOnly.store.save(ChangeSet()) == SaveResult())

    let lib = try Library()
    lib.store.close()
    #expect(lib.error { _ = try lib.names() }?.code == .misuse)
    #expect(lib.error { _ = try lib.store.save(ChangeSet(inserted: [author(temp("Author"), "Ann")])) }?.code == .misuse)
  }

  @Test func factoryAndRegistry() throws {
    let factory = MemoryStoreFactory()
    #expect(factory.storeType == .memory)
    #expect(!factory.requiresLocation)
    let missing = try? factory.openStore(at: nil, model: nil, options: .init())
    #expect(missing == nil)
    expectStoreError(.notFound) { try factory.openStore(at: nil, model: nil, options: .init()) }
    do {
      _ = try factory.openStore(at: nil, model: nil, options: .init())
    } catch let error as StoreError {
      #expect(error.code == .notFound)
    }
    let registry = StoreRegistry([factory])
    let store = try registry.storeFactory(for: .memory).openStore(
      at: nil, model: try libraryModel(), options: StoreOptions(tracksHistory: true))
    #expect(store.storeType == .memory)
    #expect(store.url == nil)
    #expect(store.options.tracksHistory)
    #expect(UUID(uuidString: store.identifier) != nil)
  }
}
