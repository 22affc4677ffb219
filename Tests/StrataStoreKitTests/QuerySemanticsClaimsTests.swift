import Foundation
import StrataStoreKit
import Testing

@testable import StrataCore

// Claims of docs/QUERY-SEMANTICS.md that no other test checked.

private struct Library: EvaluationSource {
  let model: ObjectModel
  var objects: [ObjectID: Snapshot] = [:]
  var toMany: [ObjectID: [String: [ObjectID]]] = [:]

  func snapshot(for id: ObjectID) throws -> Snapshot? { objects[id] }
  func relatedObjectIDs(of id: ObjectID, relationship: RelationshipDescription) throws -> [ObjectID] {
    toMany[id]?[relationship.name] ?? []
  }
}

private func oid(_ entity: String, _ pk: Int64) -> ObjectID {
  ObjectID(entityName: entity, storeIdentifier: "S", primaryKey: pk)
}

private func makeLibrary() throws -> Library {
  let model = try ObjectModel(entities: [
    EntityDescription(
      name: "Author", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)]),
    EntityDescription(
      name: "Book",
      attributes: [
        AttributeDescription(name: "title", type: .string),
        AttributeDescription(name: "pages", type: .int64),
      ],
      relationships: [RelationshipDescription(name: "author", destination: "Author", inverse: "books")]),
  ])
  var library = Library(model: model)
  for (pk, name) in [(1, "Le Guin"), (2, "Banks")] as [(Int64, String)] {
    library.objects[oid("Author", pk)] = Snapshot(objectID: oid("Author", pk), version: 1, attributes: [.string(name)], toOne: [])
  }
  for (pk, title, pages, author) in [(1, "Heat", Int64.max, 1), (2, "Excession", 1, 2)] as [(Int64, String, Int64, Int64)] {
    library.objects[oid("Book", pk)] = Snapshot(
      objectID: oid("Book", pk), version: 1, attributes: [.string(title), .int(pages)], toOne: [oid("Author", author)])
  }
  library.toMany[oid("Author", 1)] = ["books": [oid("Book", 1)]]
  library.toMany[oid("Author", 2)] = ["books": [oid("Book", 2)]]
  return library
}

private func matching(_ format: String, entity: String, in library: Library) throws -> [Int64] {
  let evaluator = try PredicateEvaluator(
    try QueryPredicate(format: format), entity: try library.model.requireEntity(entity), model: library.model)
  let rows = library.objects.values.filter { $0.objectID.entityName == entity }.sorted {
    $0.objectID.primaryKey! < $1.objectID.primaryKey!
  }
  return try evaluator.filter(rows, source: library).compactMap(\.objectID.primaryKey)
}

@Suite("Query semantics claims")
struct QuerySemanticsClaimsTests {
  /// Expressions: "two integers give an integer (a double on overflow)".
  @Test func integerArithmeticOverflowsIntoDoubles() throws {
    #expect(ExpressionFunctions.apply("add:to:", [.int(.max), .int(1)]) == .double(Double(Int64.max) + 1))
    #expect(ExpressionFunctions.apply("from:subtract:", [.int(.min), .int(1)]) == .double(Double(Int64.min) - 1))
    #expect(ExpressionFunctions.apply("multiply:by:", [.int(.max), .int(2)]) == .double(Double(Int64.max) * 2))
    #expect(ExpressionFunctions.apply("add:to:", [.int(2), .int(3)]) == .int(5))
    let library = try makeLibrary()
    #expect(try matching("pages + 1 > 9223372036854775807", entity: "Book", in: library) == [1])
  }

  /// Checking: `"x" IN rel.attr` is `ANY rel.attr == "x"`.
  @Test func constantInToManyKeyPathIsAny() throws {
    let library = try makeLibrary()
    let author = try library.model.requireEntity("Author")
    let checked = try QueryValidator.check(
      try QueryPredicate(format: "'Heat' IN books.title"), entity: author, model: library.model)
    #expect(
      checked
        == .comparison(Comparison(.keyPath("books.title"), .equalTo, .constant("Heat"), modifier: .any)))
    #expect(try matching("'Heat' IN books.title", entity: "Author", in: library) == [1])
    #expect(try matching("'heat' IN[c] books.title", entity: "Author", in: library) == [1])
  }

  /// Strings: in `LIKE`, a backslash makes the next character literal.
  @Test func likeBackslashEscapes() throws {
    var library = try makeLibrary()
    library.objects[oid("Book", 3)] = Snapshot(
      objectID: oid("Book", 3), version: 1, attributes: [.string("Why?"), .int(3)], toOne: [oid("Author", 2)])
    library.objects[oid("Book", 4)] = Snapshot(
      objectID: oid("Book", 4), version: 1, attributes: [.string("Why!"), .int(4)], toOne: [oid("Author", 2)])
    #expect(try matching("title LIKE 'Why?'", entity: "Book", in: library) == [3, 4])
    #expect(try matching("title LIKE 'Why\\\\?'", entity: "Book", in: library) == [3])
  }
}
