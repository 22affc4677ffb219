import Foundation
import Strata
import StrataStoreKit
import Testing

/// The models of the migration area, written out as values: version 1, and what later versions change.
enum MigrationModels {
  static let title = AttributeDescription(name: "title", type: .string)
  static let year = AttributeDescription(name: "year", type: .int16)
  static let votes = AttributeDescription(name: "votes", type: .int32, isOptional: true)
  static let seen = AttributeDescription(name: "seen", type: .bool)
  static let note = AttributeDescription(name: "note", type: .string, isOptional: true)
  static let lastModified = AttributeDescription(name: "lastModified", type: .date, isOptional: true)
  static let director = RelationshipDescription(name: "director", destination: "Director", inverse: "movies")
  static let movies = RelationshipDescription(name: "movies", destination: "Movie", inverse: "director", isToMany: true)
  static let name = AttributeDescription(name: "name", type: .string)

  static func model(
    movie: [AttributeDescription] = [title, year, votes, seen, note, lastModified], movieName: String = "Movie",
    movieRenamedFrom: String? = nil, movieRelationships: [RelationshipDescription] = [director],
    directorRelationships: [RelationshipDescription] = [movies], movieConstraints: [[String]] = [],
    extra: [EntityDescription] = [EntityDescription(name: "Genre", attributes: [name])]
  ) throws -> ObjectModel {
    try ObjectModel(
      entities: [
        EntityDescription(
          name: movieName, attributes: movie, relationships: movieRelationships, uniquenessConstraints: movieConstraints,
          renamingIdentifier: movieRenamedFrom),
        EntityDescription(name: "Director", attributes: [name], relationships: directorRelationships),
      ] + extra)
  }
}

extension Conformance {
  /// A store of the migration area's version 1 at a fresh location, holding Heat (1995, 10 votes, seen,
  /// directed by Mann), Ronin (1998, no votes, unseen, directed by Frankenheimer), Thief (1981, seen, no
  /// director) and a genre.
  private static func migrationStore(
    _ backend: ConformanceBackend, options: StoreOptions = StoreOptions(tracksHistory: true)
  )
    throws -> (store: any PersistentStore, url: URL?, ids: [String: ObjectID])
  {
    let url = try backend.makeLocation()
    let store = try backend.factory.openStore(at: url, model: try MigrationModels.model(), options: options)
    let mann = ObjectID.makeTemporary(entityName: "Director")
    let frankenheimer = ObjectID.makeTemporary(entityName: "Director")
    let date = Date(timeIntervalSinceReferenceDate: 86_400.5)
    func movie(_ title: String, _ year: Int64, _ votes: Value, _ seen: Bool, _ director: ObjectID?) -> ObjectChange {
      ObjectChange(
        objectID: .makeTemporary(entityName: "Movie"),
        attributes: [.string(title), .int(year), votes, .bool(seen), .null, .date(date)], toOne: [director])
    }
    let changes = ChangeSet(inserted: [
      ObjectChange(objectID: mann, attributes: [.string("Michael Mann")], toOne: []),
      ObjectChange(objectID: frankenheimer, attributes: [.string("John Frankenheimer")], toOne: []),
      movie("Heat", 1995, .int(10), true, mann), movie("Ronin", 1998, .null, false, frankenheimer),
      movie("Thief", 1981, .null, true, nil),
      ObjectChange(objectID: .makeTemporary(entityName: "Genre"), attributes: [.string("Crime")], toOne: []),
    ])
    let result = try store.save(changes)
    var ids: [String: ObjectID] = [:]
    for (temporary, permanent) in result.permanentIDs {
      guard let key = changes.inserted.firstIndex(where: { $0.objectID == temporary }) else { continue }
      if case .string(let label) = changes.inserted[key].attributes[0] { ids[label] = permanent }
    }
    return (store, url, ids)
  }

  /// The snapshots of `entity`, by their first attribute.
  static func rows(_ store: any PersistentStore, _ entity: String) throws -> [String: Snapshot] {
    var rows: [String: Snapshot] = [:]
    guard case .snapshots(let snapshots) = try store.fetch(FetchDescription(entityName: entity), generation: nil) else {
      Issue.record("expected snapshots of \(entity)")
      return rows
    }
    for snapshot in snapshots {
      if case .string(let label) = snapshot.attributes.first { rows[label] = snapshot }
    }
    return rows
  }

  static func attributesAndEntitiesMigrate(_ backend: ConformanceBackend) throws {
    let (store, _, ids) = try migrationStore(backend)
    let token = try store.currentHistoryToken()
    let v2 = try MigrationModels.model(
      movie: [
        MigrationModels.title,
        AttributeDescription(name: "year", type: .int64),  // widened
        AttributeDescription(name: "votes", type: .double, isOptional: true),  // widened
        AttributeDescription(name: "seen", type: .string),  // any scalar to string
        AttributeDescription(name: "updatedAt", type: .date, isOptional: true, renamingIdentifier: "lastModified"),
        AttributeDescription(name: "rating", type: .int16, defaultValue: 3),  // added with a default
        AttributeDescription(name: "tagline", type: .string, isOptional: true),  // added, optional
      ],  // note removed
      movieName: "Film", movieRenamedFrom: "Movie",
      movieRelationships: [RelationshipDescription(name: "director", destination: "Director", inverse: "movies")],
      directorRelationships: [RelationshipDescription(name: "movies", destination: "Film", inverse: "director", isToMany: true)],
      extra: [EntityDescription(name: "Studio", attributes: [MigrationModels.name])])  // Genre removed, Studio added
    let migration = try ModelMigration(from: store.model, to: v2)
    let migrated = try store.migrated(by: migration)
    defer { migrated.close() }
    #expect(migrated.model == v2)
    #expect(migrated.identifier == store.identifier)
    let films = try rows(migrated, "Film")
    #expect(films.keys.sorted() == ["Heat", "Ronin", "Thief"])
    let heat = try #require(films["Heat"])
    let date = Date(timeIntervalSinceReferenceDate: 86_400.5)
    #expect(heat.attributes == [.string("Heat"), .int(1995), .double(10), .string("true"), .date(date), .int(3), .null])
    #expect(films["Ronin"]?.attributes[2] == .null && films["Ronin"]?.attributes[3] == .string("false"))
    #expect(heat.objectID.primaryKey == ids["Heat"]?.primaryKey && heat.objectID.entityName == "Film")
    let mann = try #require(ids["Michael Mann"])
    #expect(
      heat.toOne == [ObjectID(entityName: "Director", storeIdentifier: store.identifier, primaryKey: mann.primaryKey ?? -1)])
    #expect(try migrated.relatedObjectIDs(of: mann, relationship: "movies", generation: nil) == [heat.objectID])
    #expect(try migrated.count(FetchDescription(entityName: "Studio")) == 0)
    #expect(try migrated.count(FetchDescription(entityName: "Film", predicate: try QueryPredicate(format: "rating == 3"))) == 3)
    if token != nil {
      // History is kept (tokens taken before stay valid), and the migration is one transaction after them.
      guard case .transactions(let later) = try migrated.fetchHistory(HistoryRequest(after: token.map { .token($0) })) else {
        Issue.record("expected transactions")
        return
      }
      #expect(later.map(\.author) == [MigrationStep.historyAuthor])
      #expect(later.first?.changes == [], "an inferred migration changes no object in history")
      #expect(try migrated.currentHistoryToken() == later.first?.token)
    }
    expectStoreError(.misuse) { try store.fetch(FetchDescription(entityName: "Movie"), generation: nil) }

    // New objects continue after the migrated keys, and the new attribute's default applies.
    let saved = try migrated.save(
      ChangeSet(inserted: [
        ObjectChange(
          objectID: .makeTemporary(entityName: "Film"),
          attributes: [.string("Collateral"), .int(2004), .null, .string("no"), .null, .int(5), .null], toOne: [nil])
      ]))
    let newKey = try #require(saved.permanentIDs.values.first?.primaryKey)
    #expect(newKey > (films.values.compactMap(\.objectID.primaryKey).max() ?? 0))
  }

  /// Movie renamed to Film, and a new entity named Movie: both are fed from the old Movie (a new entity
  /// matches the old one of its name, as Core Data's inferred mapping matches by name or renaming
  /// identifier). Film keeps the keys and relationships; Movie holds a copy of the attributes it keeps.
  static func oneEntityFeedsTwo(_ backend: ConformanceBackend) throws {
    let (store, _, ids) = try migrationStore(backend)
    let v2 = try MigrationModels.model(
      movieName: "Film", movieRenamedFrom: "Movie",
      movieRelationships: [RelationshipDescription(name: "director", destination: "Director", inverse: "movies")],
      directorRelationships: [RelationshipDescription(name: "movies", destination: "Film", inverse: "director", isToMany: true)],
      extra: [
        EntityDescription(name: "Genre", attributes: [MigrationModels.name]),
        EntityDescription(name: "Movie", attributes: [MigrationModels.title, MigrationModels.year]),
      ])
    let migrated = try store.migrated(by: try ModelMigration(from: store.model, to: v2))
    defer { migrated.close() }
    #expect(migrated.model == v2)
    let films = try rows(migrated, "Film")
    #expect(films.keys.sorted() == ["Heat", "Ronin", "Thief"])
    let heat = try #require(films["Heat"])
    #expect(heat.objectID.primaryKey == ids["Heat"]?.primaryKey)
    let mann = try #require(ids["Michael Mann"])
    #expect(try migrated.relatedObjectIDs(of: mann, relationship: "movies", generation: nil) == [heat.objectID])
    let movies = try rows(migrated, "Movie")
    #expect(
      movies.mapValues(\.attributes) == [
        "Heat": [.string("Heat"), .int(1995)], "Ronin": [.string("Ronin"), .int(1998)], "Thief": [.string("Thief"), .int(1981)],
      ])
    #expect(try migrated.count(FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "year < 1990"))) == 1)
    // Both tables go on: new objects of each are saved.
    _ = try migrated.save(
      ChangeSet(inserted: [
        ObjectChange(objectID: .makeTemporary(entityName: "Movie"), attributes: [.string("Alien"), .int(1979)], toOne: []),
        ObjectChange(
          objectID: .makeTemporary(entityName: "Film"),
          attributes: [.string("Collateral"), .int(2004), .null, .bool(true), .null, .null], toOne: [mann]),
      ]))
    #expect(try migrated.count(FetchDescription(entityName: "Movie")) == 4)
    #expect(try migrated.relatedObjectIDs(of: mann, relationship: "movies", generation: nil).count == 2)
  }

  static func relationshipsMigrate(_ backend: ConformanceBackend) throws {
    let (store, _, ids) = try migrationStore(backend)
    // Movie.director becomes to-many (many-to-many with Director.movies) and is renamed; the delete rule
    // of Director.movies changes.
    let v2 = try MigrationModels.model(
      movieRelationships: [
        RelationshipDescription(
          name: "directors", destination: "Director", inverse: "movies", isToMany: true, renamingIdentifier: "director")
      ],
      directorRelationships: [
        RelationshipDescription(name: "movies", destination: "Movie", inverse: "directors", isToMany: true, deleteRule: .cascade)
      ])
    let migrated = try store.migrated(by: try ModelMigration(from: store.model, to: v2))
    defer { migrated.close() }
    let heat = try #require(ids["Heat"])
    let thief = try #require(ids["Thief"])
    let mann = try #require(ids["Michael Mann"])
    #expect(try migrated.relatedObjectIDs(of: heat, relationship: "directors", generation: nil) == [mann])
    #expect(try migrated.relatedObjectIDs(of: thief, relationship: "directors", generation: nil) == [])
    #expect(try migrated.relatedObjectIDs(of: mann, relationship: "movies", generation: nil) == [heat])
    let matching = try migrated.count(
      FetchDescription(entityName: "Movie", predicate: try QueryPredicate(format: "ANY directors.name BEGINSWITH 'John'")))
    #expect(matching == 1)
  }

  static func aClashingConstraintChangesNothing(_ backend: ConformanceBackend) throws {
    let (store, url, _) = try migrationStore(backend)
    // Two movies share seen == true: a uniqueness constraint on seen cannot be added.
    let clashing = try MigrationModels.model(movieConstraints: [["seen"]])
    let error = expectStoreError(.constraintConflict) {
      try store.migrated(by: try ModelMigration(from: store.model, to: clashing))
    }
    #expect(error?.conflicts.first?.keys == ["seen"])
    #expect(error?.conflicts.first?.values == [.bool(true)], "\(error?.message ?? "")")
    // The store is as it was, still open with its model.
    #expect(try rows(store, "Movie").keys.sorted() == ["Heat", "Ronin", "Thief"])
    #expect(store.model == (try MigrationModels.model()))
    store.close()
    if let url {
      let reopened = try backend.factory.openStore(at: url, model: try MigrationModels.model(), options: StoreOptions())
      #expect(try rows(reopened, "Movie").count == 3)
      reopened.close()
    }

    // A constraint the values satisfy is added, and holds from then on.
    let (other, _, _) = try migrationStore(backend)
    let unique = try MigrationModels.model(movieConstraints: [["title"]])
    let migrated = try other.migrated(by: try ModelMigration(from: other.model, to: unique))
    defer { migrated.close() }
    expectStoreError(.constraintConflict) {
      try migrated.save(
        ChangeSet(inserted: [
          ObjectChange(
            objectID: .makeTemporary(entityName: "Movie"),
            attributes: [.string("Heat"), .int(2024), .null, .bool(false), .null, .null], toOne: [nil])
        ]))
    }
  }

  static func threeVersionsInOrder(_ backend: ConformanceBackend) throws {
    let (store, _, _) = try migrationStore(backend)
    let v2 = try MigrationModels.model(movie: [
      MigrationModels.title, MigrationModels.year, MigrationModels.votes, MigrationModels.seen, MigrationModels.note,
      AttributeDescription(name: "updatedAt", type: .date, isOptional: true, renamingIdentifier: "lastModified"),
    ])
    let v3 = try MigrationModels.model(movie: [
      MigrationModels.title, AttributeDescription(name: "year", type: .int32),
      AttributeDescription(name: "votes", type: .int64, defaultValue: 0), MigrationModels.seen,
      AttributeDescription(name: "modified", type: .date, isOptional: true, renamingIdentifier: "updatedAt"),
    ])
    let second = try store.migrated(by: try ModelMigration(from: store.model, to: v2))
    let third = try second.migrated(by: try ModelMigration(from: v2, to: v3))
    defer { third.close() }
    let expected: [Value] = [
      .string("Ronin"), .int(1998), .int(0), .bool(false), .date(Date(timeIntervalSinceReferenceDate: 86_400.5)),
    ]
    #expect(try rows(third, "Movie")["Ronin"].map { Array($0.attributes) } == expected)

    // The same three versions as one migration, in one transaction.
    let (other, _, _) = try migrationStore(backend)
    let plan = try MigrationPlan([
      ModelVersion("1", try MigrationModels.model()), ModelVersion("2", v2), ModelVersion("3", v3),
    ])
    let composed = try #require(try plan.migration(from: other.model))
    let once = try other.migrated(by: composed)
    defer { once.close() }
    #expect(try rows(once, "Movie")["Ronin"].map { Array($0.attributes) } == expected)
    #expect(once.model.versionName == "3")
  }

  static func containersMigrateStoresOnOpen(_ backend: ConformanceBackend) throws {
    let (store, location, _) = try migrationStore(backend)
    store.close()
    let url = try #require(location)
    let registry = StoreRegistry([backend.factory])
    let v2 = try MigrationModels.model(movie: [
      MigrationModels.title, MigrationModels.year, MigrationModels.votes, MigrationModels.seen,
      AttributeDescription(name: "rating", type: .int16, defaultValue: 0),
    ])

    // Turned off, or not inferable: the store is refused and stays as it was.
    let strict = PersistentContainer(name: "Migration", model: v2, registry: registry)
    strict.storeDescriptions = [
      StoreDescription(type: backend.factory.storeType, url: url, options: StoreOptions(migratesAutomatically: false))
    ]
    expectStoreError(.schemaMismatch) { try strict.loadPersistentStores() }
    let narrowing = try MigrationModels.model(movie: [
      MigrationModels.title, AttributeDescription(name: "year", type: .int16),
      AttributeDescription(name: "votes", type: .int16, isOptional: true),
    ])
    let refused = PersistentContainer(name: "Migration", model: narrowing, registry: registry)
    refused.storeDescriptions = [StoreDescription(type: backend.factory.storeType, url: url)]
    let error = expectStoreError(.schemaMismatch) { try refused.loadPersistentStores() }
    #expect(error?.message.contains("Movie.votes: type changed from int32 to int16") == true, "\(error?.message ?? "")")
    let untouched = try backend.factory.openStore(at: url, model: nil, options: StoreOptions(isReadOnly: true))
    #expect(untouched.model == (try MigrationModels.model()))
    untouched.close()

    // By default a container migrates the store it opens.
    let container = PersistentContainer(name: "Migration", model: v2, registry: registry)
    container.storeDescriptions = [StoreDescription(type: backend.factory.storeType, url: url)]
    try container.loadPersistentStores()
    defer { container.close() }
    let context = container.viewContext
    let movies = try context.fetch(FetchRequest<ManagedObject>(entityName: "Movie", sortDescriptors: [QuerySort("title")]))
    #expect(movies.map { $0.value(forKey: "title") as? String } == ["Heat", "Ronin", "Thief"])
    #expect(movies.map { $0.value(forKey: "rating") as? Int64 } == [0, 0, 0])
    let reopened = try backend.factory.openStore(at: url, model: v2, options: StoreOptions())
    #expect(reopened.model == v2)
    reopened.close()
  }

  /// A derived attribute added (an uppercased title on Movie, a movie count on Director) and a derivation
  /// changed: every object's value is computed in the migration, the saves recorded in its one history
  /// transaction.
  static func derivedAttributesAreComputed(_ backend: ConformanceBackend) throws {
    let (store, _, ids) = try migrationStore(backend)
    let token = try store.currentHistoryToken()
    let count = AttributeDescription(name: "movieCount", type: .int64, derivation: "movies.@count")
    let added = try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [
          MigrationModels.title, MigrationModels.year, MigrationModels.votes, MigrationModels.seen, MigrationModels.note,
          MigrationModels.lastModified, AttributeDescription(name: "shout", type: .string, derivation: "uppercase:(title)"),
        ],
        relationships: [MigrationModels.director]),
      EntityDescription(name: "Director", attributes: [MigrationModels.name, count], relationships: [MigrationModels.movies]),
      EntityDescription(name: "Genre", attributes: [MigrationModels.name]),
    ])
    let migration = try ModelMigration(from: store.model, to: added)
    #expect(Set(migration.entitiesRecomputingDerivedAttributes) == ["Movie", "Director"])
    let migrated = try store.migrated(by: migration)
    let movies = try rows(migrated, "Movie")
    #expect(
      movies.mapValues { $0.attributes[6] } == ["Heat": .string("HEAT"), "Ronin": .string("RONIN"), "Thief": .string("THIEF")])
    let directors = try rows(migrated, "Director")
    #expect(directors["Michael Mann"]?.attributes[1] == .int(1) && directors["John Frankenheimer"]?.attributes[1] == .int(1))
    #expect(movies["Heat"]?.objectID.primaryKey == ids["Heat"]?.primaryKey)
    if token != nil {
      guard case .transactions(let later) = try migrated.fetchHistory(HistoryRequest(after: token.map { .token($0) })) else {
        Issue.record("expected transactions")
        return
      }
      #expect(later.map(\.author) == [MigrationStep.historyAuthor], "the computation is part of the one migration transaction")
      #expect(Set(later.first?.changes.map(\.objectID.entityName) ?? []) == ["Movie", "Director"])
    }

    // A derivation changed is computed again; one removed keeps the values.
    let changed = try ObjectModel(entities: [
      EntityDescription(
        name: "Movie",
        attributes: [
          MigrationModels.title, MigrationModels.year, MigrationModels.votes, MigrationModels.seen, MigrationModels.note,
          MigrationModels.lastModified, AttributeDescription(name: "shout", type: .string, derivation: "lowercase:(title)"),
        ],
        relationships: [MigrationModels.director]),
      EntityDescription(
        name: "Director", attributes: [MigrationModels.name, AttributeDescription(name: "movieCount", type: .int64)],
        relationships: [MigrationModels.movies]),
      EntityDescription(name: "Genre", attributes: [MigrationModels.name]),
    ])
    let again = try migrated.migrated(by: try ModelMigration(from: migrated.model, to: changed))
    defer { again.close() }
    #expect(try rows(again, "Movie")["Heat"]?.attributes[6] == .string("heat"))
    #expect(try rows(again, "Director")["Michael Mann"]?.attributes[1] == .int(1), "a derivation removed keeps its values")
  }
}
