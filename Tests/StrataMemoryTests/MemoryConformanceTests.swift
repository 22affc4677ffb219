import StrataConformance
import StrataMemory
import Testing

@Suite("Memory conformance")
struct MemoryConformanceTests {
  let backend = ConformanceStore(factory: MemoryStoreFactory())

  @Test func crud() async throws { try await Conformance.crud(backend) }
  @Test func relationships() async throws { try await Conformance.relationships(backend) }
  @Test func deleteRules() async throws { try await Conformance.deleteRules(backend) }
  @Test func uniqueness() async throws { try await Conformance.uniqueness(backend) }
  @Test func fetching() async throws { try await Conformance.fetching(backend) }
  @Test func concurrency() async throws { try await Conformance.concurrency(backend) }
  @Test func errors() async throws { try await Conformance.errors(backend) }
  @Test func expressions() async throws { try await Conformance.expressions(backend) }
  @Test func predicates() async throws { try await Conformance.predicates(backend) }
  @Test func dictionaries() async throws { try await Conformance.dictionaries(backend) }
  @Test func batch() async throws { try await Conformance.batch(backend) }
  @Test func faulting() async throws { try await Conformance.faulting(backend) }
  @Test func boundedWalk() async throws { try await Conformance.boundedWalk(backend) }
  @Test func identityMap() async throws { try await Conformance.identityMap(backend) }
  @Test func pendingChanges() async throws { try await Conformance.pendingChanges(backend) }
  @Test func asynchronousFetch() async throws { try await Conformance.asynchronousFetch(backend) }
  @Test func mergePolicies() async throws { try await Conformance.mergePolicies(backend) }
  @Test func transientAttributes() async throws { try await Conformance.transientAttributes(backend) }
  @Test func lifecycle() async throws { try await Conformance.lifecycle(backend) }
  @Test func undo() async throws { try await Conformance.undo(backend) }
  @Test func derivedAttributes() async throws { try await Conformance.derivedAttributes(backend) }
  @Test func fetchedResults() async throws { try await Conformance.fetchedResults(backend) }
  @Test func fetchedResultsUnderLoad() async throws { try await Conformance.fetchedResultsUnderLoad(backend) }
  @Test func remoteChanges() async throws { try await Conformance.remoteChanges(backend) }
  @Test func history() async throws { try await Conformance.history(backend) }
  @Test func historyNotifications() async throws { try await Conformance.historyNotifications(backend) }
  @Test func childContexts() async throws { try await Conformance.childContexts(backend) }
  @Test func batchInsert() async throws { try await Conformance.batchInsert(backend) }
  @Test func queryGenerations() async throws { try await Conformance.queryGenerations(backend) }
}
