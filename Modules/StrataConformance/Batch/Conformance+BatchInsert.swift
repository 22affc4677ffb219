import Foundation
import Strata
import StrataStoreKit
import Testing

/// A gadget of the batch-insert area: a unique SKU, a default, optionals, a to-one and a derived key.
final class Gadget: ManagedObject {
  @Attribute(.unique) var sku: String
  @Attribute var name: String
  @Attribute var stock: Int16 = 5
  @Attribute var weight: Int32?
  @Attribute var note: String?
  @Attribute var rating: Float?
  @Relationship(inverse: "gadgets") var shelf: GadgetShelf?
  @Derived("canonical:(name)") var nameKey: String
}

/// A shelf of the batch-insert area, counting its gadgets.
final class GadgetShelf: ManagedObject {
  @Attribute var label: String
  @Relationship(inverse: "shelf") var gadgets: Set<Gadget>
  @Relationship(inverse: "shelf") var parts: Set<Part>
  @Derived("gadgets.@count") var gadgetCount: Int64
}

/// A part of the batch-insert area: unique, no derived attributes (SQLite upserts it natively).
final class Part: ManagedObject {
  @Attribute(.unique) var code: String
  @Attribute var qty: Int16
  @Attribute var size: Int32 = 2
  @Attribute var label: String?
  @Attribute var ratio: Float = 1.5
  @Relationship(inverse: "parts") var shelf: GadgetShelf?
}

/// A batch-insert row without a uniqueness constraint.
final class LogLine: ManagedObject {
  @Attribute var text: String
  @Attribute var level: Int16 = 1
}

/// The batch-insert area's starting store: shelf A holding gadget g1 ("Old", stock 2, weight 7, note
/// "keep") and part p1 ("bolt", qty 1); `live` holds g1 (`held`) as a context of another reader would.
final class BatchInsertStore {
  static let types: [ManagedObject.Type] = [Gadget.self, GadgetShelf.self, Part.self, LogLine.self]
  let backend: ConformanceBackend
  let container: PersistentContainer
  let url: URL?
  let seed: ObjectContext
  let live: ObjectContext
  let held: Gadget
  let bolt: Part
  let store: any PersistentStore
  /// Objects keep their context alive only while the caller holds it: each check reads from `reader`.
  private var reader: ObjectContext?

  init(_ backend: ConformanceBackend) throws {
    self.backend = backend
    (container, url) = try backend.container(types: Self.types)
    seed = container.viewContext
    let shelf = GadgetShelf(context: seed)
    shelf.label = "A"
    let old = Gadget(context: seed)
    old.sku = "g1"
    old.name = "Old"
    old.stock = 2
    old.weight = 7
    old.note = "keep"
    old.shelf = shelf
    bolt = Part(context: seed)
    bolt.code = "p1"
    bolt.qty = 1
    bolt.label = "bolt"
    bolt.shelf = shelf
    try seed.save()
    live = try backend.freshContext(container, url, types: Self.types)
    store = try #require(container.persistentStore)
    held = try #require(try live.fetch(FetchRequest<Gadget>(format: "sku == 'g1'")).first)
    #expect(held.name == "Old")
  }

  func fresh() throws -> ObjectContext { try backend.freshContext(container, url, types: Self.types) }

  func gadget(_ sku: String) throws -> Gadget? {
    let context = try fresh()
    reader = context
    return try context.fetch(FetchRequest<Gadget>(format: "sku == %@", sku)).first
  }
}

/// Batch insert: rows from dictionaries, a dictionary handler and an object handler; result types;
/// upserts on a uniqueness constraint (given attributes updated, others and relationships kept; the later
/// of two rows with one key wins); defaults; derived attributes computed; every bad row refused with the
/// store unchanged; the store's change stream and merging the result into a live context.
enum BatchInsertCases {
  /// Objects made in a context start at their attributes' defaults, each with values of its own.
  static func newObjectsStartAtDefaults(_ backend: ConformanceBackend) async throws {
    let (container, _) = try backend.container(types: BatchInsertStore.types)
    let seed = container.viewContext
    let newParts = [Part(context: seed), Part(context: seed)]
    #expect(newParts.map(\.code) == ["", ""] && newParts.map(\.qty) == [0, 0] && newParts.map(\.size) == [2, 2])
    #expect(newParts.map(\.label) == [nil, nil] && newParts.map(\.ratio) == [1.5, 1.5])
    newParts[0].size = 9
    newParts[0].label = "first"
    #expect(newParts[1].size == 2 && newParts[1].label == nil && Part(context: seed).size == 2)
    seed.rollback()
  }

  /// Dictionaries with upsert: g1 exists, g3 appears twice (the later row merges over the earlier); the
  /// change stream names the inserted and updated objects; merging into a live context shows the update.
  static func upsertsMergeOverExistingRows(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    var stream = s.store.changes().makeAsyncIterator()
    let request = BatchRequest.insert(
      entityName: "Gadget",
      objects: [
        ["sku": "g1", "name": "New", "stock": 9],
        ["sku": "g2", "name": "Ünïcode Thing"],
        ["sku": "g3", "name": "first", "note": "n3"],
        ["sku": "g3", "name": "Second", "weight": 3],
      ], resultType: .objectIDs)
    let result = try s.seed.execute(request)  // through the store whose change stream is watched
    #expect(result.count == 3)
    #expect(result.objectIDs.count == 3)
    #expect(result.updatedObjectIDs == [s.held.objectID])
    #expect(result.objectIDs.first == s.held.objectID)
    let g1 = try #require(try s.gadget("g1"))
    #expect(g1.name == "New" && g1.stock == 9 && g1.weight == 7 && g1.note == "keep")
    #expect(g1.shelf?.label == "A")
    #expect(g1.nameKey == "new")
    let g2 = try #require(try s.gadget("g2"))
    #expect(g2.stock == 5 && g2.weight == nil && g2.note == nil && g2.shelf == nil)
    #expect(g2.nameKey == "unicode thing")
    let g3 = try #require(try s.gadget("g3"))
    #expect(g3.name == "Second" && g3.note == "n3" && g3.weight == 3 && g3.nameKey == "second")
    #expect(try s.fresh().count(for: FetchRequest<Gadget>()) == 3)
    #expect(try s.fresh().fetch(FetchRequest<GadgetShelf>()).first?.gadgetCount == 1)
    #expect(try s.fresh().count(for: FetchRequest<Gadget>(format: "nameKey == 'unicode thing'")) == 1)

    let change = try #require(await stream.next())
    #expect(Set(change.inserted) == Set(result.objectIDs).subtracting([s.held.objectID]))
    #expect(change.updated.contains(s.held.objectID))
    #expect(!change.inserted.contains(s.held.objectID))

    let didSave = result.changes(of: request)
    #expect(didSave.updatedObjectIDs.contains(s.held.objectID))
    #expect(didSave.insertedObjectIDs.count == 2)
    ObjectContext.mergeChanges(fromRemoteContextSave: didSave, into: [s.live])
    #expect(s.held.name == "New" && s.held.stock == 9 && s.held.note == "keep")
  }

  /// A Float attribute stores what a Float holds, as a context's save does: a double given in a row is
  /// rounded to the nearest Float, so the same value saved either way reads back and compares equal.
  static func floatsRoundAsASaveDoes(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    _ = try s.seed.execute(BatchRequest.insert(entityName: "Gadget", objects: [["sku": "f1", "name": "F", "rating": 0.1]]))
    let saved = Gadget(context: s.seed)
    saved.sku = "f2"
    saved.name = "F"
    saved.rating = 0.1
    try s.seed.save()
    #expect(try s.gadget("f1")?.rating == Float(0.1))
    #expect(try s.fresh().count(for: FetchRequest<Gadget>(format: "rating == %@", Value.double(Double(Float(0.1))))) == 2)
    #expect(try s.fresh().count(for: FetchRequest<Gadget>(format: "rating > 0.09 AND rating < 0.11")) == 2)
  }

  /// Status only, a count, object IDs: each result type reports what it names, and rows without a
  /// constraint are all inserted.
  static func resultTypesReportWhatTheyName(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    let status = try s.live.execute(BatchRequest.insert(entityName: "LogLine", objects: [["text": "a"], ["text": "b"]]))
    #expect(status.succeeded && status.count == 0 && status.objectIDs.isEmpty)
    let counted = try s.live.execute(
      BatchRequest.insert(entityName: "LogLine", objects: [["text": "c", "level": 3]], resultType: .count))
    #expect(counted.count == 1 && counted.objectIDs.isEmpty)
    #expect(try s.fresh().count(for: FetchRequest<LogLine>()) == 3)
    #expect(try s.fresh().count(for: FetchRequest<LogLine>(format: "level == 1")) == 2)
    let lines = try s.live.execute(
      BatchRequest.insert(entityName: "LogLine", objects: [["text": "c"], ["text": "c"]], resultType: .objectIDs))
    #expect(lines.count == 2 && Set(lines.objectIDs).count == 2 && lines.updatedObjectIDs.isEmpty)
  }

  /// A dictionary handler: one row per call until it returns true.
  static func dictionaryHandlerGivesRowsUntilDone(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    let calls = Locked(0)
    let byDictionary = try s.live.execute(
      BatchInsertRequest<Gadget>(resultType: .count) { row in
        let n = calls.withLock { count in
          count += 1
          return count
        }
        row["sku"] = .string("h\(n)")
        row["name"] = .string("Handled \(n)")
        return n > 4
      })
    #expect(byDictionary.count == 4)
    #expect(calls.withLock { $0 } == 5)
    #expect(try s.fresh().count(for: FetchRequest<Gadget>(format: "sku BEGINSWITH 'h'")) == 4)
    #expect(try s.gadget("h4")?.nameKey == "handled 4")
  }

  /// An object handler: a fresh object per call; it upserts too (g2 gets every attribute of the object).
  static func objectHandlerUpserts(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    let inserted = try s.seed.execute(
      BatchRequest.insert(entityName: "Gadget", objects: [["sku": "g2", "name": "Ünïcode Thing"]], resultType: .objectIDs))
    let g2 = try #require(inserted.objectIDs.first)
    var made = 0
    let byObject = try s.live.execute(
      BatchInsertRequest<Gadget>(resultType: .objectIDs) { gadget in
        made += 1
        guard made <= 2 else { return true }
        #expect(gadget.stock == 5 && gadget.managedObjectContext == nil)
        gadget.sku = made == 1 ? "g2" : "o2"
        gadget.name = "Object \(made)"
        gadget.weight = Int32(made * 10)
        return false
      })
    #expect(byObject.count == 2 && byObject.updatedObjectIDs == [g2])
    #expect(try s.gadget("g2")?.weight == 10)
    #expect(try s.gadget("o2")?.nameKey == "object 2")
    #expect(s.live.insertedObjects.isEmpty)
  }

  /// Bad rows (the second of each batch) are refused, naming entity, key and row; nothing is written. An
  /// unknown entity is refused; an empty batch writes nothing.
  static func badRowsChangeNothing(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    let good: [String: Value] = ["sku": "never", "name": "Never"]
    let bad: [([String: Value], StoreError.Code, String)] = [
      (["sku": "b", "name": "B", "colour": "red"], .invalidQuery, "colour"),
      (["sku": "b", "name": "B", "shelf": .null], .invalidQuery, "shelf"),
      (["sku": "b", "name": "B", "nameKey": "b"], .invalidQuery, "nameKey"),
      (["sku": "b", "name": "B", "stock": "many"], .validation, "stock"),
      (["sku": "b", "name": "B", "stock": 40_000], .validation, "stock"),
      (["sku": "b", "name": "B", "weight": .int(Int64(Int32.max) + 1)], .validation, "weight"),
      (["sku": "b", "name": "B", "rating": 1e39], .validation, "rating"),
      (["sku": "b", "name": "B", "rating": "high"], .validation, "rating"),
      (["sku": "b"], .validation, "name"),
      (["sku": "b", "name": .null], .validation, "name"),
    ]
    let before = try s.fresh().count(for: FetchRequest<Gadget>())
    for (row, code, key) in bad {
      do {
        _ = try s.live.execute(BatchRequest.insert(entityName: "Gadget", objects: [good, row]))
        Issue.record("expected \(code) for \(row)")
      } catch let error as StoreError {
        #expect(error.code == code, "\(row): \(error.message)")
        #expect(error.entity == "Gadget" && error.key == key, "\(row): \(error.message)")
        #expect(error.message.contains("row 1"), "\(error.message)")
      }
    }
    #expect(try s.fresh().count(for: FetchRequest<Gadget>()) == before)
    #expect(try s.gadget("never") == nil)
    do {
      _ = try s.live.execute(BatchRequest.insert(entityName: "Nope", objects: [good]))
      Issue.record("expected an unknown entity to fail")
    } catch let error as StoreError {
      #expect(error.code == .invalidQuery)
    }
    let empty = try s.live.execute(BatchRequest.insert(entityName: "Gadget", objects: [], resultType: .objectIDs))
    #expect(empty.count == 0 && empty.objectIDs.isEmpty)
    #expect(try s.fresh().count(for: FetchRequest<Gadget>()) == before)
  }

  /// Batch update and delete report what their result type asks (object IDs unless told).
  static func updateAndDeleteReportTheirResultType(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    _ = try s.live.execute(BatchRequest.insert(entityName: "LogLine", objects: [["text": "a"], ["text": "b"], ["text": "c"]]))
    let lineCount = try s.fresh().count(for: FetchRequest<LogLine>())
    let louder = try s.live.execute(
      .update(entityName: "LogLine", predicate: nil, propertiesToUpdate: ["level": .constant(4)], resultType: .statusOnly))
    #expect(louder.succeeded && louder.count == 0 && louder.objectIDs.isEmpty)
    #expect(try s.fresh().count(for: FetchRequest<LogLine>(format: "level == 4")) == lineCount)
    let listed = try s.live.execute(.update(entityName: "LogLine", predicate: nil, propertiesToUpdate: ["level": .constant(2)]))
    #expect(listed.count == lineCount && listed.objectIDs.count == lineCount)
    let cleared = try s.live.execute(.delete(entityName: "LogLine", predicate: nil, resultType: .count))
    #expect(cleared.count == lineCount && cleared.objectIDs.isEmpty)
    #expect(try s.fresh().count(for: FetchRequest<LogLine>()) == 0)
  }

  /// An entity without derived attributes (SQLite's native upsert): the same answers as one with them.
  static func upsertsWithoutDerivedAttributes(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    let liveBolt = try #require(try s.live.fetch(FetchRequest<Part>(format: "code == 'p1'")).first)
    #expect(liveBolt.qty == 1)
    var partStream = s.store.changes().makeAsyncIterator()
    let parts = BatchRequest.insert(
      entityName: "Part",
      objects: [["code": "p2", "qty": 4], ["code": "p1", "qty": 7], ["code": "p2", "qty": 5, "label": "nut"]],
      resultType: .objectIDs)
    let partResult = try s.seed.execute(parts)
    #expect(partResult.count == 2 && partResult.updatedObjectIDs == [s.bolt.objectID])
    #expect(partResult.objectIDs.last == s.bolt.objectID)
    let partChange = try #require(await partStream.next())
    #expect(partChange.updated == [s.bolt.objectID])
    #expect(partChange.inserted.count == 1 && partChange.inserted.first == partResult.objectIDs.first)
    let partReader = try s.fresh()
    let p1 = try #require(try partReader.fetch(FetchRequest<Part>(format: "code == 'p1'")).first)
    #expect(p1.qty == 7 && p1.label == "bolt" && p1.size == 2 && p1.ratio == 1.5 && p1.shelf?.label == "A")
    let p2 = try #require(try partReader.fetch(FetchRequest<Part>(format: "code == 'p2'")).first)
    #expect(p2.qty == 5 && p2.label == "nut" && p2.size == 2 && p2.ratio == 1.5 && p2.shelf == nil)
    ObjectContext.mergeChanges(fromRemoteContextSave: partResult.changes(of: parts), into: [s.live])
    #expect(liveBolt.qty == 7)
  }

  /// A row that leaves out what the row before it gave gets defaults, not the earlier row's values.
  static func leftOutValuesGetDefaults(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    _ = try s.seed.execute(
      BatchRequest.insert(
        entityName: "Part",
        objects: [["code": "p3", "qty": 1, "label": "washer", "size": 9, "ratio": 0.3], ["code": "p4", "qty": 2]]))
    let p3 = try #require(try s.fresh().fetch(FetchRequest<Part>(format: "code == 'p3'")).first)
    #expect(p3.ratio == Float(0.3))
    #expect(try s.fresh().count(for: FetchRequest<Part>(format: "ratio == %@", Value.double(Double(Float(0.3))))) == 1)
    let p4 = try #require(try s.fresh().fetch(FetchRequest<Part>(format: "code == 'p4'")).first)
    #expect(p4.qty == 2 && p4.label == nil && p4.size == 2 && p4.ratio == 1.5)
  }

  /// Bad rows of an entity without derived attributes are refused too, naming entity, key and row, and
  /// the upsert before them in the batch is not written.
  static func badRowsWithoutDerivedAttributesChangeNothing(_ backend: ConformanceBackend) async throws {
    let s = try BatchInsertStore(backend)
    let partsBefore = try s.fresh().count(for: FetchRequest<Part>())
    let badParts: [([String: Value], StoreError.Code, String)] = [
      (["code": "p1", "qty": 40_000], .validation, "qty"),
      (["code": "p9"], .validation, "qty"),
      (["code": "p9", "qty": 1, "shelf": .null], .invalidQuery, "shelf"),
      (["code": "p9", "qty": 1, "size": "big"], .validation, "size"),
      (["code": "p9", "qty": 1, "ratio": -1e39], .validation, "ratio"),
    ]
    for (row, code, key) in badParts {
      do {
        _ = try s.seed.execute(BatchRequest.insert(entityName: "Part", objects: [["code": "p1", "qty": 99], row]))
        Issue.record("expected \(code) for \(row)")
      } catch let error as StoreError {
        #expect(error.code == code && error.entity == "Part" && error.key == key, "\(row): \(error.message)")
        #expect(error.message.contains("row 1"), "\(error.message)")
      }
    }
    #expect(try s.fresh().count(for: FetchRequest<Part>()) == partsBefore)
    #expect(try s.fresh().fetch(FetchRequest<Part>(format: "code == 'p1'")).first?.qty == 1)
  }
}
