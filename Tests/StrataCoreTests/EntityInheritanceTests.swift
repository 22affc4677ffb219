import Foundation
import StrataCore
import Testing

@Suite("Entity inheritance in the model")
struct EntityInheritanceTests {
  static let title = AttributeDescription(name: "title", type: .string)
  static let runtime = AttributeDescription(name: "runtime", type: .int32)
  static let seasons = AttributeDescription(name: "seasons", type: .int16)

  static func entities(filmParent: String? = "Media", mediaAbstract: Bool = true) -> [EntityDescription] {
    [
      EntityDescription(
        name: "Film", attributes: [runtime], uniquenessConstraints: [["runtime"]], parentEntity: filmParent),
      EntityDescription(name: "Media", attributes: [title], uniquenessConstraints: [["title"]], isAbstract: mediaAbstract),
      EntityDescription(name: "Series", attributes: [seasons], parentEntity: "Media"),
    ]
  }

  @Test func subEntitiesInheritTheirParentsPropertiesFirst() throws {
    let model = try ObjectModel(entities: Self.entities())
    let film = try #require(model.entity(named: "Film"))
    #expect(film.attributes.map(\.name) == ["title", "runtime"])
    #expect(film.uniquenessConstraints == [["title"], ["runtime"]])
    #expect(model.inheritance.parent(of: "Film") == "Media")
    #expect(model.inheritance.subentities(of: "Media") == ["Film", "Series"])
    #expect(model.inheritance.entityAndDescendants("Media") == ["Media", "Film", "Series"])
    #expect(model.inheritance.fetchedEntities("Media") == ["Film", "Series"])
    #expect(model.inheritance.fetchedEntities("Media", includesSubentities: false).isEmpty)
    #expect(model.inheritance.root(of: "Series") == "Media")
    #expect(model.isEntity("Film", kindOf: "Media"))
    #expect(!model.isEntity("Media", kindOf: "Film"))
    #expect(model.constraintScope(of: ["title"], in: "Film") == "Media")
    #expect(model.constraintScope(of: ["runtime"], in: "Film") == "Film")
  }

  @Test func theStoredFormRecordsTheParentAndDecodesToItself() throws {
    let model = try ObjectModel(entities: Self.entities())
    let json = String(decoding: try model.jsonData(), as: UTF8.self)
    #expect(json.contains("\"parentEntity\":\"Media\""))
    #expect(json.contains("\"isAbstract\":true"))
    let decoded = try ObjectModel.decode(jsonData: try model.jsonData())
    #expect(decoded == model)
    #expect(decoded.fingerprint == model.fingerprint)
    #expect(decoded.inheritance == model.inheritance)
  }

  @Test func theFingerprintChangesWithTheHierarchy() throws {
    let withParent = try ObjectModel(entities: Self.entities())
    let concreteParent = try ObjectModel(entities: Self.entities(mediaAbstract: false))
    var flat = Self.entities(filmParent: nil)
    flat[0] = EntityDescription(
      name: "Film", attributes: [Self.title, Self.runtime], uniquenessConstraints: [["title"], ["runtime"]])
    let withoutParent = try ObjectModel(entities: flat)
    #expect(withParent.entity(named: "Film")?.attributes == withoutParent.entity(named: "Film")?.attributes)
    #expect(Set([withParent.fingerprint, concreteParent.fingerprint, withoutParent.fingerprint]).count == 3)
  }

  @Test func badHierarchiesAreInvalidModels() throws {
    let unknown = #expect(throws: StoreError.self) {
      try ObjectModel(entities: [EntityDescription(name: "Film", parentEntity: "Nope")])
    }
    #expect(unknown?.code == .invalidModel)
    #expect(unknown?.message.contains("'Nope'") == true)
    let cycle = #expect(throws: StoreError.self) {
      try ObjectModel(entities: [
        EntityDescription(name: "A", parentEntity: "B"), EntityDescription(name: "B", parentEntity: "A"),
      ])
    }
    #expect(cycle?.code == .invalidModel)
    #expect(cycle?.message.contains("cycle") == true)
    let redeclared = #expect(throws: StoreError.self) {
      try ObjectModel(entities: [
        EntityDescription(name: "Media", attributes: [Self.title]),
        EntityDescription(
          name: "Film", attributes: [AttributeDescription(name: "title", type: .int64)], parentEntity: "Media"),
      ])
    }
    #expect(redeclared?.code == .invalidModel)
    #expect(redeclared?.key == "title")
  }

  @Test func siblingsCannotDeclareOneNameDifferently() throws {
    let media = EntityDescription(name: "Media", attributes: [Self.title], isAbstract: true)
    let code = AttributeDescription(name: "code", type: .string, isOptional: true)
    let same = try ObjectModel(entities: [
      media, EntityDescription(name: "Film", attributes: [code], parentEntity: "Media"),
      EntityDescription(name: "Series", attributes: [code], parentEntity: "Media"),
    ])
    #expect(same.entity(named: "Series")?.attribute(named: "code") == code)
    let error = #expect(throws: StoreError.self) {
      try ObjectModel(entities: [
        media, EntityDescription(name: "Film", attributes: [code], parentEntity: "Media"),
        EntityDescription(
          name: "Series", attributes: [AttributeDescription(name: "code", type: .int64)], parentEntity: "Media"),
      ])
    }
    #expect(error?.code == .invalidModel)
    #expect(error?.key == "code")
    #expect(error?.message.contains("Film.code and Series.code") == true)
  }

  @Test func abstractEntitiesCannotBeInserted() throws {
    let model = try ObjectModel(entities: Self.entities())
    let error = #expect(throws: StoreError.self) { try model.requireInsertable("Media") }
    #expect(error?.code == .validation)
    #expect(error?.message.contains("Film, Series") == true)
    try model.requireInsertable("Film")
  }

  @Test func includesSubentitiesIsEncodedOnlyWhenFalse() throws {
    var request = FetchDescription(entityName: "Media")
    #expect(!String(decoding: try JSONEncoder().encode(request), as: UTF8.self).contains("includesSubentities"))
    request.includesSubentities = false
    let decoded = try JSONDecoder().decode(FetchDescription.self, from: try JSONEncoder().encode(request))
    #expect(decoded == request)
    #expect(!decoded.includesSubentities)
  }
}
