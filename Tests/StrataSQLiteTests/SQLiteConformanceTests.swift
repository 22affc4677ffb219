import StrataConformance
import StrataSQLite
import Testing

let sqliteBackend = ConformanceBackend(
  factory: SQLiteStoreFactory(), capabilities: [.sharedLocation, .multiProcess, .migration, .inheritance], worker: "strata-worker"
) { $0.appending(path: "conformance.sqlite") }

@Test("SQLite conformance", arguments: Conformance.Area.allCases)
func sqliteConformance(_ area: Conformance.Area) async throws { try await Conformance.run(area, on: sqliteBackend) }
