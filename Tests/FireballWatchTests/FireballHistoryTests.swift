import FireballWatch
import Foundation
import Strata
import StrataMemory
import StrataSQLite
import Testing

extension Backend {
  /// A watch for the watcher and one for a writer over the same store: for SQLite two containers on one
  /// file (as two processes would have), for memory one container.
  func makePair() throws -> (watcher: FireballWatch, writer: FireballWatch) {
    let watch = try makeWatch()
    guard let url = watch.container.persistentStore?.url else { return (watch, FireballWatch(container: watch.container)) }
    let registry = StoreRegistry([SQLiteStoreFactory()])
    let writer = try FireballWatch.makeContainer(store: StoreDescription(type: .sqlite, url: url), registry: registry)
    return (watch, FireballWatch(container: writer))
  }
}

@Suite("FireballWatch history and watching")
struct FireballHistoryTests {
  let sample = try! JPLFile(JPLFile.shipped).records(first: 5)

  func tokenFile() -> URL {
    FileManager.default.temporaryDirectory.appending(path: "fireball-token-\(UUID().uuidString).json")
  }

  @Test(arguments: Backend.allCases)
  func historyNamesTheAuthorsAndWhatTheyChanged(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    try await watch.importFireballs(sample)
    try watch.createGroup("Recent")
    try watch.add([sample[0].dateTimeStamp, sample[1].dateTimeStamp], toGroup: "Recent")
    let entries = try watch.history()
    #expect(entries.map(\.author) == [FireballWatch.importAuthor, FireballWatch.editAuthor, FireballWatch.editAuthor])
    #expect(entries[0].inserted == sample.count && entries[0].updated == 0)
    #expect(entries[1].inserted == 1)
    #expect(entries[2].updated == 3, "the group and its two new fireballs")
    #expect(try watch.history(excludingAuthor: FireballWatch.editAuthor).map(\.token) == [entries[0].token])
    let first = try #require(HistoryToken(string: entries[0].token))
    #expect(try watch.history(after: first).map(\.token) == entries.dropFirst().map(\.token))

    let third = try #require(HistoryToken(string: entries[2].token))
    #expect(try watch.pruneHistory(before: .token(third)) == 2)
    #expect(try watch.history().map(\.token) == [entries[2].token])
    let second = try #require(HistoryToken(string: entries[1].token))
    #expect(try watch.history(after: second).map(\.token) == [entries[2].token], "history after the last pruned one is whole")
    do {
      _ = try watch.history(after: first)
      Issue.record("a pruned token was accepted")
    } catch let error as StoreError {
      #expect(error.code == .historyExpired)
    }
  }

  @Test(arguments: Backend.allCases)
  func theWatcherReportsWhatOtherAuthorsChangedOnce(_ backend: Backend) async throws {
    let (watch, writer) = try backend.makePair()
    try writer.createGroup("Recent")
    let file = tokenFile()
    let watcher = try FireballHistoryWatcher(watch: watch, tokenFile: file)
    #expect(watcher.warnings.isEmpty)
    #expect(try watcher.catchUp().isEmpty, "the watcher starts from the newest transaction")

    try await writer.importFireballs(sample)
    let count = try watcher.view.performAndWait { try watcher.view.count(for: FetchRequest<Fireball>()) }
    #expect(count == 0, "the view stays on its query generation until it catches up")
    let inserted = try watcher.catchUp()
    #expect(inserted == sample.map { .fireball(.insert, dateTimeStamp: $0.dateTimeStamp, impactEnergy: $0.impactEnergy) })
    #expect(try watcher.view.performAndWait { try watcher.view.count(for: FetchRequest<Fireball>()) } == sample.count)

    try writer.add([sample[0].dateTimeStamp, sample[1].dateTimeStamp], toGroup: "Recent")
    #expect(try watcher.catchUp().isEmpty, "the UI author's edits are skipped")

    let cleanup = writer.container.newBackgroundContext()
    cleanup.transactionAuthor = "Cleanup"
    try cleanup.performAndWait {
      let doomed = try #require(
        try cleanup.fetch(try FetchRequest<Fireball>(format: "dateTimeStamp == %@", sample[0].dateTimeStamp)).first)
      cleanup.delete(doomed)
      try cleanup.save()
    }
    let changes = try watcher.catchUp()
    #expect(changes.contains(.fireball(.delete, dateTimeStamp: sample[0].dateTimeStamp, impactEnergy: sample[0].impactEnergy)))
    #expect(changes.contains(.group(.update, name: "Recent", fireballCount: 1)))

    let restarted = try FireballHistoryWatcher(watch: FireballWatch(container: watch.container), tokenFile: file)
    #expect(restarted.warnings.isEmpty)
    #expect(try restarted.catchUp().isEmpty, "a watcher started later goes on from the saved token")
    try await writer.importFireballs([sample[0]])
    #expect(
      try restarted.catchUp() == [
        .fireball(.insert, dateTimeStamp: sample[0].dateTimeStamp, impactEnergy: sample[0].impactEnergy)
      ])
  }

  @Test(arguments: Backend.allCases)
  func aBadTokenFileIsAWarningAndAFullRefetch(_ backend: Backend) async throws {
    let (watch, writer) = try backend.makePair()
    try await writer.importFireballs(sample)
    let file = tokenFile()
    try Data("{not a token".utf8).write(to: file)
    let corrupt = try FireballHistoryWatcher(watch: watch, tokenFile: file)
    #expect(corrupt.warnings.count == 1)
    #expect(try corrupt.catchUp().isEmpty)
    #expect(try watch.currentHistoryToken() == corrupt.token)

    let other = try Backend.memory.makeWatch()
    try await other.importFireballs(sample)
    let foreign = try JSONEncoder().encode(try #require(try other.currentHistoryToken()))
    try foreign.write(to: file)
    let misplaced = try FireballHistoryWatcher(watch: watch, tokenFile: file)
    #expect(misplaced.warnings.count == 1)
    #expect(misplaced.token == (try watch.currentHistoryToken()))

    // History pruned past the saved token: a warning, a refetch, and the newest token.
    try await writer.importFireballs([FireballRecord(dateTimeStamp: Date(timeIntervalSince1970: 0))])
    let stale = try FireballHistoryWatcher(watch: watch, tokenFile: tokenFile())
    try await writer.importFireballs([FireballRecord(dateTimeStamp: Date(timeIntervalSince1970: 60))])
    try await writer.importFireballs([FireballRecord(dateTimeStamp: Date(timeIntervalSince1970: 120))])
    let newest = try #require(try writer.currentHistoryToken())
    #expect(try writer.pruneHistory(before: .token(newest)) >= 2)
    #expect(try stale.catchUp().isEmpty)
    #expect(stale.warnings.count == 1)
    #expect(stale.token == newest)
  }
}
