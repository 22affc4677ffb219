import Foundation
import StrataConformance
import StrataPostgres
import Testing

/// Each store of the suite in a schema of its own, named after the suite's fresh directory.
let postgresBackend = ConformanceBackend(
  factory: PostgresStoreFactory(), capabilities: [.sharedLocation, .multiProcess, .migration, .inheritance, .hierarchyMigration],
  worker: "postgres-worker"
) { directory in PostgresTestServer.freshLocation(directory.lastPathComponent) }

@Test("PostgreSQL conformance", arguments: Conformance.cases)
func postgresConformance(_ check: Conformance.Case) async throws {
  _ = try PostgresTestServer.uri()
  try await Conformance.run(check, on: postgresBackend)
}
