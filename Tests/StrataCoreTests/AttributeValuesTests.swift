import Foundation
import StrataCore
import Testing

@Suite("Attribute values")
struct AttributeValuesTests {
  static let types: [AttributeType] = [.string, .int64, .double, .bool, .date, .data, .uuid, .decimal, .url, .json]

  static let samples: [Value] = [
    .null, .int(-7), .int(.max), .double(2.5), .bool(true), .bool(false), .date(Date(timeIntervalSinceReferenceDate: 12.5)),
    .string(""), .string("short"), .string(String(repeating: "long string beyond the small form ", count: 4)),
    .data(Data()), .data(Data(repeating: 7, count: 100)),
    .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))),
    .decimal(Decimal(string: "12.345")!), .url(URL(string: "https://example.com/a")!),
    .objectID(ObjectID(entityName: "Movie", storeIdentifier: "S", primaryKey: 3)), .array([.int(1), .string("two")]),
  ]

  @Test func eachTypeTakesItsOwnWidthNotAValuesTwentyFourBytes() {
    let layout = AttributeLayout.of([.int64, .double, .bool, .date, .string, .data, .uuid, .decimal, .url])
    #expect(layout.slotWords == [1, 1, 1, 1, 2, 2, 2, 3, 3])
    #expect(AttributeLayout.of([.int64, .string]) === AttributeLayout.of([.int32, .json]), "layouts are interned by shape")
  }

  @Test(arguments: types)
  func everyValueRoundTripsInEverySlot(_ type: AttributeType) {
    for sample in Self.samples {
      var values = AttributeValues(layout: AttributeLayout.of([.int64, type, .string]))
      values[0] = .int(1)
      values[2] = .string("after")
      values[1] = sample
      #expect(values[1] == sample, "\(sample) in a \(type) slot")
      #expect(Array(values) == [.int(1), sample, .string("after")], "the neighbours of \(sample) in a \(type) slot")
      values[1] = .null
      #expect(values[1] == .null)
      #expect(values.isNull(at: 1))
    }
  }

  @Test func aCopyIsIndependentOfTheOriginal() {
    let layout = AttributeLayout.of([.string, .int64])
    var original = AttributeValues(layout: layout)
    original[0] = .string("one")
    original[1] = .int(1)
    var copy = original
    #expect(copy.sharesStorage(with: original))
    copy[0] = .string("two")
    copy[1] = .decimal(3)
    #expect(!copy.sharesStorage(with: original))
    #expect(Array(original) == [.string("one"), .int(1)])
    #expect(Array(copy) == [.string("two"), .decimal(3)])
    #expect(copy.layout !== layout, "a decimal widened the copy's number slot")
  }

  @Test func theSinkSetsEachValueAndWidensForMisfits() {
    let layout = AttributeLayout.of([.int64, .string, .bool])
    let values = AttributeValues(layout: layout) { sink in
      sink.initialize(.string("in a number's slot"), at: 0)
      sink.initialize(.string("first"), at: 1)
      sink.initialize(.string("second"), at: 1)
      sink.initialize(.bool(true), at: 2)
    }
    #expect(Array(values) == [.string("in a number's slot"), .string("second"), .bool(true)])
    let replaced = AttributeValues(layout: layout) { sink in
      sink.initialize(.string("in a number's slot"), at: 0)
      sink.initialize(int: 7, at: 0)
    }
    #expect(Array(replaced) == [.int(7), .null, .null], "a later value replaces an earlier misfit")
  }

  @Test func valuesBuiltFromAnArrayEqualAndHashAsTheArray() {
    let array: [Value] = [.string("a"), .null, .int(3), .url(URL(string: "file:///x")!)]
    let adapted = AttributeValues(array)
    var typed = AttributeValues(layout: AttributeLayout.of([.string, .string, .int64, .url]))
    for (i, value) in array.enumerated() { typed[i] = value }
    #expect(adapted == typed)
    #expect(adapted.hashValue == typed.hashValue)
    #expect(Array(adapted) == array)
    #expect(
      AttributeValues(array, layout: AttributeLayout.of([.int64, .int64])).count == 4, "a layout of another count is replaced")
    #expect(AttributeValues() == [])
  }

  @Test func codableAsAnArrayOfValues() throws {
    let values: AttributeValues = [.string("x"), .int(2), .null]
    let json = try JSONEncoder().encode(values)
    #expect(json == (try JSONEncoder().encode([Value.string("x"), .int(2), .null])))
    #expect(try JSONDecoder().decode(AttributeValues.self, from: json) == values)
  }

  /// Random writes, copies and reads against `[Value]` as the model; a failure names its seed
  /// (`STRATA_VALUES_SEED` replays it).
  @Test func randomEditsMatchAnArrayOfValues() {
    let seed = ProcessInfo.processInfo.environment["STRATA_VALUES_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
    var random = SplitMix64(seed: seed)
    for _ in 0..<200 {
      let types = (0..<Int(random.next() % 12)).map { _ in Self.types[Int(random.next() % UInt64(Self.types.count))] }
      var values = AttributeValues(layout: AttributeLayout.of(types))
      var model = [Value](repeating: .null, count: types.count)
      var kept: [(AttributeValues, [Value])] = []
      for _ in 0..<40 where !types.isEmpty {
        let index = Int(random.next() % UInt64(types.count))
        let value = Self.samples[Int(random.next() % UInt64(Self.samples.count))]
        values[index] = value
        model[index] = value
        if random.next() % 4 == 0 { kept.append((values, model)) }
      }
      #expect(Array(values) == model, "seed \(seed)")
      for (copy, expected) in kept { #expect(Array(copy) == expected, "seed \(seed): a copy changed with the original") }
    }
  }
}
