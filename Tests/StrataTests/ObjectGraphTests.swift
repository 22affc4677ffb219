import Foundation
import Strata
import StrataConformance
import StrataMemory
import Testing

final class Shelf: ManagedObject {
  @Attribute(.unique) var label: String
  @Attribute var capacity: Int16 = 12
  @Attribute(.transient) var highlighted: Bool
  @Attribute var note: String?
  @Relationship(inverse: "shelf", deleteRule: .cascade) var items: Set<Item>
}

final class Item: ManagedObject {
  @Attribute var name: String
  @Attribute var weight: Int32
  @Attribute var fragile: Bool
  @Relationship(inverse: "items") var shelf: Shelf?
  var weightInTens: Int32 { weight / 10 * 10 }
  var shoutedName: String { name.uppercased() }
  var sturdy: Bool { !fragile }
  var heavyAndFragile: Bool { weight > 10 && fragile }
  var sameName: String { name }
}

@Suite("Object graph")
struct ObjectGraphTests {
  func container(_ model: ObjectModel, types: [ManagedObject.Type]) throws -> PersistentContainer {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let container = PersistentContainer(name: "Graph", model: model, types: types, registry: registry)
    container.storeDescriptions = [StoreDescription(type: .memory)]
    try container.loadPersistentStores()
    return container
  }

  @Test func theModelIsDerivedFromTheClasses() throws {
    let model = try ObjectModel(Shelf.self, Item.self)
    let shelf = try #require(model.entity(named: "Shelf"))
    #expect(shelf.attributes.map(\.name) == ["label", "capacity", "highlighted", "note"])
    #expect(shelf.attributes.map(\.type) == [.string, .int16, .bool, .string])
    #expect(shelf.attributes.map(\.isOptional) == [false, false, false, true])
    #expect(shelf.attribute(named: "capacity")?.defaultValue == .int(12))
    #expect(shelf.attribute(named: "highlighted")?.isTransient == true)
    #expect(shelf.uniquenessConstraints == [["label"]])
    let items = try #require(shelf.relationship(named: "items"))
    #expect(items.isToMany && items.destination == "Item" && items.inverse == "shelf" && items.deleteRule == .cascade)
    let item = try #require(model.entity(named: "Item"))
    #expect(item.relationship(named: "shelf")?.isToMany == false)
  }

  @Test func newObjectsStartWithDefaults() throws {
    let container = try container(try ObjectModel(Shelf.self, Item.self), types: [Shelf.self, Item.self])
    let shelf = Shelf(context: container.viewContext)
    #expect(shelf.capacity == 12)
    #expect(shelf.label == "")
    #expect(shelf.note == nil)
    #expect(shelf.items.isEmpty)
  }

  @Test func typedKeyPathsNameModelKeys() throws {
    let predicate: Where<Item> = \.shelf?.label == "A" && \.name != "x"
    #expect(predicate.predicate.keyPaths == ["shelf.label", "name"])
    #expect(QuerySort(\Shelf.capacity, ascending: false).keyPath == "capacity")
    #expect(QuerySort(\Item.sameName).keyPath == "name")
  }

  @Test func computedPropertiesAreRejectedNotMisread() throws {
    for key in [
      QuerySort(\Item.weightInTens).keyPath, QuerySort(\Item.shoutedName).keyPath, QuerySort(\Item.sturdy).keyPath,
      QuerySort(\Item.heavyAndFragile).keyPath,
    ] {
      #expect(key.hasPrefix("<"), "\(key)")
    }
    let container = try container(try ObjectModel(Shelf.self, Item.self), types: [Shelf.self, Item.self])
    expectStoreError(.invalidQuery) { try container.viewContext.fetch(FetchRequest<Item>(where: \.weightInTens == 10)) }
  }

  @Test func entitiesWithoutAClassWorkThroughKeyValueAccess() throws {
    let model = try ObjectModel(entities: [
      EntityDescription(
        name: "Note",
        attributes: [
          AttributeDescription(name: "text", type: .string), AttributeDescription(name: "stars", type: .int16, defaultValue: 3),
        ])
    ])
    let container = try container(model, types: [])
    let context = container.viewContext
    let note = try context.insertObject(entityName: "Note")
    try note.setValue("hello", forKey: "text")
    #expect(note.value(forKey: "stars") as? Int64 == 3)
    expectStoreError(.validation) { try note.setValue("many", forKey: "stars") }
    expectStoreError(.invalidQuery) { try context.insertObject(entityName: "Nope") }
    try context.save()
    let fetched = try context.fetch(
      FetchRequest<ManagedObject>(entityName: "Note", predicate: try QueryPredicate(format: "text == 'hello'")))
    #expect(fetched.count == 1)
    #expect(fetched.first === note)
    #expect(fetched.first?.value(forKey: "text") as? String == "hello")
  }

  @Test func transientValuesAreTrackedButNotStored() throws {
    let container = try container(try ObjectModel(Shelf.self, Item.self), types: [Shelf.self, Item.self])
    let context = container.viewContext
    let shelf = Shelf(context: context)
    shelf.label = "A"
    shelf.highlighted = true
    try context.save()
    #expect(shelf.highlighted)
    let other = container.newBackgroundContext()
    let copy = try other.performAndWait { try other.fetch(FetchRequest<Shelf>()).first?.highlighted }
    #expect(copy == false)
  }

  @Test func deletedObjectsElsewhereBecomeInaccessibleNotCrashes() throws {
    let container = try container(try ObjectModel(Shelf.self, Item.self), types: [Shelf.self, Item.self])
    let context = container.viewContext
    let shelf = Shelf(context: context)
    shelf.label = "A"
    try context.save()
    let id = shelf.objectID
    let other = container.newBackgroundContext()
    try other.performAndWait {
      other.delete(try other.existingObject(with: id))
      try other.save()
    }
    let fault = container.newBackgroundContext()
    let label = fault.performAndWait { () -> String in
      let object = fault.object(with: id) as? Shelf
      return object?.label ?? "missing"
    }
    #expect(label == "")
  }
}
