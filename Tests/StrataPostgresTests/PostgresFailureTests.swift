import Foundation
import StrataStoreKit
import Testing

@testable import StrataPostgres

@Suite("PostgreSQL failures")
struct PostgresFailureTests {
  private func store(_ name: String = "strata-failures-\(UUID().uuidString.prefix(8))") throws -> PostgresStore {
    _ = try PostgresTestServer.uri()
    let model = try ObjectModel(entities: [
      EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
    ])
    return try PostgresStore(
      url: PostgresTestServer.freshLocation(), model: model,
      configuration: PostgresStoreConfiguration(applicationName: name, retryLimit: 3))
  }

  private func note(_ text: String) -> ChangeSet {
    ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: [.string(text)], toOne: [])])
  }

  private func raise(_ condition: String) -> String {
    "DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '\(condition)'; END $$"
  }

  @Test func serializationFailuresAndDeadlocksAreRetriedThenReported() throws {
    let store = try store()
    defer { store.close() }
    store.faults.withLock { $0.beforeCommit = [raise("serialization_failure"), raise("deadlock_detected")] }
    _ = try store.save(note("retried twice"))
    #expect(try store.count(FetchDescription(entityName: "Note")) == 1)
    store.faults.withLock { $0.beforeCommit = Array(repeating: raise("serialization_failure"), count: 4) }
    do {
      _ = try store.save(note("never"))
      Issue.record("expected the fourth failure to be reported")
    } catch let error as StoreError {
      #expect(
        error.code == .io && error.message.contains("4 times") && error.message.contains("serialization failure"),
        "\(error.message)")
    }
    #expect(store.faults.withLock { $0.beforeCommit.isEmpty })
    #expect(try store.count(FetchDescription(entityName: "Note")) == 1)
  }

  @Test func droppedConnectionsAreReopenedByTheNextOperation() throws {
    let name = "strata-dropped-\(UUID().uuidString.prefix(8))"
    let store = try store(name)
    defer { store.close() }
    _ = try store.save(note("before"))
    let admin = try store.pool.target.connect(configuration: PostgresStoreConfiguration(applicationName: "strata-admin"))
    defer { admin.close() }
    let terminated = try admin.textQuery(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = \(quoteLiteral(name))")
    #expect(Int(terminated) ?? 0 >= 1)
    #expect(try store.count(FetchDescription(entityName: "Note")) == 1)
    _ = try admin.textQuery(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = \(quoteLiteral(name))")
    _ = try store.save(note("after"))
    #expect(try store.count(FetchDescription(entityName: "Note")) == 2)
  }

  @Test func aSaveWhoseConnectionDropsBeforeCommitSaysItWasNotCommitted() throws {
    let store = try store()
    defer { store.close() }
    store.faults.withLock { $0.terminateBeforeCommit = true }
    do {
      _ = try store.save(note("lost"))
      Issue.record("expected .io")
    } catch let error as StoreError {
      #expect(error.code == .io && error.message.contains("not committed"), "\(error.message)")
    }
    #expect(try store.count(FetchDescription(entityName: "Note")) == 0)
    _ = try store.save(note("next"))
    #expect(try store.count(FetchDescription(entityName: "Note")) == 1)
  }

  @Test func aSaveWhoseCommitReplyIsLostSaysItWasCommitted() throws {
    let store = try store()
    defer { store.close() }
    store.faults.withLock { $0.loseCommitReply = true }
    do {
      _ = try store.save(note("committed"))
      Issue.record("expected .io")
    } catch let error as StoreError {
      #expect(
        error.code == .io && error.message.contains("was committed") && !error.message.contains("not committed"),
        "\(error.message)")
    }
    #expect(try store.count(FetchDescription(entityName: "Note")) == 1)
  }

  @Test func aPreparedFaultWhoseTableChangedTypeRunsUnprepared() throws {
    _ = try PostgresTestServer.uri()
    let model = try ObjectModel(entities: [
      EntityDescription(name: "Note", attributes: [AttributeDescription(name: "size", type: .int32)])
    ])
    let store = try PostgresStore(
      url: PostgresTestServer.freshLocation(), model: model, configuration: PostgresStoreConfiguration(poolSize: 1))
    defer { store.close() }
    let temporary = ObjectID.makeTemporary(entityName: "Note")
    let saved = try store.save(ChangeSet(inserted: [ObjectChange(objectID: temporary, attributes: [.int(7)], toOne: [])]))
    let id = try #require(saved.permanentIDs[temporary])
    #expect(try store.snapshots(for: [id], generation: nil).map(\.attributes) == [[.int(7)]])
    let table = store.schema.qualify("Note")
    try store.read(generation: nil) { try $0.execute("ALTER TABLE \(table) ALTER COLUMN \"size\" TYPE bigint") }
    #expect(try store.snapshots(for: [id], generation: nil).map(\.attributes) == [[.int(7)]])
    #expect(try store.snapshots(for: [id], generation: nil).map(\.attributes) == [[.int(7)]])
  }

  @Test func aListenerTheServerDroppedIsReopenedAndHearsLaterCommits() async throws {
    _ = try PostgresTestServer.uri()
    let name = "strata-listener-\(UUID().uuidString.prefix(8))"
    let location = PostgresTestServer.freshLocation()
    let model = try ObjectModel(entities: [
      EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
    ])
    let watcher = try PostgresStore(
      url: location, model: model, options: StoreOptions(postsRemoteChangeNotifications: true),
      configuration: PostgresStoreConfiguration(applicationName: name))
    defer { watcher.close() }
    let writer = try PostgresStore(url: location, model: model)
    defer { writer.close() }
    let heard = Locked(0)
    let stream = watcher.changes()
    let listening = Task {
      for await change in stream where change.isRemote { heard.withLock { $0 += 1 } }
    }
    defer { listening.cancel() }
    /// Waits until `count` remote changes were heard; false when they do not come within 20 s (a bound on
    /// liveness, not a timing check).
    func waitFor(_ count: Int) async -> Bool {
      for _ in 0..<400 {
        if heard.withLock({ $0 }) >= count { return true }
        try? await Task.sleep(for: .milliseconds(50))
      }
      return false
    }
    _ = try writer.save(note("heard"))
    #expect(await waitFor(1))
    let admin = try writer.pool.target.connect(configuration: PostgresStoreConfiguration(applicationName: "strata-admin"))
    defer { admin.close() }
    let terminated = try admin.textQuery(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = \(quoteLiteral(name)) "
        + "AND query ILIKE 'LISTEN%'")
    #expect(terminated == "1")
    // The reopened listener announces a change (commits may have gone unheard), then hears new ones.
    #expect(await waitFor(2))
    _ = try writer.save(note("after"))
    #expect(await waitFor(3))
  }
}
