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
}
