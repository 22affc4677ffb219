import StrataConformance
import StrataMemory
import Testing

let memoryBackend = ConformanceBackend(
  factory: MemoryStoreFactory(), capabilities: [.migration, .inheritance, .hierarchyMigration])

@Test("Memory conformance", arguments: Conformance.cases)
func memoryConformance(_ check: Conformance.Case) async throws { try await Conformance.run(check, on: memoryBackend) }
