import Foundation
import StrataConformance
import StrataMemory
import StrataStoreKit
import Testing

@testable import Strata

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

  static var v4: ObjectModel {
    get throws {
      try model([
        text, AttributeDescription(name: "stars", type: .int64, defaultValue: 0),
        AttributeDescription(name: "mood", type: .string, isOptional: true),
      ])
    }
  }

  @Test func stagesMustNameVersionsOfThePlanInOrderWithoutOverlapping() throws {
    let v1 = ModelVersion("1", try Self.v1)
    let v2 = ModelVersion("2", try Self.v2)
    let v3 = ModelVersion("3", try Self.v3)
    let stranger = ModelVersion("9", try Self.v4)
    let unknown = expectStoreError(.invalidModel) { try MigrationPlan([v1, v2, v3], stages: [.custom(from: v2, to: stranger)]) }
    #expect(
      unknown?.message.contains("names version '9', which is not in the migration plan") == true, "\(unknown?.message ?? "")")
    let backwards = expectStoreError(.invalidModel) { try MigrationPlan([v1, v2, v3], stages: [.custom(from: v3, to: v1)]) }
    #expect(backwards?.message == "the stage from '3' to '1' does not go forward in the migration plan")
    let overlapping = expectStoreError(.invalidModel) {
      try MigrationPlan([v1, v2, v3], stages: [.custom(from: v1, to: v3), .custom(from: v2, to: v3)])
    }
    #expect(overlapping?.message == "the stages from '1' to '3' and from '2' to '3' overlap")
  }

  @Test func inferredStepsAreComposedAndEachStageRunsAlone() throws {
    let versions = [
      ModelVersion("1", try Self.v1), ModelVersion("2", try Self.v2), ModelVersion("3", try Self.v3),
      ModelVersion("4", try Self.v4),
    ]
    let inferred = try MigrationPlan(versions).runs(from: try Self.v1)
    #expect(inferred.map { "\($0.from.name)>\($0.to.name)" } == ["1>4"])
    let staged = try MigrationPlan(versions, stages: [.custom(from: versions[1], to: versions[2], didMigrate: { _ in })])
    let runs = try staged.runs(from: try Self.v1)
    #expect(runs.map { "\($0.from.name)>\($0.to.name)" } == ["1>2", "2>3", "3>4"])
    #expect(runs.map { $0.stage != nil } == [false, true, false])
    #expect(try staged.runs(from: try Self.v3).map { "\($0.from.name)>\($0.to.name)" } == ["3>4"])
    #expect(try staged.runs(from: try Self.v4).isEmpty)

    let spanning = try MigrationPlan(versions, stages: [.custom(from: versions[0], to: versions[2], willMigrate: { _ in })])
    let fromTwo = try spanning.runs(from: try Self.v2)
    #expect(fromTwo.map { "\($0.from.name)>\($0.to.name)" } == ["2>3", "3>4"])
    #expect(fromTwo.first?.skipsWillMigrate == true, "a store inside a stage's span never had its start's shape")
    #expect(try spanning.runs(from: try Self.v1).first?.skipsWillMigrate == false)
  }
}
