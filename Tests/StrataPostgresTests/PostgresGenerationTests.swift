import Foundation
import StrataStoreKit
import Testing

@testable import StrataPostgres

@Suite("PostgreSQL query generations")
struct PostgresGenerationTests {
  private func model() throws -> ObjectModel {
    try ObjectModel(entities: [EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])])
  }

  private func note(_ text: String) -> ObjectChange {
    ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: [.string(text)], toOne: [])
  }

  @Test func twoReadersOfOneGenerationOnTwoConnectionsSeeOneStateWhileAThirdCommits() throws {
    _ = try PostgresTestServer.uri()
    let location = PostgresTestServer.freshLocation()
    let store = try PostgresStore(url: location, model: try model())
    defer { store.close() }
    let writer = try PostgresStore(url: location, model: try model())
    defer { writer.close() }
    _ = try store.save(ChangeSet(inserted: [note("a"), note("b")]))
    let generation = try store.pinGeneration()
    defer { store.unpin(generation) }
    let table = store.schema.qualify("Note")
    // The outer read holds the generation's first connection, so the inner one joins the exported
    // snapshot on a second connection, opened after the third store's commit.
    let (outer, inner) = try store.read(generation: generation) { first -> ((Int64, Int64), (Int64, Int64)) in
      let firstPID = try first.query("SELECT pg_backend_pid()").int64(0, 0)
      _ = try writer.save(ChangeSet(inserted: [note("c")]))
      let firstCount = try first.query("SELECT count(*) FROM \(table)").int64(0, 0)
      let inner = try store.read(generation: generation) { second in
        (try second.query("SELECT pg_backend_pid()").int64(0, 0), try second.query("SELECT count(*) FROM \(table)").int64(0, 0))
      }
      return ((firstPID, firstCount), inner)
    }
    #expect(outer.0 != inner.0, "the two reads ran on one connection")
    #expect(outer.1 == 2)
    #expect(inner.1 == 2)
    #expect(try store.count(FetchDescription(entityName: "Note"), generation: generation) == 2)
    #expect(try store.count(FetchDescription(entityName: "Note")) == 3)
  }

  @Test func aGenerationWhoseConnectionIsLostFailsInsteadOfReadingTheStoreAsItIsNow() throws {
    _ = try PostgresTestServer.uri()
    let location = PostgresTestServer.freshLocation()
    let store = try PostgresStore(url: location, model: try model())
    defer { store.close() }
    _ = try store.save(ChangeSet(inserted: [note("a")]))
    let generation = try store.pinGeneration()
    defer { store.unpin(generation) }
    let pid = try store.read(generation: generation) { try $0.query("SELECT pg_backend_pid()").int64(0, 0) }
    try store.read(generation: nil) { try $0.execute("SELECT pg_terminate_backend(\(pid))") }
    _ = try store.save(ChangeSet(inserted: [note("b")]))
    do {
      _ = try store.count(FetchDescription(entityName: "Note"), generation: generation)
      Issue.record("expected the lost generation to fail")
    } catch let error as StoreError {
      #expect(error.code == .io, "\(error.message)")
    }
  }
}
