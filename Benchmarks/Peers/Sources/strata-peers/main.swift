import Foundation
import GRDB
import Strata
import StrataSQLite

// Strata beside GRDB 7 on the same system SQLite, in one process: insert, fetch all, fetch by ID and count,
// through Strata's object graph, GRDB's record API (Codable FetchableRecord/PersistableRecord, one
// transaction) and GRDB's raw paths (cached statements, Row.fetchCursor, a cached primary-key SELECT).
// Prints the medians of --runs runs and Strata ÷ each GRDB path.

final class PeerItem: ManagedObject {
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

struct Item: Codable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "item"
  var id: Int64?
  var name: String
  var category: String
  var count: Int64
  var amount: Double
  var flag: Bool
  var created: Date
  var code: Int32
  var score: Float
  var note: String?

  static func make(_ i: Int) -> Item {
    Item(
      id: nil, name: "Item \(i)", category: "category-\(i % 17)", count: Int64(i), amount: Double(i) * 1.25,
      flag: i % 2 == 0, created: Date(timeIntervalSinceReferenceDate: Double(i) * 60), code: Int32(i % 1000),
      score: Float(i % 100) / 10, note: i % 3 == 0 ? nil : "note \(i)")
  }

  var checksum: Int {
    name.utf8.count &+ category.utf8.count &+ Int(count) &+ Int(amount) &+ (flag ? 1 : 0)
      &+ Int(created.timeIntervalSinceReferenceDate) &+ Int(code) &+ Int(score) &+ (note?.utf8.count ?? 0)
  }
}

extension PeerItem {
  var checksum: Int {
    name.utf8.count &+ category.utf8.count &+ Int(count) &+ Int(amount) &+ (flag ? 1 : 0)
      &+ Int(created.timeIntervalSinceReferenceDate) &+ Int(code) &+ Int(score) &+ (note?.utf8.count ?? 0)
  }
}

struct PeerError: Error, CustomStringConvertible {
  var description: String
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
  let start = DispatchTime.now().uptimeNanoseconds
  try body()
  return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
}

func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return 0 }
  return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// The same random order of lookups on every side.
func lookupOrder(rows: Int, lookups: Int) -> [Int] {
  var state: UInt64 = 24
  return (0..<lookups).map { _ in
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return Int((state >> 33) % UInt64(rows))
  }
}

let countSQL = "SELECT COUNT(*) FROM item WHERE category = 'category-3' AND amount > 1000"

// MARK: Strata

struct StrataTimes {
  var insert = 0.0, fetch = 0.0, lookups = 0.0, count = 0.0
}

func runStrata(_ items: [Item], order: [Int], directory: URL) throws -> StrataTimes {
  var times = StrataTimes()
  let store = StoreDescription(type: .sqlite, url: directory.appending(path: "strata.sqlite"))
  func container() throws -> PersistentContainer {
    let container = PersistentContainer(
      name: "Peers", model: try ObjectModel(types: [PeerItem.self]), types: [PeerItem.self],
      registry: StoreRegistry([SQLiteStoreFactory()]))
    container.storeDescriptions = [store]
    try container.loadPersistentStores()
    return container
  }
  do {
    let container = try container()
    defer { container.close() }
    let context = container.newBackgroundContext()
    times.insert = try context.performAndWait {
      try milliseconds {
        for row in items {
          let item = PeerItem(context: context)
          item.name = row.name
          item.category = row.category
          item.count = row.count
          item.amount = row.amount
          item.flag = row.flag
          item.created = row.created
          item.code = row.code
          item.score = row.score
          item.note = row.note
        }
        try context.save()
      }
    }
  }
  var ids: [ObjectID] = []
  do {
    let container = try container()
    defer { container.close() }
    let context = container.newBackgroundContext()
    try context.performAndWait {
      var fetched: [PeerItem] = []
      var checksum = 0
      times.fetch = try milliseconds {
        fetched = try context.fetch(FetchRequest<PeerItem>())
        for item in fetched { checksum &+= item.checksum }
      }
      guard fetched.count == items.count, checksum != 0 else { throw PeerError(description: "Strata fetched \(fetched.count)") }
      ids = fetched.map(\.objectID)
    }
  }
  do {
    let container = try container()
    defer { container.close() }
    let context = container.newBackgroundContext()
    try context.performAndWait {
      var checksum = 0
      times.lookups = try milliseconds {
        for position in order {
          guard let item = try context.existingObject(with: ids[position]) as? PeerItem else {
            throw PeerError(description: "not a PeerItem")
          }
          checksum &+= item.checksum
        }
      }
      guard checksum != 0 else { throw PeerError(description: "Strata read nothing") }
      var counted = 0
      times.count = try milliseconds {
        counted = try context.count(for: FetchRequest<PeerItem>(format: "category == 'category-3' AND amount > 1000"))
      }
      guard counted == items.filter({ $0.category == "category-3" && $0.amount > 1000 }).count else {
        throw PeerError(description: "Strata counted \(counted)")
      }
    }
  }
  return times
}

// MARK: GRDB

func grdbQueue(_ url: URL) throws -> DatabaseQueue {
  let queue = try DatabaseQueue(path: url.path)
  try queue.writeWithoutTransaction { db in
    try db.execute(sql: "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
  }
  try queue.write { db in
    try db.create(table: "item") { t in
      t.autoIncrementedPrimaryKey("id")
      t.column("name", .text).notNull()
      t.column("category", .text).notNull()
      t.column("count", .integer).notNull()
      t.column("amount", .double).notNull()
      t.column("flag", .boolean).notNull()
      t.column("created", .datetime).notNull()
      t.column("code", .integer).notNull()
      t.column("score", .double).notNull()
      t.column("note", .text)
    }
  }
  return queue
}

/// GRDB's record API: `insert(db)` per record in one `write`, `fetchAll`, `fetchOne(db, key:)`, `fetchCount`.
func runGRDBRecords(_ items: [Item], order: [Int], directory: URL) throws -> StrataTimes {
  var times = StrataTimes()
  let queue = try grdbQueue(directory.appending(path: "grdb-records.sqlite"))
  times.insert = try milliseconds {
    try queue.write { db in
      for item in items { try item.insert(db) }
    }
  }
  var checksum = 0
  var fetched: [Item] = []
  times.fetch = try milliseconds {
    fetched = try queue.read { db in try Item.fetchAll(db) }
    for item in fetched { checksum &+= item.checksum }
  }
  guard fetched.count == items.count else { throw PeerError(description: "GRDB fetched \(fetched.count)") }
  times.lookups = try milliseconds {
    try queue.read { db in
      for position in order {
        guard let item = try Item.fetchOne(db, key: Int64(position + 1)) else { throw PeerError(description: "no item \(position)") }
        checksum &+= item.checksum
      }
    }
  }
  var counted = 0
  times.count = try milliseconds {
    counted = try queue.read { db in
      try Item.filter(Column("category") == "category-3" && Column("amount") > 1000).fetchCount(db)
    }
  }
  guard counted > 0, checksum != 0 else { throw PeerError(description: "GRDB counted \(counted)") }
  return times
}

/// GRDB's raw paths: a cached INSERT statement, `Row.fetchCursor` into structs, a cached primary-key SELECT.
func runGRDBRaw(_ items: [Item], order: [Int], directory: URL) throws -> StrataTimes {
  var times = StrataTimes()
  let queue = try grdbQueue(directory.appending(path: "grdb-raw.sqlite"))
  times.insert = try milliseconds {
    try queue.write { db in
      let statement = try db.cachedStatement(
        sql: "INSERT INTO item (name, category, count, amount, flag, created, code, score, note) VALUES (?,?,?,?,?,?,?,?,?)")
      for item in items {
        try statement.execute(arguments: [
          item.name, item.category, item.count, item.amount, item.flag, item.created, item.code, item.score, item.note,
        ])
      }
    }
  }
  func item(_ row: Row) -> Item {
    Item(
      id: row[0], name: row[1], category: row[2], count: row[3], amount: row[4], flag: row[5], created: row[6], code: row[7],
      score: row[8], note: row[9])
  }
  var fetched: [Item] = []
  var checksum = 0
  times.fetch = try milliseconds {
    try queue.read { db in
      let rows = try Row.fetchCursor(db, sql: "SELECT id, name, category, count, amount, flag, created, code, score, note FROM item")
      while let row = try rows.next() { fetched.append(item(row)) }
    }
    for item in fetched { checksum &+= item.checksum }
  }
  guard fetched.count == items.count else { throw PeerError(description: "GRDB raw fetched \(fetched.count)") }
  times.lookups = try milliseconds {
    try queue.read { db in
      let statement = try db.cachedStatement(
        sql: "SELECT id, name, category, count, amount, flag, created, code, score, note FROM item WHERE id = ?")
      for position in order {
        guard let row = try Row.fetchOne(statement, arguments: [position + 1]) else { throw PeerError(description: "no row") }
        checksum &+= item(row).checksum
      }
    }
  }
  var counted = 0
  times.count = try milliseconds { counted = try queue.read { db in try Int.fetchOne(db, sql: countSQL) ?? 0 } }
  guard counted > 0, checksum != 0 else { throw PeerError(description: "GRDB raw counted \(counted)") }
  return times
}

// MARK: Main

var rows = 100_000
var lookups = 10_000
var runs = 3
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
  switch argument {
  case "--rows": rows = Int(arguments.next() ?? "") ?? rows
  case "--lookups": lookups = Int(arguments.next() ?? "") ?? lookups
  case "--runs": runs = max(1, Int(arguments.next() ?? "") ?? runs)
  case "--help", "-h":
    print(
      """
      strata-peers: Strata beside GRDB 7 (record API and raw paths) on the same SQLite, in one process.
      usage: strata-peers [--rows N] [--lookups N] [--runs N]
        --rows N     rows inserted, fetched and counted (default 100000)
        --lookups N  objects fetched one by one by primary key, in a random order (default 10000)
        --runs N     runs; medians are printed (default 3)
      Prints per scenario the milliseconds of Strata, GRDB records and GRDB raw, and Strata ÷ each.
      """)
    exit(0)
  default:
    FileHandle.standardError.write(Data("strata-peers: unknown argument '\(argument)'\n".utf8))
    exit(2)
  }
}

do {
  let items = (0..<rows).map(Item.make)
  let order = lookupOrder(rows: rows, lookups: lookups)
  var strata: [StrataTimes] = []
  var records: [StrataTimes] = []
  var raw: [StrataTimes] = []
  for _ in 0..<runs {
    let directory = FileManager.default.temporaryDirectory.appending(path: "strata-peers-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    raw.append(try runGRDBRaw(items, order: order, directory: directory))
    records.append(try runGRDBRecords(items, order: order, directory: directory))
    strata.append(try runStrata(items, order: order, directory: directory))
  }
  let scenarios: [(String, KeyPath<StrataTimes, Double>)] = [
    ("insert_\(rows)", \.insert), ("fetch_all_\(rows)", \.fetch), ("fetch_by_id_\(lookups)", \.lookups),
    ("count_where_\(rows)", \.count),
  ]
  for (name, key) in scenarios {
    let s = median(strata.map { $0[keyPath: key] })
    let r = median(records.map { $0[keyPath: key] })
    let w = median(raw.map { $0[keyPath: key] })
    print(
      String(
        format: "%@ strata_ms=%.2f grdb_record_ms=%.2f grdb_raw_ms=%.2f strata/record=%.2f strata/raw=%.2f", name, s, r, w,
        r > 0 ? s / r : 0, w > 0 ? s / w : 0))
  }
} catch {
  FileHandle.standardError.write(Data("strata-peers: error: \(error)\n".utf8))
  exit(1)
}
