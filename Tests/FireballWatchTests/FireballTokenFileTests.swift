import FireballWatch
import Foundation
import Strata
import Testing

/// Token files the watcher cannot trust: each is a warning and a start from the newest transaction (the
/// documented recovery), never a token used against the wrong store or history.
@Suite("FireballWatch token files")
struct FireballTokenFileTests {
  let sample = try! JPLFile(JPLFile.shipped).records(first: 3)

  func tokenFile() -> URL {
    FileManager.default.temporaryDirectory.appending(path: "fireball-token-\(UUID().uuidString).json")
  }

  @Test(arguments: Backend.allCases)
  func aTokenAheadOfTheStoresHistoryIsAWarningAndAStartFromTheNewest(_ backend: Backend) async throws {
    let (watch, writer) = try backend.makePair()
    try await writer.importFireballs(sample)
    let newest = try #require(try watch.currentHistoryToken())
    let file = tokenFile()
    defer { try? FileManager.default.removeItem(at: file) }
    // The same store, but a token from a later state (a store restored from an older copy).
    let ahead = HistoryToken(storeIdentifier: newest.storeIdentifier, sequence: newest.sequence + 100)
    try JSONEncoder().encode(ahead).write(to: file)
    let watcher = try FireballHistoryWatcher(watch: watch, tokenFile: file)
    #expect(watcher.warnings.count == 1 && watcher.warnings[0].contains("ahead"), "\(watcher.warnings)")
    #expect(watcher.token == newest)
    try writer.createGroup("Later")
    try await writer.importFireballs([FireballRecord(dateTimeStamp: Date(timeIntervalSince1970: 0))])
    #expect(try watcher.catchUp().count == 1, "the next change is seen, not hidden behind the bad token")
  }

  @Test func aTokenFileThatIsNotAFileIsAWarningAndLeftAlone() async throws {
    let (watch, writer) = try Backend.sqlite.makePair()
    try await writer.importFireballs(sample)
    let fifo = tokenFile()
    try #require(mkfifo(fifo.path, 0o644) == 0)
    defer { try? FileManager.default.removeItem(at: fifo) }
    let watcher = try FireballHistoryWatcher(watch: watch, tokenFile: fifo)
    #expect(watcher.warnings.count == 1 && watcher.warnings[0].contains("FIFO"), "\(watcher.warnings)")
    #expect(watcher.token == (try watch.currentHistoryToken()))
    try await writer.importFireballs([FireballRecord(dateTimeStamp: Date(timeIntervalSince1970: 0))])
    #expect(try watcher.catchUp().count == 1)
    var status = stat()
    #expect(lstat(fifo.path, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO is still there, unread and unwritten")
  }
}
