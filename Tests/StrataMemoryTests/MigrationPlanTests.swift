import Foundation
import Strata
import StrataConformance
import StrataMemory
import StrataStoreKit
import Testing

@Suite("Migration plans")
struct MigrationPlanTests {
  static func model(_ attributes: [AttributeDescription]) throws -> ObjectModel {
    try ObjectModel(entities: [EntityDescription(name: "Note", attributes: attributes)])
  }
  static let text = AttributeDescription(name: "text", type: .string)
  static var v1: ObjectModel { get throws { try model([text]) } }
  static var v2: ObjectModel {
    get throws { try model([text, AttributeDescription(name: "stars", type: .int16, defaultValue: 0)]) }
  }
  static var v3: ObjectModel {
    get throws { try model([text, AttributeDescription(name: "stars", type: .int64, defaultValue: 0)]) }
  }

  @Test func aPlanRefusesDuplicatesAndStepsItCannotInfer() throws {
    let twice = expectStoreError(.invalidModel) {
      try MigrationPlan([ModelVersion("1", (try Self.v1)), ModelVersion("1", (try Self.v2))])
    }
    #expect(twice?.message == "the migration plan names version '1' twice")
    let same = expectStoreError(.invalidModel) {
      try MigrationPlan([ModelVersion("1", (try Self.v1)), ModelVersion("2", (try Self.v1))])
    }
    #expect(same?.message.contains("versions '1' and '2' of the migration plan have the same structure") == true)
    let narrowing = expectStoreError(.schemaMismatch) {
      try MigrationPlan([ModelVersion("3", (try Self.v3)), ModelVersion("4", (try Self.v2))])
    }
    #expect(narrowing?.message.hasPrefix("from version '3' to '4': ") == true, "\(narrowing?.message ?? "")")
    expectStoreError(.misuse) { try MigrationPlan([]) }
  }

  @Test func aStoreMigratesFromItsVersionAndUnknownVersionsAreNotGuessedAt() throws {
    let plan = try MigrationPlan([
      ModelVersion("1", (try Self.v1)), ModelVersion("2", (try Self.v2)), ModelVersion("3", (try Self.v3)),
    ])
    #expect(plan.current.name == "3" && plan.current.model.versionName == "3")
    #expect(plan.version(of: (try Self.v2))?.name == "2", "an unnamed model is recognized by its structure")
    #expect(try plan.migration(from: plan.current.model) == nil)
    let fromOne = try #require(try plan.migration(from: (try Self.v1)))
    #expect(
      fromOne.changes.map(\.description) == ["Note.stars: added, filled with 0", "Note.stars: type widened from int16 to int64"])

    var newer = try Self.model([Self.text, AttributeDescription(name: "mood", type: .string, isOptional: true)])
    newer.versionName = "4"
    let unknown = expectStoreError(.schemaMismatch) { try plan.migration(from: newer) }
    #expect(
      unknown?.message.contains("version '4'") == true && unknown?.message.contains("the newest '3'") == true,
      "\(unknown?.message ?? "")")
    var impostor = newer
    impostor.versionName = "2"
    let differs = expectStoreError(.schemaMismatch) { try plan.migration(from: impostor) }
    #expect(
      differs?.message.contains("but this app's version '2' has checksum \((try Self.v2).fingerprint)") == true,
      "\(differs?.message ?? "")")
  }

  @Test func aMemoryStoreMigratesAlongThePlanInOneStep() throws {
    let store = try MemoryStoreFactory().openStore(at: nil, model: (try Self.v1), options: StoreOptions())
    _ = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Note"), attributes: [.string("hi")], toOne: [])]))
    let plan = try MigrationPlan([
      ModelVersion("1", (try Self.v1)), ModelVersion("2", (try Self.v2)), ModelVersion("3", (try Self.v3)),
    ])
    let migrated = try store.migrated(by: try #require(try plan.migration(from: store.model)))
    guard case .snapshots(let rows) = try migrated.fetch(FetchDescription(entityName: "Note"), generation: nil) else {
      Issue.record("expected snapshots")
      return
    }
    #expect(rows.map(\.attributes) == [[.string("hi"), .int(0)]])
    #expect(migrated.model.versionName == "3")
  }
}
