import StrataConformance
import StrataLMDB
import Testing

let lmdbBackend = ConformanceBackend(
  factory: LMDBStoreFactory(), capabilities: [.sharedLocation, .multiProcess, .migration, .inheritance], worker: "strata-worker"
) { $0.appending(path: "conformance.lmdb") }

@Test("LMDB conformance", arguments: Conformance.Area.allCases)
func lmdbConformance(_ area: Conformance.Area) async throws { try await Conformance.run(area, on: lmdbBackend) }
