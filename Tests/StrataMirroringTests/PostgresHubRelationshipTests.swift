import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

/// The relationship rules through a real PostgreSQL hub: lists and restored objects survive its JSON
/// storage. Pushes are built by hand (no replica), so the test is a few statements on the server.
@Suite("Mirror relationships on a PostgreSQL hub")
struct PostgresHubRelationshipTests {
  /// Shelves with an ordered list of books under Deny; books and tags many-to-many (without the mirror's
  /// additions).
  static func shelves() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Shelf",
        relationships: [
          RelationshipDescription(
            name: "books", destination: "Book", inverse: "shelf", isToMany: true, deleteRule: .deny, isOrdered: true)
        ]),
      EntityDescription(
        name: "Book",
        relationships: [
          RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "books"),
          RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true),
        ]),
      EntityDescription(
        name: "Tag", relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true)]
      ),
    ])
  }

  /// ``shelves()`` mirrored.
  static let model: ObjectModel = {
    do {
      return try MirrorModel.adding(to: shelves())
    } catch {
      preconditionFailure("the test model is invalid: \(error)")
    }
  }()

  @Test func listsAndADeniedDeleteRoundTripThroughTheServer() async throws {
    let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
    let hub = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: String(schema), model: Self.model)
    let (one, two) = (UUID(), UUID())
    let (shelf, first, second, tag, other) = (UUID(), UUID(), UUID(), UUID(), UUID())
    func change(
      _ id: UUID, _ entity: String, _ kind: MirrorChange.Kind, _ fields: [String: MirrorField] = [:]
    )
      -> MirrorChange
    { MirrorChange(globalID: id, entityName: entity, kind: kind, fields: fields) }
    _ = try await hub.push(
      MirrorTransaction(
        replicaID: one, localSequence: 1, basePosition: 0,
        changes: [
          change(shelf, "Shelf", .insert, ["books": .references([first, second])]),
          change(tag, "Tag", .insert), change(other, "Tag", .insert),
          change(first, "Book", .insert, ["shelf": .reference(shelf), "tags": .references([tag])]),
          change(second, "Book", .insert, ["shelf": .reference(shelf)]),
        ]))
    // Both replicas saw position 1; two reorders the shelf and adds a tag to the first book; one removes
    // the book's first tag and deletes the shelf (Deny: it has books).
    _ = try await hub.push(
      MirrorTransaction(
        replicaID: two, localSequence: 1, basePosition: 1,
        changes: [
          change(shelf, "Shelf", .update, ["books": .references([second, first])]),
          change(first, "Book", .update, ["tags": .references([tag, other])]),
        ]))
    let denied = try await hub.push(
      MirrorTransaction(
        replicaID: one, localSequence: 2, basePosition: 1,
        changes: [change(first, "Book", .update, ["tags": .references([])]), change(shelf, "Shelf", .delete)]))
    #expect(denied.conflicts.map(\.kind) == [.deleteDenied])
    let live = try hub.liveObjects()
    #expect(live[shelf]?.fields["books"] == .references([second, first]))
    #expect(live[first]?.fields["tags"] == .references([other]))
    let last = try #require(try await hub.pull(after: 2, limit: 10).first)
    #expect(last.changes.contains { $0.kind == .restored && $0.globalID == shelf })
  }

  /// A hub keeps the objects its own last push left; a push of another hub on the same schema in between
  /// must make it read them again (a stale copy would not know the shelf, and drop the book's reference).
  @Test func aPushOfAnotherHubInBetweenIsSeen() async throws {
    let schema = "mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
    let uri = try PostgresHubTests.serverURI()
    let first = try PostgresHub(uri: uri, schema: String(schema), model: Self.model)
    let second = try PostgresHub(uri: uri, schema: String(schema), model: Self.model)
    let (replica, book, shelf) = (UUID(), UUID(), UUID())
    _ = try await first.push(
      MirrorTransaction(
        replicaID: replica, localSequence: 1, basePosition: 0,
        changes: [MirrorChange(globalID: book, entityName: "Book", kind: .insert, fields: ["shelf": .reference(nil)])]))
    _ = try await second.push(
      MirrorTransaction(
        replicaID: replica, localSequence: 2, basePosition: 1,
        changes: [MirrorChange(globalID: shelf, entityName: "Shelf", kind: .insert, fields: ["books": .references([])])]))
    _ = try await first.push(
      MirrorTransaction(
        replicaID: replica, localSequence: 3, basePosition: 2,
        changes: [MirrorChange(globalID: book, entityName: "Book", kind: .update, fields: ["shelf": .reference(shelf)])]))
    let live = try second.liveObjects()
    #expect(live[book]?.fields["shelf"] == .reference(shelf))
    #expect(live[shelf]?.fields["books"] == .references([book]))
  }
}
