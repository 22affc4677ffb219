import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

@Suite("LMDB and entity hierarchies")
struct LMDBInheritanceTests {
  @Test func aModelWithAHierarchyIsRefusedBeforeAnythingIsCreated() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let model = try ObjectModel(entities: [
      EntityDescription(name: "Media", attributes: [AttributeDescription(name: "title", type: .string)], isAbstract: true),
      EntityDescription(name: "Film", parentEntity: "Media"),
    ])
    let error = storeError { _ = try LMDBStore(url: directory.store, model: model) }
    #expect(error?.code == .unsupported)
    #expect(error?.entity == "Media")
    #expect(!FileManager.default.fileExists(atPath: directory.store.path))
  }
}
