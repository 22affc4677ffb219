import Foundation
import Strata
import StrataLMDB
import StrataMemory
import StrataPostgres
import StrataSQLite

final class BenchItem: ManagedObject {
  @Attribute var name: String
  @Attribute var category: String
  @Attribute var count: Int64
  @Attribute var amount: Double
  @Attribute var flag: Bool
  @Attribute var created: Date
  @Attribute var code: Int32
  @Attribute var score: Float
  @Attribute var note: String?
}

/// BenchItem with a unique name: the batch-insert scenario upserts on it.
final class BenchUnique: ManagedObject {
  @Attribute(.unique) var name: String
  @Attribute var category: String
  @Attribute var count: Int64
  @Attribute var amount: Double
  @Attribute var flag: Bool
  @Attribute var created: Date
  @Attribute var code: Int32
  @Attribute var score: Float
  @Attribute var note: String?
}

/// The to-one side of the traversal scenario.
final class BenchDirector: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "director") var movies: Set<BenchMovie>
}

final class BenchMovie: ManagedObject {
  @Attribute var title: String
  @Attribute var year: Int64
  @Relationship(inverse: "movies") var director: BenchDirector?
}

struct Row {
  var name: String
  var category: String
  var count: Int64
  var amount: Double
  var flag: Bool
  var created: Date
  var code: Int32
  var score: Float
  var note: String?

  static func make(_ i: Int) -> Row {
    Row(
      name: "Item \(i)", category: "category-\(i % 17)", count: Int64(i), amount: Double(i) * 1.25, flag: i % 2 == 0,
      created: Date(timeIntervalSinceReferenceDate: Double(i) * 60), code: Int32(i % 1000), score: Float(i % 100) / 10,
      note: i % 3 == 0 ? nil : "note \(i)")
  }

  /// What every field adds to a checksum both sides compute over what they read.
  var checksum: Int {
    name.utf8.count &+ category.utf8.count &+ Int(count) &+ Int(amount) &+ (flag ? 1 : 0)
      &+ Int(created.timeIntervalSinceReferenceDate) &+ Int(code) &+ Int(score) &+ (note?.utf8.count ?? 0)
  }
}

extension BenchItem {
  /// The same sum as ``Row/checksum``, read through the object's accessors.
  var checksum: Int {
    name.utf8.count &+ category.utf8.count &+ Int(count) &+ Int(amount) &+ (flag ? 1 : 0)
      &+ Int(created.timeIntervalSinceReferenceDate) &+ Int(code) &+ Int(score) &+ (note?.utf8.count ?? 0)
  }
}

let benchTypes: [ManagedObject.Type] = [BenchItem.self, BenchUnique.self, BenchDirector.self, BenchMovie.self]

func benchContainer(_ store: StoreDescription) throws -> PersistentContainer {
  let registry = StoreRegistry([SQLiteStoreFactory(), LMDBStoreFactory(), MemoryStoreFactory(), PostgresStoreFactory()])
  let container = PersistentContainer(
    name: "Bench", model: try ObjectModel(types: benchTypes), types: benchTypes, registry: registry)
  container.storeDescriptions = [store]
  try container.loadPersistentStores()
  return container
}

/// The rows as batch-insert dictionaries (built before timing, as the raw loops get theirs ready-made).
func dictionaries(_ rows: [Row]) -> [[String: Strata.Value]] {
  rows.map { row in
    [
      "name": .string(row.name), "category": .string(row.category), "count": .int(row.count), "amount": .double(row.amount),
      "flag": .bool(row.flag), "created": .date(row.created), "code": .int(Int64(row.code)), "score": .double(Double(row.score)),
      "note": row.note.map { .string($0) } ?? .null,
    ]
  }
}
