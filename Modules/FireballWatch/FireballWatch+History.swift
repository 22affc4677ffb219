import Foundation
import Strata

/// One transaction of the store's persistent history, summarised.
public struct FireballHistoryEntry: Sendable, Hashable, Codable {
  public var token: String
  public var timestamp: Date
  public var author: String?
  public var contextName: String?
  /// The process that made the change.
  public var processID: Int32
  public var inserted: Int
  public var updated: Int
  public var deleted: Int

  init(_ transaction: HistoryTransaction) {
    token = transaction.token.description
    timestamp = transaction.timestamp
    author = transaction.author
    contextName = transaction.contextName
    processID = transaction.processID
    inserted = transaction.count(of: .insert)
    updated = transaction.count(of: .update)
    deleted = transaction.count(of: .delete)
  }
}

extension FireballWatch {
  /// The store's history after `token` (all of it when `nil`), oldest first, leaving out transactions
  /// of `excludedAuthor`.
  /// - Throws: `.historyExpired` when `token` is older than the history kept (or from another store).
  public func history(
    after token: HistoryToken? = nil, excludingAuthor excludedAuthor: String? = nil
  ) throws
    -> [FireballHistoryEntry]
  {
    try context.performAndWait {
      var request = PersistentHistoryRequest.fetchHistory(after: token)
      request.resultType = .transactionsAndChanges
      if let excludedAuthor { try request.setPredicate(format: "author != %@", excludedAuthor) }
      guard case .transactions(let transactions) = try context.execute(request) else { return [] }
      return transactions.map(FireballHistoryEntry.init)
    }
  }

  /// Deletes the history before `cutoff`; returns how many transactions went.
  public func pruneHistory(before cutoff: HistoryCutoff) throws -> Int {
    try context.performAndWait {
      let request: PersistentHistoryRequest =
        switch cutoff {
        case .token(let token): .deleteHistory(before: token)
        case .date(let date): .deleteHistory(before: date)
        }
      guard case .deleted(let count) = try context.execute(request) else { return 0 }
      return count
    }
  }

  /// The token of the newest transaction, or `nil` before the first one.
  public func currentHistoryToken() throws -> HistoryToken? {
    try container.currentPersistentHistoryToken()
  }
}

/// What ``FireballHistoryWatcher`` reports of one change another author made.
public enum FireballChange: Sendable, Hashable {
  case fireball(HistoryChangeType, dateTimeStamp: Date?, impactEnergy: Double?)
  case group(HistoryChangeType, name: String?, fireballCount: Int64?)
}

/// Follows the store's history for a view: a view context pinned to a query generation, moved forward by
/// merging each transaction other authors made after the last token it handled. The token is kept in a
/// file, so a watcher started later goes on where the last one stopped. ``tokenFile(in:storeIdentifier:)``
/// names that file by the store's identifier, so it works for a store of any backend (a PostgreSQL
/// store has no directory of its own to put it in).
///
/// ```swift
/// let watch = FireballWatch(container: container)
/// let url = FireballHistoryWatcher.tokenFile(
///   in: PersistentContainer.defaultDirectoryURL().appending(path: "fireball-watch"),
///   storeIdentifier: container.storeIdentifier ?? "")
/// let watcher = try FireballHistoryWatcher(watch: watch, tokenFile: url)
/// for await _ in watch.container.persistentStoreRemoteChanges() {
///   for change in try watcher.catchUp() { print(change) }
/// }
/// ```
// Safe because its mutable state is written in `init` (before it is shared) or under `lock`, and the
// public properties read it under `lock`; its view context is used inside `performAndWait`.
public final class FireballHistoryWatcher: @unchecked Sendable {
  public let view: ObjectContext
  /// Problems met with the token file or expired history; each was answered with a full refetch.
  public var warnings: [String] { lock.withLock { recordedWarnings } }
  /// The token of the last transaction handled.
  public var token: HistoryToken? { lock.withLock { handledToken } }
  private var recordedWarnings: [String] = []
  private var handledToken: HistoryToken?
  private let watch: FireballWatch
  private var tokenFile: URL?
  /// A token file of the old place (next to the store) being moved to `tokenFile`: removed once the
  /// token is saved there.
  private var legacyTokenFile: URL?
  private let lock = NSLock()

  /// Where a watch of the store `storeIdentifier` keeps its token, under `directory` (the CLI's is
  /// `$XDG_DATA_HOME/fireball-watch`): `directory/watch-tokens/<storeIdentifier>.json`.
  ///
  /// ```swift
  /// let file = FireballHistoryWatcher.tokenFile(in: URL(filePath: "/data/fireball-watch"), storeIdentifier: "5F0C")
  /// print(file.path)   // /data/fireball-watch/watch-tokens/5F0C.json
  /// ```
  public static func tokenFile(in directory: URL, storeIdentifier: String) -> URL {
    let name = storeIdentifier.unicodeScalars.map {
      CharacterSet.alphanumerics.contains($0) || $0 == "-" ? String($0) : "_"
    }.joined()
    return directory.appending(path: "watch-tokens", directoryHint: .isDirectory).appending(path: name + ".json")
  }

  /// A watcher starting from the token in `tokenFile` (or, without one, from the newest transaction).
  /// A token file that cannot be read or belongs to another store is a warning and a full refetch.
  ///
  /// - Parameter legacyTokenFile: where an older version kept the token (next to a file store,
  ///   `FireballWatch.sqlite.watch-token`). When `tokenFile` does not exist and this is a regular file,
  ///   its token is read (with the same checks and warnings), saved to `tokenFile`, and the old file
  ///   removed.
  public init(watch: FireballWatch, tokenFile: URL?, legacyTokenFile: URL? = nil) throws {
    self.watch = watch
    self.tokenFile = tokenFile
    view = watch.container.newBackgroundContext()
    view.name = "FireballWatch view"
    try view.performAndWait { try view.setQueryGenerationFrom(.current) }
    if let tokenFile, let legacyTokenFile, case .missing = StorePath.kind(of: tokenFile.path),
      case .file = StorePath.kind(of: legacyTokenFile.path)
    {
      self.legacyTokenFile = legacyTokenFile
    }
    handledToken = try loadToken()
    if token == nil { try refetchAll() } else if self.legacyTokenFile != nil { saveToken() }
  }

  /// Merges the transactions other authors than ``FireballWatch/editAuthor`` made since the last token
  /// into the view, saves the new token, and reports each fireball and group they changed.
  public func catchUp() throws -> [FireballChange] {
    lock.lock()
    defer { lock.unlock() }
    var request = PersistentHistoryRequest.fetchHistory(after: handledToken)
    try request.setPredicate(format: "author != %@", FireballWatch.editAuthor)
    let transactions: [HistoryTransaction]
    do {
      guard case .transactions(let found) = try view.performAndWait({ try view.execute(request) }) else { return [] }
      transactions = found
    } catch let error as StoreError where error.code == .historyExpired {
      recordedWarnings.append("the history after \(handledToken.map(\.description) ?? "the start") was pruned: \(error.message)")
      try refetchAll()
      return []
    }
    var changes: [FireballChange] = []
    for transaction in transactions {
      ObjectContext.mergeChanges(fromRemoteContextSave: transaction.objectIDNotification(), into: [view])
      view.performAndWait {
        for change in transaction.changes { changes.append(describe(change)) }
      }
      handledToken = transaction.token
    }
    if !transactions.isEmpty { saveToken() }
    return changes
  }

  /// Forgets everything the view held (a reset also moves it to the newest generation, so what it reads
  /// next comes afresh from the store) and starts again from the newest transaction.
  private func refetchAll() throws {
    handledToken = try watch.currentHistoryToken()
    view.performAndWait { view.reset() }
    saveToken()
  }

  private func describe(_ change: HistoryChange) -> FireballChange {
    let current = change.changeType == .delete ? nil : try? view.existingObject(with: change.objectID)
    if change.objectID.entityName == "FireballGroup" {
      let group = current as? FireballGroup
      return .group(
        change.changeType, name: group?.name ?? change.tombstone["name"]?.stringValue, fireballCount: group?.fireballCount)
    }
    if let fireball = current as? Fireball {
      return .fireball(change.changeType, dateTimeStamp: fireball.dateTimeStamp, impactEnergy: fireball.impactEnergy)
    }
    var date: Date?
    if case .date(let stamp)? = change.tombstone["dateTimeStamp"] { date = stamp }
    return .fireball(change.changeType, dateTimeStamp: date, impactEnergy: change.tombstone["impactEnergy"]?.numericValue)
  }

  private func loadToken() throws -> HistoryToken? {
    guard let tokenFile = legacyTokenFile ?? tokenFile else { return nil }
    switch StorePath.kind(of: tokenFile.path) {
    case .missing: return nil
    case .file: break
    case let other:
      recordedWarnings.append("the token file \(tokenFile.path) is \(other), not a file; refetching everything without it")
      self.tokenFile = nil
      return nil
    }
    let storeIdentifier = watch.container.storeIdentifier
    guard let data = try? Data(contentsOf: tokenFile), let saved = try? JSONDecoder().decode(HistoryToken.self, from: data)
    else {
      recordedWarnings.append("the token file \(tokenFile.path) cannot be read; refetching everything")
      return nil
    }
    guard saved.storeIdentifier == storeIdentifier else {
      recordedWarnings.append("the token file \(tokenFile.path) belongs to another store; refetching everything")
      return nil
    }
    if let newest = try watch.currentHistoryToken(), saved.sequence > newest.sequence {
      recordedWarnings.append(
        "the token file \(tokenFile.path) is ahead of the store's history (\(saved) after \(newest)); refetching everything")
      return nil
    }
    return saved
  }

  private func saveToken() {
    guard let tokenFile, let token = handledToken else { return }
    do {
      let data = try JSONEncoder().encode(token)
      try FileManager.default.createDirectory(at: tokenFile.deletingLastPathComponent(), withIntermediateDirectories: true)
      try data.write(to: tokenFile, options: .atomic)
      if let legacyTokenFile {
        // Moved: the token lives at `tokenFile` from now on.
        try? FileManager.default.removeItem(at: legacyTokenFile)
        self.legacyTokenFile = nil
      }
    } catch {
      recordedWarnings.append("the token file \(tokenFile.path) cannot be written: \(error.localizedDescription)")
    }
  }
}
