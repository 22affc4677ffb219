import LoggingStore
import StrataConformance
import StrataSQLite
import Testing

let loggingBackend = ConformanceBackend(
  factory: LoggingStoreFactory(wrapping: SQLiteStoreFactory(), log: .discard),
  capabilities: [.sharedLocation, .multiProcess, .migration, .inheritance, .hierarchyMigration], worker: "logging-store-worker"
) { $0.appending(path: "logged.sqlite") }

@Test("Logging store conformance", arguments: Conformance.cases)
func loggingConformance(_ check: Conformance.Case) async throws { try await Conformance.run(check, on: loggingBackend) }
