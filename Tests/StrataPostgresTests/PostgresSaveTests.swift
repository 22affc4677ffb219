import Foundation
import StrataMemory
import StrataPostgres
import StrataStoreKit
import Testing

/// Author (name) ← Book (title, pages, author: to-one).
private func shelf() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Author", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)]),
    EntityDescription(
      name: "Book",
      attributes: [
        AttributeDescription(name: "title", type: .string),
        AttributeDescription(name: "pages", type: .int32, isOptional: true),
      ],
      relationships: [RelationshipDescription(name: "author", destination: "Author", inverse: "books")]),
  ])
}

@Suite("PostgreSQL saves of many objects")
struct PostgresSaveTests {
  /// 40 authors and 200 books pointing at them, all new in one save (books before their authors).
  private func manyNewObjects() -> ChangeSet {
    let authors = (0..<40).map {
      ObjectChange(objectID: .makeTemporary(entityName: "Author"), attributes: [.string("author \($0)\t\\")], toOne: [])
    }
    let books = (0..<200).map { n in
      ObjectChange(
        objectID: .makeTemporary(entityName: "Book"), attributes: [.string("book \(n)\n"), n % 3 == 0 ? .null : .int(Int64(n))],
        toOne: [n % 7 == 0 ? nil : authors[n % authors.count].objectID])
    }
    return ChangeSet(inserted: books + authors)
  }

  private func everything(_ store: any PersistentStore) throws -> [[String]] {
    try ["Author", "Book"].map { entity in
      guard case .snapshots(let all) = try store.fetch(FetchDescription(entityName: entity), generation: nil) else { return [] }
      return all.map { snapshot in
        "\(snapshot.objectID.primaryKey ?? -1) v\(snapshot.version) \(snapshot.attributes) → \(snapshot.toOne.map { $0?.primaryKey ?? -1 })"
      }
      .sorted()
    }
  }

  @Test func manyInsertsByCopyStoreWhatTheMemoryStoreStores() throws {
    _ = try PostgresTestServer.uri()
    let model = try shelf()
    let postgres = try PostgresStore(url: PostgresTestServer.freshLocation(), model: model)
    defer { postgres.close() }
    let memory = MemoryStore(model: model)
    let changes = manyNewObjects()
    let saved = try postgres.save(changes)
    let expected = try memory.save(changes)
    #expect(try everything(postgres) == everything(memory))
    let keys = changes.inserted.map { saved.permanentIDs[$0.objectID]?.primaryKey }
    #expect(keys == changes.inserted.map { expected.permanentIDs[$0.objectID]?.primaryKey })
  }

  @Test func aRequiredNilAmongManyInsertsWritesNothing() throws {
    _ = try PostgresTestServer.uri()
    let postgres = try PostgresStore(url: PostgresTestServer.freshLocation(), model: try shelf())
    defer { postgres.close() }
    var changes = manyNewObjects()
    changes.inserted[150].attributes[0] = .null
    do {
      _ = try postgres.save(changes)
      Issue.record("expected a validation error")
    } catch let error as StoreError {
      #expect(error.code == .validation && error.key == "title", "\(error.message)")
    }
    #expect(try postgres.count(FetchDescription(entityName: "Book")) == 0)
    #expect(try postgres.count(FetchDescription(entityName: "Author")) == 0)
  }
}
