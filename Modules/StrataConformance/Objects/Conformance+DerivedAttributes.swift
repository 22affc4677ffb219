import Foundation
import Strata
import StrataStoreKit
import Testing

/// A list of the derived-attributes area: counts and sums over its items, and folded forms of its name.
final class TodoList: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "list", deleteRule: .cascade) var items: Set<TodoItem>
  @Derived("items.@count") var itemCount: Int64
  @Derived("items.price.@sum") var total: Double
  @Derived("canonical:(name)") var nameKey: String
  @Derived("uppercase:(name)") var upper: String
}

/// An item of the derived-attributes area: its list's name copied, its title lowercased, its save time.
final class TodoItem: ManagedObject {
  @Attribute var title: String
  @Attribute var price: Double
  @Relationship(inverse: "items") var list: TodoList?
  @Relationship(inverse: "items") var tags: Set<TodoTag>
  @Derived("list.name") var listName: String?
  @Derived("lowercase:(title)") var titleLower: String
  @Derived("now()") var stamped: Date
}

/// A tag of the derived-attributes area (many-to-many with items): how many items carry it.
final class TodoTag: ManagedObject {
  @Attribute var label: String
  @Relationship(inverse: "tags") var items: Set<TodoItem>
  @Derived("items.@count") var useCount: Int32
}

/// The derived-attributes area's starting store: lists "Épicerie Fine" (Milk 1.5, BREAD 2.25) and
/// "Hardware" (Nails 4), saved unless told otherwise; `urgent` is a tag once ``applyEarlierEdits()`` made it.
final class DerivedStore {
  static let types: [ManagedObject.Type] = [TodoList.self, TodoItem.self, TodoTag.self]
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let context: ObjectContext
  let groceries: TodoList
  let hardware: TodoList
  let milk: TodoItem
  let bread: TodoItem
  let nails: TodoItem
  var urgent: TodoTag?

  init(_ backend: ConformanceBackend, save: Bool = true) throws {
    self.backend = backend
    url = try backend.makeLocation()
    container = try backend.container(at: url, types: Self.types)
    context = container.viewContext
    groceries = TodoList(context: context)
    groceries.name = "Épicerie Fine"
    hardware = TodoList(context: context)
    hardware.name = "Hardware"
    milk = TodoItem(context: context)
    bread = TodoItem(context: context)
    nails = TodoItem(context: context)
    for (item, title, price, list) in [
      (milk, "Milk", 1.5, groceries), (bread, "BREAD", 2.25, groceries), (nails, "Nails", 4, hardware),
    ] {
      item.title = title
      item.price = price
      item.list = list
    }
    if save { try context.save() }
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url, types: Self.types) }

  func list(named name: String, in context: ObjectContext) throws -> TodoList {
    try #require(try context.fetch(FetchRequest<TodoList>(format: "name == %@", name)).first)
  }

  func useCount() throws -> Int32? { try fresh().fetch(FetchRequest<TodoTag>()).first?.useCount }

  /// BREAD retitled "Sourdough", Milk at 2.5, "Hardware" renamed "Tools", Nails and Milk tagged `urgent`.
  func applyEarlierEdits() throws {
    bread.title = "Sourdough"
    milk.price = 2.5
    hardware.name = "Tools"
    let urgent = TodoTag(context: context)
    urgent.label = "urgent"
    nails.tags = [urgent]
    milk.tags = [urgent]
    self.urgent = urgent
    try context.save()
  }
}

/// Derived attributes: zero values before the first save, values computed by the store on save, and
/// recomputed when what they read changes — the object's own attributes, an item inserted, deleted or
/// moved (both lists), a list renamed, a many-to-many link added — through a context, a raw change set,
/// batch update and batch delete; stored, so fresh contexts, predicates and sorts see them; checked when
/// the model is built; read-only for the app.
enum DerivedAttributeCases {
  /// Before the first save each derived attribute holds its type's zero value (nil when optional); after
  /// it, what the store computed.
  static func computedOnTheFirstSave(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend, save: false)
    let (context, groceries, hardware, milk, bread, nails) = (s.context, s.groceries, s.hardware, s.milk, s.bread, s.nails)
    #expect(groceries.itemCount == 0 && groceries.total == 0 && groceries.nameKey == "" && groceries.upper == "")
    #expect(milk.listName == nil && milk.titleLower == "" && milk.stamped == Date(timeIntervalSince1970: 0))

    // After the save: what the store computed.
    let beforeSave = Date()
    try context.save()
    let afterSave = Date()
    #expect(groceries.itemCount == 2 && groceries.total == 3.75)
    #expect(groceries.nameKey == "epicerie fine" && groceries.upper == "ÉPICERIE FINE")
    #expect(hardware.itemCount == 1 && hardware.total == 4 && hardware.nameKey == "hardware")
    #expect(milk.listName == "Épicerie Fine" && nails.listName == "Hardware")
    #expect(bread.titleLower == "bread" && milk.titleLower == "milk")
    #expect(milk.stamped >= beforeSave && milk.stamped <= afterSave)
    #expect(!groceries.hasChanges && !milk.hasChanges)

  }

  /// Stored: a fresh context reads them, predicates and sorts use them.
  static func storedForPredicatesAndSorts(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    let reader = try s.fresh()
    let storedGroceries = try s.list(named: "Épicerie Fine", in: reader)
    #expect(storedGroceries.itemCount == 2 && storedGroceries.total == 3.75 && storedGroceries.upper == "ÉPICERIE FINE")
    #expect(try reader.fetch(FetchRequest<TodoList>(format: "itemCount == 2")).map(\.name) == ["Épicerie Fine"])
    #expect(try reader.fetch(FetchRequest<TodoList>(where: \.upper == "HARDWARE")).map(\.name) == ["Hardware"])
    #expect(try reader.fetch(FetchRequest<TodoList>(format: "nameKey BEGINSWITH 'epicerie'")).map(\.name) == ["Épicerie Fine"])
    #expect(try reader.fetch(FetchRequest<TodoItem>(format: "listName == 'Hardware'")).map(\.title) == ["Nails"])
    #expect(try reader.fetch(FetchRequest<TodoItem>(format: "titleLower == 'bread'")).map(\.title) == ["BREAD"])
    let byTotal = FetchRequest<TodoList>(sortDescriptors: [QuerySort("total", ascending: false)])
    #expect(try reader.fetch(byTotal).map(\.name) == ["Hardware", "Épicerie Fine"])
    let byTitle = FetchRequest<TodoItem>(sortDescriptors: [QuerySort("titleLower")])
    #expect(try reader.fetch(byTitle).map(\.title) == ["BREAD", "Milk", "Nails"])

  }

  /// The object's own attribute: recomputed, and now() stamped again.
  static func ownAttributesRecomputeAndRestamp(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    let bread = s.bread
    let firstStamp = bread.stamped
    bread.title = "Sourdough"
    try s.context.save()
    #expect(bread.titleLower == "sourdough")
    #expect(bread.stamped >= firstStamp)

  }

  /// An item's price: its list is not part of the save, yet shows the new total.
  static func anItemsPriceReachesItsList(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    s.milk.price = 2.5
    #expect(!s.groceries.hasChanges)
    try s.context.save()
    #expect(s.groceries.total == 4.75)
    #expect(try s.list(named: "Épicerie Fine", in: try s.fresh()).total == 4.75)
  }

  /// A list renamed: every item copies the new name; their now() stamps stay (they were not saved).
  static func aRenamedListReachesItsItems(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    let (nails, hardware) = (s.nails, s.hardware)
    let nailsStamp = nails.stamped
    hardware.name = "Tools"
    try s.context.save()
    #expect(nails.listName == "Tools" && hardware.upper == "TOOLS")
    #expect(nails.stamped == nailsStamp)
    #expect(try s.fresh().fetch(FetchRequest<TodoItem>(format: "listName == 'Tools'")).map(\.title) == ["Nails"])
  }

  /// An item inserted, then another deleted: the list's count and total follow; a many-to-many tag counts
  /// the items linked to it.
  static func insertsDeletesAndLinksAreCounted(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    let (context, hardware) = (s.context, s.hardware)
    let screws = TodoItem(context: context)
    screws.title = "Screws"
    screws.price = 3
    screws.list = hardware
    try context.save()
    #expect(hardware.itemCount == 2 && hardware.total == 7 && screws.listName == "Hardware")
    context.delete(screws)
    try context.save()
    #expect(hardware.itemCount == 1 && hardware.total == 4)
    #expect(try s.list(named: "Hardware", in: try s.fresh()).itemCount == 1)
    try s.applyEarlierEdits()
    #expect(s.urgent?.useCount == 2)
  }

  /// An item moved by a raw change set that names only the item: the store recomputes both lists and
  /// reports them; a link added by a raw change set that names neither object: the tag is recomputed and
  /// reported; an item moved through a context: the old list and the new one.
  static func movesAndLinksRecomputeBothSides(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    try s.applyEarlierEdits()
    let (context, groceries, hardware, milk, bread) = (s.context, s.groceries, s.hardware, s.milk, s.bread)
    let urgent = try #require(s.urgent)
    let store = try #require(s.container.persistentStore)
    let row = try #require(try store.snapshots(for: [bread.objectID], generation: nil).first)
    let moved = try store.save(
      ChangeSet(updated: [
        ObjectChange(
          objectID: bread.objectID, attributes: row.attributes, toOne: [hardware.objectID], expectedVersion: row.version,
          changedKeys: ["list"])
      ]))
    #expect(moved.storedSnapshots[groceries.objectID] != nil && moved.storedSnapshots[hardware.objectID] != nil)
    let afterMove = try s.fresh()
    let oldList = try s.list(named: "Épicerie Fine", in: afterMove)
    let newList = try s.list(named: "Tools", in: afterMove)
    #expect(oldList.itemCount == 1 && oldList.total == 2.5)
    #expect(newList.itemCount == 2 && newList.total == 6.25)
    #expect(try afterMove.fetch(FetchRequest<TodoItem>(format: "title == 'Sourdough'")).first?.listName == "Tools")

    // A link added by a raw change set that names neither object: the tag is recomputed and reported.
    let linked = try store.save(
      ChangeSet(linkChanges: [
        LinkChange(
          entityName: "TodoItem", relationship: "tags", source: bread.objectID, target: urgent.objectID, isInsertion: true)
      ]))
    #expect(linked.storedSnapshots[urgent.objectID]?.objectID == urgent.objectID)
    #expect(try s.useCount() == 3)
    context.refreshAllObjects()
    #expect(groceries.itemCount == 1 && hardware.itemCount == 2)

    // Moved through a context: the old list and the new one.
    milk.list = hardware
    try context.save()
    #expect(groceries.itemCount == 0 && groceries.total == 0 && hardware.itemCount == 3 && hardware.total == 8.75)
    #expect(milk.listName == "Tools")
    #expect(try s.list(named: "Épicerie Fine", in: try s.fresh()).itemCount == 0)

  }

  /// Batch update of what a derivation reads: the lists are recomputed and reported for merging; a batch
  /// update of a derived attribute itself is refused.
  static func batchUpdatesRecompute(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    try s.applyEarlierEdits()
    let (context, hardware) = (s.context, s.hardware)
    s.bread.list = hardware
    s.milk.list = hardware
    try context.save()
    let doubled = BatchRequest.update(
      entityName: "TodoItem", predicate: try QueryPredicate(format: "title == 'Nails'"),
      propertiesToUpdate: ["price": try QueryExpression(format: "price * 2")])
    let doubledResult = try context.execute(doubled)
    #expect(doubledResult.count == 1 && doubledResult.recomputedObjectIDs == [hardware.objectID])
    #expect(try s.list(named: "Tools", in: try s.fresh()).total == 12.75)
    ObjectContext.mergeChanges(fromRemoteContextSave: doubledResult.changes(of: doubled), into: [context])
    #expect(hardware.total == 12.75)
    _ = try context.execute(
      .update(
        entityName: "TodoItem", predicate: try QueryPredicate(format: "title == 'Milk'"),
        propertiesToUpdate: ["title": .constant("Oat Milk")]))
    #expect(try s.fresh().fetch(FetchRequest<TodoItem>(format: "titleLower == 'oat milk'")).count == 1)
    _ = try context.execute(
      .update(
        entityName: "TodoList", predicate: try QueryPredicate(format: "name == 'Tools'"),
        propertiesToUpdate: ["name": .constant("Atelier Réparé")]))
    let renamed = try s.fresh()
    #expect(try s.list(named: "Atelier Réparé", in: renamed).nameKey == "atelier repare")
    #expect(try renamed.fetch(FetchRequest<TodoItem>(format: "listName == 'Atelier Réparé'")).count == 3)
    do {
      _ = try context.execute(
        .update(entityName: "TodoList", predicate: nil, propertiesToUpdate: ["itemCount": .constant(9)]))
      Issue.record("a batch update set a derived attribute")
    } catch let error as StoreError {
      #expect(error.code == .invalidQuery && error.entity == "TodoList" && error.key == "itemCount")
    }

  }

  /// Batch delete: the lists and tags of the deleted items are recomputed and reported.
  static func batchDeletesRecompute(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    try s.applyEarlierEdits()
    let (context, hardware) = (s.context, s.hardware)
    let urgent = try #require(s.urgent)
    s.bread.list = hardware
    s.milk.list = hardware
    try context.save()
    let cheap = BatchRequest.delete(entityName: "TodoItem", predicate: try QueryPredicate(format: "price < 3"))
    let deleted = try context.execute(cheap)
    #expect(deleted.count == 2 && Set(deleted.recomputedObjectIDs) == [hardware.objectID, urgent.objectID])
    let afterDelete = try s.list(named: "Tools", in: try s.fresh())
    #expect(afterDelete.itemCount == 1 && afterDelete.total == 4)
    #expect(try s.useCount() == 1)
  }

  /// Read-only for the app: `setValue` of a derived attribute is a misuse and changes nothing.
  static func derivedAttributesAreReadOnly(_ backend: ConformanceBackend) async throws {
    let s = try DerivedStore(backend)
    let hardware = s.hardware
    s.context.refreshAllObjects()
    do {
      try hardware.setValue(Int64(5), forKey: "itemCount")
      Issue.record("setValue changed a derived attribute")
    } catch let error as StoreError {
      #expect(error.code == .misuse && error.entity == "TodoList" && error.key == "itemCount")
    }
    #expect(hardware.itemCount == 1 && !hardware.hasChanges)
  }

  /// Derivations the model refuses when it is built, each `.invalidModel` naming the entity and key.
  static func theModelRefusesBadDerivations(_ backend: ConformanceBackend) async throws {
    func model(_ derivation: String, type: AttributeType = .string, isTransient: Bool = false) throws -> ObjectModel {
      let list = EntityDescription(
        name: "List",
        attributes: [
          AttributeDescription(name: "name", type: .string),
          AttributeDescription(name: "shout", type: .string, derivation: "uppercase:(name)"),
          AttributeDescription(name: "derived", type: type, isTransient: isTransient, derivation: derivation),
        ],
        relationships: [
          RelationshipDescription(name: "items", destination: "Item", inverse: "list", isToMany: true),
          RelationshipDescription(name: "featured", destination: "Item"),
        ])
      let item = EntityDescription(
        name: "Item",
        attributes: [AttributeDescription(name: "title", type: .string), AttributeDescription(name: "price", type: .double)],
        relationships: [RelationshipDescription(name: "list", destination: "List", inverse: "items")])
      return try ObjectModel(entities: [list, item])
    }
    #expect(try model("items.@count", type: .int16).derivedAttributes.derivations(of: "List").count == 2)
    let bad: [(String, AttributeType, Bool)] = [
      ("lowercase:(", .string, false),  // does not parse
      ("lowercase:(nope)", .string, false),  // unknown key
      ("random()", .double, false),  // unsupported function
      ("name + 'x'", .string, false),  // unsupported form
      ("items.title", .string, false),  // a collection
      ("items.@count", .string, false),  // a count is not a string
      ("lowercase:(name)", .int64, false),  // a string is not a number
      ("lowercase:(price)", .string, false),  // no such attribute on List
      ("featured.title", .string, false),  // a relationship without an inverse
      ("lowercase:(shout)", .string, false),  // reads a derived attribute
      ("name", .string, true),  // transient
    ]
    for (derivation, type, isTransient) in bad {
      do {
        _ = try model(derivation, type: type, isTransient: isTransient)
        Issue.record("the derivation '\(derivation)' (\(type.rawValue)) was accepted")
      } catch let error as StoreError {
        #expect(
          error.code == .invalidModel && error.entity == "List" && error.key == "derived", "\(derivation): \(error.message)")
      }
    }
  }
}
