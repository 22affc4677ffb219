import Foundation
import StrataStoreKit
import Testing

@testable import StrataLMDB

/// Opening a store Strata closed cleanly skips the page walk (``LMDBValidationMarker``); a commit without a
/// clean close, or any write to `data.mdb` from outside, makes the next open walk every page again, and a
/// damaged file is still refused.
@Suite("LMDB validation marker")
struct LMDBValidationMarkerTests {
  @Test func aCleanCloseIsRememberedAndAnyChangeForgetsIt() throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.store.standardizedFileURL.resolvingSymlinksInPath().path
    do {
      let store = try LMDBStore(url: directory.store, model: try noteModel())
      _ = try store.save(ChangeSet(inserted: (0..<200).map { note("note \($0)", $0) }))
      store.close()
    }
    #expect(LMDBValidationMarker.isValidated(directory: path))
    do {
      let reader = try LMDBStore(url: directory.store, model: nil, options: StoreOptions(isReadOnly: true))
      #expect(try count(reader) == 200)
      reader.close()
    }
    #expect(LMDBValidationMarker.isValidated(directory: path))

    // A commit without a clean close (the store goes away as in a crash): the next open walks.
    do {
      let store = try LMDBStore(url: directory.store, model: try noteModel())
      _ = try store.save(ChangeSet(inserted: [note("one more", 1_000)]))
      #expect(!LMDBValidationMarker.isValidated(directory: path))
    }
    #expect(!LMDBValidationMarker.isValidated(directory: path))
    do {
      // Walked at open, and recorded.
      let store = try LMDBStore(url: directory.store, model: try noteModel())
      #expect(LMDBValidationMarker.isValidated(directory: path))
      #expect(try count(store) == 201)
      store.close()
    }

    // Damage from outside, same size, right after the clean close: refused, never a crash.
    #expect(LMDBValidationMarker.isValidated(directory: path))
    let file = directory.store.appending(path: "data.mdb")
    let handle = try FileHandle(forWritingTo: file)
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: 2 * 4096)
    try handle.write(contentsOf: Data(repeating: 0xFF, count: Int(size) - 2 * 4096))
    try handle.close()
    #expect(!LMDBValidationMarker.isValidated(directory: path))
    let refused = storeError { _ = try LMDBStore(url: directory.store, model: nil, options: StoreOptions(isReadOnly: true)) }
    #expect(refused?.code == .corrupted)
  }

  @Test func stampsReadBackAndRefuseOtherText() {
    let stamp = LMDBValidationMarker.Stamp(
      transactionID: 7, size: 8_192, modifiedSeconds: 1_700_000_000, modifiedNanoseconds: 5, inode: 42, device: 3)
    #expect(LMDBValidationMarker.Stamp(text: stamp.text) == stamp)
    #expect(LMDBValidationMarker.Stamp(text: "strata-validated 2 7 8192 1 5 42 3") == nil)
    #expect(LMDBValidationMarker.Stamp(text: "") == nil)
  }
}
