import Foundation
import StrataPostgres
import StrataStoreKit
import Testing

private let model: ObjectModel? = try? ObjectModel(entities: [
  EntityDescription(
    name: "Movie",
    attributes: [
      AttributeDescription(name: "title", type: .string),
      AttributeDescription(name: "year", type: .int64, isOptional: true),
      AttributeDescription(name: "released", type: .date, isOptional: true),
    ],
    uniquenessConstraints: [["title"]])
])

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

private func expectError(_ code: StoreError.Code, containing text: String, _ body: () throws -> Void) {
  do {
    try body()
    Issue.record("expected a \(code) error containing '\(text)'")
  } catch let error as StoreError {
    #expect(error.code == code, "\(error.message)")
    #expect(error.message.contains(text), "\(error.message)")
    #expect(!error.message.contains("\n"), "one line: \(error.message)")
  } catch {
    Issue.record("unexpected error \(error)")
  }
}

@Suite("PostgreSQL store")
struct PostgresStoreTests {
  @Test func badLocationsAreOneLineErrorsNamingTheCause() throws {
    let uri = try PostgresTestServer.uri()
    let factory = PostgresStoreFactory()
    expectError(.io, containing: "malformed PostgreSQL URI") {
      _ = try factory.openStore(
        at: URL(string: "postgresql:///strata_test?no_such_option=1"), model: model, options: StoreOptions())
    }
    expectError(.io, containing: "is the server running?") {
      _ = try factory.openStore(
        at: URL(string: "postgresql:///strata_test?host=/nonexistent-socket-dir"), model: model, options: StoreOptions())
    }
    let missingDatabase = uri.replacingOccurrences(of: "/strata_test", with: "/no_such_database")
    expectError(.notFound, containing: "no_such_database") {
      _ = try factory.openStore(at: URL(string: missingDatabase), model: model, options: StoreOptions())
    }
    let wrongUser = uri.replacingOccurrences(of: "user=postgres", with: "user=nobody_here")
    expectError(.io, containing: "authentication failed") {
      _ = try factory.openStore(at: URL(string: wrongUser), model: model, options: StoreOptions())
    }
  }

  @Test func aSchemaOfForeignTablesIsRefusedUnchanged() throws {
    let location = PostgresTestServer.freshLocation()
    let schema = location.path.split(separator: "/").last.map(String.init) ?? ""
    _ = try psql("CREATE SCHEMA \(schema); CREATE TABLE \(schema).accounts (id int)")
    expectError(.corrupted, containing: "not a Strata store") {
      _ = try PostgresStoreFactory().openStore(at: location, model: model, options: StoreOptions())
    }
    #expect(try psql("SELECT count(*) FROM pg_tables WHERE schemaname = '\(schema)'") == "1\n")
  }

  @Test func openingWithoutAModelCreatesNothing() throws {
    let location = PostgresTestServer.freshLocation()
    let schema = location.path.split(separator: "/").last.map(String.init) ?? ""
    expectError(.notFound, containing: "no store") {
      _ = try PostgresStoreFactory().openStore(at: location, model: nil, options: StoreOptions())
    }
    #expect(try psql("SELECT count(*) FROM pg_namespace WHERE nspname = '\(schema)'") == "0\n")
  }

  @Test func psqlShowsTablesWithRealTypes() throws {
    let model = try #require(model)
    let location = PostgresTestServer.freshLocation()
    let schema = location.path.split(separator: "/").last.map(String.init) ?? ""
    let store = try PostgresStoreFactory().openStore(at: location, model: model, options: StoreOptions())
    defer { store.close() }
    let movie = ObjectID.makeTemporary(entityName: "Movie")
    _ = try store.save(ChangeSet(inserted: [ObjectChange(objectID: movie, attributes: ["Heat", .int(1995), .null], toOne: [])]))
    let columns = try psql(
      "SELECT column_name || ':' || data_type FROM information_schema.columns "
        + "WHERE table_schema = '\(schema)' AND table_name = 'Movie' ORDER BY ordinal_position")
    #expect(columns == "_pk:bigint\n_version:bigint\ntitle:text\nyear:bigint\nreleased:double precision\n")
    #expect(try psql("SELECT title || ' ' || year FROM \(schema).\"Movie\"") == "Heat 1995\n")
    let constraint = try psql(
      "SELECT contype FROM pg_constraint WHERE conname = 'Movie_unique_1' AND connamespace = '\(schema)'::regnamespace")
    #expect(constraint == "u\n")
  }

  @Test func aDifferentModelIsASchemaMismatch() throws {
    _ = try PostgresTestServer.uri()
    let model = try #require(model)
    let location = PostgresTestServer.freshLocation()
    try PostgresStoreFactory().openStore(at: location, model: model, options: StoreOptions()).close()
    let other = try ObjectModel(entities: [
      EntityDescription(name: "Movie", attributes: [AttributeDescription(name: "title", type: .string)])
    ])
    expectError(.schemaMismatch, containing: "Movie") {
      _ = try PostgresStoreFactory().openStore(at: location, model: other, options: StoreOptions())
    }
  }
}
