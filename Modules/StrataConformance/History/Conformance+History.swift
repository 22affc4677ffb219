import Foundation
import Strata
import StrataStoreKit
import Testing

/// A memo of the history areas: unique code (SQLite upserts and updates it natively), a title kept in
/// tombstones.
final class Memo: ManagedObject {
  @Attribute(.unique) var code: String
  @Attribute(.preserveValueOnDeletion) var title: String
  @Attribute var priority: Int16 = 0

  /// A new memo in `context`.
  @discardableResult
  static func make(in context: ObjectContext, code: String, title: String) -> Memo {
    let memo = Memo(context: context)
    memo.code = code
    memo.title = title
    return memo
  }
}

/// A binder counting its pages: deleting a page recomputes it.
final class Binder: ManagedObject {
  @Attribute var label: String
  @Relationship(inverse: "binder") var pages: Set<Page>
  @Derived("pages.@count") var pageCount: Int64
}

final class Page: ManagedObject {
  @Attribute var text: String
  @Relationship(inverse: "pages") var binder: Binder?
}

let historyTypes: [ManagedObject.Type] = [Memo.self, Binder.self, Page.self]

extension ConformanceBackend {
  /// A loaded container over the history areas' model at `url` with `options`.
  func historyContainer(at url: URL?, options: StoreOptions) throws -> PersistentContainer {
    let registry = StoreRegistry([factory])
    let container = PersistentContainer(
      name: "History", model: try ObjectModel(types: historyTypes), types: historyTypes, registry: registry)
    container.storeDescriptions = [StoreDescription(type: factory.storeType, url: url, options: options)]
    try container.loadPersistentStores()
    return container
  }
}

/// The history area's store (history tracked; context "editor", author "alice") and its six
/// transactions, recorded step by step: memos m1 and m2, binder B with page p1 inserted; m1, p1 updated
/// and p2 added; m2 deleted; then, by "importer", a batch insert (m3, an upsert of m1), a batch update and a
/// batch delete of p1.
final class HistoryStore {
  let backend: ConformanceBackend
  let url: URL?
  let container: PersistentContainer
  let store: any PersistentStore
  let context: ObjectContext
  let first: Memo
  let second: Memo
  let binder: Binder
  let page: Page
  var afterInserts: HistoryToken?
  var another: Page?
  var betweenUpdatesAndDelete = Date()
  var secondID: ObjectID?
  var inserted: BatchResult?
  var updated: BatchResult?
  var third: ObjectID?
  var pageID: ObjectID?

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    url = try backend.makeLocation()
    container = try backend.historyContainer(at: url, options: StoreOptions(tracksHistory: true))
    store = try #require(container.persistentStore)
    context = container.viewContext
    context.name = "editor"
    context.transactionAuthor = "alice"
    first = Memo.make(in: context, code: "m1", title: "First")
    second = Memo.make(in: context, code: "m2", title: "Second")
    binder = Binder(context: context)
    binder.label = "B"
    page = Page(context: context)
    page.text = "p1"
    page.binder = binder
  }

  func all(_ request: PersistentHistoryRequest = .fetchHistory(after: nil as HistoryToken?)) throws -> [HistoryTransaction] {
    guard case .transactions(let transactions) = try context.execute(request) else {
      Issue.record("expected transactions for \(request)")
      return []
    }
    return transactions
  }

  func summary(_ transaction: HistoryTransaction) -> Set<String> {
    Set(
      transaction.changes.map { change in
        let properties = change.updatedProperties.sorted().joined(separator: ",")
        let tombstone = change.tombstone.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        return "\(change.changeType.rawValue) \(change.objectID) [\(properties)] {\(tombstone)}"
      })
  }

  /// 1. A save of inserts.
  func insert() throws {
    try context.save()
    afterInserts = try store.currentHistoryToken()
  }

  /// 2. A save of updates (m1's priority, p1's text, so B's page count) and an insert (p2); then a moment
  /// between it and the next transaction.
  func update() async throws {
    first.priority = 3
    page.text = "p1 v2"
    let another = Page(context: context)
    another.text = "p2"
    another.binder = binder
    self.another = another
    try context.save()
    try await Task.sleep(for: .milliseconds(20))
    betweenUpdatesAndDelete = Date()
    try await Task.sleep(for: .milliseconds(20))
  }

  /// 3. m2 deleted.
  func delete() throws {
    secondID = second.objectID
    context.delete(second)
    try context.save()
  }

  /// 4–6. Batch insert (with an upsert), batch update, batch delete, under another author.
  func runBatches() throws {
    context.transactionAuthor = "importer"
    let inserted = try context.execute(
      .insert(
        entityName: "Memo", objects: [["code": "m3", "title": "Third"], ["code": "m1", "title": "First v2"]],
        resultType: .objectIDs))
    self.inserted = inserted
    third = inserted.objectIDs.first { $0 != first.objectID }
    updated = try context.execute(
      .update(entityName: "Memo", predicate: nil, propertiesToUpdate: ["priority": .constant(9)]))
    pageID = page.objectID
    _ = try context.execute(.deleteObjects([page.objectID]))
  }

  /// All six transactions; their tokens.
  func recordSixTransactions() async throws -> [HistoryToken] {
    try insert()
    try await update()
    try delete()
    try runBatches()
    let tokens = try all().map(\.token)
    try #require(tokens.count == 6)
    return tokens
  }
}

/// Persistent history: one transaction per save and per batch (insert, update, delete) with ordered
/// tokens, author, context name and process ID; inserts, updates with their property names (derived
/// attributes recomputed included), deletes with tombstones; fetching after a token, a date or a
/// transaction, with a predicate and each result type; deleting before a token or date and the
/// expired-token error; bad predicate keys; no history for a failed save; history off.
enum HistoryCases {
  /// A save of inserts is one transaction with the store's current token, author, context name and
  /// process ID; a store without transactions has no token.
  static func aSaveOfInsertsIsOneTransaction(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    #expect(try s.store.currentHistoryToken() == nil)
    try s.insert()
    let afterInserts = try #require(s.afterInserts)
    let history = try s.all()
    #expect(history.count == 1)
    let inserts = try #require(history.first)
    #expect(inserts.token == afterInserts)
    #expect(inserts.author == "alice")
    #expect(inserts.contextName == "editor")
    #expect(inserts.processID == getpid())
    #expect(s.summary(inserts) == Set([s.first, s.second, s.binder, s.page].map { "insert \($0.objectID) [] {}" }))
  }

  /// A save of updates names the changed properties; a derived attribute it changed counts too; a delete
  /// keeps the attributes marked for tombstones.
  static func updatesNameTheirPropertiesAndDeletesKeepTombstones(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    let (first, page, binder) = (s.first, s.page, s.binder)
    try s.insert()
    try await s.update()
    let another = try #require(s.another)
    var history = try s.all()
    #expect(history.count == 2)
    #expect(
      s.summary(history[1]).isSuperset(of: [
        "update \(first.objectID) [priority] {}", "update \(page.objectID) [text] {}", "insert \(another.objectID) [] {}",
      ]))
    let binderUpdate = history.last?.changes.first { $0.objectID == binder.objectID }
    #expect(binderUpdate?.changeType == .update && binderUpdate?.updatedProperties.contains("pageCount") == true)
    #expect(history.last?.changes.count == 4)
    try s.delete()
    let secondID = try #require(s.secondID)
    history = try s.all()
    #expect(s.summary(history[2]) == ["delete \(secondID) [] {title=\(Value.string("Second"))}"])
  }

  /// Batch insert (with an upsert), batch update and batch delete are a transaction each, under their
  /// author; tokens are ordered and the last is the store's current token.
  static func batchesAreATransactionEach(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    let (first, binder) = (s.first, s.binder)
    try s.insert()
    try await s.update()
    try s.delete()
    try s.runBatches()
    let inserted = try #require(s.inserted)
    let updated = try #require(s.updated)
    let third = try #require(s.third)
    let pageID = try #require(s.pageID)
    #expect(Set(updated.objectIDs) == [first.objectID, third])
    let history = try s.all()
    #expect(history.count == 6)
    guard history.count == 6 else { return }
    #expect(history[3...].allSatisfy { $0.author == "importer" && $0.contextName == "editor" })
    #expect(s.summary(history[3]) == ["insert \(third) [] {}", "update \(first.objectID) [code,title] {}"])
    #expect(s.summary(history[4]) == ["update \(first.objectID) [priority] {}", "update \(third) [priority] {}"])
    #expect(s.summary(history[5]) == ["delete \(pageID) [] {}", "update \(binder.objectID) [pageCount] {}"])
    #expect(inserted.historyToken == history[3].token)
    #expect(updated.historyToken == history[4].token)
    let tokens = history.map(\.token)
    #expect(tokens == tokens.sorted() && Set(tokens).count == 6)
    #expect(try s.store.currentHistoryToken() == tokens.last)
  }

  /// Fetching after a token, a date, a transaction; with a predicate; each result type.
  static func fetchesAfterATokenADateOrATransaction(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    let tokens = try await s.recordSixTransactions()
    let context = s.context
    let history = try s.all()
    let afterInserts = try #require(s.afterInserts)
    let betweenUpdatesAndDelete = s.betweenUpdatesAndDelete
    func all(_ request: PersistentHistoryRequest) throws -> [HistoryTransaction] { try s.all(request) }
    #expect(try all(.fetchHistory(after: afterInserts)).map(\.token) == Array(tokens.dropFirst()))
    #expect(try all(.fetchHistory(after: betweenUpdatesAndDelete)).map(\.token) == Array(tokens.dropFirst(2)))
    #expect(try all(.fetchHistory(after: history[3])).map(\.token) == Array(tokens.dropFirst(4)))
    var byOthers = PersistentHistoryRequest.fetchHistory(after: nil as HistoryToken?)
    try byOthers.setPredicate(format: "author != %@", "importer")
    #expect(try all(byOthers).map(\.token) == Array(tokens.prefix(3)))
    try byOthers.setPredicate(
      format: "processID == %d AND contextName == 'editor' AND timestamp > %@", Int(getpid()), betweenUpdatesAndDelete)
    #expect(try all(byOthers).map(\.token) == Array(tokens.dropFirst(2)))
    var bare = PersistentHistoryRequest.fetchHistory(after: nil as HistoryToken?)
    bare.resultType = .transactionsOnly
    let onlyTransactions = try all(bare)
    #expect(onlyTransactions.map(\.token) == tokens && onlyTransactions.allSatisfy(\.changes.isEmpty))
    var counting = PersistentHistoryRequest.fetchHistory(after: afterInserts)
    counting.resultType = .count
    #expect(try context.execute(counting) == .count(5))

  }

  /// A predicate on an unknown key is refused, naming it.
  static func unknownPredicateKeysAreRefused(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    let context = s.context
    try s.insert()
    var unknown = PersistentHistoryRequest.fetchHistory(after: nil as HistoryToken?)
    try unknown.setPredicate(format: "colour == 'red'")
    let unknownKey = #expect(throws: StoreError.self) { try context.execute(unknown) }
    #expect(
      unknownKey?.code == .invalidQuery && unknownKey?.message.contains("colour") == true, "\(String(describing: unknownKey))")

  }

  /// A failed save records nothing.
  static func aFailedSaveRecordsNothing(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    let tokens = try await s.recordSixTransactions()
    let context = s.context
    Memo.make(in: context, code: "m3", title: "Clash")
    expectStoreError(.constraintConflict) { try context.save() }
    context.rollback()
    #expect(try s.all().count == 6)
    #expect(try s.store.currentHistoryToken() == tokens.last)
  }

  /// Deleting before a token, then a date; older tokens expire; the next transaction continues the
  /// sequence.
  static func deletingHistoryExpiresOlderTokens(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    let tokens = try await s.recordSixTransactions()
    let (context, store, first) = (s.context, s.store, s.first)
    func all(_ request: PersistentHistoryRequest = .fetchHistory(after: nil as HistoryToken?)) throws -> [HistoryTransaction] {
      try s.all(request)
    }
    #expect(try context.execute(.deleteHistory(before: tokens[2])) == .deleted(2))
    #expect(try all().map(\.token) == Array(tokens.dropFirst(2)))
    #expect(try all(.fetchHistory(after: tokens[1])).count == 4)
    for expired in [tokens[0], HistoryToken(storeIdentifier: "another-store", sequence: tokens[5].sequence)] {
      let error = #expect(throws: StoreError.self) { try context.execute(.fetchHistory(after: expired)) }
      #expect(error?.code == .historyExpired && error?.message.contains("fetch everything again") == true)
    }
    #expect(try context.execute(.deleteHistory(before: Date().addingTimeInterval(60))) == .deleted(4))
    #expect(try all().isEmpty)
    #expect(try store.currentHistoryToken() == tokens.last)
    #expect(try all(.fetchHistory(after: tokens[5])).isEmpty)
    expectStoreError(.historyExpired) { try context.execute(.fetchHistory(after: tokens[4])) }

    // The next transaction continues the sequence.
    context.refresh(first, mergeChanges: false)
    first.title = "After the purge"
    try context.save()
    let next = try all()
    #expect(next.count == 1 && next.first.map { $0.token > tokens[5] } == true)

  }

  /// A file store opened without history after it recorded some: that history is dropped and every
  /// token issued before expires (nothing would tell the app what it missed meanwhile).
  static func reopeningWithoutHistoryExpiresEveryToken(_ backend: ConformanceBackend) async throws {
    let s = try HistoryStore(backend)
    defer { s.container.close() }
    let container = s.container
    try s.insert()
    let next = try s.all()
    if let url = s.url, let lastToken = next.last?.token {
      container.close()
      let untracked = try backend.historyContainer(at: url, options: StoreOptions())
      Memo.make(in: untracked.viewContext, code: "unrecorded", title: "Unrecorded")
      try untracked.viewContext.save()
      untracked.close()
      let again = try backend.historyContainer(at: url, options: StoreOptions(tracksHistory: true))
      defer { again.close() }
      let error = #expect(throws: StoreError.self) { try again.viewContext.execute(.fetchHistory(after: lastToken)) }
      #expect(error?.code == .historyExpired)
      let current = try #require(try again.persistentStore?.currentHistoryToken())
      #expect(current > lastToken)
      #expect(try again.viewContext.execute(.fetchHistory(after: current)) == .transactions([]))
    }
  }

  /// History off: nothing recorded, a clear error.
  static func historyOffRecordsNothing(_ backend: ConformanceBackend) async throws {
    let plainURL = try backend.makeLocation()
    let plain = try backend.historyContainer(at: plainURL, options: StoreOptions())
    defer { plain.close() }
    Memo.make(in: plain.viewContext, code: "x", title: "Untracked")
    try plain.viewContext.save()
    #expect(try plain.persistentStore?.currentHistoryToken() == nil)
    let untracked = #expect(throws: StoreError.self) { try plain.viewContext.execute(.fetchHistory(after: nil as HistoryToken?)) }
    #expect(untracked?.code == .misuse && untracked?.message.contains("tracksHistory") == true)
  }
}
