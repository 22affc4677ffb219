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

extension Conformance {
  /// Derived attributes: zero values before the first save, values computed by the store on save, and
  /// recomputed when what they read changes — the object's own attributes, an item inserted, deleted or
  /// moved (both lists), a list renamed, a many-to-many link added — through a context, a raw change set, batch update and batch
  /// delete; stored, so fresh contexts, predicates and sorts see them; checked when the model is built;
  /// read-only for the app.
  public static func derivedAttributes(_ backend: ConformanceBackend) async throws {
    let types: [ManagedObject.Type] = [TodoList.self, TodoItem.self, TodoTag.self]
    let url = try backend.makeLocation()
    let container = try backend.container(at: url, types: types)
    let context = container.viewContext
    func fresh() throws -> ObjectContext { try backend.freshContext(container, url, types: types) }
    func list(named name: String, in context: ObjectContext) throws -> TodoList {
      try #require(try context.fetch(FetchRequest<TodoList>(format: "name == %@", name)).first)
    }
    func item(_ title: String, _ price: Double, _ list: TodoList) -> TodoItem {
      let item = TodoItem(context: context)
      item.title = title
      item.price = price
      item.list = list
      return item
    }

    // Before the first save: each type's zero value (nil when optional).
    let groceries = TodoList(context: context)
    groceries.name = "Épicerie Fine"
    let hardware = TodoList(context: context)
    hardware.name = "Hardware"
    let milk = item("Milk", 1.5, groceries)
    let bread = item("BREAD", 2.25, groceries)
    let nails = item("Nails", 4, hardware)
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

    // Stored: a fresh context reads them, predicates and sorts use them.
    let reader = try fresh()
    let storedGroceries = try list(named: "Épicerie Fine", in: reader)
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

    // The object's own attribute: recomputed, and now() stamped again.
    let firstStamp = bread.stamped
    bread.title = "Sourdough"
    try context.save()
    #expect(bread.titleLower == "sourdough")
    #expect(bread.stamped >= firstStamp)

    // An item's price: its list is not part of the save, yet shows the new total.
    milk.price = 2.5
    #expect(!groceries.hasChanges)
    try context.save()
    #expect(groceries.total == 4.75)
    #expect(try list(named: "Épicerie Fine", in: try fresh()).total == 4.75)

    // A list renamed: every item copies the new name; their now() stamps stay (they were not saved).
    let nailsStamp = nails.stamped
    hardware.name = "Tools"
    try context.save()
    #expect(nails.listName == "Tools" && hardware.upper == "TOOLS")
    #expect(nails.stamped == nailsStamp)
    #expect(try fresh().fetch(FetchRequest<TodoItem>(format: "listName == 'Tools'")).map(\.title) == ["Nails"])

    // An item inserted, then another deleted: the list's count and total follow.
    let screws = item("Screws", 3, hardware)
    try context.save()
    #expect(hardware.itemCount == 2 && hardware.total == 7 && screws.listName == "Tools")
    context.delete(screws)
    try context.save()
    #expect(hardware.itemCount == 1 && hardware.total == 4)
    #expect(try list(named: "Tools", in: try fresh()).itemCount == 1)

    // Many-to-many: a tag counts the items linked to it.
    let urgent = TodoTag(context: context)
    urgent.label = "urgent"
    nails.tags = [urgent]
    milk.tags = [urgent]
    try context.save()
    #expect(urgent.useCount == 2)
    func useCount() throws -> Int32? { try fresh().fetch(FetchRequest<TodoTag>()).first?.useCount }

    // An item moved by a raw change set that names only the item: the store recomputes both lists and
    // reports them.
    let store = try #require(container.persistentStore)
    let row = try #require(try store.snapshots(for: [bread.objectID], generation: nil).first)
    let moved = try store.save(
      ChangeSet(updated: [
        ObjectChange(
          objectID: bread.objectID, attributes: row.attributes, toOne: [hardware.objectID], expectedVersion: row.version,
          changedKeys: ["list"])
      ]))
    #expect(moved.storedSnapshots[groceries.objectID] != nil && moved.storedSnapshots[hardware.objectID] != nil)
    let afterMove = try fresh()
    let oldList = try list(named: "Épicerie Fine", in: afterMove)
    let newList = try list(named: "Tools", in: afterMove)
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
    #expect(try useCount() == 3)
    context.refreshAllObjects()
    #expect(groceries.itemCount == 1 && hardware.itemCount == 2)

    // Moved through a context: the old list and the new one.
    milk.list = hardware
    try context.save()
    #expect(groceries.itemCount == 0 && groceries.total == 0 && hardware.itemCount == 3 && hardware.total == 8.75)
    #expect(milk.listName == "Tools")
    #expect(try list(named: "Épicerie Fine", in: try fresh()).itemCount == 0)

    // Batch update of what a derivation reads: the lists are recomputed and reported for merging.
    let doubled = BatchRequest.update(
      entityName: "TodoItem", predicate: try QueryPredicate(format: "title == 'Nails'"),
      propertiesToUpdate: ["price": try QueryExpression(format: "price * 2")])
    let doubledResult = try context.execute(doubled)
    #expect(doubledResult.count == 1 && doubledResult.recomputedObjectIDs == [hardware.objectID])
    #expect(try list(named: "Tools", in: try fresh()).total == 12.75)
    ObjectContext.mergeChanges(fromRemoteContextSave: doubledResult.changes(of: doubled), into: [context])
    #expect(hardware.total == 12.75)
    _ = try context.execute(
      .update(
        entityName: "TodoItem", predicate: try QueryPredicate(format: "title == 'Milk'"),
        propertiesToUpdate: ["title": .constant("Oat Milk")]))
    #expect(try fresh().fetch(FetchRequest<TodoItem>(format: "titleLower == 'oat milk'")).count == 1)
    _ = try context.execute(
      .update(
        entityName: "TodoList", predicate: try QueryPredicate(format: "name == 'Tools'"),
        propertiesToUpdate: ["name": .constant("Atelier Réparé")]))
    let renamed = try fresh()
    #expect(try list(named: "Atelier Réparé", in: renamed).nameKey == "atelier repare")
    #expect(try renamed.fetch(FetchRequest<TodoItem>(format: "listName == 'Atelier Réparé'")).count == 3)
    do {
      _ = try context.execute(
        .update(entityName: "TodoList", predicate: nil, propertiesToUpdate: ["itemCount": .constant(9)]))
      Issue.record("a batch update set a derived attribute")
    } catch let error as StoreError {
      #expect(error.code == .invalidQuery && error.entity == "TodoList" && error.key == "itemCount")
    }

    // Batch delete: the lists of the deleted items.
    let cheap = BatchRequest.delete(entityName: "TodoItem", predicate: try QueryPredicate(format: "price < 3"))
    let deleted = try context.execute(cheap)
    #expect(deleted.count == 2 && Set(deleted.recomputedObjectIDs) == [hardware.objectID, urgent.objectID])
    let afterDelete = try list(named: "Atelier Réparé", in: try fresh())
    #expect(afterDelete.itemCount == 1 && afterDelete.total == 8)
    #expect(try useCount() == 1)

    // Read-only for the app.
    context.refreshAllObjects()
    do {
      try hardware.setValue(Int64(5), forKey: "itemCount")
      Issue.record("setValue changed a derived attribute")
    } catch let error as StoreError {
      #expect(error.code == .misuse && error.entity == "TodoList" && error.key == "itemCount")
    }
    #expect(hardware.itemCount == 1 && !hardware.hasChanges)

    try badDerivations()
  }

  /// Derivations the model refuses when it is built, each `.invalidModel` naming the entity and key.
  private static func badDerivations() throws {
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
