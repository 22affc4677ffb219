import Foundation
import StrataStoreKit
import Testing

@testable import StrataPostgres

/// What an operator meets running stores on a shared server (issue 44): connections named as the URI
/// says, damaged schemas refused at open, errors that name the store with its schema.
@Suite("PostgreSQL for operators")
struct PostgresOperatorTests {
  static let model: ObjectModel = {
    do {
      return try ObjectModel(entities: [
        EntityDescription(
          name: "Note",
          attributes: [
            AttributeDescription(name: "text", type: .string), AttributeDescription(name: "rank", type: .int64),
          ])
      ])
    } catch {
      preconditionFailure("the test model is valid: \(error)")
    }
  }()

  /// A fresh location, with `items` added to its query.
  static func location(_ items: [URLQueryItem] = []) throws -> URL {
    _ = try PostgresTestServer.uri()
    let base = PostgresTestServer.freshLocation()
    var components = try #require(URLComponents(url: base, resolvingAgainstBaseURL: false))
    components.queryItems = (components.queryItems ?? []) + items
    return try #require(components.url)
  }

  /// A connection for looking at the server as an operator would (its own application name).
  static func admin() throws -> PostgresConnection {
    let target = try PostgresLocation(url: try #require(URL(string: try PostgresTestServer.uri())), defaultSchema: "public")
    return try target.connect(configuration: PostgresStoreConfiguration(applicationName: "strata-operator"))
  }

  static func sessions(named name: String, _ admin: PostgresConnection) throws -> Int {
    Int(try admin.textQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name = \(quoteLiteral(name))")) ?? -1
  }

  @Test func theURIsApplicationNameWinsOverTheConfiguredDefault() throws {
    let admin = try Self.admin()
    defer { admin.close() }
    let tag = UUID().uuidString.prefix(8).lowercased()
    let configured = "strata-default-\(tag)"
    let given = "worker-\(tag) on host 2"
    let named = try PostgresStore(
      url: try Self.location([URLQueryItem(name: "application_name", value: given)]), model: Self.model,
      configuration: PostgresStoreConfiguration(applicationName: configured))
    defer { named.close() }
    _ = try named.count(FetchDescription(entityName: "Note"))
    #expect(try Self.sessions(named: given, admin) >= 1, "the URI's application_name is what the server shows")
    #expect(try Self.sessions(named: configured, admin) == 0)
    // Without one in the URI, the configuration's name is the default.
    let unnamed = try PostgresStore(
      url: try Self.location(), model: Self.model, configuration: PostgresStoreConfiguration(applicationName: configured))
    defer { unnamed.close() }
    _ = try unnamed.count(FetchDescription(entityName: "Note"))
    #expect(try Self.sessions(named: configured, admin) >= 1)
  }

  @Test func aStoreUsedFromOneThreadAtATimeHoldsOneConnection() throws {
    let admin = try Self.admin()
    defer { admin.close() }
    let name = "strata-sequential-\(UUID().uuidString.prefix(8).lowercased())"
    let store = try PostgresStore(
      url: try Self.location(), model: Self.model, configuration: PostgresStoreConfiguration(applicationName: name))
    defer { store.close() }
    #expect(store.configuration.poolSize > 1)
    for _ in 0..<(2 * store.configuration.poolSize) { _ = try store.count(FetchDescription(entityName: "Note")) }
    #expect(try Self.sessions(named: name, admin) == 1, "sequential operations reuse the open connection")
  }

  /// Potatoes and their tastings, as TaterRater keeps them.
  static let tastingModel: ObjectModel = {
    do {
      return try ObjectModel(entities: [
        EntityDescription(
          name: "Potato",
          attributes: [
            AttributeDescription(name: "name", type: .string), AttributeDescription(name: "crowdRating", type: .double),
          ],
          relationships: [RelationshipDescription(name: "tastings", destination: "Tasting", inverse: "potato", isToMany: true)]),
        EntityDescription(
          name: "Tasting", attributes: [AttributeDescription(name: "notes", type: .string)],
          relationships: [RelationshipDescription(name: "potato", destination: "Potato", inverse: "tastings")]),
      ])
    } catch {
      preconditionFailure("the test model is valid: \(error)")
    }
  }()

  /// What a schema holds: its relations with their columns, and its metadata rows.
  static func contents(_ schema: String, _ admin: PostgresConnection) throws -> String {
    let literal = quoteLiteral(schema)
    let relations = try admin.textQuery(
      "SELECT coalesce(string_agg(c.relname || ':' || a.attname, ',' ORDER BY c.relname, a.attnum), '') FROM pg_class c "
        + "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
        + "AND NOT a.attisdropped WHERE n.nspname = \(literal)")
    let metadata = try admin.textQuery(
      "SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM \(quoteIdentifier(schema))._strata_metadata")
    return relations + "\n" + metadata
  }

  enum Damage: String, CaseIterable, CustomTestStringConvertible {
    case droppedTable, droppedColumn, renamedTable

    var sql: String {
      switch self {
      case .droppedTable: "DROP TABLE \"Tasting\""
      case .droppedColumn: "ALTER TABLE \"Potato\" DROP COLUMN \"crowdRating\""
      case .renamedTable: "ALTER TABLE \"Potato\" RENAME TO \"Potato_old\""
      }
    }

    /// What the error names.
    var missing: String {
      switch self {
      case .droppedTable: "the table \"Tasting\" is missing"
      case .droppedColumn: "the column \"Potato\".\"crowdRating\" is missing"
      case .renamedTable: "the table \"Potato\" is missing"
      }
    }

    var testDescription: String { rawValue }
  }

  @Test(arguments: Damage.allCases)
  func aDamagedStoreIsRefusedAtOpenNamingWhatIsMissing(_ damage: Damage) throws {
    let admin = try Self.admin()
    defer { admin.close() }
    let url = try Self.location()
    let schema = try PostgresLocation(url: url, defaultSchema: "strata").schema
    let created = try PostgresStore(url: url, model: Self.tastingModel)
    _ = try created.save(
      ChangeSet(inserted: [
        ObjectChange(
          objectID: .makeTemporary(entityName: "Potato"), attributes: [.string("Agria"), .double(4)], toOne: [])
      ]))
    created.close()
    _ = try admin.textQuery("SET search_path = \(quoteIdentifier(schema)); \(damage.sql); SELECT 1")
    let before = try Self.contents(schema, admin)
    // Opened with history on, so that an open that went on would add the history tables.
    for options in [StoreOptions(tracksHistory: true), StoreOptions(isReadOnly: true)] {
      do {
        let store = try PostgresStore(url: url, model: Self.tastingModel, options: options)
        store.close()
        Issue.record("the damaged store opened (\(damage))")
      } catch let error as StoreError {
        #expect(error.code == .corrupted, "\(error)")
        #expect(error.message.contains(damage.missing), "\(error.message)")
        #expect(error.message.contains("schema=\(schema)") && !error.message.contains("\n"), "\(error.message)")
        #expect(error.entity == (damage == .droppedTable ? "Tasting" : "Potato"))
        if damage == .droppedColumn { #expect(error.key == "crowdRating") }
      }
    }
    #expect(try Self.contents(schema, admin) == before, "nothing was written")
  }

  @Test func aLostConnectionIsOneLineNamingTheStoreWithItsSchema() throws {
    let url = try Self.location()
    let schema = try PostgresLocation(url: url, defaultSchema: "strata").schema
    let store = try PostgresStore(url: url, model: Self.model)
    defer { store.close() }
    store.faults.withLock { $0.terminateBeforeCommit = true }
    do {
      _ = try store.save(
        ChangeSet(inserted: [
          ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: [.string("lost"), .int(1)], toOne: [])
        ]))
      Issue.record("expected the lost connection to be reported")
    } catch let error as StoreError {
      #expect(error.code == .io && error.message.contains("was lost"), "\(error.message)")
      #expect(!error.message.contains("\t") && !error.message.contains("\n"), "one line: \(error.message.debugDescription)")
      #expect(error.message.contains("schema=\(schema)"), "\(error.message)")
    }
    // libpq's own multi-line, tab-indented message, as the server's end of a session gives it.
    let libpq = "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n"
    #expect(
      PostgresError(message: libpq, connectionLost: true).message
        == "server closed the connection unexpectedly This probably means the server terminated abnormally")
  }

  @Test func aSchemaOfOtherTablesIsRefusedInGoodEnglish() throws {
    let admin = try Self.admin()
    defer { admin.close() }
    let url = try Self.location()
    let schema = try PostgresLocation(url: url, defaultSchema: "strata").schema
    _ = try admin.textQuery(
      "CREATE SCHEMA \(quoteIdentifier(schema)); CREATE TABLE \(quoteIdentifier(schema)).notes (id int); SELECT 1")
    do {
      let store = try PostgresStore(url: url, model: Self.model)
      store.close()
      Issue.record("a schema of other tables opened as a store")
    } catch let error as StoreError {
      #expect(error.code == .corrupted, "\(error)")
      #expect(error.message.contains("the schema holds 1 table but no _strata_metadata"), "\(error.message)")
      #expect(error.message.contains("schema=\(schema)"), "\(error.message)")
    }
  }
}
