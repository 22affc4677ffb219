import StrataConformance
import StrataMemory
import Testing

let memoryBackend = ConformanceBackend(
  factory: MemoryStoreFactory(), capabilities: [.migration, .inheritance, .hierarchyMigration])

@Test("Memory conformance", arguments: Conformance.Area.allCases)
func memoryConformance(_ area: Conformance.Area) async throws { try await Conformance.run(area, on: memoryBackend) }
