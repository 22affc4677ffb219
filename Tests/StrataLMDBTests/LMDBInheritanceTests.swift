import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

@Suite("LMDB entity hierarchies")
struct LMDBInheritanceTests {
  static func model() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Media", attributes: [AttributeDescription(name: "title", type: .string)],
        uniquenessConstraints: [["title"]], isAbstract: true),
      EntityDescription(name: "Film", attributes: [AttributeDescription(name: "runtime", type: .int32)], parentEntity: "Media"),
      EntityDescription(name: "Series", attributes: [AttributeDescription(name: "seasons", type: .int16)], parentEntity: "Media"),
    ])
  }

  static func insert(_ entity: String, _ values: [Value]) -> ObjectChange {
    ObjectChange(objectID: .makeTemporary(entityName: entity), attributes: values, toOne: [])
  }

  @Test func keysAreUniqueAcrossAHierarchyAndSoAreItsConstraints() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let store = try LMDBStore(url: directory.store, model: try Self.model())
    defer { store.close() }
    let saved = try store.save(
      ChangeSet(inserted: [Self.insert("Film", ["Heat", 170]), Self.insert("Series", ["The Wire", 5])]))
    #expect(Set(saved.permanentIDs.values.compactMap(\.primaryKey)).count == 2)
    let clash = storeError { _ = try store.save(ChangeSet(inserted: [Self.insert("Series", ["Heat", 1])])) }
    #expect(clash?.code == .constraintConflict)
    let abstract = storeError { _ = try store.save(ChangeSet(inserted: [Self.insert("Media", ["Loose"])])) }
    #expect(abstract?.code == .validation)
    guard case .snapshots(let all) = try store.fetch(FetchDescription(entityName: "Media"), generation: nil) else {
      Issue.record("expected snapshots")
      return
    }
    #expect(all.map(\.objectID.entityName) == ["Film", "Series"])
    #expect(all.map { $0.attributes.count } == [2, 2])
    #expect(try store.fetch(FetchDescription(entityName: "Media", resultType: .count), generation: nil).count == 2)
  }
}
