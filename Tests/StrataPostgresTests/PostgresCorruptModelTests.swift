import Foundation
import StrataPostgres
import StrataStoreKit
import Testing

/// The model stored in a schema's `_strata_metadata` replaced (through `psql`, as a DBA could) by garbage,
/// truncated JSON, JSON of another shape or an invalid model: every open is a one-line `.corrupted`
/// naming the store, and the schema's tables hold what they held.
@Suite struct PostgresCorruptModelTests {
  static let blobs: [(name: String, json: @Sendable (String) -> String)] = [
    ("garbage", { _ in "\u{1}\u{2}\u{7F}garbage" }),
    ("truncated", { String($0.prefix($0.count / 2)) }),
    ("empty", { _ in "" }),
    ("another shape", { _ in #"{"entities": 5}"# }),
    ("deeply nested", { _ in String(repeating: "[", count: 100_000) }),
    ("an invalid model", { $0.replacingOccurrences(of: #""name":"Item""#, with: #""name":"9Item""#) }),
  ]

  @Test(arguments: blobs.map(\.name))
  func aCorruptStoredModelIsACorruptedErrorAndTheSchemaIsUnchanged(_ name: String) throws {
    _ = try PostgresTestServer.uri()
    let model = try ObjectModel(entities: [
      EntityDescription(name: "Item", attributes: [AttributeDescription(name: "title", type: .string)])
    ])
    let location = PostgresTestServer.freshLocation()
    let schema = location.path.split(separator: "/").last.map(String.init) ?? ""
    let factory = PostgresStoreFactory()
    let store = try factory.openStore(at: location, model: model, options: StoreOptions())
    _ = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Item"), attributes: ["kept"], toOne: [])]))
    store.close()
    let blob = try #require(Self.blobs.first { $0.name == name }).json(String(decoding: try model.jsonData(), as: UTF8.self))
    _ = try PostgresTestServer.psql("UPDATE \"\(schema)\"._strata_metadata SET value = $blob$\(blob)$blob$ WHERE key = 'model'")
    let dump = "SELECT key, md5(value) FROM \"\(schema)\"._strata_metadata ORDER BY key; SELECT * FROM \"\(schema)\".\"Item\";"
    let before = try PostgresTestServer.psql(dump)
    #expect(before.contains("kept"))

    for (given, options) in [(Optional(model), StoreOptions()), (nil, StoreOptions()), (nil, StoreOptions(isReadOnly: true))] {
      do {
        let opened = try factory.openStore(at: location, model: given, options: options)
        opened.close()
        Issue.record("a store with \(name) for its model opened")
      } catch let error as StoreError {
        #expect(error.code == .corrupted, "\(error)")
        #expect(error.message.contains(schema) && !error.message.contains("\n") && error.message.count < 400, "\(error.message)")
      }
    }
    #expect(try PostgresTestServer.psql(dump) == before, "the schema holds what it held")
  }
}
