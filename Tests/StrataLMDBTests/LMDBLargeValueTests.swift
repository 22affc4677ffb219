import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// Unique and indexed string values of a mebibyte, far past liblmdb's 511-byte keys: they are stored and
/// read back exact, two that differ only in their last character are distinct, an equal one is a clash,
/// and index lookups find exactly the right one.
@Suite struct LMDBLargeValueTests {
  @Test func mebibyteUniqueValuesAreExactDistinctAndClash() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let stem = String(repeating: "aé€b", count: (1 << 20) / 4)
    let (first, second) = (stem + "1", stem + "2")
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    defer { store.close() }
    _ = try store.save(ChangeSet(inserted: [note(first, 1), note(second, 2)]))
    do {
      _ = try store.save(ChangeSet(inserted: [note(first, 3)]))
      Issue.record("a second note with the same mebibyte text was saved")
    } catch let error as StoreError {
      #expect(error.code == .constraintConflict, "\(error.code)")
    }
    #expect(Set(try texts(store)) == [first, second], "both come back exact, the clash saved nothing")
    #expect(try matching(store, "text == %@", first) == [first])
    #expect(try matching(store, "text == %@", second) == [second])
    #expect(try matching(store, "text == %@", stem).isEmpty)
    #expect(Set(try matching(store, "text BEGINSWITH %@", stem)) == [first, second])
    #expect(Set(try matching(store, "text > %@", first)) == [second])
  }
}

/// The texts of the notes matching `format` with `value` as its one argument.
private func matching(_ store: LMDBStore, _ format: String, _ value: String) throws -> [String] {
  var request = FetchDescription(entityName: "Note", sortDescriptors: [QuerySort("text")])
  request.predicate = try QueryPredicate(format: format, value)
  guard case .snapshots(let rows) = try store.fetch(request, generation: nil) else { return [] }
  return rows.compactMap { $0.attributes[0].stringValue }
}
