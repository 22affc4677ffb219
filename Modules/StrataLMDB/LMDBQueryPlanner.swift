import CLMDB
import Foundation
import StrataStoreKit

/// Where a fetch finds its candidate objects: an index range instead of a scan of the whole entity.
///
/// The planner looks at the checked predicate's top-level conjunction for a plain comparison of an
/// indexed (or single-attribute unique) attribute with a constant of the attribute's own type, without
/// string options: `==`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `IN`. Everything else scans. Candidates from an
/// index are always re-checked with the evaluator, so a plan only ever narrows the work, never the answer.
struct IndexPlan {
  /// A run of index keys: from `lower` up to `upper` (inclusive or not).
  struct KeyRange {
    var lower: [UInt8]
    var lowerInclusive: Bool
    var upper: [UInt8]
    var upperInclusive: Bool

    func isBelowLower(_ key: UnsafeRawBufferPointer) -> Bool {
      let order = compare(key, lower)
      return lowerInclusive ? order < 0 : order <= 0
    }

    func isAboveUpper(_ key: UnsafeRawBufferPointer) -> Bool {
      let order = compare(key, upper)
      return upperInclusive ? order > 0 : order >= 0
    }

    private func compare(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
      for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
      return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
  }

  let index: LMDBSchema.Index
  let attributeType: AttributeType
  let ranges: [KeyRange]
  /// Whether the ranges' bounds are exact and the comparison is the whole predicate, so that every
  /// exact key in a range matches without reading its objects (counts read no records).
  let answersWholePredicate: Bool

  /// The plan for `predicate` (as checked by the evaluator) over `table`, or `nil` to scan.
  static func make(_ predicate: QueryPredicate?, table: LMDBSchema.Table, maxKeySize: Int) -> IndexPlan? {
    guard let predicate else { return nil }
    let conjuncts: [QueryPredicate]
    if case .and(let parts) = predicate { conjuncts = parts } else { conjuncts = [predicate] }
    var best: IndexPlan?
    for conjunct in conjuncts {
      guard case .comparison(let comparison) = conjunct,
        let plan = make(comparison, table: table, maxKeySize: maxKeySize, isWhole: conjuncts.count == 1)
      else { continue }
      let isEquality = comparison.op == .equalTo || comparison.op == .in
      if isEquality { return plan }
      if best == nil { best = plan }
    }
    return best
  }

  private static func make(_ c: Comparison, table: LMDBSchema.Table, maxKeySize: Int, isWhole: Bool) -> IndexPlan? {
    guard c.modifier == .direct, c.options.isEmpty, case .keyPath(let name) = c.left, case .constant(let constant) = c.right,
      let attribute = table.entity.attribute(named: name), !attribute.isTransient, attribute.type != .json,
      let index = table.index(on: name)
    else { return nil }
    let type = attribute.type
    var exact = true
    func key(_ value: Value) -> [UInt8]? {
      guard value.isNull ? index.includesNil : isOrdered(value, as: type) else { return nil }
      let key = IndexKey(value).limited(to: maxKeySize)
      if !key.isExact { exact = false }
      return key.bytes
    }
    // Present values all start with 1; nil with 0.
    let firstPresent: [UInt8] = [1]
    let pastPresent: [UInt8] = [2]
    var ranges: [KeyRange] = []
    switch c.op {
    case .equalTo:
      guard let k = key(constant) else { return nil }
      ranges = [KeyRange(lower: k, lowerInclusive: true, upper: k, upperInclusive: true)]
    case .in:
      guard case .array(let items) = constant else { return nil }
      var keys: [[UInt8]] = []
      for item in items {
        guard let k = key(item) else { return nil }
        if !keys.contains(k) { keys.append(k) }
      }
      ranges = keys.sorted { $0.lexicographicallyPrecedes($1) }.map {
        KeyRange(lower: $0, lowerInclusive: true, upper: $0, upperInclusive: true)
      }
    case .lessThan, .lessThanOrEqualTo:
      guard !constant.isNull, let k = key(constant) else { return nil }
      ranges = [
        KeyRange(lower: firstPresent, lowerInclusive: true, upper: k, upperInclusive: c.op == .lessThanOrEqualTo || !exact)
      ]
    case .greaterThan, .greaterThanOrEqualTo:
      guard !constant.isNull, let k = key(constant) else { return nil }
      ranges = [
        KeyRange(lower: k, lowerInclusive: c.op == .greaterThanOrEqualTo || !exact, upper: pastPresent, upperInclusive: false)
      ]
    case .between:
      guard case .array(let bounds) = constant, bounds.count == 2, !bounds[0].isNull, !bounds[1].isNull,
        let low = key(bounds[0]), let high = key(bounds[1])
      else { return nil }
      ranges = [KeyRange(lower: low, lowerInclusive: true, upper: high, upperInclusive: true)]
    default:
      return nil
    }
    return IndexPlan(index: index, attributeType: type, ranges: ranges, answersWholePredicate: isWhole && exact)
  }

  /// Whether `value` is of the kind the index orders `type`'s values by (decimals are keyed by text:
  /// no order, so never planned).
  private static func isOrdered(_ value: Value, as type: AttributeType) -> Bool {
    switch (type, value) {
    case (.int16, .int), (.int32, .int), (.int64, .int), (.double, .double), (.float, .double), (.bool, .bool),
      (.date, .date), (.string, .string), (.uuid, .uuid), (.url, .url), (.data, .data):
      return true
    default:
      return false
    }
  }

  /// Whether a stored key identifies its value exactly: not cut at liblmdb's key limit, not a NaN.
  func isExact(_ key: UnsafeRawBufferPointer, maxKeySize: Int) -> Bool {
    guard key.count < maxKeySize else { return false }
    switch attributeType {
    case .double, .float, .date:
      guard key.count == 9 else { return true }
      let bits = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 1, as: UInt64.self))
      let raw = bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits
      return !Double(bitPattern: raw).isNaN
    default:
      return true
    }
  }

  /// Walks every (key, primary key) entry in the ranges, in key order.
  func forEachEntry(_ txn: LMDBTransaction, _ body: (UnsafeRawBufferPointer, Int64) throws -> Void) throws {
    try txn.withCursor(index.dbi) { cursor in
      for range in ranges {
        var entry = try cursor.seek(range.lower, exact: false)
        while let (key, value) = entry, !range.isAboveUpper(key) {
          if !range.isBelowLower(key) { try body(key, try KeyCoding.primaryKey(value)) }
          entry = try cursor.next(.next)
        }
      }
    }
  }

  /// The primary keys of the candidates, ascending and without repeats.
  func candidates(_ txn: LMDBTransaction) throws -> [Int64] {
    var keys: [Int64] = []
    try forEachEntry(txn) { _, pk in keys.append(pk) }
    keys.sort()
    var unique: [Int64] = []
    unique.reserveCapacity(keys.count)
    for key in keys where unique.last != key { unique.append(key) }
    return unique
  }

  /// Counts the matching objects: exact keys by their number of duplicates, other keys' objects by
  /// reading them and asking `matches`. Only for plans that answer the whole predicate.
  func count(_ txn: LMDBTransaction, maxKeySize: Int, matches: (Int64) throws -> Bool) throws -> Int {
    var count = 0
    try txn.withCursor(index.dbi) { cursor in
      for range in ranges {
        var entry = try cursor.seek(range.lower, exact: false)
        while let (key, value) = entry, !range.isAboveUpper(key) {
          if range.isBelowLower(key) {
            entry = try cursor.next(.next)
          } else if isExact(key, maxKeySize: maxKeySize) {
            count += try cursor.duplicateCount()
            entry = try cursor.next(.nextKey)
          } else {
            if try matches(try KeyCoding.primaryKey(value)) { count += 1 }
            entry = try cursor.next(.next)
          }
        }
      }
    }
    return count
  }
}
