import Foundation
import Testing

/// A database of its own on the test server (`STRATA_POSTGRES_URI`): schemaless URIs name schemas by app, so
/// each test needs a database no other test writes to.
private func freshDatabase() throws -> String {
  guard let base = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URI"], !base.isEmpty,
    var components = URLComponents(string: base)
  else {
    Issue.record("no PostgreSQL test server: set STRATA_POSTGRES_URI (scripts/test does)")
    throw CocoaError(.featureUnsupported)
  }
  let name = "apps_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20)
  let created = try Executables.runTool("psql", [base, "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE \(name)"])
  #expect(created.status == 0, "\(created.stderr)")
  components.path = "/" + name
  return components.string ?? base
}

private func schemas(of uri: String) throws -> [String] {
  let result = try Executables.runTool(
    "psql", [uri, "-At", "-c", "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' ORDER BY 1"])
  return result.stdout.split(separator: "\n").map(String.init)
}

private func withSchema(_ uri: String, _ schema: String) -> String {
  uri + (uri.contains("?") ? "&" : "?") + "schema=" + schema
}

@Suite("A PostgreSQL URI without a schema")
struct PostgresDefaultSchemaTests {
  @Test func twoAppsGivenOneURIKeepTheirStoresApart() throws {
    let uri = try freshDatabase()
    let add = try faveFlicks(
      "add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--store", "postgres", "--path", uri)
    #expect(add.status == 0, "\(add.stderr)")
    let imported = try Executables.run("tater-rater", ["import", "--seed", "3", "--store", "postgres", "--path", uri])
    #expect(imported.status == 0, "\(imported.stderr)")
    let movies = try faveFlicks("list", "--json", "--store", "postgres", "--path", uri)
    #expect(movies.status == 0 && movies.stdout.contains("\"Heat\""), "\(movies.stderr)")
    let potatoes = try Executables.run("tater-rater", ["list", "--json", "--store", "postgres", "--path", uri])
    #expect(potatoes.status == 0 && potatoes.stdout.contains("\"Agria\""), "\(potatoes.stderr)")
    let names = try schemas(of: uri)
    #expect(names.contains("faveflicks") && names.contains("taterrater"), "\(names)")
    #expect(!names.contains("strata"), "\(names)")
  }

  @Test func aStoreInTheSchemaEveryAppSharedKeepsOpening() throws {
    let uri = try freshDatabase()
    let legacy = withSchema(uri, "strata")
    let add = try faveFlicks(
      "add", "--title", "Heat", "--genre", "Crime", "--release-date", "1995-12-15", "--store", "postgres", "--path", legacy)
    #expect(add.status == 0, "\(add.stderr)")
    let list = try faveFlicks("list", "--json", "--store", "postgres", "--path", uri)
    #expect(list.status == 0 && list.stdout.contains("\"Heat\""), "\(list.stdout)\(list.stderr)")
    #expect(!(try schemas(of: uri)).contains("faveflicks"))

    let other = try Executables.run("tater-rater", ["list", "--store", "postgres", "--path", uri])
    #expect(other.status == 0, "\(other.stderr)")
    let mixedUp = try Executables.run("tater-rater", ["rate", "Agria", "3", "--store", "postgres", "--path", legacy])
    #expect(mixedUp.status != 0)
    #expect(mixedUp.stderr.contains("another app's model") && mixedUp.stderr.contains("Movie"), "\(mixedUp.stderr)")
    #expect(!mixedUp.stderr.contains("newer release"), "\(mixedUp.stderr)")
  }
}
