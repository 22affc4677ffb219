import Foundation
import StrataMemory
import StrataPostgres
import StrataStoreKit
import Testing

/// Version 1 of the conversions model: one attribute of each type that a migration can widen.
private func conversionsV1() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Sample",
      attributes: [
        AttributeDescription(name: "small", type: .int16),
        AttributeDescription(name: "medium", type: .int32, isOptional: true),
        AttributeDescription(name: "large", type: .int64),
        AttributeDescription(name: "real", type: .double, isOptional: true),
        AttributeDescription(name: "single", type: .float),
        AttributeDescription(name: "amount", type: .decimal),
        AttributeDescription(name: "flag", type: .bool),
        AttributeDescription(name: "moment", type: .date, isOptional: true),
        AttributeDescription(name: "token", type: .uuid),
        AttributeDescription(name: "link", type: .url),
        AttributeDescription(name: "count", type: .int16, isOptional: true),
        AttributeDescription(name: "label", type: .string, isIndexed: true),
      ])
  ])
}

/// Version 2: every attribute widened, one made required with a default, one added.
private func conversionsV2() throws -> ObjectModel {
  try ObjectModel(entities: [
    EntityDescription(
      name: "Sample",
      attributes: [
        AttributeDescription(name: "small", type: .int64),
        AttributeDescription(name: "medium", type: .double, isOptional: true),
        AttributeDescription(name: "large", type: .decimal),
        AttributeDescription(name: "real", type: .string, isOptional: true),
        AttributeDescription(name: "single", type: .double),
        AttributeDescription(name: "amount", type: .string),
        AttributeDescription(name: "flag", type: .string),
        AttributeDescription(name: "moment", type: .string, isOptional: true),
        AttributeDescription(name: "token", type: .string),
        AttributeDescription(name: "link", type: .string),
        AttributeDescription(name: "count", type: .int32, defaultValue: 7),
        AttributeDescription(name: "label", type: .string, isIndexed: true),
        AttributeDescription(name: "score", type: .double, defaultValue: 0.1),
      ])
  ])
}

private func samples() -> [ObjectChange] {
  let rows: [[Value]] = [
    [
      .int(-32768), .int(2_147_483_647), .int(9_007_199_254_740_993), .double(0.1), .double(1.5),
      .decimal(Decimal(string: "12.50") ?? 0), .bool(true), .date(Date(timeIntervalSinceReferenceDate: 86_400.5)),
      .uuid(UUID(uuid: (0xE6, 0x21, 0xE1, 0xF8, 0xC3, 0x6C, 0x49, 0x5A, 0x93, 0xFC, 0x0C, 0x24, 0x7A, 0x3E, 0x6E, 0x5F))),
      .url(URL(string: "https://example.com/a?b=c") ?? URL(fileURLWithPath: "/")), .null, .string("first \"quoted\" \\"),
    ],
    [
      .int(7), .null, .int(-1), .double(1e20), .double(-0.25), .decimal(Decimal(-3)), .bool(false), .null,
      .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))),
      .url(URL(fileURLWithPath: "/tmp/x y")), .int(3), .string("second, {braces}"),
    ],
    [
      .int(0), .int(-5), .int(0), .double(.infinity), .double(0), .decimal(Decimal(string: "0.001") ?? 0), .bool(true),
      .date(Date(timeIntervalSinceReferenceDate: -1_000_000.125)),
      .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
      .url(URL(string: "mailto:someone@example.com") ?? URL(fileURLWithPath: "/")), .int(-9), .string("NULL"),
    ],
  ]
  return rows.map { ObjectChange(objectID: .makeTemporary(entityName: "Sample"), attributes: $0, toOne: []) }
}

/// Every snapshot of `entity`, in key order.
private func all(_ store: any PersistentStore, _ entity: String) throws -> [Snapshot] {
  guard case .snapshots(let rows) = try store.fetch(FetchDescription(entityName: entity), generation: nil) else {
    return []
  }
  return rows.sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
}

/// The server's answer to `sql`, through `psql` (what a DBA sees).
private func psql(_ sql: String) throws -> String {
  let uri = try PostgresTestServer.uri()
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
  process.arguments = [uri, "-At", "-c", sql]
  let output = Pipe()
  process.standardOutput = output
  try process.run()
  process.waitUntilExit()
  return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
}

private func schemaName(_ location: URL) -> String { location.path.split(separator: "/").last.map(String.init) ?? "" }

@Suite("PostgreSQL migration")
struct PostgresMigrationTests {
  @Test func valuesAreConvertedExactlyAsTheMemoryStoreConvertsThem() throws {
    _ = try PostgresTestServer.uri()
    let location = PostgresTestServer.freshLocation()
    let store = try PostgresStore(url: location, model: try conversionsV1())
    let memory = MemoryStore(model: try conversionsV1())
    _ = try store.save(ChangeSet(inserted: samples()))
    _ = try memory.save(ChangeSet(inserted: samples()))
    let migration = try ModelMigration(from: try conversionsV1(), to: try conversionsV2())
    let migrated = try store.migrated(by: migration)
    defer { migrated.close() }
    let expected = try memory.migrated(by: migration)
    defer { expected.close() }
    let rows = try all(migrated, "Sample")
    let memoryRows = try all(expected, "Sample")
    #expect(rows.count == 3)
    for (row, memoryRow) in zip(rows, memoryRows) {
      #expect(row.attributes == memoryRow.attributes)
    }
    let schema = schemaName(location)
    let types = try psql(
      "SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_schema = '\(schema)' "
        + "AND table_name = 'Sample' ORDER BY column_name")
    for column in [
      "small bigint", "medium double precision", "large numeric", "real text", "single double precision", "amount text",
      "flag text", "moment text", "token text", "link text", "count integer", "label text", "score double precision",
    ] {
      #expect(types.contains(column + "\n"), "\(column) in \(types)")
    }
    #expect(
      try psql(
        "SELECT is_nullable FROM information_schema.columns WHERE table_schema = '\(schema)' "
          + "AND table_name = 'Sample' AND column_name = 'count'") == "NO\n")
    #expect(
      try psql("SELECT indexname FROM pg_indexes WHERE schemaname = '\(schema)' AND indexname LIKE 'Sample_idx%'")
        == "Sample_idx_label\n")
  }

  @Test func renamesKeepKeysAndRenameTablesColumnsConstraintsAndIndexes() throws {
    let location = PostgresTestServer.freshLocation()
    let v1 = try ObjectModel(entities: [
      EntityDescription(
        name: "Movie", attributes: [AttributeDescription(name: "title", type: .string)],
        uniquenessConstraints: [["title"]])
    ])
    let v2 = try ObjectModel(entities: [
      EntityDescription(
        name: "Film", attributes: [AttributeDescription(name: "name", type: .string, renamingIdentifier: "title")],
        uniquenessConstraints: [["name"]], renamingIdentifier: "Movie"),
      EntityDescription(name: "Series", attributes: [AttributeDescription(name: "title", type: .string)]),
    ])
    let store = try PostgresStore(url: location, model: v1)
    let saved = try store.save(
      ChangeSet(inserted: [
        ObjectChange(objectID: .makeTemporary(entityName: "Movie"), attributes: [.string("Heat")], toOne: [])
      ]))
    let key = saved.permanentIDs.values.first?.primaryKey
    let migrated = try store.migrated(by: try ModelMigration(from: v1, to: v2))
    defer { migrated.close() }
    #expect(try all(migrated, "Film").map(\.objectID.primaryKey) == [key])
    #expect(try migrated.count(FetchDescription(entityName: "Series")) == 0)
    let schema = schemaName(location)
    #expect(
      try psql(
        "SELECT conname FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
          + "WHERE n.nspname = '\(schema)' AND c.contype = 'u'") == "Film_unique_1\n")
    expectStoreErrorCode(.constraintConflict) {
      _ = try migrated.save(
        ChangeSet(inserted: [
          ObjectChange(objectID: .makeTemporary(entityName: "Film"), attributes: [.string("Heat")], toOne: [])
        ]))
    }
  }

  @Test func twoStoresMigratingAtOnceMigrateOnce() async throws {
    let location = PostgresTestServer.freshLocation()
    let options = StoreOptions(tracksHistory: true)
    let first = try PostgresStore(url: location, model: try conversionsV1(), options: options)
    _ = try first.save(ChangeSet(inserted: samples()))
    let second = try PostgresStore(url: location, model: try conversionsV1(), options: options)
    let migration = try ModelMigration(from: try conversionsV1(), to: try conversionsV2())
    async let a = Task.detached { try first.migrated(by: migration) }.value
    async let b = Task.detached { try second.migrated(by: migration) }.value
    let (one, other) = try await (a, b)
    defer {
      one.close()
      other.close()
    }
    let v2 = try conversionsV2()
    #expect(one.model == v2 && other.model == v2)
    guard case .transactions(let history) = try one.fetchHistory(HistoryRequest(after: nil)) else {
      Issue.record("expected transactions")
      return
    }
    #expect(history.filter { $0.author == MigrationStep.historyAuthor }.count == 1, "migrated once")
    #expect(try all(one, "Sample").map { $0.attributes[4] } == [.double(1.5), .double(-0.25), .double(0)])
  }

  @Test func aStoreAnotherProcessMigratedElsewhereIsNotTouched() throws {
    let location = PostgresTestServer.freshLocation()
    let v1 = try conversionsV1()
    let store = try PostgresStore(url: location, model: v1)
    _ = try store.save(ChangeSet(inserted: samples()))
    let stale = try PostgresStore(url: location, model: v1)
    let added = try ObjectModel(entities: [
      EntityDescription(
        name: "Sample",
        attributes: v1.entities[0].attributes + [AttributeDescription(name: "extra", type: .bool, defaultValue: true)])
    ])
    let migrated = try store.migrated(by: try ModelMigration(from: v1, to: added))
    defer { migrated.close() }
    let columns =
      "SELECT string_agg(column_name || ':' || data_type, ',' ORDER BY column_name) FROM information_schema.columns "
      + "WHERE table_schema = '\(schemaName(location))' AND table_name = 'Sample'"
    let before = try psql(columns)
    expectStoreErrorCode(.schemaMismatch) {
      _ = try stale.migrated(by: try ModelMigration(from: v1, to: try conversionsV2()))
    }
    #expect(try psql(columns) == before, "nothing changed")
    #expect(try all(migrated, "Sample").count == 3)
    stale.close()
  }

  @Test func storageChangesComeFromThePlanAlone() throws {
    let location = PostgresTestServer.freshLocation()
    let v1 = try conversionsV1()
    let store = try PostgresStore(url: location, model: v1)
    defer { store.close() }
    let changes = try store.storageChanges(for: try ModelMigration(from: v1, to: try conversionsV2()))
    #expect(changes == ["Sample": .rewritten])
    let attributes = v1.entities[0].attributes
    let renamed = try ObjectModel(entities: [
      EntityDescription(
        name: "Sample",
        attributes: attributes.dropLast() + [AttributeDescription(name: "title", type: .string, renamingIdentifier: "label")]),
      EntityDescription(name: "Other", attributes: [AttributeDescription(name: "name", type: .string)]),
    ])
    #expect(
      try store.storageChanges(for: try ModelMigration(from: v1, to: renamed)) == [
        "Sample": .alteredInPlace, "Other": .created,
      ])
    let ruled = try ObjectModel(entities: [EntityDescription(name: "Sample", attributes: attributes)])
    #expect(try store.storageChanges(for: try ModelMigration(from: v1, to: ruled)).values.allSatisfy { $0 == .unchanged })
    #expect(store.model == v1)
    #expect(try psql("SELECT count(*) FROM pg_tables WHERE schemaname = '\(schemaName(location))'") == "2\n")
  }

  @Test func theStoreAStageIsHandedWorksInsideTheTransactionOnly() throws {
    let location = PostgresTestServer.freshLocation()
    let v1 = try conversionsV1()
    let store = try PostgresStore(url: location, model: v1, options: StoreOptions(tracksHistory: true))
    _ = try store.save(ChangeSet(inserted: samples()))
    let kept = Locked<(any PersistentStore)?>(nil)
    let step = MigrationStep(
      try ModelMigration(from: v1, to: try conversionsV2()),
      didMigrate: { [store] stage in
        expectStoreErrorCode(.unsupported) { _ = try stage.fetchHistory(HistoryRequest(after: nil)) }
        expectStoreErrorCode(.unsupported) { _ = try stage.pinGeneration() }
        expectStoreErrorCode(.misuse) {
          _ = try store.save(
            ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Sample"), attributes: [], toOne: [])]))
        }
        let count = try stage.count(FetchDescription(entityName: "Sample"))
        #expect(count == 3)
        kept.withLock { $0 = stage }
      })
    let migrated = try store.migrated(along: [step], reporting: nil)
    defer { migrated.close() }
    expectStoreErrorCode(.misuse) { _ = try kept.withLock { $0 }?.count(FetchDescription(entityName: "Sample")) }
    expectStoreErrorCode(.misuse) { _ = try store.count(FetchDescription(entityName: "Sample")) }
    #expect(try migrated.count(FetchDescription(entityName: "Sample")) == 3)
  }
}

private func expectStoreErrorCode(_ code: StoreError.Code, _ body: () throws -> Void) {
  do {
    try body()
    Issue.record("expected a \(code) error")
  } catch let error as StoreError {
    #expect(error.code == code, "\(error.message)")
  } catch {
    Issue.record("unexpected error \(error)")
  }
}
