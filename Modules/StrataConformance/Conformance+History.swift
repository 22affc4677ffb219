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

extension Conformance {
  /// Persistent history: one transaction per save and per batch (insert, update, delete) with ordered
  /// tokens, author, context name and process ID; inserts, updates with their property names (derived
  /// attributes recomputed included), deletes with tombstones; fetching after a token, a date or a
  /// transaction, with a predicate and each result type; deleting before a token or date and the
  /// expired-token error; bad predicate keys; no history for a failed save; history off.
  public static func history(_ backend: ConformanceBackend) async throws {
    let url = try backend.makeLocation()
    let container = try backend.historyContainer(at: url, options: StoreOptions(tracksHistory: true))
    defer { container.close() }
    let store = try #require(container.persistentStore)
    let context = container.viewContext
    context.name = "editor"
    context.transactionAuthor = "alice"
    #expect(try store.currentHistoryToken() == nil)
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

    // 1. A save of inserts.
    let first = Memo.make(in: context, code: "m1", title: "First")
    let second = Memo.make(in: context, code: "m2", title: "Second")
    let binder = Binder(context: context)
    binder.label = "B"
    let page = Page(context: context)
    page.text = "p1"
    page.binder = binder
    try context.save()
    let afterInserts = try #require(try store.currentHistoryToken())
    var history = try all()
    #expect(history.count == 1)
    let inserts = try #require(history.first)
    #expect(inserts.token == afterInserts)
    #expect(inserts.author == "alice")
    #expect(inserts.contextName == "editor")
    #expect(inserts.processID == getpid())
    #expect(summary(inserts) == Set([first, second, binder, page].map { "insert \($0.objectID) [] {}" }))

    // 2. A save of updates names the changed properties; a derived attribute it changed counts too.
    first.priority = 3
    page.text = "p1 v2"
    let another = Page(context: context)
    another.text = "p2"
    another.binder = binder
    try context.save()
    history = try all()
    #expect(history.count == 2)
    #expect(
      summary(history[1]).isSuperset(of: [
        "update \(first.objectID) [priority] {}", "update \(page.objectID) [text] {}", "insert \(another.objectID) [] {}",
      ]))
    let binderUpdate = history.last?.changes.first { $0.objectID == binder.objectID }
    #expect(binderUpdate?.changeType == .update && binderUpdate?.updatedProperties.contains("pageCount") == true)
    #expect(history.last?.changes.count == 4)
    try await Task.sleep(for: .milliseconds(20))
    let betweenUpdatesAndDelete = Date()
    try await Task.sleep(for: .milliseconds(20))

    // 3. A delete keeps the attributes marked for tombstones.
    let secondID = second.objectID
    context.delete(second)
    try context.save()
    history = try all()
    #expect(summary(history[2]) == ["delete \(secondID) [] {title=\(Value.string("Second"))}"])

    // 4–6. Batch insert (with an upsert), batch update, batch delete, under another author.
    context.transactionAuthor = "importer"
    let inserted = try context.execute(
      .insert(
        entityName: "Memo", objects: [["code": "m3", "title": "Third"], ["code": "m1", "title": "First v2"]],
        resultType: .objectIDs))
    let third = try #require(inserted.objectIDs.first { $0 != first.objectID })
    let updated = try context.execute(
      .update(entityName: "Memo", predicate: nil, propertiesToUpdate: ["priority": .constant(9)]))
    #expect(Set(updated.objectIDs) == [first.objectID, third])
    let pageID = page.objectID
    _ = try context.execute(.deleteObjects([pageID]))
    history = try all()
    #expect(history.count == 6)
    guard history.count == 6 else { return }
    #expect(history[3...].allSatisfy { $0.author == "importer" && $0.contextName == "editor" })
    #expect(summary(history[3]) == ["insert \(third) [] {}", "update \(first.objectID) [code,title] {}"])
    #expect(summary(history[4]) == ["update \(first.objectID) [priority] {}", "update \(third) [priority] {}"])
    #expect(summary(history[5]) == ["delete \(pageID) [] {}", "update \(binder.objectID) [pageCount] {}"])
    #expect(inserted.historyToken == history[3].token)
    #expect(updated.historyToken == history[4].token)

    // Tokens are ordered and the last is the store's current token.
    let tokens = history.map(\.token)
    #expect(tokens == tokens.sorted() && Set(tokens).count == 6)
    #expect(try store.currentHistoryToken() == tokens.last)

    // Fetching after a token, a date, a transaction; with a predicate; each result type.
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

    // A predicate on an unknown key is refused, naming it.
    var unknown = PersistentHistoryRequest.fetchHistory(after: nil as HistoryToken?)
    try unknown.setPredicate(format: "colour == 'red'")
    let unknownKey = #expect(throws: StoreError.self) { try context.execute(unknown) }
    #expect(
      unknownKey?.code == .invalidQuery && unknownKey?.message.contains("colour") == true, "\(String(describing: unknownKey))")

    // A failed save records nothing.
    Memo.make(in: context, code: "m3", title: "Clash")
    expectStoreError(.constraintConflict) { try context.save() }
    context.rollback()
    #expect(try all().count == 6)
    #expect(try store.currentHistoryToken() == tokens.last)

    // Deleting before a token, then a date; older tokens expire.
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

    // A file store opened without history after it recorded some: that history is dropped and every
    // token issued before expires (nothing would tell the app what it missed meanwhile).
    if let url, let lastToken = next.last?.token {
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

    // History off: nothing recorded, a clear error.
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
