import Foundation
import Observation
import Strata
import StrataSQLite
import Synchronization
import Testing

final class Potato: ManagedObject {
  @Attribute var title: String
  @Attribute var genre: String
  @Attribute var userRating: Int16
}

/// How many times a tracking's `onChange` ran.
final class ChangeCount: Sendable {
  private let count = Mutex(0)
  var value: Int { count.withLock { $0 } }
  func increment() { count.withLock { $0 += 1 } }
}

/// Runs `read` under `withObservationTracking`, counting the changes it hears of.
func tracking(_ read: () -> Void) -> ChangeCount {
  let changes = ChangeCount()
  withObservationTracking(read) { changes.increment() }
  return changes
}

/// Observation of objects in an SQLite store, changed by another context and by another process.
@Suite struct SQLiteObservationTests {
  func container(_ url: URL, postsRemoteChanges: Bool = false) throws -> PersistentContainer {
    let container = PersistentContainer(
      name: "Potatoes", model: try ObjectModel(Potato.self), types: [Potato.self],
      registry: StoreRegistry([SQLiteStoreFactory()]))
    container.storeDescriptions = [
      StoreDescription(type: .sqlite, url: url, options: StoreOptions(postsRemoteChangeNotifications: postsRemoteChanges))
    ]
    try container.loadPersistentStores()
    return container
  }

  /// Saves a potato through a background context of `container`.
  func savePotato(in container: PersistentContainer) throws -> ObjectID {
    let writer = container.newBackgroundContext()
    return try writer.performAndWait {
      let potato = Potato(context: writer)
      potato.title = "Russet"
      potato.genre = "Baking"
      potato.userRating = 3
      try writer.save()
      return potato.objectID
    }
  }

  @Test func aMergeFromAnotherContextsSaveFires() throws {
    let directory = try TemporaryDirectory()
    let container = try container(directory.file())
    defer { container.close() }
    let id = try savePotato(in: container)
    let reader = container.newBackgroundContext()
    let (potato, changes, genreChanges) = try reader.performAndWait {
      let potato = try #require(try reader.existingObject(with: id) as? Potato)
      let changes = tracking { _ = potato.userRating }
      let genreChanges = tracking { _ = potato.genre }
      return (potato, changes, genreChanges)
    }
    let writer = container.newBackgroundContext()
    try writer.performAndWait {
      let potato = try #require(try writer.existingObject(with: id) as? Potato)
      potato.userRating = 5
      try writer.save()
    }
    reader.performAndWait { reader.mergeChanges(fromContextDidSave: ContextDidSave(updatedObjectIDs: [id])) }
    #expect(changes.value == 1)
    #expect(genreChanges.value == 0)
    #expect(reader.performAndWait { potato.userRating } == 5)
  }

  @Test func anotherProcesssCommitMergedAutomaticallyFires() async throws {
    let directory = try TemporaryDirectory()
    let url = directory.file()
    let container = try container(url, postsRemoteChanges: true)
    defer { container.close() }
    let id = try savePotato(in: container)
    let reader = container.newBackgroundContext()
    reader.automaticallyMergesChangesFromParent = true
    let (potato, changes, titleChanges) = try reader.performAndWait {
      let potato = try #require(try reader.existingObject(with: id) as? Potato)
      let changes = tracking { _ = potato.userRating }
      let titleChanges = tracking { _ = potato.title }
      return (potato, changes, titleChanges)
    }
    try await Task.sleep(for: .milliseconds(120))  // the store's watcher has taken its first look

    let shell = Process()
    shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    shell.arguments = [url.path, "UPDATE Potato SET userRating = 1 WHERE title = 'Russet'"]
    let errors = Pipe()
    shell.standardError = errors
    try shell.run()
    let failure = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    shell.waitUntilExit()
    try #require(shell.terminationStatus == 0, "\(failure)")

    for _ in 0..<500 where changes.value == 0 { try await Task.sleep(for: .milliseconds(20)) }
    #expect(changes.value == 1)
    #expect(titleChanges.value == 0)
    #expect(reader.performAndWait { potato.userRating } == 1)
  }
}
