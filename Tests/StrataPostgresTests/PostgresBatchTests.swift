import Foundation
import StrataPostgres
import StrataStoreKit
import Testing

/// Author (name, unique) ← Book (title, author: to-one, nullify) and a history-keeping store.
private func library() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Author", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)],
      uniquenessConstraints: [["name"]]),
    EntityDescription(
      name: "Book",
      attributes: [
        AttributeDescription(name: "title", type: .string, preservesValueInHistoryOnDeletion: true),
        AttributeDescription(name: "rating", type: .int16, isOptional: true),
      ],
      relationships: [RelationshipDescription(name: "author", destination: "Author", inverse: "books")]),
  ])
}

@Suite("PostgreSQL batch requests")
struct PostgresBatchTests {
  /// A store with two authors and three books (two by Le Guin).
  private func store() throws -> (PostgresStore, authors: [ObjectID], books: [ObjectID]) {
    _ = try PostgresTestServer.uri()
    let store = try PostgresStore(
      url: PostgresTestServer.freshLocation(), model: try library(), options: StoreOptions(tracksHistory: true))
    let leGuin = ObjectID.makeTemporary(entityName: "Author")
    let banks = ObjectID.makeTemporary(entityName: "Author")
    let books = [("Earthsea", leGuin), ("The Dispossessed", leGuin), ("Excession", banks)].map { title, author in
      ObjectChange(objectID: .makeTemporary(entityName: "Book"), attributes: [.string(title), .null], toOne: [author])
    }
    let saved = try store.save(
      ChangeSet(
        inserted: [
          ObjectChange(objectID: leGuin, attributes: [.string("Le Guin")], toOne: []),
          ObjectChange(objectID: banks, attributes: [.string("Banks")], toOne: []),
        ] + books))
    return (
      store, [leGuin, banks].compactMap { saved.permanentIDs[$0] }, books.compactMap { saved.permanentIDs[$0.objectID] }
    )
  }

  @Test func anUpdateOfConstantsThroughAToOnePathIsOneStatementWithHistory() throws {
    let (store, _, books) = try store()
    defer { store.close() }
    let before = try store.currentHistoryToken()
    let result = try store.execute(
      .update(
        entityName: "Book", predicate: try QueryPredicate(format: "author.name == 'Le Guin'"),
        propertiesToUpdate: ["rating": .constant(.int(5))], resultType: .objectIDs))
    #expect(result.objectIDs == Array(books.prefix(2)))
    let rated = try store.snapshots(for: books, generation: nil).sorted {
      ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0)
    }
    #expect(rated.map { $0.attributes[1] } == [.int(5), .int(5), .null])
    #expect(rated.map(\.version) == [2, 2, 1])
    guard case .transactions(let later) = try store.fetchHistory(HistoryRequest(after: before.map { .token($0) })) else {
      Issue.record("expected transactions")
      return
    }
    #expect(later.count == 1)
    #expect(later.first?.changes.map(\.updatedProperties) == [["rating"], ["rating"]])
    // A value out of the attribute's range, or a clash, is refused as the general path refuses it.
    #expect(throws: StoreError.self) {
      try store.execute(.update(entityName: "Book", predicate: nil, propertiesToUpdate: ["rating": .constant(.int(70_000))]))
    }
    do {
      _ = try store.execute(.update(entityName: "Author", predicate: nil, propertiesToUpdate: ["name": .constant(.string("X"))]))
      Issue.record("expected a constraint conflict")
    } catch let error as StoreError {
      #expect(error.code == .constraintConflict, "\(error.message)")
    }
    #expect(try store.count(FetchDescription(entityName: "Author", predicate: try QueryPredicate(format: "name == 'X'"))) == 0)
  }

  @Test func aDeleteClearsReferencesAndKeepsTombstones() throws {
    let (store, authors, books) = try store()
    defer { store.close() }
    let before = try store.currentHistoryToken()
    let result = try store.execute(
      .delete(entityName: "Author", predicate: try QueryPredicate(format: "name BEGINSWITH 'Le'"), resultType: .objectIDs))
    #expect(result.objectIDs == [authors[0]])
    let remaining = try store.snapshots(for: books, generation: nil).sorted {
      ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0)
    }
    #expect(remaining.map { $0.toOne } == [[nil], [nil], [authors[1]]])
    let deleted = try store.execute(
      .delete(entityName: "Book", predicate: try QueryPredicate(format: "title == 'Excession'"), resultType: .objectIDs))
    #expect(deleted.objectIDs == [books[2]])
    guard case .transactions(let later) = try store.fetchHistory(HistoryRequest(after: before.map { .token($0) })) else {
      Issue.record("expected transactions")
      return
    }
    #expect(later.count == 2)
    #expect(later.first?.changes.map(\.changeType) == [.update, .update, .delete])
    #expect(later.last?.changes.first?.tombstone == ["title": .string("Excession")])
    #expect(try store.execute(.delete(entityName: "Book", predicate: try QueryPredicate(format: "title == 'none'"))).count == 0)
  }
}
