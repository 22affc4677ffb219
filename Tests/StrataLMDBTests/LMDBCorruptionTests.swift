import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// A truncated or damaged `data.mdb` gives `.corrupted` (or, for a harmless flip, a committed state),
/// never a signal, and is never written to.
@Suite struct LMDBCorruptionTests {
  /// A store of 120 notes saved in two transactions (the last one adds "last").
  private func makeStore(_ dir: TemporaryDirectory) throws -> (data: Data, all: [String], previous: [String]) {
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    let payload = Data(repeating: 0x5A, count: 300)
    _ = try store.save(ChangeSet(inserted: (0..<119).map { note("note-\($0)", $0, payload: payload) }))
    _ = try store.save(ChangeSet(inserted: [note("last", 119)]))
    let all = try texts(store)
    store.close()
    return (try Data(contentsOf: dir.store.appending(path: "data.mdb")), all, all.filter { $0 != "last" })
  }

  /// Writes `data` as the `data.mdb` of a new directory and opens it as `strata info` does.
  private func open(_ data: Data, in dir: TemporaryDirectory, _ name: String) throws -> (Result<[String], StoreError>, URL) {
    let url = dir.url.appending(path: name)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    let file = url.appending(path: "data.mdb")
    try data.write(to: file)
    let result: Result<[String], StoreError>
    do {
      let store = try LMDBStore(url: url, model: nil, options: StoreOptions(isReadOnly: true))
      defer { store.close() }
      result = .success(try texts(store))
    } catch let error as StoreError {
      result = .failure(error)
    }
    return (result, file)
  }

  @Test func truncatedDataFileIsCorruptedAndUntouched() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let (data, _, _) = try makeStore(dir)
    #expect(data.count > 5 * 4096)
    let sizes = [
      1, 20, 100, 152, 4095, 4096, 4097, 4096 + 152, 8191, 8192, 8193, 12288, data.count / 2, data.count - 4096, data.count - 1,
    ]
    for size in sizes {
      let truncated = data.prefix(size)
      let (result, file) = try open(Data(truncated), in: dir, "truncated-\(size)")
      guard case .failure(let error) = result else {
        Issue.record("a data.mdb truncated to \(size) bytes opened")
        continue
      }
      #expect(error.code == .corrupted, "\(size): \(error.message)")
      if size >= 8192 {
        #expect(
          error.message.contains("is shorter than its environment says: \(size) bytes, needs \(data.count)"), "\(error.message)")
      }
      #expect(try Data(contentsOf: file) == truncated, "\(size)")
      // Opening it to write is refused the same way, before liblmdb maps it.
      let writable = storeError { _ = try LMDBStore(url: file.deletingLastPathComponent(), model: try noteModel()) }
      #expect(writable?.code == .corrupted, "\(size)")
      #expect(try Data(contentsOf: file) == truncated, "\(size)")
    }
  }

  @Test func flippedMetaPageBytesGiveAnErrorOrACommittedState() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let (data, all, previous) = try makeStore(dir)
    var outcomes: [String: Int] = [:]
    for page in 0..<2 {
      for offset in 0..<152 {
        for mask: UInt8 in [0xFF, 0x01] {
          var damaged = data
          damaged[page * 4096 + offset] ^= mask
          let (result, file) = try open(damaged, in: dir, "flip-\(page)-\(offset)-\(mask)")
          switch result {
          case .success(let rows):
            #expect(rows == all || rows == previous, "page \(page) offset \(offset) mask \(mask): \(rows.count) rows")
            outcomes["opened", default: 0] += 1
          case .failure(let error):
            #expect(error.code == .corrupted, "page \(page) offset \(offset) mask \(mask): \(error.message)")
            outcomes["refused", default: 0] += 1
          }
          #expect(try Data(contentsOf: file) == damaged)
          try FileManager.default.removeItem(at: file.deletingLastPathComponent())
        }
      }
    }
    print("meta page flips (lmdb): \(outcomes.sorted { $0.key < $1.key })")
  }
}
