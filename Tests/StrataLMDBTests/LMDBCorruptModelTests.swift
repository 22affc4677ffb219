import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// The model stored in `strata.meta` replaced by garbage, truncated JSON, JSON of another shape or an
/// invalid model: every open is a one-line `.corrupted` naming the store, and `data.mdb` stays
/// byte-identical.
@Suite struct LMDBCorruptModelTests {
  static let blobs: [(name: String, json: @Sendable (String) -> String)] = [
    ("garbage", { _ in "\u{1}\u{2}\u{7F}garbage" }),
    ("truncated", { String($0.prefix($0.count / 2)) }),
    ("empty", { _ in "" }),
    ("another shape", { _ in #"{"entities": 5}"# }),
    ("an array", { _ in "[1, 2, 3]" }),
    ("deeply nested", { _ in String(repeating: "[", count: 100_000) }),
    ("an invalid model", { $0.replacingOccurrences(of: #""name":"Note""#, with: #""name":"9Note""#) }),
  ]

  @Test(arguments: blobs.map(\.name))
  func aCorruptStoredModelIsACorruptedErrorAndTheStoreIsUnchanged(_ name: String) throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let model = try noteModel()
    let store = try LMDBStore(url: dir.store, model: model)
    _ = try store.save(ChangeSet(inserted: [note("kept", 1)]))
    store.close()
    let json = String(decoding: try model.jsonData(), as: UTF8.self)
    let blob = try #require(Self.blobs.first { $0.name == name }).json(json)
    #expect(blob != json)
    try rawPut(dir.store.path, database: "strata.meta", key: "model", value: blob)
    let data = dir.store.appending(path: "data.mdb")
    let before = try Data(contentsOf: data)

    for (given, options) in [
      (Optional(model), StoreOptions()), (nil, StoreOptions()), (nil, StoreOptions(isReadOnly: true)),
      (model, StoreOptions(isReadOnly: true)),
    ] {
      do {
        let opened = try LMDBStore(url: dir.store, model: given, options: options)
        opened.close()
        Issue.record("a store with \(name) for its model opened")
      } catch let error as StoreError {
        #expect(error.code == .corrupted, "\(error)")
        #expect(
          error.message.contains(dir.store.path) && !error.message.contains("\n") && error.message.count < 400,
          "\(error.message)")
      }
    }
    #expect(try Data(contentsOf: data) == before, "data.mdb is byte-identical")
  }
}
