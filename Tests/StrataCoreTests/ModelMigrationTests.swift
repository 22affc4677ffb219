import Foundation
import StrataCore
import StrataTestSupport
import Testing

@Suite("Inferred model migration")
struct ModelMigrationTests {
  static let title = AttributeDescription(name: "title", type: .string)
  static let year = AttributeDescription(name: "year", type: .int16)

  static func model(
    movie attributes: [AttributeDescription] = [title, year], movieName: String = "Movie",
    movieRenamedFrom: String? = nil, director: [RelationshipDescription]? = nil,
    movieRelationships: [RelationshipDescription] = [], constraints: [[String]] = [], extra: [EntityDescription] = []
  ) throws -> ObjectModel {
    var entities = [
      EntityDescription(
        name: movieName, attributes: attributes, relationships: movieRelationships,
        uniquenessConstraints: constraints, renamingIdentifier: movieRenamedFrom)
    ]
    if let director {
      entities.append(
        EntityDescription(
          name: "Director", attributes: [AttributeDescription(name: "name", type: .string)], relationships: director))
    }
    return try ObjectModel(entities: entities + extra)
  }

  func descriptions(from old: ObjectModel, to new: ObjectModel) throws -> [String] {
    try ModelMigration(from: old, to: new).changes.map(\.description)
  }

  @Test func identicalModelsNeedNothing() throws {
    let migration = try ModelMigration(from: try Self.model(), to: try Self.model())
    #expect(migration.isEmpty)
    #expect(migration.entities.map { $0.attributes.map(\.source) } == [["title", "year"]])
  }

  @Test func anAddedAttributeNeedsToBeOptionalOrHaveADefault() throws {
    let old = try Self.model()
    let optional = AttributeDescription(name: "note", type: .string, isOptional: true)
    let rated = AttributeDescription(name: "rating", type: .int16, defaultValue: 0)
    let migration = try ModelMigration(from: old, to: try Self.model(movie: [Self.title, Self.year, optional, rated]))
    #expect(migration.changes.map(\.description) == ["Movie.note: added, filled with nil", "Movie.rating: added, filled with 0"])
    let mapping = try #require(migration.entities.first?.attributes.last)
    #expect(mapping.source == nil && mapping.convert(.int(5)) == .int(0))

    let required = AttributeDescription(name: "rating", type: .int16)
    let error = expectStoreError(.schemaMismatch) {
      try ModelMigration(from: old, to: try Self.model(movie: [Self.title, Self.year, required]))
    }
    #expect(error?.message.contains("Movie.rating: added as a required attribute without a default value") == true)
  }

  @Test func removedAndRenamedAttributes() throws {
    let old = try Self.model(movie: [Self.title, Self.year, AttributeDescription(name: "lastModified", type: .date)])
    let renamed = AttributeDescription(name: "updatedAt", type: .date, renamingIdentifier: "lastModified")
    let migration = try ModelMigration(from: old, to: try Self.model(movie: [Self.title, renamed]))
    #expect(
      migration.changes.map(\.description) == [
        "Movie.updatedAt: renamed from lastModified", "Movie.year: removed with its values",
      ])
    let mapping = try #require(migration.entities.first?.attributes.last)
    let date = Date(timeIntervalSinceReferenceDate: 1234.5)
    #expect(mapping.source == "lastModified" && mapping.convert(.date(date)) == .date(date))
  }

  @Test func aRenamingIdentifierMustNameSomethingOld() throws {
    let typo = AttributeDescription(name: "updatedAt", type: .date, renamingIdentifier: "lastModfied")
    let error = expectStoreError(.schemaMismatch) {
      try ModelMigration(from: try Self.model(), to: try Self.model(movie: [Self.title, Self.year, typo]))
    }
    #expect(error?.message.contains("Movie.updatedAt: renames 'lastModfied', which Movie of the old model does not have") == true)
  }

  @Test func typesWidenAndValuesFollow() throws {
    let old = try Self.model(movie: [
      Self.title, Self.year, AttributeDescription(name: "votes", type: .int32),
      AttributeDescription(name: "seen", type: .bool), AttributeDescription(name: "released", type: .date),
    ])
    let new = try Self.model(movie: [
      Self.title, AttributeDescription(name: "year", type: .int64), AttributeDescription(name: "votes", type: .double),
      AttributeDescription(name: "seen", type: .string), AttributeDescription(name: "released", type: .string),
    ])
    let migration = try ModelMigration(from: old, to: new)
    #expect(
      migration.changes.map(\.description) == [
        "Movie.year: type widened from int16 to int64", "Movie.votes: type widened from int32 to double",
        "Movie.seen: type widened from bool to string", "Movie.released: type widened from date to string",
      ])
    let byName = Dictionary(
      uniqueKeysWithValues: try #require(migration.entities.first).attributes.map { ($0.attribute.name, $0) })
    #expect(byName["year"]?.convert(.int(1995)) == .int(1995))
    #expect(byName["votes"]?.convert(.int(7)) == .double(7))
    #expect(byName["seen"]?.convert(.bool(true)) == .string("true"))
    #expect(byName["released"]?.convert(.date(Date(timeIntervalSince1970: 0.25))) == .string("1970-01-01T00:00:00.250Z"))
  }

  @Test(arguments: [
    (AttributeType.int64, AttributeType.int16), (.double, .int64), (.string, .int32), (.date, .double), (.data, .string),
  ])
  func narrowingOrUnrelatedTypesAreRefused(_ from: AttributeType, _ to: AttributeType) throws {
    let error = expectStoreError(.schemaMismatch) {
      try ModelMigration(
        from: try Self.model(movie: [Self.title, AttributeDescription(name: "x", type: from)]),
        to: try Self.model(movie: [Self.title, AttributeDescription(name: "x", type: to)]))
    }
    #expect(error?.message.contains("Movie.x: type changed from \(from) to \(to), which does not widen") == true)
  }

  @Test func optionality() throws {
    let optionalYear = AttributeDescription(name: "year", type: .int16, isOptional: true)
    let requiredYear = AttributeDescription(name: "year", type: .int16, defaultValue: 2000)
    let toRequired = try ModelMigration(
      from: try Self.model(movie: [Self.title, optionalYear]), to: try Self.model(movie: [Self.title, requiredYear]))
    #expect(toRequired.changes.map(\.description).first == "Movie.year: made required, nil values become 2000")
    let mapping = try #require(toRequired.entities.first?.attributes.last)
    #expect(mapping.convert(.null) == .int(2000) && mapping.convert(.int(1999)) == .int(1999))

    let toOptional = try ModelMigration(from: try Self.model(), to: try Self.model(movie: [Self.title, optionalYear]))
    #expect(toOptional.changes.map(\.description) == ["Movie.year: made optional"])
    #expect(toOptional.entities.first?.attributes.last?.convert(.null) == .null)

    expectStoreError(.schemaMismatch) {
      try ModelMigration(
        from: try Self.model(movie: [Self.title, optionalYear]), to: try Self.model(movie: [Self.title, Self.year]))
    }
  }

  @Test func entitiesAddedRemovedAndRenamed() throws {
    let genre = EntityDescription(name: "Genre", attributes: [AttributeDescription(name: "name", type: .string)])
    let old = try Self.model(extra: [genre])
    let new = try Self.model(
      movieName: "Film", movieRenamedFrom: "Movie",
      extra: [EntityDescription(name: "Studio", attributes: [AttributeDescription(name: "name", type: .string)])])
    let migration = try ModelMigration(from: old, to: new)
    #expect(
      migration.changes.map(\.description) == [
        "Film: entity renamed from Movie", "Studio: entity added", "Genre: entity removed with its objects",
      ])
    #expect(migration.entities.map(\.source) == ["Movie", nil])
    #expect(migration.removedEntities == ["Genre"])
  }

  @Test func relationships() throws {
    let toOne = RelationshipDescription(name: "director", destination: "Director", inverse: "movies")
    let inverse = RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true)
    let old = try Self.model(director: [inverse], movieRelationships: [toOne])

    let cascade = RelationshipDescription(
      name: "movies", destination: "Movie", inverse: "director", isToMany: true, deleteRule: .cascade)
    #expect(
      try descriptions(from: old, to: try Self.model(director: [cascade], movieRelationships: [toOne]))
        == ["Director.movies: delete rule changed from nullify to cascade"])

    let manyToMany = RelationshipDescription(name: "director", destination: "Director", inverse: "movies", isToMany: true)
    #expect(
      try descriptions(from: old, to: try Self.model(director: [inverse], movieRelationships: [manyToMany]))
        == ["Movie.director: made to-many, each object keeps its target"])

    let renamed = RelationshipDescription(
      name: "directedBy", destination: "Director", inverse: "movies", renamingIdentifier: "director")
    let renamedInverse = RelationshipDescription(name: "movies", destination: "Movie", inverse: "directedBy", isToMany: true)
    let migration = try ModelMigration(from: old, to: try Self.model(director: [renamedInverse], movieRelationships: [renamed]))
    #expect(migration.changes.map(\.description) == ["Movie.directedBy: relationship renamed from director"])
    #expect(migration.entities.first?.relationshipSources == ["directedBy": "director"])

    let error = expectStoreError(.schemaMismatch) {
      try ModelMigration(
        from: try Self.model(director: [inverse], movieRelationships: [manyToMany]),
        to: try Self.model(director: [inverse], movieRelationships: [toOne]))
    }
    #expect(error?.message.contains("Movie.director: made to-one") == true)
  }

  @Test func constraintsAndIndexesFollowRenames() throws {
    let old = try Self.model(constraints: [["title"]])
    let renamedTitle = AttributeDescription(name: "name", type: .string, renamingIdentifier: "title")
    #expect(
      try descriptions(from: old, to: try Self.model(movie: [renamedTitle, Self.year], constraints: [["name"]]))
        == ["Movie.name: renamed from title"])
    #expect(
      try descriptions(from: old, to: try Self.model(constraints: [["title", "year"]]))
        == ["Movie: uniqueness constraint (title, year) added", "Movie: uniqueness constraint (title) removed"])
    let indexed = AttributeDescription(name: "year", type: .int16, isIndexed: true)
    #expect(
      try descriptions(from: old, to: try Self.model(movie: [Self.title, indexed], constraints: [["title"]])) == [
        "Movie.year: index added"
      ])
  }

  @Test func everyRefusalIsNamedAtOnce() throws {
    let error = expectStoreError(.schemaMismatch) {
      try ModelMigration(
        from: try Self.model(),
        to: try Self.model(movie: [
          AttributeDescription(name: "title", type: .int64), AttributeDescription(name: "year", type: .int16),
          AttributeDescription(name: "rating", type: .int16),
        ]))
    }
    let message = error?.message ?? ""
    #expect(message.contains("Movie.title: type changed from string to int64"), "\(message)")
    #expect(message.contains("Movie.rating: added as a required attribute"), "\(message)")
  }

  @Test func stepsComposeIntoOneMigration() throws {
    let v1 = try Self.model(movie: [Self.title, Self.year, AttributeDescription(name: "seen", type: .bool, isOptional: true)])
    let v2 = try Self.model(
      movie: [
        AttributeDescription(name: "name", type: .string, renamingIdentifier: "title"),
        AttributeDescription(name: "year", type: .int32), AttributeDescription(name: "seen", type: .bool, defaultValue: false),
        AttributeDescription(name: "stars", type: .int16, defaultValue: 3),
      ],
      extra: [EntityDescription(name: "Genre", attributes: [AttributeDescription(name: "name", type: .string)])])
    let v3 = try Self.model(
      movie: [
        AttributeDescription(name: "label", type: .string, renamingIdentifier: "name"),
        AttributeDescription(name: "year", type: .string), AttributeDescription(name: "seen", type: .bool, defaultValue: false),
        AttributeDescription(name: "stars", type: .double, defaultValue: 3),
      ],
      movieName: "Film", movieRenamedFrom: "Movie")
    let first = try ModelMigration(from: v1, to: v2)
    let second = try ModelMigration(from: v2, to: v3)
    let migration = try ModelMigration(composing: [first, second])
    #expect(migration.source == v1 && migration.destination == v3)
    #expect(migration.changes == first.changes + second.changes)
    #expect(migration.removedEntities.isEmpty, "Genre was added and removed after version 1: nothing to remove")
    let film = try #require(migration.entities.first)
    #expect(film.source == "Movie")
    let byName = Dictionary(uniqueKeysWithValues: film.attributes.map { ($0.attribute.name, $0) })
    #expect(byName["label"]?.source == "title" && byName["label"]?.convert(.string("Heat")) == .string("Heat"))
    #expect(byName["year"]?.source == "year" && byName["year"]?.convert(.int(1995)) == .string("1995"))
    #expect(byName["seen"]?.convert(.null) == .bool(false), "made required in version 2")
    #expect(byName["stars"]?.source == nil && byName["stars"]?.convert(.int(9)) == .double(3), "added in version 2, widened in 3")
    #expect(throws: StoreError.self) { try ModelMigration(composing: [second, first]) }
    #expect(throws: StoreError.self) { try ModelMigration(composing: []) }
  }
}
