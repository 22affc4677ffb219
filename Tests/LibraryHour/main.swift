import Foundation
import Strata
import StrataMemory
import StrataSQLite

// A new user's first hour with the library, as an async executable written against the public API alone:
// async `main` is the Swift 6 default for a command-line tool or a server. Each check prints `ok NAME` or
// `FAIL NAME: why`; the exit status is the number of failures. CLITests runs it on every backend it names.

final class Author: ManagedObject {
  @Attribute(.unique) var name: String
  @Relationship(inverse: "author", deleteRule: .cascade) var books: Set<Book>
}

final class Book: ManagedObject {
  @Attribute var title: String
  @Relationship(inverse: "books") var author: Author?
}

struct CheckFailure: Error, CustomStringConvertible {
  let description: String
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
  if !condition { throw CheckFailure(description: message()) }
}

let arguments = CommandLine.arguments.dropFirst()
let backend = arguments.first ?? "sqlite"
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("library-hour-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

func makeContainer(_ name: String) throws -> PersistentContainer {
  let registry = StoreRegistry([SQLiteStoreFactory(), MemoryStoreFactory()])
  let container = try PersistentContainer(name: name, types: Author.self, Book.self, registry: registry)
  container.storeDescriptions = [
    backend == "memory"
      ? StoreDescription(type: .memory)
      : StoreDescription(type: .sqlite, url: directory.appendingPathComponent("\(name).sqlite"))
  ]
  try container.loadPersistentStores()
  return container
}

var failures = 0
@MainActor func check(_ name: String, _ body: () async throws -> Void) async {
  do {
    try await body()
    print("ok \(name)")
  } catch {
    failures += 1
    print("FAIL \(name): \(error)")
  }
}

await check("view context after performBackgroundTask") {
  let container = try makeContainer("AfterBackgroundTask")
  try await container.performBackgroundTask { context in
    let author = Author(context: context)
    author.name = "Le Guin"
    try context.save()
  }
  let count = try container.viewContext.performAndWait {
    try container.viewContext.count(for: FetchRequest<Author>())
  }
  try expect(count == 1, "the view context counts \(count) authors, not 1")
}

await check("view context after Task.sleep") {
  let container = try makeContainer("AfterSleep")
  try await Task.sleep(for: .milliseconds(10))
  let view = container.viewContext
  try view.performAndWait {
    let author = Author(context: view)
    author.name = "Jemisin"
    try view.save()
  }
  ObjectContext.mergeChanges(fromRemoteContextSave: ContextDidSave(contextName: "elsewhere"), into: [view])
  let names = try view.performAndWait { try view.fetch(FetchRequest<Author>()).map(\.name) }
  try expect(names == ["Jemisin"], "the view context holds \(names)")
}

await check("merged batch delete leaves no deleted objects in loaded relationships") {
  let container = try makeContainer("BatchDelete")
  let view = container.viewContext
  let kept = 3
  let deleted = 1_000
  let author = try view.performAndWait {
    let author = Author(context: view)
    author.name = "Pratchett"
    for index in 0..<(kept + deleted) {
      let book = Book(context: view)
      book.title = index < kept ? "Kept \(index)" : "Draft \(index)"
      book.author = author
    }
    try view.save()
    return author
  }
  try expect(author.books.count == kept + deleted, "the author holds \(author.books.count) books before the delete")
  let request = BatchRequest.delete(entityName: "Book", predicate: try QueryPredicate(format: "title BEGINSWITH 'Draft'"))
  let result = try await container.performBackgroundTask { try $0.execute(request) }
  ObjectContext.mergeChanges(fromRemoteContextSave: result.changes(of: request), into: [view])
  try view.performAndWait {
    let counted = try view.count(for: FetchRequest<Book>())
    try expect(counted == kept, "count(for:) says \(counted)")
    try expect(author.books.count == kept, "author.books holds \(author.books.count) books after the merge, not \(kept)")
    let refetched = try view.fetch(FetchRequest<Author>())
    try expect(refetched.first?.books.count == kept, "a refetched author holds \(refetched.first?.books.count ?? -1) books")
    try expect(author.books.allSatisfy { !$0.isDeleted && $0.title.hasPrefix("Kept") }, "a deleted book is still reachable")
  }
}

await check("a fault whose object another context deleted") {
  let container = try makeContainer("DeadFault")
  let view = container.viewContext
  let id = try view.performAndWait {
    let book = Book(context: view)
    book.title = "Gone"
    try view.save()
    return book.objectID
  }
  let stale = container.newBackgroundContext()
  let fault = stale.performAndWait { stale.object(with: id) as? Book }
  try await container.performBackgroundTask { context in
    context.delete(try context.existingObject(with: id))
    try context.save()
  }
  try stale.performAndWait {
    guard let fault else { throw CheckFailure(description: "object(with:) gave no Book") }
    do {
      try fault.fulfill()
      throw CheckFailure(description: "fulfill() of a dead fault did not throw; title reads \(fault.title.debugDescription)")
    } catch let error as StoreError {
      try expect(error.code == .notFound, "fulfill() threw \(error)")
    }
    try expect(fault.isDeleted, "the dead fault does not report isDeleted")
    do {
      _ = try stale.existingObject(with: id)
      throw CheckFailure(description: "existingObject(with:) found a deleted object")
    } catch let error as StoreError {
      try expect(error.code == .notFound, "existingObject(with:) threw \(error)")
    }
  }
}

await check("fulfill() of live objects") {
  let container = try makeContainer("Fulfill")
  let view = container.viewContext
  let id = try view.performAndWait {
    let book = Book(context: view)
    book.title = "Here"
    try book.fulfill()
    try view.save()
    return book.objectID
  }
  let other = container.newBackgroundContext()
  try other.performAndWait {
    let fault = other.object(with: id)
    try expect(fault.isFault, "object(with:) did not give a fault")
    try fault.fulfill()
    try expect(!fault.isFault, "fulfill() left the object a fault")
    try expect((fault as? Book)?.title == "Here", "fulfill() loaded \((fault as? Book)?.title ?? "nil")")
    other.delete(fault)
    try fault.fulfill()
  }
}

await check("rollback of an inserted object") {
  let container = try makeContainer("Rollback")
  let view = container.viewContext
  try view.performAndWait {
    let author = Author(context: view)
    author.name = "Butler"
    view.rollback()
    try expect(!author.isDeleted, "a rolled-back insertion reports isDeleted")
    try expect(!author.isInserted, "a rolled-back insertion reports isInserted")
    try expect(author.managedObjectContext == nil, "a rolled-back insertion keeps its context")
    try expect(!view.hasChanges, "the context still has changes")
  }
}

exit(Int32(min(failures, 100)))
