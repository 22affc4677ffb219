import CLMDB
import Foundation
import StrataStoreKit

/// Where a fetch finds its candidate objects: an index range instead of a scan of the whole entity.
///
/// The planner looks at the checked predicate's top-level conjunction for a plain comparison of an
/// indexed (or single-attribute unique) attribute with a constant of the attribute's own type, without
/// string options: `==`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `IN`. A compound index (`class var indexes`, a
/// uniqueness constraint over several attributes) serves equalities on a run of its leading attributes and
/// then one range on the next (`genre == 'Crime' AND year >= 1990` over `[genre, year]`); it is chosen
/// over a single attribute's index when it pins more attributes. Everything else scans. Candidates from an
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
    var bestIsEquality = false
    for conjunct in conjuncts {
      guard case .comparison(let comparison) = conjunct,
        let plan = make(comparison, table: table, maxKeySize: maxKeySize, isWhole: conjuncts.count == 1)
      else { continue }
      let isEquality = comparison.op == .equalTo || comparison.op == .in
      if isEquality {
        best = plan
        bestIsEquality = true
        break
      }
      if best == nil { best = plan }
    }
    // A compound index wins when it pins two attributes or more, or one and a range, or when no index of
    // one attribute serves at all.
    if let compound = CompoundPlan.best(conjuncts, table: table, maxKeySize: maxKeySize),
      best == nil || compound.equalities >= 2 || (compound.equalities == 1 && (compound.hasRange || !bestIsEquality))
    {
      return compound.plan
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
  fileprivate static func isOrdered(_ value: Value, as type: AttributeType) -> Bool {
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

/// A plan over an index of several keys: equalities on its leading keys, then at most one range on the next.
///
/// An index key is the keys' values one after the other, each self-delimiting and ordered (``IndexKey``), so
/// the keys that start with the equalities' bytes `P` lie in `[P, P + 2)` (a next value starts with 0, nil,
/// or 1), and a range on the next key becomes a range of keys under `P`.
private struct CompoundPlan {
  /// The values a range on one key lies between, each bound absent or inclusive or not.
  typealias Bounds = (lower: [UInt8]?, lowerInclusive: Bool, upper: [UInt8]?, upperInclusive: Bool)

  let plan: IndexPlan
  let equalities: Int
  let hasRange: Bool

  /// The compound plan that pins the most keys, if any pins one.
  static func best(_ conjuncts: [QueryPredicate], table: LMDBSchema.Table, maxKeySize: Int) -> CompoundPlan? {
    var comparisons: [String: [Comparison]] = [:]
    for conjunct in conjuncts {
      guard case .comparison(let c) = conjunct, c.modifier == .direct, c.options.isEmpty, case .keyPath(let name) = c.left,
        case .constant = c.right
      else { continue }
      comparisons[name, default: []].append(c)
    }
    guard !comparisons.isEmpty else { return nil }
    var best: CompoundPlan?
    for index in table.allIndexes where index.keys.count > 1 {
      guard let plan = make(index, comparisons, table: table, maxKeySize: maxKeySize) else { continue }
      if let current = best, (current.equalities, current.hasRange ? 1 : 0) >= (plan.equalities, plan.hasRange ? 1 : 0) {
        continue
      }
      best = plan
    }
    return best
  }

  private static func make(
    _ index: LMDBSchema.Index, _ comparisons: [String: [Comparison]], table: LMDBSchema.Table, maxKeySize: Int
  ) -> CompoundPlan? {
    var prefix = IndexKey()
    var equalities = 0
    var range: Bounds?
    var rangedType: AttributeType?
    for key in index.keys {
      guard let attribute = table.entity.attribute(named: key), !attribute.isTransient, attribute.type != .json,
        let tests = comparisons[key]
      else { break }
      let type = attribute.type
      if let equal = tests.first(where: { $0.op == .equalTo }), case .constant(let value) = equal.right,
        value.isNull ? index.includesNil : IndexPlan.isOrdered(value, as: type)
      {
        prefix.append(value)
        equalities += 1
        continue
      }
      range = Self.range(tests, type: type)
      if range != nil { rangedType = type }
      break
    }
    guard equalities > 0 || range != nil else { return nil }
    // A uniqueness constraint's index leaves out the objects with a nil among its keys: it answers only when
    // every key is pinned to a value.
    guard index.includesNil || equalities == index.keys.count else { return nil }
    // Bounds past liblmdb's key limit would be cut, and a cut bound no longer orders: scan instead.
    let longest = prefix.bytes.count + max(range?.lower?.count ?? 0, range?.upper?.count ?? 0) + 1
    guard prefix.isExact, longest < maxKeySize else { return nil }
    let ranged = range.map { range -> IndexPlan.KeyRange in
      let isLastKey = equalities + 1 == index.keys.count
      // Under a value: its own keys lie in [P + v, P + v + 2) when a key follows, at P + v when none does.
      let lower = range.lower.map { v in
        range.lowerInclusive || isLastKey ? (prefix.bytes + v, range.lowerInclusive) : (prefix.bytes + v + [2], true)
      }
      let upper = range.upper.map { v in
        !range.upperInclusive || isLastKey ? (prefix.bytes + v, range.upperInclusive) : (prefix.bytes + v + [2], false)
      }
      return IndexPlan.KeyRange(
        lower: lower?.0 ?? prefix.bytes + [1], lowerInclusive: lower?.1 ?? true,
        upper: upper?.0 ?? prefix.bytes + [2], upperInclusive: upper?.1 ?? false)
    }
    let keys =
      ranged ?? IndexPlan.KeyRange(lower: prefix.bytes, lowerInclusive: true, upper: prefix.bytes + [2], upperInclusive: false)
    return CompoundPlan(
      plan: IndexPlan(index: index, attributeType: rangedType ?? .string, ranges: [keys], answersWholePredicate: false),
      equalities: equalities, hasRange: ranged != nil)
  }

  /// The bounds the range comparisons on one key set (present values only), or `nil` when none can.
  private static func range(
    _ tests: [Comparison], type: AttributeType
  ) -> Bounds? {
    var result: Bounds = (nil, true, nil, true)
    var found = false
    func bytes(_ value: Value) -> [UInt8]? {
      guard !value.isNull, IndexPlan.isOrdered(value, as: type) else { return nil }
      let key = IndexKey(value)
      return key.isExact ? key.bytes : nil
    }
    for test in tests {
      guard case .constant(let value) = test.right else { continue }
      switch test.op {
      case .greaterThan, .greaterThanOrEqualTo:
        guard result.lower == nil, let k = bytes(value) else { continue }
        result.lower = k
        result.lowerInclusive = test.op == .greaterThanOrEqualTo
      case .lessThan, .lessThanOrEqualTo:
        guard result.upper == nil, let k = bytes(value) else { continue }
        result.upper = k
        result.upperInclusive = test.op == .lessThanOrEqualTo
      case .between:
        guard result.lower == nil, result.upper == nil, case .array(let bounds) = value, bounds.count == 2,
          let low = bytes(bounds[0]), let high = bytes(bounds[1])
        else { continue }
        result = (low, true, high, true)
      default:
        continue
      }
      found = true
    }
    return found ? result : nil
  }
}
