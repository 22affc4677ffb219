import Foundation
import Strata
import StrataConformance
import StrataSQLite
import StrataStoreKit
import Testing

/// A migration that meets a store another process is writing: it waits the busy timeout, then fails with
/// an error naming the lock, leaves the file as it was, and succeeds once the lock is gone.
@Suite struct SQLiteMigrationLockTests {
  /// An `sqlite3` shell holding the write lock of `url` (`BEGIN IMMEDIATE`) until ``release()``.
  final class LockHolder {
    let process = Process()
    let input = Pipe()
    let output = Pipe()

    init(_ url: URL) throws {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
      process.arguments = [url.path]
      process.standardInput = input
      process.standardOutput = output
      try process.run()
      input.fileHandleForWriting.write(Data("BEGIN IMMEDIATE;\nSELECT 'locked';\n".utf8))
      var seen = Data()
      while !String(decoding: seen, as: UTF8.self).contains("locked") {
        let chunk = output.fileHandleForReading.availableData
        guard !chunk.isEmpty else { throw StoreError(.io, "sqlite3 ended before it held the lock") }
        seen.append(chunk)
      }
    }

    func release() {
      input.fileHandleForWriting.write(Data("ROLLBACK;\n.quit\n".utf8))
      try? input.fileHandleForWriting.close()
      process.waitUntilExit()
    }
  }

  @Test func aMigrationMeetingAnotherProcesssLockFailsAndChangesNothing() throws {
    let url = FileManager.default.temporaryDirectory.appending(path: "strata-lock-\(UUID().uuidString).sqlite")
    let store = try SQLiteMigrationTests.store(url)
    store.close()
    let before = try Data(contentsOf: url)
    let registry = StoreRegistry([SQLiteStoreFactory(busyTimeout: .milliseconds(300))])
    let v2 = try SQLiteMigrationTests.renamedAndAdded()
    func container() -> PersistentContainer {
      let container = PersistentContainer(name: "Locked", model: v2, registry: registry)
      container.storeDescriptions = [StoreDescription(type: .sqlite, url: url)]
      return container
    }

    let holder = try LockHolder(url)
    let error = expectStoreError(.io) { try container().loadPersistentStores() }
    holder.release()
    #expect(error?.message.contains("locked by another connection or process") == true, "\(error?.message ?? "")")
    #expect(try Data(contentsOf: url) == before, "the file is as it was")

    let migrated = container()
    try migrated.loadPersistentStores()
    #expect(migrated.persistentStore?.model == v2)
    migrated.close()
  }
}
