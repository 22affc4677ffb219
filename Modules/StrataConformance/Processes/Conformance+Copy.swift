import Foundation
import Strata
import StrataStoreKit
import Testing

/// The copy area's store: books (TAOCP by Knuth, published by Addison-Wesley; K&R by Kernighan and
/// Ritchie) in a model of descriptions, no classes.
final class CopyStore {
  static func model() throws -> ObjectModel {
    try ObjectModel(entities: [
      EntityDescription(
        name: "Book",
        attributes: [AttributeDescription(name: "title", type: .string), AttributeDescription(name: "year", type: .int32)],
        relationships: [
          RelationshipDescription(name: "authors", destination: "Author", inverse: "books", isToMany: true),
          RelationshipDescription(name: "publisher", destination: "Publisher", inverse: "books"),
        ]),
      EntityDescription(
        name: "Author", attributes: [AttributeDescription(name: "name", type: .string)],
        relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "authors", isToMany: true)]),
      EntityDescription(
        name: "Publisher", attributes: [AttributeDescription(name: "name", type: .string)],
        relationships: [RelationshipDescription(name: "books", destination: "Book", inverse: "publisher", isToMany: true)]),
    ])
  }

  static let expected = ["K&R 1978 Kernighan+Ritchie -", "TAOCP 1968 Knuth Addison-Wesley"]
  let model: ObjectModel
  let registry: StoreRegistry
  let source: StoreDescription
  let container: PersistentContainer
  let kandr: ManagedObject

  init(_ backend: ConformanceBackend) throws {
    model = try Self.model()
    registry = StoreRegistry([backend.factory])
    source = StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation())
    container = try PersistentContainer.loaded(name: "Copy", model: model, types: [], store: source, registry: registry)
    let context = container.viewContext
    func make(_ entity: String, _ values: [String: Any]) throws -> ManagedObject {
      let object = try context.insertObject(entityName: entity)
      for (key, value) in values { try object.setValue(value, forKey: key) }
      return object
    }
    let press = try make("Publisher", ["name": "Addison-Wesley"])
    let knuth = try make("Author", ["name": "Knuth"])
    let kernighan = try make("Author", ["name": "Kernighan"])
    let ritchie = try make("Author", ["name": "Ritchie"])
    let taocp = try make("Book", ["title": "TAOCP", "year": Int32(1968), "publisher": press])
    kandr = try make("Book", ["title": "K&R", "year": Int32(1978)])
    try taocp.setValue(Set([knuth]), forKey: "authors")
    try kandr.setValue(Set([kernighan, ritchie]), forKey: "authors")
    try context.save()
  }

  /// Each book as "title year authors publisher".
  static func books(_ context: ObjectContext) throws -> [String] {
    try context.fetch(FetchRequest<ManagedObject>(entityName: "Book", sortDescriptors: [QuerySort("title")])).map { book in
      let authors = (book.value(forKey: "authors") as? Set<ManagedObject> ?? [])
        .compactMap { $0.value(forKey: "name") as? String }.sorted().joined(separator: "+")
      let publisher = (book.value(forKey: "publisher") as? ManagedObject)?.value(forKey: "name") as? String ?? "-"
      let year = book.value(forKey: "year").map { "\($0)" } ?? "nil"
      return "\(book.value(forKey: "title") as? String ?? "?") \(year) \(authors) \(publisher)"
    }
  }
}

/// `PersistentContainer.migratePersistentStore(to:)`: every object, to-one link and many-to-many link
/// of a store copied into a new store of the backend, which the container uses from then on; the old
/// store left as it was; a destination that holds objects refused.
enum CopyCases {
  /// Every object, to-one and many-to-many link is copied; the container uses the copy from then on.
  static func copiesHoldEveryObjectAndLink(_ backend: ConformanceBackend) async throws {
    let s = try CopyStore(backend)
    let container = s.container
    defer { container.close() }
    let (expected, books) = (CopyStore.expected, CopyStore.books)
    let oldIdentifier = container.storeIdentifier
    let before = try books(container.viewContext)
    #expect(before == expected, "\(before)")
    let destination = StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation())
    let copied = try container.migratePersistentStore(to: destination)
    #expect(copied == 6)
    #expect(container.storeDescriptions == [destination])
    if backend.location != nil { #expect(container.storeIdentifier != oldIdentifier) }
    let fresh = container.newBackgroundContext()
    let after = try fresh.performAndWait { try books(fresh) }
    #expect(after == expected, "\(after)")
    let press2 = try fresh.performAndWait {
      try fresh.fetch(FetchRequest<ManagedObject>(entityName: "Publisher", sortDescriptors: [])).first
    }
    #expect((press2?.value(forKey: "books") as? Set<ManagedObject>)?.count == 1)
  }

  /// A context that fired a fault before the copy fires the next ones in the new store.
  static func faultsAfterACopyFireInTheNewStore(_ backend: ConformanceBackend) async throws {
    let s = try CopyStore(backend)
    let container = s.container
    defer { container.close() }
    let probe = container.newBackgroundContext()
    let kandrID = s.kandr.objectID
    #expect(probe.performAndWait { probe.object(with: kandrID).value(forKey: "title") as? String } == "K&R")
    _ = try container.migratePersistentStore(
      to: StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation()))
    let fresh = container.newBackgroundContext()
    let copiedKandR = try fresh.performAndWait {
      try fresh.fetch(FetchRequest<ManagedObject>(entityName: "Book", predicate: try QueryPredicate(format: "title == 'K&R'")))
        .first?.objectID
    }
    let copiedID = try #require(copiedKandR)
    #expect(probe.performAndWait { probe.object(with: copiedID).value(forKey: "title") as? String } == "K&R")
  }

  /// The destination holds objects after a copy: copying into it again is refused, and the refusing
  /// container keeps its loaded store, which is as it was.
  static func anOccupiedDestinationIsRefused(_ backend: ConformanceBackend) async throws {
    let s = try CopyStore(backend)
    defer { s.container.close() }
    let (model, source, registry, expected, books) = (s.model, s.source, s.registry, CopyStore.expected, CopyStore.books)
    let destination = StoreDescription(type: backend.factory.storeType, url: try backend.makeLocation())
    _ = try s.container.migratePersistentStore(to: destination)
    if backend.location != nil {
      let again = try PersistentContainer.loaded(name: "Copy", model: model, types: [], store: source, registry: registry)
      defer { again.close() }
      #expect(try books(again.viewContext) == expected, "the old store is as it was")
      expectStoreError(.misuse) { try again.migratePersistentStore(to: destination) }
      #expect(again.storeDescriptions == [source], "a refused copy keeps the loaded store")
    }
  }
}
