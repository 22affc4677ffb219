import Foundation
import StrataSQLite
import StrataStoreKit
import Testing

/// Unique string values of a mebibyte: stored and read back exact, two that differ only in their last
/// character distinct, an equal one a clash, and lookups through the unique index exact.
@Suite struct SQLiteLargeValueTests {
  @Test func mebibyteUniqueValuesAreExactDistinctAndClash() throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "strata-large-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let stem = String(repeating: "aé€b", count: (1 << 20) / 4)
    let (first, second) = (stem + "1", stem + "2")
    let store = try SQLiteStore(url: directory.appending(path: "store.sqlite"), model: try Sample.model())
    defer { store.close() }
    _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow(first)), movieChange(MovieRow(second, subtitle: stem))]))
    do {
      _ = try store.save(ChangeSet(inserted: [movieChange(MovieRow(first))]))
      Issue.record("a second movie with the same mebibyte title was saved")
    } catch let error as StoreError {
      #expect(error.code == .constraintConflict, "\(error.code)")
    }
    #expect(Set(try store.titles()) == [first, second], "both come back exact, the clash saved nothing")
    #expect(try store.titles(try QueryPredicate(format: "title == %@", first)) == [first])
    #expect(try store.titles(try QueryPredicate(format: "title == %@", stem)).isEmpty)
    #expect(Set(try store.titles(try QueryPredicate(format: "title BEGINSWITH %@", stem))) == [first, second])
    #expect(try store.titles(try QueryPredicate(format: "subtitle == %@", stem)) == [second])
  }
}
