import Foundation
import Strata
import StrataStoreKit
import Testing

/// Collects a change stream on a task of its own, so a test can wait for a change with a deadline.
final class StoreChangeCollector: Sendable {
  private let received = Locked<[StoreChange]>([])
  private let task: Task<Void, Never>

  init(_ stream: AsyncStream<StoreChange>) {
    let received = self.received
    task = Task {
      for await change in stream { received.withLock { $0.append(change) } }
    }
  }

  deinit { task.cancel() }

  /// Expects a remote change carrying `token` within 250 ms (see ``arrival(within:where:)``).
  func expectRemoteChange(with token: HistoryToken, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let arrival = try await arrival(within: .milliseconds(250)) { $0.isRemote && $0.historyToken == token }
    #expect(arrival != nil, "no remote change with token \(token)", sourceLocation: sourceLocation)
    #expect(
      arrival?.onTime != false, "the remote change with token \(token) came later than 250 ms", sourceLocation: sourceLocation)
  }

  /// The first change received that matches, waiting up to 10 s.
  func first(where matches: (StoreChange) -> Bool) async throws -> StoreChange? {
    try await arrival(within: .seconds(10), where: matches)?.change
  }

  /// The first change received that matches, waiting up to 10 s, and whether it came within `deadline`.
  ///
  /// When the machine is so loaded that this task itself wakes up late (a 5 ms sleep overshooting by more
  /// than 100 ms — test suites running in parallel on two cores), a late change is not the store's fault,
  /// so only its arrival is required: `onTime` is then true, and the wait lasts up to 2,000 looks rather
  /// than 10 s, since the collecting task is starved as much as this one (under ThreadSanitizer the whole
  /// suite runs that slowly).
  func arrival(
    within deadline: Duration, where matches: (StoreChange) -> Bool
  ) async throws
    -> (change: StoreChange, onTime: Bool)?
  {
    let clock = ContinuousClock()
    let start = clock.now
    var starved = false
    var looks = 0
    while true {
      if let change = received.withLock({ $0.first(where: matches) }) {
        return (change, clock.now - start <= deadline || starved)
      }
      looks += 1
      guard clock.now - start < .seconds(10) || (starved && looks < 2_000) else { return nil }
      let before = clock.now
      try await Task.sleep(for: .milliseconds(5))
      if clock.now - before > .milliseconds(105) { starved = true }
    }
  }
}

extension ConformanceBackend {
  /// An executable built with the tests (a second process), found next to the test bundle.
  ///
  /// ```swift
  /// let process = Process()
  /// process.executableURL = ConformanceBackend.executable(named: "strata-worker")
  /// ```
  public static func executable(named name: String) -> URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
      let candidate = directory.appending(path: name)
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
      directory = directory.deletingLastPathComponent()
    }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appending(path: ".build/debug/\(name)")
  }
}

extension Conformance {
  /// Change notifications with history tokens in one store: saves and batches carry their tokens and
  /// the objects they inserted and updated.
  public static func historyNotifications(_ backend: ConformanceBackend) async throws {
    let local = try await localHistoryNotifications(backend)
    local.container.close()
  }

  /// What ``historyNotifications(_:)`` checks, leaving the store open with two saved memos.
  private static func localHistoryNotifications(
    _ backend: ConformanceBackend
  ) async throws
    -> (container: PersistentContainer, url: URL?, memoID: ObjectID, bystanderID: ObjectID)
  {
    let url = try backend.makeLocation()
    let options = StoreOptions(tracksHistory: true, postsRemoteChangeNotifications: true)
    let container = try backend.historyContainer(at: url, options: options)
    let store = try #require(container.persistentStore)
    let local = StoreChangeCollector(container.persistentStoreRemoteChanges())
    let context = container.newBackgroundContext()
    let (memoID, bystanderID) = try context.performAndWait {
      let memo = Memo.make(in: context, code: "n1", title: "Local")
      let bystander = Memo.make(in: context, code: "n0", title: "Bystander")
      try context.save()
      return (memo.objectID, bystander.objectID)
    }
    let saveToken = try store.currentHistoryToken()
    #expect(saveToken != nil)
    let saved = try await local.first { $0.historyToken == saveToken }
    #expect(saved?.isRemote == false && Set(saved?.inserted ?? []) == [memoID, bystanderID])
    let batch = try context.performAndWait {
      try context.execute(.update(entityName: "Memo", predicate: nil, propertiesToUpdate: ["priority": .constant(1)]))
    }
    #expect(batch.historyToken != nil && batch.historyToken != saveToken)
    let batchChange = try await local.first { $0.historyToken == batch.historyToken }
    #expect(Set(batchChange?.updated ?? []) == [memoID, bystanderID])
    return (container, url, memoID, bystanderID)
  }

  /// Two stores on one location see each other's commits as remote changes with the newest token
  /// within 250 ms; a context merging automatically gets them object by object; history fetched after
  /// a token merges into a live context.
  public static func historyBetweenStores(_ backend: ConformanceBackend) async throws {
    let (container, location, memoID, bystanderID) = try await localHistoryNotifications(backend)
    defer { container.close() }
    let store = try #require(container.persistentStore)
    let context = container.newBackgroundContext()
    let options = StoreOptions(tracksHistory: true, postsRemoteChangeNotifications: true)
    let url = try #require(location, "a backend with sharedLocation gives its stores a location")
    let other = try backend.historyContainer(at: url, options: options)
    defer { other.close() }
    let otherStore = try #require(other.persistentStore)
    let seenByOther = StoreChangeCollector(other.persistentStoreRemoteChanges())
    let remote = StoreChangeCollector(container.persistentStoreRemoteChanges())
    let view = container.newBackgroundContext()
    let live = try view.performAndWait { try #require(try view.existingObject(with: memoID) as? Memo) }
    #expect(view.performAndWait { live.title } == "Local")
    // A context merging automatically gets the remote change object by object: the bystander, which the
    // other store did not touch, is not turned into a fault.
    let auto = container.newBackgroundContext()
    auto.automaticallyMergesChangesFromParent = true
    let (merging, bystander) = try auto.performAndWait {
      let memo = try #require(try auto.existingObject(with: memoID) as? Memo)
      let bystander = try #require(try auto.existingObject(with: bystanderID) as? Memo)
      _ = (memo.title, bystander.title)
      return (memo, bystander)
    }
    let lastSeen = try #require(try store.currentHistoryToken())
    try await Task.sleep(for: .milliseconds(120))  // both watchers have taken their first look

    let writer = other.newBackgroundContext()
    writer.transactionAuthor = "other"
    try writer.performAndWait {
      let memo = try #require(try writer.existingObject(with: memoID) as? Memo)
      memo.title = "Remote"
      try writer.save()
    }
    let remoteToken = try #require(try otherStore.currentHistoryToken())
    try await remote.expectRemoteChange(with: remoteToken)

    for _ in 0..<500 where auto.performAndWait({ merging.title }) != "Remote" {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(auto.performAndWait { merging.title } == "Remote")
    #expect(auto.performAndWait { !bystander.isFault && bystander.title == "Bystander" })

    try expectMissedHistoryMerges(into: view, after: lastSeen, updating: live)

    // And the other way round.
    try context.performAndWait {
      Memo.make(in: context, code: "n2", title: "Back")
      try context.save()
    }
    let backToken = try #require(try store.currentHistoryToken())
    try await seenByOther.expectRemoteChange(with: backToken)
  }

  /// Merging what history says changed since `token` (one transaction by "other") updates the live memo.
  private static func expectMissedHistoryMerges(into view: ObjectContext, after token: HistoryToken, updating live: Memo) throws {
    guard case .transactions(let missed) = try view.performAndWait({ try view.execute(.fetchHistory(after: token)) }) else {
      Issue.record("expected transactions")
      return
    }
    #expect(missed.map(\.author) == ["other"])
    for transaction in missed {
      ObjectContext.mergeChanges(fromRemoteContextSave: transaction.objectIDNotification(), into: [view])
    }
    #expect(view.performAndWait { live.title } == "Remote")
  }

  /// A second process (the backend's ``ConformanceBackend/worker``) commits to the store; this process gets a remote change with
  /// that transaction's token within 250 ms, and its history names the other process.
  public static func historyFromAnotherProcess(_ backend: ConformanceBackend) async throws {
    let url = try #require(try backend.makeLocation(), "a backend with multiProcess gives its stores a location")
    let worker = try #require(backend.worker)
    let options = StoreOptions(tracksHistory: true, postsRemoteChangeNotifications: true)
    let container = try backend.historyContainer(at: url, options: options)
    defer { container.close() }
    let store = try #require(container.persistentStore)
    let changes = StoreChangeCollector(container.persistentStoreRemoteChanges())
    try await Task.sleep(for: .milliseconds(120))  // the watcher has taken its first look

    let process = Process()
    process.executableURL = ConformanceBackend.executable(named: worker)
    process.arguments = ["insert", backend.factory.storeType.rawValue, url.path, "Memo", "code", "from-worker"]
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let failure = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(failure)")
    let token = try #require(HistoryToken(string: printed.trimmingCharacters(in: .whitespacesAndNewlines)))

    try await changes.expectRemoteChange(with: token)
    #expect(try store.currentHistoryToken() == token)
    guard case .transactions(let transactions) = try container.viewContext.execute(.fetchHistory(after: nil as HistoryToken?))
    else {
      Issue.record("expected transactions")
      return
    }
    let last = try #require(transactions.last)
    #expect(last.token == token && last.author == "worker")
    #expect(last.processID == process.processIdentifier && last.processID != getpid())
    #expect(last.changes.map(\.changeType) == [.insert])
  }
}
