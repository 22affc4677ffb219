import Foundation
import StrataCore
import Testing

@Suite("Object model")
struct ObjectModelTests {
  static func library() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Author",
        attributes: [
          AttributeDescription(name: "name", type: .string),
          AttributeDescription(name: "born", type: .date, isOptional: true),
        ],
        relationships: [
          RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true, deleteRule: .cascade)
        ],
        uniquenessConstraints: [["name"]]),
      EntityDescription(
        name: "Book",
        attributes: [
          AttributeDescription(name: "title", type: .string),
          AttributeDescription(name: "pages", type: .int32, defaultValue: 100, validation: .init(minimum: 1)),
          AttributeDescription(name: "price", type: .decimal, isOptional: true),
        ],
        relationships: [RelationshipDescription(name: "author", destination: "Author", inverse: "books")]),
    ])
  }

  @Test func aModelRoundTripsThroughJSONWithTheSameFingerprint() throws {
    let model = try Self.library()
    let decoded = try ObjectModel.decode(jsonData: try model.jsonData())
    #expect(decoded == model)
    #expect(decoded.fingerprint == model.fingerprint)
    #expect(decoded.entity(named: "Book")?.attribute(named: "pages")?.defaultValue == .int(100))
    #expect(decoded.entity(named: "Author")?.uniquenessConstraints == [["name"]])
  }

  @Test func anyChangeChangesTheFingerprint() throws {
    let model = try Self.library()
    let changed = try ObjectModel(
      entities: model.entities.map { entity in
        guard entity.name == "Book" else { return entity }
        return EntityDescription(
          name: entity.name,
          attributes: entity.attributes + [AttributeDescription(name: "isbn", type: .string, isOptional: true)],
          relationships: entity.relationships)
      })
    #expect(changed.fingerprint != model.fingerprint)
  }

  @Test func externalStorageIsEncodedOnlyWhenOnAndOnlyForStoredData() throws {
    func film(_ poster: AttributeDescription) throws -> ObjectModel {
      try ObjectModel(entities: [EntityDescription(name: "Film", attributes: [poster])])
    }
    let plain = try film(AttributeDescription(name: "poster", type: .data, isOptional: true))
    #expect(!String(decoding: try plain.jsonData(), as: UTF8.self).contains("allowsExternalBinaryDataStorage"))
    let external = try film(
      AttributeDescription(name: "poster", type: .data, isOptional: true, allowsExternalBinaryDataStorage: true))
    #expect(external.fingerprint != plain.fingerprint)
    let decoded = try ObjectModel.decode(jsonData: try external.jsonData())
    #expect(decoded.entity(named: "Film")?.attribute(named: "poster")?.allowsExternalBinaryDataStorage == true)
    #expect(decoded.fingerprint == external.fingerprint)
    for refused in [
      AttributeDescription(name: "poster", type: .string, allowsExternalBinaryDataStorage: true),
      AttributeDescription(name: "poster", type: .data, isTransient: true, allowsExternalBinaryDataStorage: true),
      AttributeDescription(name: "poster", type: .data, isIndexed: true, allowsExternalBinaryDataStorage: true),
    ] {
      do {
        _ = try film(refused)
        Issue.record("\(refused) was accepted")
      } catch let error as StoreError {
        #expect(error.code == .invalidModel && error.key == "poster", "\(error)")
      }
    }
  }

  @Test func orderedRelationshipsAreEncodedOnlyWhenOrdered() throws {
    let model = try Self.library()
    let json = String(decoding: try model.jsonData(), as: UTF8.self)
    #expect(!json.contains("isOrdered"), "a model of unordered relationships is stored as before")
    let ordered = try ObjectModel(
      entities: model.entities.map { entity in
        guard entity.name == "Author" else { return entity }
        var books = try #require(entity.relationship(named: "books"))
        books.isOrdered = true
        return EntityDescription(name: entity.name, attributes: entity.attributes, relationships: [books])
      })
    #expect(ordered.fingerprint != model.fingerprint)
    let decoded = try ObjectModel.decode(jsonData: try ordered.jsonData())
    #expect(decoded.entity(named: "Author")?.relationship(named: "books")?.isOrdered == true)
    #expect(decoded.fingerprint == ordered.fingerprint)

    let toOne = RelationshipDescription(name: "author", destination: "Author", inverse: "books", isOrdered: true)
    #expect(throws: StoreError.self) {
      try ObjectModel(entities: [
        EntityDescription(
          name: "Author",
          relationships: [
            RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)
          ]),
        EntityDescription(name: "Book", relationships: [toOne]),
      ])
    }
    do {
      _ = try ObjectModel(entities: [
        EntityDescription(
          name: "Author",
          relationships: [
            RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)
          ]),
        EntityDescription(name: "Book", relationships: [toOne]),
      ])
    } catch let error as StoreError {
      #expect(error.code == .invalidModel)
      #expect(error.message.contains("Book.author"), "\(error.message)")
    }
  }

  @Test func lookupsFindPropertiesByKind() throws {
    let book = try #require(try Self.library().entity(named: "Book"))
    guard case .attribute(let title, let index)? = book.property(named: "title") else {
      Issue.record("title is an attribute")
      return
    }
    #expect(title.type == .string && index == 0)
    guard case .toOne(let author, 0)? = book.property(named: "author") else {
      Issue.record("author is the first to-one relationship")
      return
    }
    #expect(author.destination == "Author")
    #expect(book.property(named: "nope") == nil)
    #expect(try Self.library().isManyToMany(author) == false)
    #expect(try Self.library().usesJoinTable(author) == false)
  }

  @Test func inconsistentModelsAreRejectedWithTheEntityAndKey() {
    func expectInvalid(_ entities: [EntityDescription], key: String?, _ comment: Comment) {
      do {
        _ = try ObjectModel(entities: entities)
        Issue.record("expected .invalidModel: \(comment)")
      } catch let error as StoreError {
        #expect(error.code == .invalidModel, comment)
        if let key { #expect(error.message.contains(key), "\(error.message)") }
      } catch {
        Issue.record("unexpected \(error)")
      }
    }
    expectInvalid(
      [EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "Missing")])],
      key: "Missing", "relationship to an unknown entity")
    expectInvalid(
      [
        EntityDescription(name: "A", relationships: [RelationshipDescription(name: "b", destination: "B", inverse: "a")]),
        EntityDescription(name: "B", relationships: [RelationshipDescription(name: "a", destination: "A", inverse: "other")]),
      ], key: "A.b", "inverse that does not point back")
    expectInvalid(
      [
        EntityDescription(
          name: "A", attributes: [AttributeDescription(name: "x", type: .int16), AttributeDescription(name: "x", type: .string)])
      ],
      key: "x", "property declared twice")
    expectInvalid(
      [EntityDescription(name: "A", attributes: [AttributeDescription(name: "_pk", type: .int64)])], key: "_pk", "reserved name")
    expectInvalid(
      [EntityDescription(name: "A", attributes: [AttributeDescription(name: "n", type: .int16, defaultValue: "ten")])],
      key: "n", "default value of the wrong type")
    expectInvalid(
      [EntityDescription(name: "A", attributes: [AttributeDescription(name: "n", type: .int16)], uniquenessConstraints: [["m"]])],
      key: "m", "constraint on an unknown attribute")
    expectInvalid(
      [
        EntityDescription(
          name: "A", attributes: [AttributeDescription(name: "t", type: .string, isTransient: true)],
          uniquenessConstraints: [["t"]])
      ],
      key: "t", "constraint on a transient attribute")
  }
}
