import Foundation
import StrataStoreKit
import Testing

@testable import StrataLMDB

/// What one fuzz run of the record decoder tried; `summary` is the line `scripts/torture fuzz` reads.
struct RecordFuzzReport: Sendable {
  var seed: UInt64 = 0
  var inputs = 0
  var decoded = 0
  var corrupted = 0
  var transcoded = 0
  var transcodeRefused = 0
  var failures: [String] = []
  var elapsed: Duration = .zero

  var summary: String {
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return "fuzz-summary records seed=\(seed) inputs=\(inputs) decoded=\(decoded) corrupted=\(corrupted) "
      + "transcoded=\(transcoded) transcodeRefused=\(transcodeRefused) failures=\(failures.count) "
      + "seconds=\(String(format: "%.1f", seconds))"
  }
}

/// Fuzzes the LMDB record decoder (issue 25: "random byte flips and truncations … give an error or
/// correct data, never a signal"): valid records of an entity with every attribute type and to-one
/// relationships, with extreme values (NaN, infinities, the integer limits, empty and long strings and
/// data), must decode back to the same bytes; their mutations (bit flips, truncations, insertions,
/// deletions, overwrites, splices of two records) and random bytes must decode to a record or fail with
/// `.corrupted`, and whatever decodes must encode and decode again. The migration transcoder reads the
/// same mutated records (converting every kind of value to a string, integers to doubles and decimals)
/// and must refuse them or produce records the new decoder reads or refuses. Settings as for the
/// predicate fuzzer: `STRATA_FUZZ_ITERATIONS`, `STRATA_FUZZ_SEED`.
@Suite struct RecordCodecFuzzTests {
  static func iterations() -> Int {
    ProcessInfo.processInfo.environment["STRATA_FUZZ_ITERATIONS"].flatMap { Int($0) }.map { max(1, $0) } ?? 20_000
  }

  static func seed() -> UInt64 {
    ProcessInfo.processInfo.environment["STRATA_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x5EED_2025
  }

  @Test func recordDecoderAndTranscoder() throws {
    let iterations = Self.iterations()
    let seed = Self.seed()
    print("fuzz records: seed \(seed), \(iterations) inputs (STRATA_FUZZ_SEED=\(seed) repeats the run)")
    let report = try RecordFuzzer(seed: seed).run(iterations: iterations)
    print(report.summary)
    #expect(
      report.failures.isEmpty,
      "seed \(seed): \(report.failures.count) failures, first: \(report.failures.prefix(5).joined(separator: "\n"))")
    #expect(report.decoded > iterations / 10 && report.corrupted > iterations / 10)
  }

  /// A record's header read alone (`version`) and before its values (`decode`) gives the version it was
  /// written with, and for a damaged header the same `.corrupted` error either way, naming what is wrong.
  @Test func damagedHeaders() throws {
    let entity = EntityDescription(name: "Item", attributes: [AttributeDescription(name: "count", type: .int64)])
    let table = LMDBSchema.Table(entity: entity, records: 0, uniques: [], indexes: [], references: [], storeIdentifier: "")
    let decoder = RecordDecoder(entity: entity, storeIdentifier: "S")
    let reads: [(String, (UnsafeRawBufferPointer) throws -> Int64)] = [
      ("version", { try decoder.version($0, primaryKey: 9) }), ("decode", { try decoder.decode($0, primaryKey: 9).version }),
    ]
    func outcome(_ read: (UnsafeRawBufferPointer) throws -> Int64, _ bytes: [UInt8]) -> Result<Int64, StoreError> {
      bytes.withUnsafeBytes { raw in
        do { return .success(try read(raw)) } catch let error as StoreError { return .failure(error) } catch {
          return .failure(StoreError(.misuse, "not a StoreError: \(error)"))
        }
      }
    }
    let buffer = RecordBuffer()
    for version: Int64 in [1, 63, 64, 300, 1 << 40] {
      RecordCodec.encode(version: version, attributes: [.int(5)], toOne: [], table: table, into: buffer)
      let bytes = buffer.withUnsafeBytes { Array($0) }
      for (name, read) in reads {
        #expect(try outcome(read, bytes).get() == version, "\(name) of a record at version \(version)")
      }
    }
    let id = ObjectID(entityName: "Item", storeIdentifier: "S", primaryKey: 9)
    let damaged: [([UInt8], String)] = [
      ([], "unknown record format"), ([RecordCodec.format + 1, 2, 1, 10], "unknown record format"),
      ([RecordCodec.format], "no version"), ([RecordCodec.format, 0x80], "no version"),
      ([RecordCodec.format] + Array(repeating: 0xFF, count: 11), "no version"),
    ]
    for (bytes, what) in damaged {
      let expected = "the stored record of \(id) is damaged (\(what))"
      for (name, read) in reads {
        guard case .failure(let error) = outcome(read, bytes) else {
          Issue.record("\(name) read the damaged header \(bytes)")
          continue
        }
        #expect(error.code == .corrupted && error.message == expected, "\(name) \(bytes): \(error.message)")
      }
    }
  }
}

struct RecordFuzzer {
  let seed: UInt64
  let old: EntityDescription
  let new: EntityDescription
  let table: LMDBSchema.Table
  let decoder: RecordDecoder
  let newDecoder: RecordDecoder
  let mapping: EntityMapping

  init(seed: UInt64) throws {
    self.seed = seed
    func model(_ attributes: [AttributeDescription]) throws -> ObjectModel {
      try ObjectModel(entities: [
        EntityDescription(
          name: "Item", attributes: attributes,
          relationships: [
            RelationshipDescription(name: "owner", destination: "Owner", inverse: "items"),
            RelationshipDescription(name: "next", destination: "Item", inverse: "previous"),
            RelationshipDescription(name: "previous", destination: "Item", inverse: "next"),
          ]),
        EntityDescription(
          name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
          relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "owner", isToMany: true)]),
      ])
    }
    let kinds: [(String, AttributeType, AttributeType)] = [
      ("small", .int16, .string), ("medium", .int32, .double), ("large", .int64, .decimal), ("real", .double, .string),
      ("single", .float, .double), ("exact", .decimal, .string), ("text", .string, .string), ("flag", .bool, .string),
      ("when", .date, .string), ("code", .uuid, .string), ("link", .url, .string), ("blob", .data, .data),
      ("count", .int64, .int64),
    ]
    var before = kinds.map { AttributeDescription(name: $0.0, type: $0.1, isOptional: true) }
    before.insert(AttributeDescription(name: "scratch", type: .string, isOptional: true, isTransient: true), at: 3)
    var after = kinds.map { AttributeDescription(name: $0.0, type: $0.2, isOptional: true) }
    after.append(AttributeDescription(name: "added", type: .int64, defaultValue: 7))
    let oldModel = try model(before)
    let newModel = try model(after)
    old = try oldModel.requireEntity("Item")
    new = try newModel.requireEntity("Item")
    table = LMDBSchema.Table(entity: old, records: 0, uniques: [], indexes: [], references: [], storeIdentifier: "")
    decoder = RecordDecoder(entity: old, storeIdentifier: "S")
    newDecoder = RecordDecoder(entity: new, storeIdentifier: "S")
    let migration = try ModelMigration(from: oldModel, to: newModel)
    guard let mapping = migration.entities.first(where: { $0.entity.name == "Item" }) else {
      throw StoreError(.misuse, "the fuzz migration has no mapping for Item")
    }
    self.mapping = mapping
  }

  /// A random value of `type` (nil one time in eight), extremes favoured.
  func value(_ type: AttributeType, _ rng: inout SplitMix64) -> Value {
    if Int.random(in: 0..<8, using: &rng) == 0 { return .null }
    let extremeDoubles: [Double] = [
      .nan, .infinity, -.infinity, 0, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 1e300,
    ]
    switch type {
    case .int16: return .int(Int64(Int16.random(in: .min ... .max, using: &rng)))
    case .int32: return .int(Int64(Int32.random(in: .min ... .max, using: &rng)))
    case .int64:
      return .int([.min, .max, 0, -1, Int64.random(in: .min ... .max, using: &rng)].randomElement(using: &rng) ?? 0)
    case .double, .float:
      return .double(
        Bool.random(using: &rng)
          ? extremeDoubles.randomElement(using: &rng) ?? 0 : Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng)))
    case .decimal:
      let texts = ["0", "-0.000001", "12.50", "1e120", "-9999999999999999999999999999999999999", "3.4028236692093846346e38"]
      return .decimal(Decimal(string: texts.randomElement(using: &rng) ?? "0") ?? 0)
    case .json:
      return .string(["[]", "[\"a\",\"b\"]", "{\"city\":\"Paris\"}", "null", "3"].randomElement(using: &rng) ?? "[]")
    case .string:
      let scalars = (0..<Int.random(in: 0...40, using: &rng)).compactMap { _ in
        Unicode.Scalar(UInt32.random(in: 0...0x2FFFF, using: &rng))
      }
      var view = String.UnicodeScalarView()
      view.append(contentsOf: scalars)
      return .string(String(view))
    case .bool: return .bool(Bool.random(using: &rng))
    case .date:
      return .date(
        Date(
          timeIntervalSinceReferenceDate: Bool.random(using: &rng)
            ? extremeDoubles.randomElement(using: &rng) ?? 0 : Double.random(in: -1e10...1e10, using: &rng)))
    case .uuid:
      var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
      bytes[6] = bytes[6] & 0x0F | 0x40
      return .uuid(
        UUID(
          uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10],
            bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
          )))
    case .url:
      let urls = ["https://example.org/a?b=c#d", "file:///tmp/some%20file", "mailto:x@y.z", "a:b", "https://例え.jp/ü"]
      return URL(string: urls.randomElement(using: &rng) ?? "a:b").map(Value.url) ?? .null
    case .data: return .data(Data((0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
    }
  }

  func encode(_ snapshot: Snapshot, version: Int64) -> [UInt8] {
    let buffer = RecordBuffer()
    RecordCodec.encode(version: version, attributes: snapshot.attributes, toOne: snapshot.toOne, table: table, into: buffer)
    return buffer.withUnsafeBytes { Array($0) }
  }

  func validRecord(_ rng: inout SplitMix64) -> [UInt8] {
    let attributes = old.attributes.map { $0.isTransient ? Value.null : value($0.type, &rng) }
    let toOne: [ObjectID?] = old.toOneRelationships.map { relationship in
      Bool.random(using: &rng)
        ? nil
        : ObjectID(
          entityName: relationship.destination, storeIdentifier: "S",
          primaryKey: [Int64.min, Int64.max, 1, Int64.random(in: .min ... .max, using: &rng)].randomElement(using: &rng) ?? 1)
    }
    let id = ObjectID(entityName: "Item", storeIdentifier: "S", primaryKey: 1)
    let candidates: [Int64] = [Int64.min, Int64.max, 1, Int64.random(in: .min ... .max, using: &rng)]
    let version: Int64 = candidates.randomElement(using: &rng) ?? 1
    return encode(Snapshot(objectID: id, version: version, attributes: attributes, toOne: toOne), version: version)
  }

  /// `record` with a few random edits.
  func mutate(_ record: [UInt8], other: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
    var bytes = record
    for _ in 0..<Int.random(in: 1...3, using: &rng) {
      let at = Int.random(in: 0...bytes.count, using: &rng)
      switch Int.random(in: 0..<8, using: &rng) {
      case 0 where at < bytes.count: bytes[at] ^= 1 << UInt8.random(in: 0...7, using: &rng)
      case 1 where at < bytes.count: bytes[at] ^= 1 << UInt8.random(in: 0...7, using: &rng)
      case 2: bytes = Array(bytes.prefix(at))
      case 3: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: at)
      case 4 where at < bytes.count: bytes.remove(at: at)
      case 5:
        let run = [UInt8](
          repeating: [0xFF, 0x80, 0x00, 0x7F].randomElement(using: &rng) ?? 0xFF, count: Int.random(in: 1...12, using: &rng))
        bytes.replaceSubrange(at..<min(bytes.count, at + run.count), with: run)
      case 6: bytes = Array(bytes.prefix(at)) + other.suffix(from: min(other.count, at))
      default: if at < bytes.count { bytes[at] = UInt8.random(in: 0...255, using: &rng) }
      }
    }
    return bytes
  }

  func run(iterations: Int) throws -> RecordFuzzReport {
    var report = RecordFuzzReport()
    report.seed = seed
    let started = ContinuousClock.now
    var rng = SplitMix64(seed: seed)
    var transcoder = RecordTranscoder(from: old, to: mapping)
    let output = RecordBuffer()
    var previous = validRecord(&rng)
    for i in 0..<iterations {
      let valid = validRecord(&rng)
      let input: [UInt8]
      switch i % 8 {
      case 0: input = valid
      case 1: input = (0..<Int.random(in: 0...96, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
      default: input = mutate(valid, other: previous, &rng)
      }
      previous = valid
      report.inputs += 1
      func fail(_ what: String) {
        guard report.failures.count < 50 else { return }
        report.failures.append("\(what) for \(input.map { String($0, radix: 16) }.joined(separator: " "))")
      }
      let decoded = decode(input, decoder)
      switch decoded {
      case .success(let snapshot):
        report.decoded += 1
        let again = encode(snapshot, version: snapshot.version)
        if input == valid, again != input { fail("a valid record did not round-trip: \(again)") }
        if case .failure(let error) = decode(again, decoder) { fail("a decoded record did not decode again: \(error)") }
      case .failure(let error):
        if input == valid { fail("a valid record did not decode: \(error)") }
        if error.code == .corrupted { report.corrupted += 1 } else { fail("not .corrupted: \(error)") }
      }
      let transcoded = input.withUnsafeBytes { transcoder.transcode($0, into: output) }
      guard transcoded else {
        report.transcodeRefused += 1
        if case .success = decoded { fail("the transcoder refused a record the decoder reads") }
        continue
      }
      report.transcoded += 1
      let newRecord = output.withUnsafeBytes { Array($0) }
      switch decode(newRecord, newDecoder) {
      case .success: break
      case .failure(let error):
        if case .success = decoded { fail("a transcoded readable record is unreadable: \(error)") }
        if error.code != .corrupted { fail("transcoded: not .corrupted: \(error)") }
      }
    }
    report.elapsed = ContinuousClock.now - started
    return report
  }

  func decode(_ bytes: [UInt8], _ decoder: RecordDecoder) -> Result<Snapshot, StoreError> {
    bytes.withUnsafeBytes { raw in
      do {
        return .success(try decoder.decode(raw, primaryKey: 1))
      } catch let error as StoreError {
        return .failure(error)
      } catch {
        return .failure(StoreError(.misuse, "not a StoreError: \(error)"))
      }
    }
  }
}
