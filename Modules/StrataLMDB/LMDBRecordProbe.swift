import Foundation
import StrataStoreKit
import Synchronization

/// Decides a predicate made of attribute tests (``PredicateEvaluator/attributeTests``: `rating == 3`,
/// `title CONTAINS[cd] 'x' AND year > 1990`) from a record's bytes, before decoding it: each tested value is
/// read where it lies (a string's UTF-8 handed to the test's ``StringMatcher`` without making a `String`),
/// the attributes between them skipped. A record the probe rejects is never decoded, so a scan costs the
/// records that match, not every record; a count does not decode those it accepts either.
///
/// It only ever says "no" when the evaluator would: a test is the evaluator's own comparison on the same
/// value. Damaged bytes, or a test that throws, make it say "maybe", and the record is decoded and
/// evaluated as without a probe (which reports the damage or the error).
struct RecordProbe {
  private let tests: [PredicateEvaluator.AttributeTest]
  private let fields: [RecordField]

  /// The probe of `evaluator`'s predicate over records of `entity` (the fetched entity or one of its
  /// sub-entities, whose records start with the same attributes); `nil` when the predicate is not made of
  /// attribute tests.
  init?(_ evaluator: PredicateEvaluator?, entity: EntityDescription) {
    guard let tests = evaluator?.attributeTests else { return nil }
    let fields = entity.attributes.map { $0.isTransient ? RecordField.transient : RecordField($0.type) }
    guard tests.allSatisfy({ fields.indices.contains($0.index) }) else { return nil }
    self.fields = fields
    self.tests = tests.sorted { $0.index < $1.index }
  }

  /// What the tested attributes' bytes say about a record.
  enum Verdict {
    /// The record does not match.
    case no
    /// The record matches: every test was read and holds (the evaluator would say so of its snapshot).
    case yes
    /// The bytes could not decide (damaged, or a test threw): decode the record and evaluate it.
    case maybe
  }

  /// Whether the record matches, from the bytes of the attributes the tests read (the others skipped).
  func verdict(_ bytes: UnsafeRawBufferPointer) -> Verdict {
    var reader = RecordReader(bytes: bytes)
    do throws(RecordHeaderDamage) {
      _ = try reader.header()
    } catch {
      return .maybe
    }
    let start = reader.offset
    var position = 0
    for test in tests {
      if test.index < position {
        // Another test of the attribute just read (`rating > 1 AND rating < 4`): read it again.
        reader.offset = start
        position = 0
      }
      while position < test.index {
        guard reader.skipValue(fields[position]) else { return .maybe }
        position += 1
      }
      guard let holds = Self.test(test, fields[position], &reader) else { return .maybe }
      position += 1
      if !holds { return .no }
    }
    return .yes
  }

  /// Whether `test` holds for the value `reader` is at (a value of `field`); `nil` when the bytes are not
  /// such a value or the test throws.
  private static func test(
    _ test: PredicateEvaluator.AttributeTest, _ field: RecordField, _ reader: inout RecordReader
  ) -> Bool? {
    do {
      if field == .transient { return try test.holds(.null) }
      guard let tag = reader.byte() else { return nil }
      if tag == 0 { return try test.holds(.null) }
      guard tag == field.rawValue || (field == .bool && tag == RecordField.trueTag) else { return nil }
      switch field {
      case .string:
        guard let slice = reader.slice() else { return nil }
        return try test.holds(utf8: slice.assumingMemoryBound(to: UInt8.self))
      case .integer:
        guard let bits = reader.varint() else { return nil }
        return try test.holds(.int(RecordCodec.unzigzag(bits)))
      case .double:
        guard let bits = reader.fixed64() else { return nil }
        return try test.holds(.double(Double(bitPattern: bits)))
      case .bool:
        return try test.holds(.bool(tag == RecordField.trueTag))
      case .date:
        guard let bits = reader.fixed64() else { return nil }
        return try test.holds(.date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits))))
      default:
        // A rarer kind, read as the decoder reads it, its tag already consumed.
        reader.offset -= 1
        var values: [Value] = []
        guard reader.appendValue(field, to: &values), let value = values.first else { return nil }
        return try test.holds(value)
      }
    } catch {
      return nil
    }
  }
}

/// Counts the records a fetch decodes, for tests that check a fetch reads what its answer needs: set it
/// as ``LMDBReader/decodeCounter`` around a synchronous fetch.
///
/// ```swift
/// let counter = RecordDecodeCounter()
/// try LMDBReader.$decodeCounter.withValue(counter) { _ = try store.fetch(request, generation: nil) }
/// #expect(counter.count < 10)
/// ```
package final class RecordDecodeCounter: Sendable {
  private let decoded = Atomic<Int>(0)

  package init() {}

  /// How many records were decoded.
  package var count: Int { decoded.load(ordering: .relaxed) }

  func add(_ n: Int = 1) { decoded.add(n, ordering: .relaxed) }
}
