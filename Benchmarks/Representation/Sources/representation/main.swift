import Foundation

/// glibc's size of a heap block (malloc.h, which Glibc's module map leaves out).
@_silgen_name("malloc_usable_size") func mallocUsableSize(_ pointer: UnsafeMutableRawPointer?) -> Int

/// The shape of Strata's `Value`: the same cases and payloads, so the same size (21 bytes, stride 24).
enum Value {
  case null, int(Int64), double(Double), decimal(Decimal), string(String), bool(Bool), date(Date), data(Data)
  case uuid(UUID), url(URL), array([Value])
  indirect case objectID(ObjectID)
}

struct ObjectID { var entity: String, key: Int64 }

/// The benchmark's row (strata-bench's `Row`): nine fields of BenchItem's types.
struct Row {
  var name: String, category: String, count: Int64, amount: Double, flag: Bool, created: Date, code: Int32
  var score: Float, note: String?

  static func make(_ i: Int) -> Row {
    Row(
      name: "Item \(i)", category: "category-\(i % 17)", count: Int64(i), amount: Double(i) * 1.25, flag: i % 2 == 0,
      created: Date(timeIntervalSinceReferenceDate: Double(i) * 60), code: Int32(i % 1000), score: Float(i % 100) / 10,
      note: i % 3 == 0 ? nil : "note \(i)")
  }
}

/// An object as Strata's are: bookkeeping words, nine 4-byte slots, and the attributes in a `[Value]`
/// made from the entity's initial values, then set one by one.
final class ValueObject {
  var objectID = ObjectID(entity: "", key: 0)
  var flags: Int64 = 0, binding: AnyObject? = nil, toOne: [Int] = [], toMany: [Int] = [], state: AnyObject? = nil
  var side: AnyObject? = nil, extra: Int64 = 0
  var slots: (Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
  var values: [Value]

  init(initial: [Value]) {
    var values: [Value] = []
    values.reserveCapacity(initial.count)
    for value in initial { values.append(value) }
    self.values = values
  }
}

/// The same object with its attributes as typed stored properties.
final class TypedObject {
  var objectID = ObjectID(entity: "", key: 0)
  var flags: Int64 = 0, binding: AnyObject? = nil, toOne: [Int] = [], toMany: [Int] = [], state: AnyObject? = nil
  var side: AnyObject? = nil, extra: Int64 = 0
  var name = "", category = "", count: Int64 = 0, amount = 0.0, flag = false
  var created = Date(timeIntervalSinceReferenceDate: 0), code: Int32 = 0, score: Float = 0, note: String? = nil
}

@inline(never) func makeValueObjects(_ rows: [Row], initial: [Value]) -> [ValueObject] {
  var objects: [ValueObject] = []
  objects.reserveCapacity(rows.count)
  for row in rows {
    let object = ValueObject(initial: initial)
    object.values[0] = .string(row.name)
    object.values[1] = .string(row.category)
    object.values[2] = .int(row.count)
    object.values[3] = .double(row.amount)
    object.values[4] = .bool(row.flag)
    object.values[5] = .date(row.created)
    object.values[6] = .int(Int64(row.code))
    object.values[7] = .double(Double(row.score))
    object.values[8] = row.note.map { .string($0) } ?? .null
    objects.append(object)
  }
  return objects
}

@inline(never) func makeTypedObjects(_ rows: [Row]) -> [TypedObject] {
  var objects: [TypedObject] = []
  objects.reserveCapacity(rows.count)
  for row in rows {
    let object = TypedObject()
    object.name = row.name
    object.category = row.category
    object.count = row.count
    object.amount = row.amount
    object.flag = row.flag
    object.created = row.created
    object.code = row.code
    object.score = row.score
    object.note = row.note
    objects.append(object)
  }
  return objects
}

func usableSize(_ object: AnyObject) -> Int {
  mallocUsableSize(Unmanaged.passUnretained(object).toOpaque())
}

let arguments = CommandLine.arguments.dropFirst()
let count = arguments.first.flatMap(Int.init) ?? 100_000
let kind = arguments.dropFirst().first ?? "values"
guard kind == "values" || kind == "typed" else {
  print("usage: representation [count] values|typed")
  exit(2)
}
let rows = (0..<count).map(Row.make)
let initial: [Value] = [
  .string(""), .string(""), .int(0), .double(0), .bool(false), .date(Date(timeIntervalSinceReferenceDate: 0)), .int(0),
  .double(0), .null,
]
// The first pass touches fresh memory (page faults), as a process's first large insert does; the later
// passes reuse what the previous one freed.
for pass in 1...4 {
  // The objects outlive the timing (freeing them is not part of making them).
  var kept: [AnyObject] = []
  let start = DispatchTime.now().uptimeNanoseconds
  if kind == "values" {
    kept = makeValueObjects(rows, initial: initial)
  } else {
    kept = makeTypedObjects(rows)
  }
  let nanoseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)
  var bytes = usableSize(kept[0]) + 8
  if let object = kept[0] as? ValueObject {
    bytes += object.values.withUnsafeBufferPointer { buffer in
      buffer.baseAddress.map { mallocUsableSize(UnsafeMutableRawPointer(mutating: $0) - 32) + 8 } ?? 0
    }
  }
  print("\(kind) pass \(pass): \(String(format: "%.1f", nanoseconds)) ns per object, \(bytes) bytes of heap per object")
}
